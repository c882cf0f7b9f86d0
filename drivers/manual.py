"""Manual card entry (promotion rule 58: when the shoe fails, "another suitable device or method"
is used): the dealer keys each card, and the readings are marked ``source="manual"``.

`ManualCardReader` is one more `drivers.protocols.CardReader`; the composition root swaps it in
for the shoe, and nothing downstream changes except the ``source`` and ``device`` of readings.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Final, Self

from drivers.protocols import ShoeReading
from drivers.readings import CardReading, DeviceAlert, DeviceHealth, ShoeState, ShoeStatus
from game.poker.cards import Card, parse_card

__all__ = ["MANUAL_QUALITY", "ManualCardReader"]

MANUAL_QUALITY: Final = 100  # the dealer's reading is taken as certain; the audit trail says who
_MAX_OPERATOR: Final = 64
_CLOSED: Final = object()


class ManualCardReader:
    """Cards keyed by the dealer, one `CardReading` each, in the order keyed.

    ``read_index`` counts keyed cards from 0 for the life of this reader; ``device`` is
    ``"manual:<operator>"`` so every reading names who keyed it. A card keyed twice is passed on
    (the game refuses the duplicate and says so), exactly as a shoe's genuine double is.
    """

    def __init__(self, *, name: str = "manual",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._clock = clock
        self._readings: asyncio.Queue[ShoeReading | object] | None = None
        self._next_index = 0
        self._operators: set[str] = set()
        self._opened_at: float | None = None
        self._last_keyed: float | None = None

    async def __aenter__(self) -> Self:
        if self._readings is not None:
            raise RuntimeError("ManualCardReader is not reentrant")
        self._readings = asyncio.Queue()
        self._opened_at = self._clock()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._readings is not None:
            self._readings.put_nowait(_CLOSED)
        self._readings = None

    def __aiter__(self) -> AsyncIterator[ShoeReading]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShoeReading]:
        queue = self._readings
        if queue is None:
            raise RuntimeError("use `async with ManualCardReader()` before iterating")
        while (item := await queue.get()) is not _CLOSED:
            yield item  # type: ignore[misc]  # everything but _CLOSED is a ShoeReading

    async def key_card(self, card: str | Card, *, operator: str) -> CardReading:
        """The dealer keys one card ("Ah", "10d", a Card); InvalidCard if it is not a card."""
        who = _operator(operator)
        chosen = parse_card(card) if isinstance(card, str) else _card(card)
        reading = CardReading(card=chosen, read_index=self._next_index, quality=MANUAL_QUALITY,
                           device=f"manual:{who}", source="manual", at_mono=self._clock())
        self._queue().put_nowait(reading)
        self._next_index += 1
        self._operators.add(who)
        self._last_keyed = reading.at_mono
        return reading

    async def key_status(self, state: ShoeState | str, *, operator: str,
                         detail: str = "") -> ShoeStatus:
        """The dealer reports the table's state by hand (e.g. "empty" when the shoe is done)."""
        who = _operator(operator)
        status = ShoeStatus(state=ShoeState(state), device=f"manual:{who}",
                            detail=detail or f"keyed by {who}", at_mono=self._clock())
        self._queue().put_nowait(status)
        return status

    async def note(self, kind: str, detail: str, *, operator: str) -> DeviceAlert:
        """Put an operator's remark in the reading stream (e.g. why manual entry started)."""
        who = _operator(operator)
        alert = DeviceAlert(device=f"manual:{who}", kind=kind, detail=detail,
                            at_mono=self._clock())
        self._queue().put_nowait(alert)
        return alert

    def health(self) -> DeviceHealth:
        """Connected while open; counters say how many cards were keyed and by how many people."""
        return DeviceHealth(
            device=f"manual:{self.name}",
            connected=self._readings is not None,
            identity=None,
            last_seen_mono=self._last_keyed if self._last_keyed is not None else self._opened_at,
            counters={"cards": self._next_index, "operators": len(self._operators)},
        )

    def _queue(self) -> asyncio.Queue[ShoeReading | object]:
        if self._readings is None:
            raise RuntimeError("the manual card reader is not open")
        return self._readings


def _operator(operator: str) -> str:
    who = operator.strip() if isinstance(operator, str) else ""
    if not who or len(who) > _MAX_OPERATOR or not who.isprintable():
        raise ValueError(
            f"operator {operator!r} must name who keys the card (1..{_MAX_OPERATOR} printable"
            " characters)")
    return who


def _card(card: object) -> Card:
    if not isinstance(card, Card):
        return parse_card(card)  # type: ignore[arg-type]  # parse_card names the bad value
    return card
