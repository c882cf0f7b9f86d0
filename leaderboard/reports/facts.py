"""What the play reports are computed from, read once out of the stored messages: each hand
(its times, seats, wagers, decisions and what was keyed by hand), each alert, each staff
sign-in or sign-out, each heat opened or closed, and the supervisors' overrides.

`hand_fact` reads a stored hand record through the wire contract (``hand.settled`` /
``hand.voided``); a record it cannot read is returned as the reason, never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from leaderboard.reports.window import parse_instant
from wire.messages import HandSettled, HandVoided, MessageError

__all__ = ["DECISIONS", "SIDE_BET_LABELS", "AlertFact", "HandFact", "HeatMark", "SeatFact",
           "StaffMark", "TableEvent", "hand_fact"]

# A seat's decisions by its final choice (rules.md §4.2): a Play at 3x is one decision; at
# 2x a check then the Play; at 1x two checks then the Play; a fold two checks then the fold.
DECISIONS: Final[Mapping[str, Mapping[str, int]]] = {
    "play_3x": {"play_3x": 1},
    "play_2x": {"check": 1, "play_2x": 1},
    "play_1x": {"check": 2, "play_1x": 1},
    "fold": {"check": 2, "fold": 1},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatFact:
    """One seat of a hand: its entry, its chips on each spot, its markers, its last choice."""

    seat: int
    entry_id: str | None
    wagers: Mapping[str, int]
    markers: frozenset[str]
    choice: str | None  # play_3x | play_2x | play_1x | fold | None (no decision recorded)
    keyed: bool  # its wagers were keyed by hand at the console

    def has_bet(self, bet: str) -> bool:
        """Whether the seat played this side bet (chips on it or a bonus marker)."""
        return self.wagers.get(bet, 0) > 0 or bet in self.markers


@dataclass(frozen=True, slots=True, kw_only=True)
class HandFact:
    """A hand as its table published it, reduced to what the reports count."""

    table: str
    hand_id: str
    heat_id: str | None
    stage: str | None
    settled: bool
    opened: datetime
    ended: datetime
    seats: tuple[SeatFact, ...]
    cards_keyed: int
    corrections: int
    resolutions: int
    manual: bool
    void_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertFact:
    """An alert a table raised."""

    table: str
    kind: str
    at: datetime | None
    hand_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffMark:
    """A staff member signed in or out at a table's console."""

    table: str
    at: datetime
    seq: int
    staff_id: str
    role: str | None
    signed_in: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class HeatMark:
    """A table opened or closed a heat."""

    table: str
    at: datetime
    seq: int
    heat_id: str
    opened: bool
    stage: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableEvent:
    """A manual act at a table known by its time or hand: a payout override, a ruling
    applied to a hand's chips, a device fault cleared by a supervisor."""

    table: str
    kind: str  # payout_override | ruling | fault_cleared
    at: datetime | None
    hand_id: str | None = None
    by: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def _choice(decision: object) -> str | None:
    if not isinstance(decision, Mapping):
        return None
    if decision.get("fold") is True:
        return "fold"
    play = decision.get("play")
    if play in (1, 2, 3) and not isinstance(play, bool):
        return f"play_{play}x"
    return None


def _seat(raw: object) -> SeatFact:
    if not isinstance(raw, Mapping):
        raise ValueError("a seat is not an object")
    seat = raw.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool):
        raise ValueError("a seat has no seat number")
    wagers_raw = raw.get("wagers") or {}
    if not isinstance(wagers_raw, Mapping):
        raise ValueError(f"seat {seat}: wagers are not an object")
    wagers: dict[str, int] = {}
    markers: frozenset[str] = frozenset()
    for name, value in wagers_raw.items():
        if name == "markers":
            if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
                raise ValueError(f"seat {seat}: markers are not a list of bets")
            markers = frozenset(value)
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            wagers[str(name)] = value
        else:
            raise ValueError(f"seat {seat}: wager {name!r} is not whole cents")
    entry = raw.get("entry_id")
    return SeatFact(seat=seat, entry_id=entry if isinstance(entry, str) else None,
                    wagers=wagers, markers=markers, choice=_choice(raw.get("decision")),
                    keyed=raw.get("wager_source") == "manual")


def _count(record: Mapping[str, Any], name: str) -> int:
    value = record.get(name) or []
    if not isinstance(value, list):
        raise ValueError(f"{name} is not a list")
    return len(value)


def hand_fact(table: str, body: Mapping[str, Any]) -> HandFact | str:
    """The hand of a stored ``hand.settled``/``hand.voided`` body, or why it cannot be read."""
    settled = body.get("status") != "void"
    kind = HandSettled if settled else HandVoided
    try:
        message = kind.decode(body, sender=table)
    except MessageError as exc:
        return str(exc)
    record = message.record
    try:
        seats_raw = record.get("seats") or []
        if not isinstance(seats_raw, list):
            raise ValueError("seats are not a list")
        seats = tuple(_seat(s) for s in seats_raw)
        reads = record.get("reads") or []
        if not isinstance(reads, list):
            raise ValueError("reads are not a list")
        keyed = sum(1 for r in reads if isinstance(r, Mapping) and r.get("source") == "manual")
        corrections, resolutions = _count(record, "corrections"), _count(record, "resolutions")
    except ValueError as exc:
        return f"hand {message.hand_id}: {exc}"
    opened = parse_instant(record.get("opened_at"))
    ended = parse_instant(record.get("settled_at" if settled else "voided_at"))
    if opened is None or ended is None:
        return (f"hand {message.hand_id}: no {'opened_at' if opened is None else 'end'} time"
                " in its record")
    void = record.get("void")
    void_by = void.get("by") if isinstance(void, Mapping) else None
    stage = record.get("stage")
    return HandFact(table=table, hand_id=message.hand_id, heat_id=message.heat_id,
                    stage=stage if isinstance(stage, str) else None, settled=settled,
                    opened=opened, ended=ended, seats=seats, cards_keyed=keyed,
                    corrections=corrections, resolutions=resolutions,
                    manual=record.get("manual") is True,
                    void_by=void_by if isinstance(void_by, str) else None)


SIDE_BET_LABELS: Final[Mapping[str, str]] = {"trips_plus": "Trips Plus",
                                              "pocket_bonus": "Pocket Bonus",
                                              "sweet16": "Sweet 16"}
