"""The table's ID reader as a USB keyboard wedge: `WedgeIdReader` reads a wedge's key events
from an `EventSource` and decodes them with `drivers.wedge_codec.WedgeDecoder` into `IdTap`
and `DeviceAlert` (connected, not_found, grab_refused, lost, reconnected, bad_read).

The source is the seam: `EvdevSource` is the real device (python-evdev on
``/dev/input/by-id/usb-...-event-kbd``), holding an exclusive grab (EVIOCGRAB) so that no
keystroke of a swipe reaches the screen's session or a console; a recorded capture
(`simulators.wedge.CaptureReplay`) and a simulated wedge (`simulators.wedge.SimulatedWedge`)
stand in for it in tests, the conformance kit and a simulated table. Every call on a source
may block, so they run on one `runtime.worker_thread.WorkerThread`.

When the grab is refused (another process holds one: ``evtest --grab``, a kiosk, a second
daemon), the driver does not read the device ungrabbed: it alerts ``grab_refused`` and
retries, since reading without the grab would type card numbers into whatever has focus.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib
import select
import time
from collections.abc import Callable
from typing import Any, Protocol

from drivers.errors import DeviceLost, DeviceNotFound, DriverError, LibraryMissing
from drivers.id_codec import BadIdRead
from drivers.id_stream import IdStream
from drivers.readings import IdTap
from drivers.wedge_codec import EV_KEY, InputEvent, Typed, WedgeDecoder
from runtime.backoff import Backoff
from runtime.worker_thread import WorkerThread

__all__ = ["EvdevSource", "EventSource", "GrabRefused", "WedgeIdReader", "load_evdev"]


class GrabRefused(DeviceNotFound):
    """The device is there but another process holds an exclusive grab on it."""


class EventSource(Protocol):
    """Where a wedge's input events come from (a real device, a capture, a simulator). Every
    method may block; the driver calls them from its worker thread only."""

    def open(self) -> str:
        """Open (and grab) the device; what it is, for the ``connected`` alert. Raises
        DeviceNotFound (absent, unreadable), GrabRefused, or DeviceLost."""
        ...

    def read(self, timeout: float) -> list[InputEvent]:
        """The events that arrive within ``timeout`` seconds ([] if none); DeviceLost when
        the device went away."""
        ...

    def close(self) -> None:
        """Release the device (and its grab); never raises."""
        ...


def load_evdev() -> Any:
    """python-evdev (`LibraryMissing` naming the extra when it is not installed)."""
    try:
        return importlib.import_module("evdev")
    except ImportError as exc:
        raise LibraryMissing("evdev", "readers", "the keyboard-wedge ID reader") from exc


class EvdevSource:
    """A real wedge: an evdev input device, grabbed unless ``grab`` is False."""

    def __init__(self, path: str, *, grab: bool = True, evdev: Any = None) -> None:
        self.path = path
        self.grab = grab
        self._evdev = evdev if evdev is not None else load_evdev()
        self._device: Any = None
        self.device_name: str | None = None  # the name the device reports, once opened

    def open(self) -> str:
        """Open the device, check it types keys, grab it."""
        try:
            device = self._evdev.InputDevice(self.path)
        except FileNotFoundError:
            raise DeviceNotFound(f"no input device at {self.path} (unplugged, or another"
                                 " path: ls /dev/input/by-id/)") from None
        except PermissionError:
            raise DeviceNotFound(f"permission denied on {self.path}: the daemon's user needs"
                                 " the udev rule's group (docs/operations/id-readers.md)"
                                 ) from None
        except OSError as exc:
            raise DeviceNotFound(f"cannot open {self.path}: {exc}") from exc
        try:
            if EV_KEY not in device.capabilities():
                raise DeviceNotFound(f"{self.path} ({device.name}) types no keys: not a"
                                     " keyboard wedge")
            if self.grab:
                try:
                    device.grab()
                except OSError as exc:
                    if exc.errno == errno.EBUSY:
                        raise GrabRefused(
                            f"another process holds an exclusive grab on {self.path}"
                            f" ({device.name}): find it with `fuser -v {self.path}`"
                        ) from None
                    raise DeviceNotFound(f"cannot grab {self.path}: {exc}") from exc
        except BaseException:
            device.close()
            raise
        self._device = device
        self.device_name = str(device.name)
        grabbed = "grabbed" if self.grab else "NOT grabbed: keystrokes reach the session too"
        return f"reading {device.name} on {self.path} ({grabbed})"

    def read(self, timeout: float) -> list[InputEvent]:
        """The events within ``timeout``; DeviceLost when the device is gone (ENODEV)."""
        device = self._device
        if device is None:
            raise DeviceLost(f"{self.path} is not open")
        try:
            ready, _, _ = select.select([device.fd], [], [], timeout)
            if not ready:
                return []
            return [InputEvent(e.timestamp(), e.type, e.code, e.value) for e in device.read()]
        except BlockingIOError:
            return []
        except OSError as exc:
            raise DeviceLost(f"{self.path} went away: {exc.strerror or exc}") from exc

    def close(self) -> None:
        """Close the device (the grab ends with it)."""
        device, self._device = self._device, None
        if device is not None:
            with contextlib.suppress(OSError):  # already gone with the device
                device.close()


class WedgeIdReader(IdStream):
    """The table's ID reader on a keyboard wedge, satisfying `drivers.protocols.IdReader`.

    ``async with WedgeIdReader(EvdevSource(path)) as ids: async for r in ids: ...``. Opening
    never fails because the wedge is absent or its grab is refused: the driver alerts once
    per outage and keeps trying. A line left without Enter for ``line_timeout`` seconds after
    its last key is a bad read, so a swipe cut short never swallows the next card.
    """

    _kind = "keyboard wedge"

    def __init__(
        self,
        source: EventSource,
        *,
        device_name: str | None = None,
        typed: Typed = "card",
        backoff: Backoff | None = None,
        line_timeout: float = 0.5,
        poll: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if line_timeout <= 0 or poll <= 0:
            raise ValueError("line_timeout and poll must be positive")
        super().__init__(device_name if device_name is not None else "id-reader", clock)
        self.source = source
        self._decoder = WedgeDecoder(self.device, typed=typed)
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._line_timeout = line_timeout
        self._poll = poll
        self._worker = WorkerThread(f"wedge[{self.device}]")

    async def _run(self) -> None:
        ever = False
        reported: str | None = None  # the alert kind of the outage already reported
        while True:
            try:
                detail = await self._worker.call(self.source.open)
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    self._log.exception("wedge driver error while opening")
                kind = ("grab_refused" if isinstance(exc, GrabRefused)
                        else "lost" if ever else "not_found")
                if reported != kind:
                    reported = kind
                    self._alert(kind, str(exc))
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._backoff.reset()
            self._up(ever, detail)
            ever, reported = True, None
            try:
                await self._serve()
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    self._log.exception("wedge driver error while reading")
                self._down()
                reported = "lost"
                self._alert("lost", str(exc) or type(exc).__name__)
            finally:
                self._decoder.reset()  # a line cut by the outage is gone with it
                await self._worker.call(self.source.close)

    async def _serve(self) -> None:
        decoder = self._decoder
        while True:
            timeout = self._line_timeout if decoder.unfinished else self._poll
            events = await self._worker.call(self.source.read, timeout)
            now = self._clock()
            if not events:
                if decoder.unfinished:
                    given_up = decoder.flush(at_mono=now)
                    if given_up is not None:
                        self._bad_read(given_up.detail, now)
                continue
            self._last_seen = now
            for event in events:
                read = decoder.feed(event, at_mono=now)
                if isinstance(read, IdTap):
                    self._tap(read)
                elif isinstance(read, BadIdRead):
                    self._bad_read(read.detail, read.at_mono)

    async def _closed(self) -> None:
        try:
            await self._worker.call(self.source.close)
        finally:
            self._worker.close(wait=False)
            self._connected = False
