"""A PC/SC ID reader in software, as the conformance kit and a simulated table drive one
(`drivers.adapter.SimulatedIds`): a private pcscd with vsmartcard's virtual reader
(`simulators.pcscd_lab.PcscdLab`) and one contactless card on it
(`simulators.vpcd_card.VpcdCard`).

``tap(uid)`` lays a card with that UID on the reader and takes it away once the reader has
asked it for its UID (as a patron lifts the card at the beep), or after ``dwell`` seconds if
nobody asks (taps queue up and play one after the other, on a thread of their own, so `tap`
never blocks); ``unplug`` stops pcscd (the readers and the service go away, as when pcscd dies or
the reader's USB is pulled), ``plug`` starts it again on the same port and socket.
"""

from __future__ import annotations

import queue
import threading
import time
from types import TracebackType
from typing import Final, Self

from drivers.id_codec import problem
from drivers.readings import IdForm
from simulators.pcscd_lab import READER_NAME, PcscdLab
from simulators.vpcd_card import VpcdCard

__all__ = ["CARD_FAULTS", "ONE_SHOT", "PcscReaderSimulator"]

CARD_FAULTS: Final = ("unsupported", "garbage", "drop", "silent")  # what `set_fault` takes
ONE_SHOT: Final = ("unsupported", "garbage", "drop")  # what `inject` takes
_STOP: Final = object()


class PcscReaderSimulator:
    """pcscd + vpcd + a card; a context manager. ``reader_name`` is the reader to configure
    (``[id_reader] reader``); ``dwell`` the longest a tap holds the card on a reader that does
    not ask for its UID; ``hold`` how long it stays after being asked; ``gap`` the time
    between taps (pcscd polls a virtual reader about every 0.4 s: a gap shorter than that may
    go unseen, as a card swapped too quickly)."""

    def __init__(self, *, dwell: float = 5.0, hold: float = 0.1, gap: float = 0.6,
                 debug: bool = False) -> None:
        if dwell <= 0 or gap <= 0 or hold < 0:
            raise ValueError("dwell and gap must be positive, hold not negative")
        self.dwell, self.hold, self.gap = dwell, hold, gap
        self.lab = PcscdLab(debug=debug)
        self.reader_name = READER_NAME
        self.card: VpcdCard | None = None
        self._taps: queue.SimpleQueue[str | object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()
        self.stats: dict[str, int] = dict.fromkeys(("taps", "unplugs"), 0)

    def start(self) -> Self:
        """Start pcscd and the tapping thread."""
        self.lab.start()
        self.card = VpcdCard("04000000", port=self.lab.port)
        self._thread = threading.Thread(target=self._play, daemon=True, name="pcsc-taps")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Take the card away, stop the thread and pcscd."""
        if self._thread is not None:
            self._taps.put(_STOP)
            self._thread.join(timeout=5.0)
            self._thread = None
        if self.card is not None:
            self.card.withdraw()
        self.lab.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ SimulatedIds

    def tap(self, number: str, form: IdForm = "uid") -> None:
        """Lay a card with this UID (hex) on the reader; ValueError for anything but a UID
        (a PC/SC reader reads no magstripe and no printed number)."""
        if form != "uid":
            raise ValueError(f"a PC/SC reader reads a card's UID, not a {form} number")
        uid = number.upper()
        if (why := problem(uid, "uid")) is not None:
            raise ValueError(why)
        self._idle.clear()
        self._taps.put(uid)
        self.stats["taps"] += 1

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until every tap given has been played (True), or the timeout."""
        return self._idle.wait(timeout)

    def unplug(self) -> None:
        """pcscd goes away (the service and its readers)."""
        if self.card is not None:
            self.card.withdraw()
        self.lab.stop()
        self.stats["unplugs"] += 1

    def plug(self) -> None:
        """pcscd comes back, with the same reader."""
        self.lab.start()

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a card fault: ``unsupported`` (GET DATA answered 6A 81), ``garbage`` (one
        byte and no status word), ``drop`` (the card leaves instead of answering), ``silent``
        (the reader never sees the card: no ATR)."""
        card = self._need_card()
        if name not in CARD_FAULTS:
            raise ValueError(f"unknown fault {name!r}; faults are {', '.join(CARD_FAULTS)}")
        card.faults[name] = bool(value)

    def inject(self, name: str) -> None:
        """One card fault (`ONE_SHOT`) on the next GET DATA."""
        if name not in ONE_SHOT:
            raise ValueError(f"unknown one-shot fault {name!r}; one of {', '.join(ONE_SHOT)}")
        self._need_card().once(name)

    def _need_card(self) -> VpcdCard:
        if self.card is None:
            raise RuntimeError("the simulated PC/SC reader is not started")
        return self.card

    def _play(self) -> None:
        while (uid := self._taps.get()) is not _STOP:
            card = self._need_card()
            assert isinstance(uid, str)
            card.uid = uid
            try:
                card.present()
            except OSError:
                pass  # pcscd is down (unplugged): the tap goes unseen, as on hardware
            else:
                deadline = time.monotonic() + self.dwell
                while card.present_now and time.monotonic() < deadline:
                    if card.asked.wait(0.05):  # asked for its UID: lifted at the beep
                        time.sleep(self.hold)
                        break
                card.withdraw()  # (a card the reader dropped is gone already)
            time.sleep(self.gap)
            if self._taps.empty():
                self._idle.set()
