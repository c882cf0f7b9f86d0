"""Keyboard-wedge ID readers in software, as event sources for the real driver
(`drivers.id_wedge.EventSource`, the seam where the evdev device would be):

- `CaptureReplay` replays a recorded capture (`drivers.wedge_capture`: ours or an ``evtest``
  log) at its recorded pace (or faster), as Network UPS Tools' ``dummy-ups`` replays a UPS;
  `replay_capture` opens one from a file.
- `SimulatedWedge` types cards the way a US-layout wedge does (`drivers.wedge_codec.keystrokes`)
  and has the conformance kit's controls (`drivers.adapter.SimulatedIds`): tap, unplug, plug,
  set_fault, inject. Besides `simulators.faults.FAULT_NAMES` (garbage keys before a line, a
  dropped or corrupted line, silence, delay), ``grab_busy`` makes its grab refused, as when
  another process holds the device.

Both are thread-safe: the driver reads them from its worker thread while a test or the kit
taps from another.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import Final, Literal

from drivers.errors import DeviceLost, DeviceNotFound
from drivers.id_codec import encode_tap
from drivers.id_wedge import GrabRefused
from drivers.readings import IdForm
from drivers.wedge_capture import Capture, load_capture
from drivers.wedge_codec import InputEvent, Typed, keystrokes, unmapped_keystroke
from simulators.faults import Faults

__all__ = ["CaptureReplay", "SimulatedWedge", "replay_capture"]

KEY_F13: Final = 183  # a key with no character: what garbage bytes are typed as


class CaptureReplay:
    """A recorded capture as an event source. ``speed`` scales its pace (2.0 twice as fast;
    0 gives everything at once), ``then`` says what follows the last event: "idle" (the
    wedge stays plugged in and quiet) or "unplug" (the device goes away)."""

    def __init__(self, capture: Capture, *, name: str = "capture", speed: float = 1.0,
                 then: Literal["idle", "unplug"] = "idle") -> None:
        if speed < 0:
            raise ValueError("speed must be 0 or more")
        self.capture, self.name, self.speed, self.then = capture, name, speed, then
        self._events = deque(capture.events)
        self._start: tuple[float, float] | None = None  # (monotonic at open, first event's t)
        self._gone = False
        self.done = threading.Event()  # set when every event was given

    def open(self) -> str:
        """Start (or go on with) the replay."""
        if self._gone:
            raise DeviceNotFound(f"the capture {self.name} has ended (unplugged)")
        if self._start is None:
            first = self._events[0].sec if self._events else 0.0
            self._start = (time.monotonic(), first)
        return f"replaying {self.name} ({len(self.capture.events)} events)"

    def _due(self, event: InputEvent) -> float:
        assert self._start is not None
        if self.speed == 0:
            return 0.0
        return self._start[0] + (event.sec - self._start[1]) / self.speed

    def read(self, timeout: float) -> list[InputEvent]:
        """The events whose time has come, waiting up to ``timeout`` for the next."""
        if not self._events:
            self.done.set()
            if self.then == "unplug":
                self._gone = True
                raise DeviceLost(f"the capture {self.name} ended (unplugged)")
            time.sleep(timeout)
            return []
        wait = self._due(self._events[0]) - time.monotonic()
        if wait > 0:
            time.sleep(min(wait, timeout))
        now = time.monotonic()
        out: list[InputEvent] = []
        while self._events and self._due(self._events[0]) <= now:
            out.append(self._events.popleft())
        return out

    def close(self) -> None:
        """Nothing to release."""


def replay_capture(path: str | Path, *, speed: float = 1.0,
                   then: Literal["idle", "unplug"] = "idle") -> CaptureReplay:
    """A capture file as an event source (drivers.wedge_capture.CaptureError if it does not
    read): the conformance kit's replay of a recorded wedge."""
    return CaptureReplay(load_capture(path), name=Path(path).name, speed=speed, then=then)


class SimulatedWedge:
    """A keyboard wedge that types the cards it is tapped with. ``typed`` is what it types
    for a UID: "uid" a bare hex UID (an NFC wedge), "card" the UID behind ``UID:`` (a
    combination reader with that prefix set); ``interval`` the seconds between keys."""

    def __init__(self, *, typed: Typed = "card", interval: float = 0.004, gap: float = 0.05,
                 name: str = "Simulated Wedge", seed: int | None = 0) -> None:
        if interval <= 0 or gap < 0:
            raise ValueError("interval must be positive and gap not negative")
        self.typed, self.interval, self.gap, self.name = typed, interval, gap, name
        self.faults = Faults(seed=seed)
        self.grab_busy = False
        self.plugged = True
        self.opened = False
        self._queue: deque[tuple[float, InputEvent]] = deque()
        self._cond = threading.Condition()
        self._generation = 0  # bumped by unplug: a read in progress sees the device go
        self.stats: dict[str, int] = dict.fromkeys(
            ("taps", "lines", "unplugs", "opens", "grab_refused"), 0)

    # ------------------------------------------------------------------ the event source

    def open(self) -> str:
        """Open and grab (DeviceNotFound unplugged, GrabRefused with ``grab_busy``)."""
        with self._cond:
            if not self.plugged:
                raise DeviceNotFound(f"no input device for {self.name} (unplugged)")
            if self.grab_busy:
                self.stats["grab_refused"] += 1
                raise GrabRefused(f"another process holds an exclusive grab on {self.name}")
            self.opened = True
            self.stats["opens"] += 1
            return f"reading {self.name} (simulated, grabbed)"

    def read(self, timeout: float) -> list[InputEvent]:
        """The typed events whose time has come, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            generation = self._generation
            while True:
                if generation != self._generation or not self.plugged:
                    self.opened = False
                    raise DeviceLost(f"{self.name} was unplugged (ENODEV)")
                now = time.monotonic()
                out: list[InputEvent] = []
                while self._queue and self._queue[0][0] <= now:
                    out.append(self._queue.popleft()[1])
                if out:
                    return out
                if now >= deadline:
                    return []
                due = self._queue[0][0] if self._queue else deadline
                self._cond.wait(max(0.0, min(deadline, due) - now))

    def close(self) -> None:
        """Release the grab."""
        with self._cond:
            self.opened = False

    # ------------------------------------------------------------------ SimulatedIds

    def tap(self, number: str, form: IdForm = "track2") -> None:
        """Swipe or tap a card: type its line as a wedge does (ValueError if the number does
        not fit the form)."""
        line = encode_tap(number, form, ending=b"\n").decode("ascii")
        if form == "uid" and self.typed == "uid":
            line = line.removeprefix("UID:")
        self.stats["taps"] += 1
        self._type_bytes(line.encode("ascii"))

    def type_text(self, text: str, *, enter: bool = True) -> None:
        """Type any text (and Enter), bypassing the faults: a test's raw keystrokes."""
        self._schedule(keystrokes(text, interval=self.interval, enter=enter,
                                  start=time.time()))

    def unplug(self) -> None:
        """Pull the wedge's USB cable: the device and anything not yet typed are gone."""
        with self._cond:
            self.plugged = False
            self._queue.clear()
            self._generation += 1
            self.stats["unplugs"] += 1
            self._cond.notify_all()

    def plug(self) -> None:
        """Plug it back in."""
        with self._cond:
            self.plugged = True
            self._cond.notify_all()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a fault: ``grab_busy``, or one of `simulators.faults.FAULT_NAMES`."""
        if name == "grab_busy":
            self.grab_busy = bool(value)
            return
        self.faults.set(name, value)

    def inject(self, name: str) -> None:
        """One fault on the next tap (`simulators.faults.ONE_SHOT`)."""
        self.faults.inject(name)

    # ------------------------------------------------------------------ typing

    def _type_bytes(self, line: bytes) -> None:
        if not self.plugged:
            return  # typed into nothing, as a wedge unplugged
        start = time.time()
        events: list[InputEvent] = []
        for chunk in self.faults.outgoing(line, reading=True):
            for byte in chunk:
                at = events[-1].sec + self.interval if events else start
                char = chr(byte)
                if char == "\n":
                    events.extend(keystrokes("", start=at, interval=self.interval))
                    self.stats["lines"] += 1
                    continue
                try:
                    events.extend(keystrokes(char, start=at, interval=self.interval,
                                             enter=False))
                except ValueError:
                    events.extend(unmapped_keystroke(KEY_F13, at))
        self._schedule(events, delay=self.faults.delay)

    def _schedule(self, events: list[InputEvent], *, delay: float = 0.0) -> None:
        if not events:
            return
        with self._cond:
            if not self.plugged:
                return
            now = time.monotonic() + delay
            base = max(now, self._queue[-1][0] + self.gap) if self._queue else now
            first = events[0].sec
            for event in events:
                self._queue.append((base + (event.sec - first), event))
            self._cond.notify_all()

    def __repr__(self) -> str:
        pending = len(self._queue)
        return f"SimulatedWedge({self.name!r}, plugged={self.plugged}, pending={pending})"

