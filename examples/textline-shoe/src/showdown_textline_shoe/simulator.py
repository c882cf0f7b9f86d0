"""A text-line shoe in software: it owns a pseudo-terminal and writes one line a card on the
master side, so `showdown_textline_shoe.driver.TextLineShoe` opens the slave path with pyserial
exactly as it opens a USB shoe. It satisfies `drivers.adapter.SimulatedShoe` (the conformance
kit's controls: deal_card, unplug, plug, set_fault, inject).

A card dealt while the shoe is unplugged, or while it is silent, is lost, as it is with the
real thing: the shoe keeps nothing for later. One thread writes the lines (held back by the
"delay" fault) and, with ``idle_interval``, a blank line whenever the shoe has said nothing
for that long (the keep-alive some readers can be set to send). Every public method is
thread-safe and returns at once.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import tty
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, Literal, Self

from game.poker.cards import DECK, Card, parse_card
from showdown_textline_shoe.codec import ENDINGS, STYLES, Style, encode_card

__all__ = ["FAULTS", "ONE_SHOT", "SimulatorError", "TextLineShoeSimulator"]

# The faults `set_fault` switches (the names `simulators.faults` gives them in the project's
# own simulators): probabilities per card line, "delay" seconds, "silent" on or off.
FAULTS: Final = ("corrupt", "drop", "duplicate", "garbage", "repeat", "delay", "silent")
# The faults `inject` applies to the next card line only.
ONE_SHOT: Final = ("corrupt", "drop", "duplicate", "garbage", "repeat")
_PROBABILITIES: Final = ("corrupt", "drop", "duplicate", "garbage", "repeat")
# Bytes a garbled character becomes: never a rank, a suit or a blank, so a garbled line is
# always a bad line (a line garbled into another card cannot be told by any text reader).
_GARBLE: Final = b"#%*?@^~!$&"
_STATS: Final = ("cards", "lines_sent", "idle_lines", "garbage_lines", "corrupted",
                 "duplicated", "lost_dropped", "lost_silent", "lost_unplugged", "lost_bytes",
                 "unplugs", "plugs")


class SimulatorError(Exception):
    """A request the simulated shoe cannot carry out (not running, a fault unknown)."""


@dataclass(slots=True)
class _Faults:
    corrupt: float = 0.0  # a card line has one character garbled (a bad line)
    drop: float = 0.0  # a card is not read at all (no line)
    duplicate: float = 0.0  # a card line is sent twice
    garbage: float = 0.0  # a line of noise goes out before a card line
    repeat: float = 0.0  # the shoe reads a card twice (its line twice, as duplicate)
    delay: float = 0.0  # seconds every line is held back
    silent: bool = False  # the shoe sends nothing (hung firmware): cards are lost
    once: deque[str] = field(default_factory=deque)


class TextLineShoeSimulator:
    """A simulated text-line shoe on a pty; use as a context manager.

    ``seed`` seeds its deck (a fresh shuffle each 52 cards); ``style`` is how it writes a card
    (`codec.STYLES`, or "mixed": a style drawn for each card), ``ending`` its line end;
    ``idle_interval`` > 0 sends a blank line after that many seconds of silence. ``path`` is
    the pty's slave path while plugged in (None otherwise; a new path at each plug, as a USB
    re-enumeration gives); ``stats`` counts what happened to the lines.
    """

    def __init__(self, *, seed: int = 0, style: Style | Literal["mixed"] = "upper",
                 ending: bytes = b"\r\n", idle_interval: float = 0.0) -> None:
        if style != "mixed" and style not in STYLES:
            raise ValueError(f"style {style!r} must be one of {', '.join(STYLES)} or mixed")
        if ending not in ENDINGS:
            raise ValueError(f"ending {ending!r} must be CR, LF or CRLF")
        if idle_interval < 0:
            raise ValueError(f"idle_interval {idle_interval} must be 0 (none) or positive")
        self.seed = seed
        self.style = style
        self.ending = ending
        self.idle_interval = idle_interval
        self.stats: dict[str, int] = dict.fromkeys(_STATS, 0)
        self.dealt: list[Card] = []  # every card that left the shoe, read or not
        self._deck_rng = random.Random(seed)
        self._rng = random.Random(f"{seed}:faults")
        self._deck: list[Card] = []
        self._faults = _Faults()
        self._master: int | None = None
        self._slave: int | None = None
        self.path: str | None = None
        self._outbox: deque[tuple[float, bytes]] = deque()
        self._last_sent = 0.0
        self._running = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Switch the shoe on, plugged in: open its pty, start its thread."""
        with self._cond:
            if self._running:
                raise SimulatorError("the simulated shoe is already running")
            self._open_pty()
            self._running = True
            self._last_sent = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="text-line-shoe-sim",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Switch it off: stop the thread, close the pty."""
        with self._cond:
            self._running = False
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        with self._cond:
            self._close_pty()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------------------- the shoe

    def deal(self, n: int = 1) -> list[Card]:
        """The next ``n`` cards of the shoe's shuffled decks leave it (read as the faults
        allow); returns them."""
        with self._cond:
            out = []
            for _ in range(n):
                if not self._deck:
                    self._deck = list(DECK)
                    self._deck_rng.shuffle(self._deck)
                out.append(self._read(self._deck.pop()))
            return out

    def deal_card(self, card: Card | str) -> Card:
        """This exact card leaves the shoe ("AS", or a `Card`); returns it."""
        chosen = parse_card(card) if isinstance(card, str) else card
        with self._cond:
            return self._read(chosen)

    def send_raw(self, data: bytes) -> None:
        """Bytes on the line as they are (noise, a half line, a reader's own messages)."""
        with self._cond:
            self._need_running()
            self._queue(data)

    # ------------------------------------------------------------------- the kit's controls

    def unplug(self) -> None:
        """Pull the cable: the pty closes and the driver's port fails; lines not yet written
        are lost."""
        with self._cond:
            self._need_running()
            if self._master is not None:
                self._close_pty()
                self.stats["unplugs"] += 1

    def plug(self) -> None:
        """Plug it back in: a new pty (its path differs)."""
        with self._cond:
            self._need_running()
            if self._master is None:
                self._open_pty()
                self.stats["plugs"] += 1
                self._last_sent = time.monotonic()
                self._cond.notify_all()

    @property
    def plugged(self) -> bool:
        """Whether the shoe is plugged in (its pty open)."""
        return self._master is not None

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a fault (`FAULTS`): a probability 0..1, "delay" seconds 0..60, "silent" on
        or off; ValueError naming the fault when the name or value is wrong."""
        if name not in FAULTS:
            raise ValueError(f"the text-line shoe has no fault {name!r}; its faults are"
                             f" {', '.join(FAULTS)} (it receives nothing, so nothing incoming"
                             " can be lost)")
        if name == "silent":
            if not isinstance(value, bool | int) or value not in (0, 1):
                raise ValueError(f"fault silent is on or off, got {value!r}")
            with self._cond:
                self._faults.silent = bool(value)
                self._cond.notify_all()
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"fault {name} needs a number, got {value!r}")
        high = 60.0 if name == "delay" else 1.0
        if not 0.0 <= value <= high:
            raise ValueError(f"fault {name} must be within 0..{high:g}, got {value!r}")
        with self._cond:
            setattr(self._faults, name, float(value))

    def inject(self, name: str) -> None:
        """One fault (`ONE_SHOT`) on the next card line."""
        if name not in ONE_SHOT:
            raise ValueError(f"unknown one-shot fault {name!r}; one of {', '.join(ONE_SHOT)}")
        with self._cond:
            self._faults.once.append(name)

    def clear_faults(self) -> None:
        """Back to a perfect shoe: every fault off, no one-shot pending."""
        with self._cond:
            self._faults = _Faults()
            self._cond.notify_all()

    # ----------------------------------------------------------------------------- lines

    def _need_running(self) -> None:
        if not self._running:
            raise SimulatorError("the simulated shoe is not running")

    def _read(self, card: Card) -> Card:
        """The shoe reads a card (under the lock): its line goes out as the faults say."""
        self._need_running()
        self.dealt.append(card)
        self.stats["cards"] += 1
        faults = self._faults
        once = faults.once.popleft() if faults.once else None
        if self._master is None:
            self.stats["lost_unplugged"] += 1
            return card
        if faults.silent:
            self.stats["lost_silent"] += 1
            return card
        if once == "drop" or self._roll(faults.drop):
            self.stats["lost_dropped"] += 1
            return card
        style = self.style if self.style != "mixed" else self._rng.choice(STYLES)
        line = encode_card(card, style=style, ending=self.ending)
        if once == "garbage" or self._roll(faults.garbage):
            self.stats["garbage_lines"] += 1
            noise = bytes(b | 0x80 for b in self._rng.randbytes(self._rng.randint(1, 16)))
            self._queue(noise + self.ending)  # high bytes only: never a card, never a line end
        if once == "corrupt" or self._roll(faults.corrupt):
            self.stats["corrupted"] += 1
            body = bytearray(line[:-len(self.ending)])
            body[self._rng.randrange(len(body))] = self._rng.choice(_GARBLE)
            line = bytes(body) + self.ending
        self._queue(line)
        if once in ("duplicate", "repeat") or self._roll(faults.duplicate) \
                or self._roll(faults.repeat):
            self.stats["duplicated"] += 1
            self._queue(line)
        return card

    def _roll(self, probability: float) -> bool:
        return probability > 0 and self._rng.random() < probability

    def _queue(self, data: bytes) -> None:
        self._outbox.append((time.monotonic() + self._faults.delay, data))
        self._cond.notify_all()

    def _run(self) -> None:
        with self._cond:
            while self._running:
                now = time.monotonic()
                while self._outbox and self._outbox[0][0] <= now:
                    self._write(self._outbox.popleft()[1])
                idle_due = self._last_sent + self.idle_interval
                if self.idle_interval and self._master is not None and now >= idle_due:
                    if not self._faults.silent:
                        self.stats["idle_lines"] += 1
                        self._write(self.ending)
                    self._last_sent = now
                    idle_due = now + self.idle_interval
                waits = [1.0]
                if self._outbox:
                    waits.append(self._outbox[0][0] - now)
                if self.idle_interval:
                    waits.append(idle_due - now)
                self._cond.wait(max(0.0, min(waits)))

    def _write(self, data: bytes) -> None:
        """On the thread, under the lock: the bytes onto the pty (lost when unplugged)."""
        self._last_sent = time.monotonic()
        if self._master is None:
            self.stats["lost_bytes"] += len(data)
            return
        self.stats["lines_sent"] += data.count(self.ending[-1:])
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._master, view):]
            except OSError:  # nobody reading and the pty is full: the bytes are lost
                self.stats["lost_bytes"] += len(view)
                break

    # ----------------------------------------------------------------------------- the pty

    def _open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing before the driver sets its own modes
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)

    def _close_pty(self) -> None:
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None
        self.path = None
        self._outbox.clear()
