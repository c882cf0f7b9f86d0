"""The recomputation's input: the recorded hands and score messages as tables signed them, and
the desk's records of the facts no hand carries. Plain values, no behaviour.

`tests.e2e.evidence` reads them from a central database (verifying every signature); the unit
tests build them by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

__all__ = [
    "Acknowledgement",
    "DeskRuling",
    "Draw",
    "EntryFact",
    "Evidence",
    "HandCorrection",
    "HandSeat",
    "RecordedHand",
    "ScoreMessage",
    "Seating",
    "TableVoid",
    "Unseating",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class HandSeat:
    """One seat of a recorded hand: whose entry, its net, the chips wagered and markers used."""

    seat: int
    entry_id: str | None
    net_cents: int
    chips_wagered_cents: int = 0
    markers_used: int = 0
    outcome: str | None = None  # win | lose | tie | fold, as settled
    lines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # wager -> its line


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedHand:
    """A ``hand.settled`` or ``hand.voided`` message (``status`` settled | void)."""

    table: str
    seq: int
    hand_id: str
    heat_id: str | None
    stage: str | None
    status: str
    at: datetime
    seats: tuple[HandSeat, ...]
    problems: tuple[str, ...] = ()  # the record disagrees with itself (nets vs settlement)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandCorrection:
    """A ``hand.corrected`` message: a supervisor's ruling applied at the table."""

    table: str
    seq: int
    hand_id: str
    entry_id: str
    ruling: str  # hand_voided | hand_corrected
    recorded_net: int
    counted_net: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreMessage:
    """A ``score.recorded`` message: the table's record of an entry's stage."""

    table: str
    seq: int
    entry_id: str
    stage: str
    heat_id: str | None
    score_cents: int
    hands: int
    status: str
    at: datetime  # the envelope's time: when it was recorded
    markers_forfeited: int | None = None  # Final markers left unused


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledgement:
    """A ``score.acknowledged`` message (the participant's tap, PIN, signature or the desk)."""

    table: str
    seq: int
    entry_id: str
    score_cents: int
    method: str
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class TableVoid:
    """A ``score.voided`` message from a table."""

    table: str
    seq: int
    entry_id: str
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Seating:
    """An ``entry.seated`` message: where the table seated an entry."""

    table: str
    seq: int
    entry_id: str
    seat: int
    heat_id: str | None
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Unseating:
    """An ``entry.unseated`` message: an entry left its seat (hands played so far)."""

    table: str
    seq: int
    entry_id: str
    hands_played: int | None
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryFact:
    """The desk's record of an entry or a later-stage place (who holds it, its buy-in,
    heat day, status, disqualification, the heat and seat chosen or drawn, its proxy)."""

    entry_id: str
    patron_id: str
    stage: str
    heat_id: str | None = None
    heat_day: date | None = None
    buy_in_cents: int = 0
    status: str = "seated"
    disqualified: bool = False
    table: str | None = None
    seat: int | None = None
    played_by: str | None = None
    bought_at: datetime | None = None  # the buy-in (qualifying entries)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskRuling:
    """A supervisor's ruling on a recorded score at the desk: ``voided`` or ``corrected``
    (to ``cents``), at ``at``."""

    entry_id: str
    kind: str  # voided | corrected
    at: datetime
    cents: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Draw:
    """The Final's seat draw as stored: the random bytes (hex), finalists and the result."""

    random_hex: str
    finalists: tuple[str, ...]
    seats: tuple[int, ...]
    result: dict[str, int]  # finalist -> seat, as the desk stored it


@dataclass(slots=True, kw_only=True)
class Evidence:
    """Everything recorded: the tables' signed messages and the desk's records."""

    hands: list[RecordedHand] = field(default_factory=list)
    corrections: list[HandCorrection] = field(default_factory=list)
    scores: list[ScoreMessage] = field(default_factory=list)
    acknowledgements: list[Acknowledgement] = field(default_factory=list)
    table_voids: list[TableVoid] = field(default_factory=list)
    seatings: list[Seating] = field(default_factory=list)
    unseatings: list[Unseating] = field(default_factory=list)
    entries: dict[str, EntryFact] = field(default_factory=dict)
    rulings: list[DeskRuling] = field(default_factory=list)
    draw: Draw | None = None
    problems: list[str] = field(default_factory=list)  # bad signatures, unreadable bodies
