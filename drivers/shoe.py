"""The card shoe over serial: `ShoeLink` (the host side of the protocol, sans-I/O) and
`SerialCardReader` (pyserial transport, reconnects, health), a `CardReader`.

`SerialCardReader` opens any pyserial URL (a /dev/serial/by-id path, a pty, ``socket://``) or
asks a resolver callable for the current path each time it connects, so a shoe that comes back
under another name after a USB re-enumeration is found again. Blocking port calls run in a
reader thread and ``asyncio.to_thread``, never on the event loop. Protocol:
docs/protocols/card-shoe.md.

With ``ack="on_confirm"`` the shoe's events are acknowledged only when the consumer calls
``await reader.confirm(reading)`` after storing the reading, so a host that dies in between
loses nothing: the shoe still holds the event and delivers it to the next reader (§5.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from types import TracebackType
from typing import Final, Literal, Self

import serial  # type: ignore[import-untyped]  # pyserial ships no type information
import structlog

from drivers.errors import DeviceLost, DeviceNotFound, DriverError
from drivers.protocols import ShoeReading
from drivers.readings import CardReading, DeviceAlert, DeviceHealth, DeviceIdentity, ShoeStatus
from drivers.shoe_codec import (
    DETAIL_NONE,
    DETAIL_QUEUE_FULL,
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Identify,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    ShoeMessage,
    StatusReport,
    encode,
)
from runtime.backoff import Backoff

__all__ = ["COUNTERS", "AckMode", "SerialCardReader", "ShoeLink"]

_log = structlog.get_logger("drivers.shoe")

# Every counter health() reports, always present (zero until something happens).
COUNTERS: Final = (
    "frames",  # good frames received
    "bad_frames",  # frames refused by the decoder (all reasons)
    "skipped_bytes",  # noise between frames
    "retransmits",  # frames the shoe flagged as retransmissions
    "frames_lost",  # gaps in the shoe's link sequence numbers
    "duplicates_dropped",  # events already delivered (retransmits, repeated frames, double reads)
    "duplicate_reads",  # of which: a read index reported again under a new event number
    "conflicts",  # a repeat whose content differs from the event delivered (see ShoeLink)
    "out_of_order",  # events ahead of the one expected (an earlier one was lost)
    "acks_sent",
    "naks_sent",
    "confirms",  # readings the consumer confirmed as stored (ack="on_confirm")
    "unconfirmed",  # a gauge: readings yielded and not confirmed yet (ack="on_confirm")
    "cards",  # card reads delivered
    "statuses",  # shoe status changes delivered
    "cards_missing",  # read indices the shoe skipped (never reported)
    "events_missing",  # events acknowledged elsewhere and never received here
    "sessions",  # shoe restarts seen (new session id)
    "connects",
    "reconnects",
    "disconnects",
    "stalls",
)
_CLOSED: Final = object()
_RECENT: Final = 256  # delivered events kept to cross-check repeats against

AckMode = Literal["on_receipt", "on_confirm"]
_ACK_MODES: Final = ("on_receipt", "on_confirm")


class ShoeLink:
    """The host side of the shoe protocol without I/O: shoe messages in, readings and replies out.

    It keeps what must survive reconnections: the shoe's session, the next event number expected
    (the dedupe key of the reliable stream), the next read index, and the counters. With
    ``ack_on_confirm`` a delivered card or status is acknowledged only once `confirm` is called
    for it; until then the shoe's retransmissions of it are dropped as repeats, unanswered.
    """

    def __init__(self, name: str, *, nak_holdoff: float = 0.2,
                 bad_frame_alert_interval: float = 30.0, ack_on_confirm: bool = False) -> None:
        self.name = name
        self.nak_holdoff = nak_holdoff
        self.bad_frame_alert_interval = bad_frame_alert_interval
        self.ack_on_confirm = ack_on_confirm
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self.identity: ShoeIdentity | None = None
        self.session_id: int | None = None
        self.expected_evn = 0
        self.next_read: int | None = None
        self.last_heartbeat: Heartbeat | None = None
        self._recent: OrderedDict[int, CardReport | StatusReport] = OrderedDict()
        # Delivered but not yet confirmed (ack_on_confirm), by event number, in event order.
        self._unconfirmed: OrderedDict[int, CardReading | ShoeStatus] = OrderedDict()
        self._host_seq = 0
        self._last_seq: int | None = None
        self._last_nak = float("-inf")
        self._last_bad_alert = float("-inf")

    @property
    def device(self) -> str:
        """The shoe's serial number once known, else the configured name."""
        return self.identity.serial if self.identity is not None else self.name

    @property
    def ack_point(self) -> int:
        """The NEXT_EVN this host acknowledges: every event below it is delivered and confirmed."""
        return next(iter(self._unconfirmed), self.expected_evn)

    @property
    def unconfirmed(self) -> int:
        """How many delivered readings still wait for `confirm`."""
        return len(self._unconfirmed)

    def confirm(self, reading: ShoeReading) -> bool:
        """The consumer has stored ``reading``; True if the acknowledgement point moved on (then
        send `ack_frame`). Alerts, readings of an earlier session and repeats are no-ops."""
        evn = next((e for e, r in self._unconfirmed.items() if r is reading), None)
        if evn is None:  # a copy of the reading: the earliest equal one (never acks too much)
            evn = next((e for e, r in self._unconfirmed.items() if r == reading), None)
        if evn is None:
            return False
        before = self.ack_point
        del self._unconfirmed[evn]
        self.counters["confirms"] += 1
        return self.ack_point > before

    def ack_frame(self) -> bytes:
        """An ACK of everything below `ack_point`."""
        return self._ack()

    def new_connection(self) -> None:
        """Forget per-connection link state (sequence numbers, NAK hold-off)."""
        self._last_seq = None
        self._last_nak = float("-inf")

    def identify_frame(self) -> bytes:
        """The IDENTIFY frame that opens every connection."""
        return self._frame(Identify())

    def accept_identity(self, ident: ShoeIdentity, now: float) -> list[ShoeReading]:
        """Take the shoe's identity; alerts if it restarted or if events were acked elsewhere."""
        out: list[ShoeReading] = []
        if self.session_id is None:
            self.expected_evn = ident.unacked_from
            self._unconfirmed.clear()
        elif ident.session_id != self.session_id:
            self.counters["sessions"] += 1
            detail = (f"shoe restarted: session {self.session_id:08x} -> {ident.session_id:08x};"
                      f" read indices start again (the shoe has read {ident.reads} cards)")
            hb = self.last_heartbeat
            if hb is not None and hb.next_evn > self.expected_evn:
                lost = hb.next_evn - self.expected_evn
                self.counters["events_missing"] += lost
                detail += f"; {lost} event(s) of the old session were never received"
            out.append(self._alert("session_changed", detail, now))
            self.expected_evn = ident.unacked_from
            self.next_read = None
            self.last_heartbeat = None
            self._unconfirmed.clear()  # the shoe lost them with the power: nothing to ack
        elif ident.unacked_from > self.expected_evn:
            lost = ident.unacked_from - self.expected_evn
            self.counters["events_missing"] += lost
            out.append(self._alert(
                "events_missing",
                f"events {self.expected_evn}..{ident.unacked_from - 1} were acknowledged by"
                " another host and never received here", now))
            self.expected_evn = ident.unacked_from
        for evn in [e for e in self._unconfirmed if e < ident.unacked_from]:
            del self._unconfirmed[evn]  # acknowledged by another host meanwhile
        self.session_id = ident.session_id
        self.identity = ident
        return out

    def count_bad_frame(self, event: BadFrame) -> None:
        """Count a refused frame seen before the connection is established."""
        self.counters["bad_frames"] += 1
        key = f"bad_{event.reason}"
        self.counters[key] = self.counters.get(key, 0) + 1

    def handle(self, event: ShoeMessage | BadFrame,
               now: float) -> tuple[list[ShoeReading], list[bytes]]:
        """One decoder event in; the readings it yields and the frames to send back out."""
        out: list[ShoeReading] = []
        replies: list[bytes] = []
        if isinstance(event, BadFrame):
            self.count_bad_frame(event)
            if event.seq is not None:
                self._check_seq(event.seq, now, replies)
            if event.reason == "unknown_type":  # a newer minor version's message: not a fault
                return out, replies
            if now - self._last_bad_alert >= self.bad_frame_alert_interval:
                self._last_bad_alert = now
                out.append(self._alert(
                    "bad_frame", f"refused a frame ({event.reason}); "
                    f"{self.counters['bad_frames']} bad frames so far", now))
            self._nak(now, replies)
            return out, replies
        self.counters["frames"] += 1
        if event.retransmit:
            self.counters["retransmits"] += 1
        self._check_seq(event.seq, now, replies)
        if isinstance(event, ShoeIdentity):
            out += self.accept_identity(event, now)
        elif isinstance(event, Heartbeat):
            self.last_heartbeat = event
            if self.session_id is not None and event.next_evn > self.expected_evn:
                self._nak(now, replies)
        elif isinstance(event, CardReport | StatusReport) and self.session_id is not None:
            self._reliable(event, now, out, replies)
        return out, replies

    def _reliable(self, event: CardReport | StatusReport, now: float, out: list[ShoeReading],
                  replies: list[bytes]) -> None:
        if event.evn < self.expected_evn:
            self.counters["duplicates_dropped"] += 1
            if event.evn < self.ack_point:  # acked before, the ACK was lost: ack again
                replies.append(self._ack())
            # else: delivered and awaiting the consumer's confirm; the shoe keeps resending
            self._cross_check(event, now, out)
            return
        if event.evn > self.expected_evn:
            self.counters["out_of_order"] += 1
            self._nak(now, replies)
            return
        self.expected_evn += 1
        self._recent[event.evn] = replace(event, seq=0, retransmit=False)
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        reading = self._deliver(event, now, out)
        if reading is not None:
            out.append(reading)
            if self.ack_on_confirm:
                self._unconfirmed[event.evn] = reading
                return
        replies.append(self._ack())

    def _deliver(self, event: CardReport | StatusReport, now: float,
                 out: list[ShoeReading]) -> CardReading | ShoeStatus | None:
        """The reading event ``event`` (the next expected) yields, if any; alerts go to ``out``."""
        if isinstance(event, StatusReport):
            self.counters["statuses"] += 1
            return ShoeStatus(state=event.state, device=self.device,
                              detail=_status_detail(event), at_mono=now)
        if self.next_read is not None and event.read_index < self.next_read:
            self.counters["duplicates_dropped"] += 1
            self.counters["duplicate_reads"] += 1
            out.append(self._alert(
                "duplicate_read", f"read index {event.read_index} ({event.card}) reported again"
                f" as event {event.evn}; dropped", now))
            return None
        if self.next_read is not None and event.read_index > self.next_read:
            self.counters["cards_missing"] += event.read_index - self.next_read
            out.append(self._alert(
                "card_missing", f"read indices {self.next_read}..{event.read_index - 1} were"
                " never reported by the shoe", now))
        self.next_read = event.read_index + 1
        self.counters["cards"] += 1
        return CardReading(card=event.card, read_index=event.read_index, quality=event.quality,
                        device=self.device, at_mono=now, session=self.session_id)

    def _cross_check(self, event: CardReport | StatusReport, now: float,
                     out: list[ShoeReading]) -> None:
        """A repeat must say what the original said. If it does not, one of the two was a
        corrupted frame whose CRC happened to check (CRC-16 lets ~1 in 65536 through)."""
        delivered = self._recent.get(event.evn)
        if delivered is None or delivered == replace(event, seq=0, retransmit=False):
            return
        self.counters["conflicts"] += 1
        out.append(self._alert(
            "conflicting_report", f"event {event.evn} was delivered as {_describe(delivered)}"
            f" and is now reported as {_describe(event)}; check the card on the table", now))

    def _check_seq(self, seq: int, now: float, replies: list[bytes]) -> None:
        last, self._last_seq = self._last_seq, seq
        if last is None or seq == last:  # seq == last: the same frame twice, deduped by evn
            return
        gap = (seq - last - 1) & 0xFF
        if gap:
            self.counters["frames_lost"] += gap
            self._nak(now, replies)

    def _nak(self, now: float, replies: list[bytes]) -> None:
        if self.session_id is None or now - self._last_nak < self.nak_holdoff:
            return
        self._last_nak = now
        self.counters["naks_sent"] += 1
        replies.append(self._frame(Nak(next_evn=self.ack_point)))  # a NAK acks: not beyond

    def _ack(self) -> bytes:
        self.counters["acks_sent"] += 1
        return self._frame(Ack(next_evn=self.ack_point))

    def _frame(self, message: Identify | Ack | Nak) -> bytes:
        seq, self._host_seq = self._host_seq, (self._host_seq + 1) & 0xFF
        if isinstance(message, Identify):
            return encode(Identify(seq=seq))
        if isinstance(message, Ack):
            return encode(Ack(next_evn=message.next_evn, seq=seq))
        return encode(Nak(next_evn=message.next_evn, seq=seq))

    def _alert(self, kind: str, detail: str, now: float) -> DeviceAlert:
        return DeviceAlert(device=self.device, kind=kind, detail=detail, at_mono=now)


def _describe(event: CardReport | StatusReport) -> str:
    if isinstance(event, CardReport):
        return f"read {event.read_index} {event.card} (quality {event.quality})"
    return f"status {event.state.value} (detail {event.detail}, {event.reads} reads)"


def _status_detail(event: StatusReport) -> str:
    text = f"{event.reads} cards read"
    if event.detail == DETAIL_QUEUE_FULL:
        text += "; event queue full (the host is not acknowledging)"
    elif event.detail != DETAIL_NONE:
        text += f"; detail code {event.detail}"
    return text


def _close_opened(opening: asyncio.Future[serial.Serial]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        with contextlib.suppress(Exception):
            opening.result().close()


class _Stalled(DriverError):
    """No frame from the shoe within the stall timeout."""


class _Port:
    """One open serial port: a reader thread feeding an asyncio queue, writes via to_thread."""

    def __init__(self, port: serial.Serial, path: str, loop: asyncio.AbstractEventLoop) -> None:
        self.port = port
        self.path = path
        self.decoder = ShoeDecoder(sender="device")
        self._loop = loop
        self._chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"shoe-reader {path}",
                                        daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while not self._stop.is_set():
            try:
                data: bytes = self.port.read(max(1, self.port.in_waiting))
            except Exception as exc:  # pyserial raises SerialException, OSError, TypeError...
                self._push(exc)
                return
            if data:
                self._push(data)

    def _push(self, item: bytes | BaseException) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closing; nobody listens
            self._loop.call_soon_threadsafe(self._chunks.put_nowait, item)

    async def read(self, timeout: float) -> bytes | None:
        """Bytes received, or None if nothing came within ``timeout``; DeviceLost if it broke."""
        try:
            # Not asyncio.wait_for: on 3.11 it swallows a cancellation that arrives as the
            # item does, and the reader's task then never ends (close() would hang).
            async with asyncio.timeout(timeout):
                item = await self._chunks.get()
        except TimeoutError:
            return None
        if isinstance(item, BaseException):
            raise DeviceLost(f"{self.path}: {item}") from item
        return item

    async def write(self, data: bytes) -> None:
        """Send bytes (in a worker thread); DeviceLost if the port is gone."""
        try:
            await asyncio.to_thread(self.port.write, data)
        except Exception as exc:
            raise DeviceLost(f"{self.path}: write failed: {exc}") from exc

    async def close(self) -> None:
        """Stop the reader thread and close the port."""
        self._stop.set()
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._thread.join(timeout=2.0)
        with contextlib.suppress(Exception):
            self.port.close()


class SerialCardReader:
    """A card shoe on a serial line, satisfying `drivers.protocols.CardReader`.

    ``async with SerialCardReader("/dev/serial/by-id/...") as shoe: async for r in shoe: ...``
    yields `CardReading`, `ShoeStatus` and `DeviceAlert` (connected, disconnected, stalled,
    reconnected, session_changed, ...) until the block ends. Opening never fails because the
    shoe is absent: the reader alerts and keeps trying with jittered backoff.

    ``ack="on_receipt"`` (the default) acknowledges each event as soon as it is decoded.
    ``ack="on_confirm"`` acknowledges a `CardReading` or `ShoeStatus` only after the consumer
    ``await reader.confirm(reading)``: every one of them must be confirmed, in any order, once
    stored; the shoe keeps (and resends) what is not, for this reader or the next one.
    """

    def __init__(
        self,
        url: str | Callable[[], str],
        *,
        name: str | None = None,
        baudrate: int = 115200,
        stall_timeout: float = 3.0,
        identify_timeout: float = 1.0,
        identify_attempts: int = 3,
        backoff: Backoff | None = None,
        read_timeout: float = 0.05,
        write_timeout: float = 1.0,
        nak_holdoff: float = 0.2,
        idle_resync: float = 0.1,
        bad_frame_alert_interval: float = 30.0,
        ack: AckMode = "on_receipt",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if stall_timeout <= 0 or identify_timeout <= 0 or identify_attempts < 1:
            raise ValueError("stall_timeout and identify_timeout must be positive, "
                             "identify_attempts at least 1")
        if ack not in _ACK_MODES:
            raise ValueError(f"ack {ack!r} must be one of {', '.join(_ACK_MODES)}")
        self._url = url
        label = name if name is not None else (url if isinstance(url, str) else "shoe")
        self._link = ShoeLink(label, nak_holdoff=nak_holdoff,
                              bad_frame_alert_interval=bad_frame_alert_interval,
                              ack_on_confirm=ack == "on_confirm")
        self.ack: AckMode = ack
        self._baudrate = baudrate
        self._stall_timeout = stall_timeout
        self._identify_timeout = identify_timeout
        self._identify_attempts = identify_attempts
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._read_timeout = read_timeout
        self._write_timeout = write_timeout
        self._idle_resync = idle_resync
        self._clock = clock
        self._readings: asyncio.Queue[ShoeReading | object] | None = None
        self._task: asyncio.Task[None] | None = None
        self._port: _Port | None = None
        self._connected = False
        self._last_seen: float | None = None
        self._skipped_done = 0  # skipped bytes of closed connections
        self._writing = asyncio.Lock()  # frames go out in the order of their link SEQ

    # ------------------------------------------------------------------ the CardReader protocol

    async def __aenter__(self) -> Self:
        if self._task is not None:
            raise RuntimeError("SerialCardReader is not reentrant")
        self._readings = asyncio.Queue()
        self._task = asyncio.create_task(self._supervise(), name=f"shoe[{self._link.name}]")
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._readings is not None:
            self._readings.put_nowait(_CLOSED)

    def __aiter__(self) -> AsyncIterator[ShoeReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShoeReading]:
        queue = self._readings
        if queue is None:
            raise RuntimeError("use `async with SerialCardReader(...)` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is a ShoeReading

    async def confirm(self, reading: ShoeReading) -> None:
        """The consumer has stored ``reading`` (ack="on_confirm"): acknowledge its event once
        every earlier one is confirmed too. A no-op for alerts and in ack="on_receipt" mode.
        Never raises for the line: if the ACK cannot go out now, the shoe resends the event
        after reconnecting and is acknowledged then."""
        async with self._writing:
            if not self._link.confirm(reading):
                return
            port = self._port
            if port is None or not self._connected:
                return
            try:
                await port.write(self._link.ack_frame())
            except DriverError as exc:
                _log.warning("shoe ACK not sent; the shoe will resend", device=self._link.device,
                             error=str(exc))

    def health(self) -> DeviceHealth:
        """Connected or not, the shoe's identity, when it was last heard, and the counters."""
        ident = self._link.identity
        counters = dict(self._link.counters)
        port = self._port
        counters["skipped_bytes"] = self._skipped_done + (
            port.decoder.stats.skipped_bytes if port is not None else 0)
        counters["unconfirmed"] = self._link.unconfirmed
        return DeviceHealth(
            device=self._link.device,
            connected=self._connected,
            identity=None if ident is None else DeviceIdentity(
                kind="shoe", model=ident.model, serial=ident.serial, firmware=ident.firmware),
            last_seen_mono=self._last_seen,
            counters=counters,
        )

    # ------------------------------------------------------------------ connection management

    def _emit(self, reading: ShoeReading) -> None:
        if isinstance(reading, DeviceAlert):
            _log.warning("shoe alert", device=reading.device, kind=reading.kind,
                         detail=reading.detail)
        assert self._readings is not None
        self._readings.put_nowait(reading)

    async def _supervise(self) -> None:
        counters = self._link.counters
        ever_connected = down_reported = False
        while True:
            try:
                alerts = await self._connect()
            except Exception as exc:
                if not isinstance(exc, DriverError):  # a bug here must not end the stream
                    _log.exception("shoe driver error while connecting")
                if not down_reported:
                    down_reported = True
                    self._emit(self._alert("disconnected", str(exc)))
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._backoff.reset()
            assert self._port is not None
            counters["connects"] += 1
            if ever_connected:
                counters["reconnects"] += 1
            ident = self._link.identity
            assert ident is not None
            self._emit(self._alert(
                "reconnected" if ever_connected else "connected",
                f"{ident.model} serial {ident.serial} firmware {ident.firmware} on "
                f"{self._port.path}, session {ident.session_id:08x}, {ident.reads} cards read"))
            ever_connected, down_reported = True, False
            for alert in alerts:
                self._emit(alert)
            try:
                await self._serve(self._port)
            except _Stalled as exc:
                counters["stalls"] += 1
                self._emit(self._alert("stalled", str(exc)))
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    _log.exception("shoe driver error while serving")
                counters["disconnects"] += 1
                self._emit(self._alert("disconnected", str(exc) or type(exc).__name__))
            finally:
                self._connected = False
                await self._drop_port()
            down_reported = True

    def _alert(self, kind: str, detail: str) -> DeviceAlert:
        return DeviceAlert(device=self._link.device, kind=kind, detail=detail,
                           at_mono=self._clock())

    async def _drop_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            self._skipped_done += port.decoder.stats.skipped_bytes
            await port.close()

    def _resolve(self) -> str:
        if isinstance(self._url, str):
            return self._url
        try:
            path = self._url()
        except Exception as exc:
            raise DeviceNotFound(f"the shoe's path resolver failed: {exc}") from exc
        if not isinstance(path, str) or not path:
            raise DeviceNotFound(f"the shoe's path resolver found no device (got {path!r})")
        return path

    def _open(self, path: str) -> serial.Serial:
        options: dict[str, object] = {"baudrate": self._baudrate, "timeout": self._read_timeout,
                                      "write_timeout": self._write_timeout}
        if "://" not in path:
            options["exclusive"] = True  # a second process on the same shoe is refused
        try:
            return serial.serial_for_url(path, **options)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DeviceNotFound(f"cannot open {path}: {exc}") from exc

    async def _connect(self) -> list[ShoeReading]:
        path = self._resolve()
        opening = asyncio.ensure_future(asyncio.to_thread(self._open, path))
        try:
            handle = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the thread still finishes: close what it opens
            opening.add_done_callback(_close_opened)
            raise
        port = _Port(handle, path, asyncio.get_running_loop())
        self._port = port
        try:
            return await self._handshake(port)
        except BaseException:
            await self._drop_port()
            raise

    async def _handshake(self, port: _Port) -> list[ShoeReading]:
        link = self._link
        link.new_connection()
        for _ in range(self._identify_attempts):
            await port.write(link.identify_frame())
            deadline = self._clock() + self._identify_timeout
            while (remaining := deadline - self._clock()) > 0:
                data = await port.read(remaining)
                if data is not None:
                    port.decoder.feed(data)
                elif port.decoder.flush_partial() is None:  # idle: give up a false start
                    break
                while (event := port.decoder.next_event()) is not None:
                    if isinstance(event, BadFrame):
                        link.count_bad_frame(event)
                    elif isinstance(event, ShoeIdentity):
                        now = self._clock()
                        self._last_seen = now
                        self._connected = True
                        alerts, _ = link.handle(event, now)  # no replies before the first ACK
                        return alerts
        stats = port.decoder.stats
        raise DeviceNotFound(
            f"{port.path}: no identity after {self._identify_attempts} IDENTIFY"
            f" ({stats.frames} good frames, {stats.bad_frames} bad frames)")

    async def _serve(self, port: _Port) -> None:
        await self._drain(port)
        while True:
            assert self._last_seen is not None
            silent_for = self._clock() - self._last_seen
            if silent_for >= self._stall_timeout:
                raise _Stalled(f"{port.path}: nothing heard for {silent_for:.1f} s")
            wait = self._stall_timeout - silent_for
            if port.decoder.buffered:
                wait = min(wait, self._idle_resync)
            data = await port.read(wait)
            if data is not None:
                port.decoder.feed(data)
            elif port.decoder.buffered:  # idle with a frame unfinished: a false start in noise
                gave_up = port.decoder.flush_partial()
                if gave_up is not None:
                    await self._handle(port, gave_up)
            await self._drain(port)

    async def _drain(self, port: _Port) -> None:
        while (event := port.decoder.next_event()) is not None:
            await self._handle(port, event)

    async def _handle(self, port: _Port, event: ShoeMessage | BadFrame) -> None:
        now = self._clock()
        if not isinstance(event, BadFrame):
            self._last_seen = now
        async with self._writing:
            readings, replies = self._link.handle(event, now)
            for reading in readings:
                self._emit(reading)
            for frame in replies:
                await port.write(frame)
