"""A card shoe in software: it owns a pseudo-terminal and speaks the shoe protocol on the master
side, so the real driver opens the slave path with pyserial exactly as it opens a USB shoe.

The simulated shoe runs in its own thread (it is the "hardware"); every public method is
thread-safe and may be called from an event loop (it hands the work to the shoe's thread and
waits a moment for the result). Decks are seeded shuffles (``random.Random(seed)``, the seed is
logged), another deck mode of `simulators.decks` (``deck_mode``: factory order, one riffle, the
same order at every load) or scripted card lists. Faults (`simulators.faults.Faults`) switch
at run time; `disconnect`/`reconnect` close the pty and open a new one (a new path, as a USB
re-enumeration gives), re-pointing an optional stable symlink as /dev/serial/by-id does.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
import tty
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Final, Self, TypeVar

import structlog

from drivers.readings import ShoeState
from drivers.shoe_codec import (
    DETAIL_NONE,
    DETAIL_QUEUE_FULL,
    PROTOCOL_MINOR,
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
from game.poker.cards import DECK, Card, parse_cards
from simulators.decks import DeckMode, DeckSource
from simulators.faults import Faults

__all__ = ["ShoeSimulator", "ShoeSimulatorError"]

_log = structlog.get_logger("simulators.shoe")
_T = TypeVar("_T")
_Event = CardReport | StatusReport
_CALL_TIMEOUT: Final = 5.0
_NO_DEAL: Final = frozenset({ShoeState.JAM, ShoeState.EMPTY})
_POWER_ON: Final = random.SystemRandom()  # session ids: never from the seed (see _boot)


class ShoeSimulatorError(Exception):
    """A request the simulated shoe cannot carry out (jammed, queue full, not running...)."""


class ShoeSimulator:
    """A simulated card shoe on a pty; use as a context manager (``with ShoeSimulator() as s``)."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        cards: Sequence[Card] | str | None = None,
        decks: int = 1,
        faults: Faults | None = None,
        serial: str = "SIM-000001",
        model: str = "HUPS-SIM",
        firmware: str = "sim-1.0",
        heartbeat_interval: float = 1.0,
        rto: float = 0.25,
        rto_max: float = 2.0,
        queue_capacity: int = 64,
        link_path: str | Path | None = None,
        quality: tuple[int, int] = (90, 100),
        deck_mode: DeckMode = "shuffled",
    ) -> None:
        if decks < 1:
            raise ValueError(f"decks {decks} must be at least 1")
        if heartbeat_interval <= 0 or rto <= 0 or rto_max < rto:
            raise ValueError("heartbeat_interval and rto must be positive, rto_max >= rto")
        if not 0 <= quality[0] <= quality[1] <= 100:
            raise ValueError(f"quality range {quality} must be within 0..100")
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
        self._rng = random.Random(self.seed)
        self._aux = random.Random(f"{self.seed}:aux")
        self.faults = faults if faults is not None else Faults(seed=self.seed)
        self.serial, self.model, self.firmware = serial, model, firmware
        self.heartbeat_interval = heartbeat_interval
        self.rto, self.rto_max = rto, rto_max
        self.queue_capacity = queue_capacity
        self.link_path = Path(link_path) if link_path is not None else None
        self._quality = quality
        self._decks = decks
        # Other deck modes (simulators.decks) draw from the same seeded generator; "shuffled"
        # keeps the shoe's own shuffle of all its decks, as before.
        self._source = None if deck_mode == "shuffled" else DeckSource(deck_mode, rng=self._rng)
        self._script = parse_cards(cards, distinct=False) if isinstance(cards, str) else cards
        self._deck: list[Card] = []
        self._load(self._script)
        # The shoe's protocol state (touched only by the shoe thread once it runs).
        self.session_id = 0
        self._reads = 0
        self._next_evn = 0
        self._seq = 0
        self._state = ShoeState.READY
        self._jam_detail = DETAIL_NONE
        self._unacked: OrderedDict[int, _Event] = OrderedDict()
        self._cards_by_read: dict[int, CardReport] = {}
        self._rto_now = rto
        self._rto_due: float | None = None
        self._next_heartbeat = 0.0
        self._outbox: deque[tuple[float, bytes]] = deque()
        self._decoder = ShoeDecoder(sender="host")
        self.dealt: list[tuple[int, Card]] = []  # (read_index, card) of every read this session
        self.stats: dict[str, int] = dict.fromkeys(
            ("frames_sent", "retransmissions", "heartbeats", "identities", "identifies_in",
             "acks_in", "naks_in", "bad_frames_in", "lost_incoming", "write_overflows",
             "cards", "statuses", "repeats", "power_cycles", "disconnects"), 0)
        # Ports and the thread.
        self.path: str | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._calls: deque[tuple[Callable[[], object], Future[object]]] = deque()
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._crash: BaseException | None = None

    # ----------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Power the shoe on: open the pty, start the shoe thread, announce the session."""
        if self._thread is not None:
            raise ShoeSimulatorError("the simulator is already running")
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._open_pty()
        self._boot(time.monotonic())
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="shoe-simulator", daemon=True)
        self._thread.start()
        _log.info("shoe simulator on", path=self.path, link=str(self.link_path or ""),
                  seed=self.seed, session=self.session_id, serial=self.serial)
        return self

    def stop(self) -> None:
        """Power off: stop the thread, close the pty, remove the symlink."""
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        self._wake()
        thread.join(timeout=_CALL_TIMEOUT)
        self._thread = None
        self._close_pty()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- the API

    def deal(self, n: int = 1) -> list[Card]:
        """Draw the next ``n`` cards from the deck; fewer if it runs out (the shoe goes EMPTY)."""
        return self._call(lambda: self._deal(n))

    def deal_card(self, card: Card | str) -> Card:
        """Draw this exact card, whatever the deck holds (a second deck's card, a planted card)."""
        chosen = parse_cards([card] if isinstance(card, str) else [str(card)])[0]
        return self._call(lambda: self._read_card(chosen))

    def unreadable(self) -> Card | None:
        """The next card leaves the shoe unread: STATUS unreadable_card, no read index used."""
        return self._call(self._unreadable)

    def set_state(self, state: ShoeState | str, detail: int = DETAIL_NONE) -> None:
        """Put the shoe in a state (cover_open, jam, empty, ready...); reported if it changed."""
        new = ShoeState(state)
        self._call(lambda: self._set_state(new, detail))

    def load(self, cards: Sequence[Card] | str | None = None) -> None:
        """Load a new shoe: a fresh seeded shuffle (or these cards) and state READY."""
        script = parse_cards(cards, distinct=False) if isinstance(cards, str) else cards

        def do() -> None:
            self._load(script)
            self._set_state(ShoeState.READY, DETAIL_NONE)

        self._call(do)

    def resend_read(self, read_index: int) -> None:
        """A card read twice: send the report of ``read_index`` again as a new frame."""
        self._call(lambda: self._resend_read(read_index))

    def disconnect(self) -> None:
        """Unplug: close the pty (the path vanishes, the symlink is removed); state is kept."""
        self._call(self._disconnect)

    def reconnect(self) -> str:
        """Plug back in on a new pty; returns the new path (the symlink now points there)."""
        return self._call(self._reconnect)

    def replug(self) -> str:
        """Re-enumerate: a new pty (a new path) appears before the old one closes, as a USB shoe
        that comes back while the host still holds its dead handle. State is kept."""
        return self._call(self._replug)

    def power_cycle(self) -> str:
        """Power loss and back: unacknowledged events are lost, a new session starts at read 0."""
        return self._call(self._power_cycle)

    # The controls of `drivers.adapter.SimulatedDevice` (the conformance kit's view).

    def unplug(self) -> None:
        """The shoe goes away (`disconnect`)."""
        self.disconnect()

    def plug(self) -> None:
        """The shoe comes back (`reconnect`, unless it is plugged in already)."""
        if self.path is None:
            self.reconnect()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a fault of `simulators.faults.Faults` ("silent", "garbage", ...)."""
        self.faults.set(name, value)

    def inject(self, name: str) -> None:
        """One fault (`simulators.faults.ONE_SHOT`) on the next frame carrying a reading."""
        self.faults.inject(name)

    @property
    def state(self) -> ShoeState:
        """The shoe's current state."""
        return self._state

    @property
    def reads(self) -> int:
        """Cards read this session (the next read index)."""
        return self._reads

    def unacked(self) -> int:
        """How many reliable events the host has not acknowledged yet."""
        return self._call(lambda: len(self._unacked))

    def remaining(self) -> int:
        """Cards left in the deck."""
        return self._call(lambda: len(self._deck))

    # ----------------------------------------------------------------------------- the thread

    def _call(self, fn: Callable[[], _T]) -> _T:
        thread = self._thread
        if thread is None or threading.current_thread() is thread:
            return fn()
        if not thread.is_alive():
            raise ShoeSimulatorError(f"the simulator thread died: {self._crash!r}")
        future: Future[object] = Future()
        self._calls.append((fn, future))
        self._wake()
        return future.result(timeout=_CALL_TIMEOUT)  # type: ignore[return-value]

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"!")

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # a simulator bug: keep it visible, fail the callers
            self._crash = exc
            _log.exception("shoe simulator crashed")
        while self._calls:
            self._calls.popleft()[1].set_exception(ShoeSimulatorError("simulator stopped"))

    def _loop(self) -> None:
        while not self._stopping:
            now = time.monotonic()
            while self._calls:
                fn, future = self._calls.popleft()
                try:
                    future.set_result(fn())
                except Exception as exc:
                    future.set_exception(exc)
            self._timers(now)
            self._flush(now)
            fds = [self._wake_r] if self._master is None else [self._wake_r, self._master]
            timeout = max(0.0, self._next_wakeup(now) - time.monotonic())
            readable, _, _ = select.select(fds, [], [], timeout)
            if self._wake_r in readable:
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 4096)
            if self._master is not None and self._master in readable:
                self._receive(time.monotonic())

    def _next_wakeup(self, now: float) -> float:
        due = [now + 0.5]
        if self._master is not None:  # unplugged: no heartbeats, no retransmissions
            due.append(self._next_heartbeat)
            if self._rto_due is not None:
                due.append(self._rto_due)
        if self._outbox:
            due.append(self._outbox[0][0])
        return min(due)

    def _timers(self, now: float) -> None:
        if self._master is not None and now >= self._next_heartbeat:
            self._next_heartbeat = now + self.heartbeat_interval
            self.stats["heartbeats"] += 1
            self._send(Heartbeat(state=self._state, reads=self._reads, next_evn=self._next_evn),
                       now, reading=False)
        if self._master is not None and self._rto_due is not None and now >= self._rto_due:
            self._retransmit_all(now)
            self._rto_now = min(self._rto_now * 2, self.rto_max)
            self._rto_due = now + self._rto_now

    def _receive(self, now: float) -> None:
        try:
            data = os.read(self._master, 4096) if self._master is not None else b""
        except OSError:
            return
        self._decoder.feed(data)
        while (event := self._decoder.next_event()) is not None:
            if isinstance(event, BadFrame):
                self.stats["bad_frames_in"] += 1
            elif self.faults.lose_incoming():
                self.stats["lost_incoming"] += 1
            else:
                self._on_host(event, now)

    def _on_host(self, message: ShoeMessage, now: float) -> None:
        if isinstance(message, Identify):
            self.stats["identifies_in"] += 1
            self._send_identity(now)
            self._retransmit_all(now)
        elif isinstance(message, Ack | Nak):
            self.stats["acks_in" if isinstance(message, Ack) else "naks_in"] += 1
            acked = [evn for evn in self._unacked if evn < message.next_evn]
            for evn in acked:
                del self._unacked[evn]
            if acked:
                self._rto_now = self.rto
                self._rto_due = now + self.rto if self._unacked else None
            if isinstance(message, Nak):
                self._retransmit_all(now)
            if (self._state is ShoeState.JAM and self._jam_detail == DETAIL_QUEUE_FULL
                    and len(self._unacked) < self.queue_capacity):
                self._set_state(ShoeState.READY, DETAIL_NONE)

    # ----------------------------------------------------------------------------- the shoe

    def _load(self, script: Sequence[Card] | None) -> None:
        if script is not None:
            self._deck = list(script)
        elif self._source is not None:
            self._deck = [c for _ in range(self._decks) for c in self._source.next_deck()]
        else:
            deck = list(DECK) * self._decks
            self._rng.shuffle(deck)
            self._deck = deck
        self._deck.reverse()  # pop() from the end deals the first card first

    def _boot(self, now: float) -> None:
        # A real shoe draws a random SESSION_ID at every power-on. A simulator started again
        # with the same seed (the table daemon restarted) is a new power-on too, so its session
        # must not repeat: the daemon would take its reads for ones it journaled before. The
        # seeded draw is still made so that the rest of the seeded stream stays as it was.
        self._aux.randrange(1, 2**32)
        session = self.session_id
        while session in (0, self.session_id):
            session = _POWER_ON.randrange(1, 2**32)
        self.session_id = session
        self._reads = self._next_evn = self._seq = 0
        self._unacked.clear()
        self._cards_by_read.clear()
        self._outbox.clear()
        self.dealt = []
        self._rto_now, self._rto_due = self.rto, None
        self._next_heartbeat = now
        self._state = ShoeState.READY if self._deck else ShoeState.EMPTY
        self._send_identity(now)
        self._add_event(StatusReport(evn=0, state=self._state, detail=DETAIL_NONE, reads=0), now)

    def _deal(self, n: int) -> list[Card]:
        out: list[Card] = []
        for _ in range(n):
            if not self._deck:
                break
            out.append(self._read_card(self._deck[-1]))
            self._deck.pop()
        if not self._deck and self._state is not ShoeState.EMPTY:
            self._set_state(ShoeState.EMPTY, DETAIL_NONE)
        return out

    def _read_card(self, card: Card) -> Card:
        now = time.monotonic()
        self._ready_to_deal()
        quality = self._aux.randint(*self._quality)
        report = CardReport(evn=self._next_evn, read_index=self._reads, card=card,
                            quality=quality)
        self._reads += 1
        self._cards_by_read[report.read_index] = report
        self.dealt.append((report.read_index, card))
        self.stats["cards"] += 1
        self._add_event(report, now)
        if self.faults.repeat_reading():
            self.stats["repeats"] += 1
            self._send(report, now, reading=True)
        return card

    def _ready_to_deal(self) -> None:
        if self._state in _NO_DEAL:
            raise ShoeSimulatorError(f"the shoe reports {self._state.value}; no card can be drawn")
        if len(self._unacked) >= self.queue_capacity:
            self._jam_detail = DETAIL_QUEUE_FULL
            self._set_state(ShoeState.JAM, DETAIL_QUEUE_FULL)
            raise ShoeSimulatorError("the shoe's event queue is full (the host is not acking)")
        if self._state is not ShoeState.READY:
            self._set_state(ShoeState.READY, DETAIL_NONE)

    def _unreadable(self) -> Card | None:
        if not self._deck:
            return None
        self._ready_to_deal()
        card = self._deck.pop()
        self._set_state(ShoeState.UNREADABLE_CARD, DETAIL_NONE)
        return card

    def _set_state(self, state: ShoeState, detail: int) -> None:
        if state is self._state and state is not ShoeState.UNREADABLE_CARD:
            return
        self._state = state
        self._jam_detail = detail if state is ShoeState.JAM else DETAIL_NONE
        self.stats["statuses"] += 1
        self._add_event(StatusReport(evn=self._next_evn, state=state, detail=detail,
                                     reads=self._reads), time.monotonic())

    def _resend_read(self, read_index: int) -> None:
        report = self._cards_by_read.get(read_index)
        if report is None:
            raise ShoeSimulatorError(f"no card with read index {read_index} this session")
        self.stats["repeats"] += 1
        self._send(report, time.monotonic(), reading=True)

    def _add_event(self, event: _Event, now: float) -> None:
        self._next_evn += 1
        self._unacked[event.evn] = event
        if self._rto_due is None:
            self._rto_due = now + self._rto_now
        self._send(event, now, reading=True)

    def _retransmit_all(self, now: float) -> None:
        if self._master is None:
            return
        for event in self._unacked.values():
            self.stats["retransmissions"] += 1
            self._send(event, now, reading=True, retransmit=True)
        if self._unacked:
            self._rto_due = now + self._rto_now

    def _send_identity(self, now: float) -> None:
        self.stats["identities"] += 1
        unacked_from = next(iter(self._unacked), self._next_evn)
        self._send(ShoeIdentity(session_id=self.session_id, proto_minor=PROTOCOL_MINOR,
                                heartbeat_ms=round(self.heartbeat_interval * 1000),
                                reads=self._reads, unacked_from=unacked_from, model=self.model,
                                serial=self.serial, firmware=self.firmware), now, reading=False)

    def _send(self, message: ShoeMessage, now: float, *, reading: bool,
              retransmit: bool = False) -> None:
        frame = encode(replace(message, seq=self._seq, retransmit=retransmit))
        self._seq = (self._seq + 1) & 0xFF
        if self._master is None:
            return
        self.stats["frames_sent"] += 1
        due = now + self.faults.delay
        for chunk in self.faults.outgoing(frame, reading=reading):
            self._outbox.append((due, chunk))
        self._flush(now)

    def _flush(self, now: float) -> None:
        while self._outbox and self._outbox[0][0] <= now:
            _, chunk = self._outbox.popleft()
            if self._master is None:
                continue
            view = memoryview(chunk)
            while view:
                try:
                    view = view[os.write(self._master, view):]
                except OSError:  # nobody reading and the pty is full: the bytes are lost
                    self.stats["write_overflows"] += 1
                    break

    # ----------------------------------------------------------------------------- the port

    def _open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing before the driver sets its own modes
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)
        if self.link_path is not None:
            tmp = self.link_path.with_name(f".{self.link_path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(self.path)
            tmp.replace(self.link_path)  # atomic re-point, like udev's by-id links

    def _close_pty(self) -> None:
        if self.link_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link_path.unlink()
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None
        self.path = None
        self._outbox.clear()
        self._decoder.reset()

    def _disconnect(self) -> None:
        if self._master is not None:
            self.stats["disconnects"] += 1
            self._close_pty()

    def _reconnect(self) -> str:
        if self._master is None:
            self._open_pty()
            self._next_heartbeat = time.monotonic()
        assert self.path is not None
        return self.path

    def _replug(self) -> str:
        old = (self._master, self._slave)
        self._master = self._slave = None
        self._open_pty()  # the old pty still exists: the new one gets another number
        for fd in old:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.stats["disconnects"] += 1
        self._outbox.clear()
        self._decoder.reset()
        self._next_heartbeat = time.monotonic()
        assert self.path is not None
        return self.path

    def _power_cycle(self) -> str:
        self.stats["power_cycles"] += 1
        self._close_pty()
        self._open_pty()
        self._boot(time.monotonic())
        _log.info("shoe simulator power cycled", path=self.path, session=self.session_id)
        return self.path or ""
