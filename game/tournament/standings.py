"""Standings: qualifying, weekly, semi-final and final leaderboards, ties and the cut line.

Rules: tournament.md "Leaderboards and ties" and "Stages"; promotion rules [16, 17, 20, 21, 24,
35, 36, 51]. Pure: the caller passes every score record and the settings; nothing here reads a
clock. docs/standings-and-prizes.md explains each decision (tie-break chain, cut line, ...).

Order of a leaderboard (a total order, so the input order never matters): higher score first;
then the earlier acknowledgement (an unacknowledged score after every acknowledged one); then
the earlier recorded time; then the entry id (code-point order). Under the tie rule
"earlier_acknowledged" that order is the position; under "split" equal scores share a position
(1, 2, 2, 4) and the same order only fixes the row order on the display.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from itertools import pairwise
from typing import Final, Literal

from game.errors import GameError
from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.schema import TieRule, TournamentSettings

__all__ = [
    "CutLineTie",
    "Leaderboard",
    "NotCounted",
    "Placing",
    "Qualification",
    "ScoreRecord",
    "ScoreStatus",
    "StandingsError",
    "Tie",
    "TieBreak",
    "check_record",
    "final_standings",
    "leaderboard",
    "qualifiers",
    "qualifying_leaderboard",
    "semi_final_standings",
    "semi_finalists",
    "weekly_leaderboard",
]

TieBreak = Literal["acknowledged_at", "recorded_at", "entry_id"]
_NEVER: Final = datetime.max.replace(tzinfo=UTC)  # sorts an unacknowledged score last


class StandingsError(GameError, ValueError):
    """A score record or standings request that breaks the rules (names the entry and why)."""


class ScoreStatus(StrEnum):
    """How an entry's score came about: all hands played, or ended early below the minimum."""

    FINISHED = "finished"
    ENDED_EARLY = "ended_early"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreRecord:
    """One entry's score in one stage, as stored centrally (ids are opaque, times aware).

    `heat_day` is the venue-local date on which the entry's heat opened: a qualifying score
    belongs to the prize week of that day, even if its last hand ended after midnight.
    """

    entry_id: str
    patron_id: str
    stage: Stage
    heat_id: str
    table: str
    score_cents: int
    hands: int
    status: ScoreStatus
    recorded_at: datetime
    acknowledged_at: datetime | None
    voided: bool
    heat_day: date
    corrected: bool = False  # the figure is a supervisor's correction of the table's (D65)

    def __post_init__(self) -> None:
        for name in ("entry_id", "patron_id", "heat_id", "table"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise StandingsError(f"score record: {name} must be a non-empty string")
        who = f"entry {self.entry_id}"
        for name in ("score_cents", "hands"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise StandingsError(f"{who}: {name} must be a whole number >= 0, got {value!r}")
        if not isinstance(self.stage, Stage):
            raise StandingsError(f"{who}: stage must be a Stage, got {self.stage!r}")
        if not isinstance(self.status, ScoreStatus):
            raise StandingsError(f"{who}: status must be a ScoreStatus, got {self.status!r}")
        _aware(who, "recorded_at", self.recorded_at)
        if self.acknowledged_at is not None:
            _aware(who, "acknowledged_at", self.acknowledged_at)
        if not isinstance(self.voided, bool):
            raise StandingsError(f"{who}: voided must be true or false, got {self.voided!r}")
        if isinstance(self.heat_day, datetime) or not isinstance(self.heat_day, date):
            raise StandingsError(f"{who}: heat_day must be a date, got {self.heat_day!r}")

    @property
    def acknowledged(self) -> bool:
        """Whether the participant acknowledged the score (card tap or signature) [20, 35, 51]."""
        return self.acknowledged_at is not None


def _aware(who: str, name: str, value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise StandingsError(f"{who}: {name} must be a datetime with a time zone, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Placing:
    """One row of a leaderboard: `rank` is the row (1, 2, 3, ...), `position` the place held.

    Under "earlier_acknowledged" position == rank; under "split" tied scores share the
    position of the first of them (1, 2, 2, 4).
    """

    rank: int
    position: int
    record: ScoreRecord
    tied: bool

    @property
    def entry_id(self) -> str:
        """The entry holding this place."""
        return self.record.entry_id

    @property
    def patron_id(self) -> str:
        """The patron whose entry holds this place (a patron may hold several)."""
        return self.record.patron_id

    @property
    def score_cents(self) -> int:
        """The score of this place."""
        return self.record.score_cents


@dataclass(frozen=True, slots=True, kw_only=True)
class Tie:
    """Entries with equal scores on one leaderboard, in display order.

    `broken_by[i]` names what put entry_ids[i] before entry_ids[i + 1] under
    "earlier_acknowledged"; under "split" the tie is not broken (`broken_by` is empty) and every
    entry holds `positions[0]`.
    """

    score_cents: int
    entry_ids: tuple[str, ...]
    positions: tuple[int, ...]
    broken_by: tuple[TieBreak, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NotCounted:
    """A record of the leaderboard's stage (and week) that does not count, and why."""

    entry_id: str
    reason: Literal["voided", "unacknowledged"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaderboard:
    """A ranked leaderboard of one stage (and one prize week for weekly boards)."""

    stage: Stage
    week: int | None
    heat_id: str | None
    tie_rule: TieRule
    acknowledged_only: bool
    places: tuple[Placing, ...]
    ties: tuple[Tie, ...]
    not_counted: tuple[NotCounted, ...]

    def at_position(self, position: int) -> tuple[Placing, ...]:
        """Every place holding `position` (several only under "split")."""
        return tuple(p for p in self.places if p.position == position)

    def places_of(self, patron_id: str) -> tuple[Placing, ...]:
        """Every place held by one patron's entries (one per entry)."""
        return tuple(p for p in self.places if p.patron_id == patron_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class CutLineTie:
    """Equal scores across the cut: some of the tied entries advance, the rest do not.

    Seats are fixed (2 x 6, 1 x 6), so under either tie rule the cut is decided by the
    leaderboard's order (earlier acknowledgement, then earlier record, then entry id);
    `advanced` and `left_out` list the tied entries on each side of the line, in that order.
    """

    score_cents: int
    places: int
    advanced: tuple[str, ...]
    left_out: tuple[str, ...]
    decided_by: TieBreak

    @property
    def note(self) -> str:
        """The tie in one line, for the desk's record and the display."""
        return (
            f"cut-line tie at {format_rand(self.score_cents)} for the last of {self.places}"
            f" places: {', '.join(self.advanced)} advance, {', '.join(self.left_out)} do not"
            f" (decided by {self.decided_by.replace('_', ' ')})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Qualification:
    """Who advances from a leaderboard: the first `places` rows, and any tie at the cut."""

    board: Leaderboard
    places: int
    advancing: tuple[Placing, ...]
    cut_line_tie: CutLineTie | None

    @property
    def entry_ids(self) -> tuple[str, ...]:
        """The advancing entries, best first."""
        return tuple(p.entry_id for p in self.advancing)

    def entries_by_patron(self) -> dict[str, tuple[str, ...]]:
        """Advancing entries grouped by patron: a patron with several may nominate proxies."""
        out: dict[str, list[str]] = {}
        for p in self.advancing:
            out.setdefault(p.patron_id, []).append(p.entry_id)
        return {patron: tuple(entries) for patron, entries in out.items()}


def check_record(record: ScoreRecord, settings: TournamentSettings) -> None:
    """Refuse a record inconsistent with the settings (hands against status, heat day).

    A voided record is kept as it was (it never counts), so only its fields are checked.
    """
    if record.voided:
        return
    who = f"entry {record.entry_id}"
    hands = settings.stage(record.stage).rules.hands
    if record.status is ScoreStatus.FINISHED and record.hands != hands:
        raise StandingsError(
            f"{who}: finished after {record.hands} hands but a {record.stage} entry plays {hands}"
        )
    if record.status is ScoreStatus.ENDED_EARLY and record.hands >= hands:
        raise StandingsError(
            f"{who}: ended early after {record.hands} hands but the stage has only {hands}"
        )
    schedule = settings.schedule
    if record.stage is Stage.QUALIFYING and not (
        schedule.first_day <= record.heat_day <= schedule.last_day
    ):
        raise StandingsError(
            f"{who}: heat day {record.heat_day} is not a qualifying day"
            f" ({schedule.first_day} to {schedule.last_day})"
        )


def _order_key(record: ScoreRecord) -> tuple[int, bool, datetime, datetime, str]:
    ack = record.acknowledged_at
    return (-record.score_cents, ack is None, ack.astimezone(UTC) if ack else _NEVER,
            record.recorded_at.astimezone(UTC), record.entry_id)


def _broken_by(first: ScoreRecord, second: ScoreRecord) -> TieBreak:
    """What orders two records with equal scores."""
    a, b = _order_key(first), _order_key(second)
    if a[1:3] != b[1:3]:
        return "acknowledged_at"
    if a[3] != b[3]:
        return "recorded_at"
    return "entry_id"


def _rank(records: Sequence[ScoreRecord], tie_rule: TieRule) -> tuple[
        tuple[Placing, ...], tuple[Tie, ...]]:
    ordered = sorted(records, key=_order_key)
    groups: list[list[ScoreRecord]] = []
    for record in ordered:
        if groups and groups[-1][0].score_cents == record.score_cents:
            groups[-1].append(record)
        else:
            groups.append([record])
    places: list[Placing] = []
    ties: list[Tie] = []
    for group in groups:
        first = len(places) + 1
        tied = len(group) > 1
        for i, record in enumerate(group):
            position = first if tie_rule == "split" else first + i
            places.append(Placing(rank=first + i, position=position, record=record, tied=tied))
        if tied:
            ranks = range(first, first + len(group))
            ties.append(Tie(
                score_cents=group[0].score_cents,
                entry_ids=tuple(r.entry_id for r in group),
                positions=tuple(first for _ in ranks) if tie_rule == "split" else tuple(ranks),
                broken_by=() if tie_rule == "split" else tuple(
                    _broken_by(a, b) for a, b in pairwise(group)),
            ))
    return tuple(places), tuple(ties)


def leaderboard(records: Iterable[ScoreRecord], settings: TournamentSettings, *, stage: Stage,
                week: int | None = None, heat_id: str | None = None) -> Leaderboard:
    """The leaderboard of one stage, optionally of one prize week (qualifying) or one heat.

    Counts every record of the stage that is not voided and, with `acknowledged_only`, is
    acknowledged; refuses two counted records for one entry (a correction voids the original).
    """
    if week is not None:
        if stage is not Stage.QUALIFYING:
            raise StandingsError(f"prize weeks belong to qualifying, not to the {stage}")
        if isinstance(week, bool) or not isinstance(week, int) or week < 1:
            raise StandingsError(f"weeks are numbered from 1, got {week!r}")
    counted: list[ScoreRecord] = []
    not_counted: list[NotCounted] = []
    seen: set[str] = set()
    for record in records:
        if not isinstance(record, ScoreRecord):
            raise StandingsError(f"expected a ScoreRecord, got {type(record).__name__}")
        check_record(record, settings)
        if record.stage is not stage or (heat_id is not None and record.heat_id != heat_id):
            continue
        if week is not None and settings.weekly_prizes.week_of(
                settings.schedule, record.heat_day) != week:
            continue
        if record.voided:
            not_counted.append(NotCounted(entry_id=record.entry_id, reason="voided"))
        elif settings.acknowledged_only and not record.acknowledged:
            not_counted.append(NotCounted(entry_id=record.entry_id, reason="unacknowledged"))
        elif record.entry_id in seen:
            raise StandingsError(
                f"entry {record.entry_id} has two counted {stage} scores: void one of them"
            )
        else:
            seen.add(record.entry_id)
            counted.append(record)
    places, ties = _rank(counted, settings.tie_rule)
    return Leaderboard(
        stage=stage, week=week, heat_id=heat_id, tie_rule=settings.tie_rule,
        acknowledged_only=settings.acknowledged_only, places=places, ties=ties,
        not_counted=tuple(sorted(not_counted, key=lambda n: (n.entry_id, n.reason))),
    )


def qualifying_leaderboard(records: Iterable[ScoreRecord],
                           settings: TournamentSettings) -> Leaderboard:
    """Every counted qualifying score, highest first [16]."""
    return leaderboard(records, settings, stage=Stage.QUALIFYING)


def weekly_leaderboard(records: Iterable[ScoreRecord], settings: TournamentSettings,
                       week: int) -> Leaderboard:
    """The counted qualifying scores whose heat day lies in prize week `week` [17].

    Any week with heats has a leaderboard; only the first `weekly_prizes.weeks` pay a prize.
    """
    return leaderboard(records, settings, stage=Stage.QUALIFYING, week=week)


def qualifiers(board: Leaderboard, places: int) -> Qualification:
    """The first `places` rows of a leaderboard advance; a tie across the cut is noted.

    Seats are fixed, so never more than `places` advance: under either tie rule the entries
    tied at the cut are separated by the board's order (earlier acknowledgement first).
    """
    if isinstance(places, bool) or not isinstance(places, int) or places < 1:
        raise StandingsError(f"at least one place must advance, got {places!r}")
    advancing = board.places[:places]
    tie: CutLineTie | None = None
    if len(board.places) > places:
        last, first_out = board.places[places - 1], board.places[places]
        if last.score_cents == first_out.score_cents:
            tied = [p for p in board.places if p.score_cents == last.score_cents]
            tie = CutLineTie(
                score_cents=last.score_cents, places=places,
                advanced=tuple(p.entry_id for p in tied if p.rank <= places),
                left_out=tuple(p.entry_id for p in tied if p.rank > places),
                decided_by=_broken_by(last.record, first_out.record),
            )
    return Qualification(board=board, places=places, advancing=advancing, cut_line_tie=tie)


def semi_finalists(records: Iterable[ScoreRecord],
                   settings: TournamentSettings) -> Qualification:
    """The top `qualifying.advance` (12) qualifying entries go to the semi-finals [21, 24]."""
    advance = settings.qualifying.advance
    if advance is None:  # parse_tournament always sets it; kept for the type checker
        raise StandingsError("qualifying.advance is not set")
    return qualifiers(qualifying_leaderboard(records, settings), advance)


def semi_final_standings(records: Iterable[ScoreRecord],
                         settings: TournamentSettings) -> Qualification:
    """Both semi-final heats ranked together; the top `semi_final.advance` (6) go on [36]."""
    board = leaderboard(records, settings, stage=Stage.SEMI_FINAL)
    advance = settings.semi_final.advance
    if advance is None:  # parse_tournament always sets it; kept for the type checker
        raise StandingsError("semi_final.advance is not set")
    return qualifiers(board, advance)


def final_standings(records: Iterable[ScoreRecord], settings: TournamentSettings) -> Leaderboard:
    """The Final's leaderboard; positions 1..6 take the Final Prize Pool [52]."""
    return leaderboard(records, settings, stage=Stage.FINAL)
