"""The standings' inputs read from the database: scores as `ScoreRecord`s (or why not),
entries as buy-ins and line-up seats, and the `Snapshot` the full computation works from.

One rule per row, used by the full computation (`load_snapshot`, every row at once) and by
the incremental standings (leaderboard/standings/live.py, the rows that changed):
`score_record` (a score and its entry -> a record, or `Excluded` with the reason),
`paid_cents` (what an entry adds to the pools) and `lineup_seat` (a semi-final or Final
place). `Ranked` is a leaderboard as the document uses it: its places (all, or the first
ones with every tie at the edge complete) and its counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.tournament.standings import (
    Leaderboard,
    ScoreRecord,
    ScoreStatus,
    StandingsError,
    check_record,
    leaderboard,
    weekly_leaderboard,
)
from leaderboard.config import NameMode
from leaderboard.display_names import display_name
from leaderboard.models import Dispute, Entry, Patron, Score
from leaderboard.projections import UNPAID_STATUSES

__all__ = [
    "Excluded",
    "LineupSeat",
    "Ranked",
    "Snapshot",
    "display_name",
    "lineup_seat",
    "load_snapshot",
    "paid_cents",
    "score_record",
    "shown_names",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    """A stored score that cannot be ranked, and why (kept visible for the floor supervisor)."""

    entry_id: str
    table: str
    stage: str
    score_cents: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LineupSeat:
    """One entry seated (or to be seated) in a semi-final or final heat."""

    stage: Stage
    entry_id: str
    patron_id: str
    heat_id: str | None
    table: str | None
    seat: int | None
    proxy: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranked:
    """A leaderboard as the document shows it: `board` holds every counted place, or only
    the first ones (then every entry tied with the last of them is included, so positions,
    ties, the cut line and prize shares are those of the whole board), and the counts."""

    board: Leaderboard
    counted: int
    voided: int
    unacknowledged: int

    @classmethod
    def whole(cls, board: Leaderboard) -> Ranked:
        """A complete leaderboard with its own counts."""
        reasons = [n.reason for n in board.not_counted]
        return cls(board=board, counted=len(board.places), voided=reasons.count("voided"),
                   unacknowledged=reasons.count("unacknowledged"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What the standings are computed from, read from the database in one transaction.

    The document is built from it through the methods below (the incremental standings
    answer the same ones from what they keep).
    """

    records: tuple[ScoreRecord, ...]
    excluded: tuple[Excluded, ...]
    paid_entries: int
    buy_ins_cents: int
    lineups: tuple[LineupSeat, ...]
    names: Mapping[str, str] = field(default_factory=dict)  # patron id -> display name
    disputed: frozenset[str] = frozenset()  # entries with a dispute not yet resolved
    codes: Mapping[str, str] = field(default_factory=dict)  # entry id -> entry code

    def stages(self) -> frozenset[Stage]:
        """The stages with at least one record (counted or not)."""
        return frozenset(r.stage for r in self.records)

    def records_of(self, stage: Stage) -> tuple[ScoreRecord, ...]:
        """Every record of one stage."""
        return tuple(r for r in self.records if r.stage is stage)

    def qualifying(self, settings: TournamentSettings, _rows: int) -> Ranked:
        """The whole qualifying leaderboard."""
        return Ranked.whole(leaderboard(self.records, settings, stage=Stage.QUALIFYING))

    def weekly(self, settings: TournamentSettings, week: int) -> Ranked:
        """The whole leaderboard of one prize week."""
        return Ranked.whole(weekly_leaderboard(self.records, settings, week))

    def pending(self, stage: Stage, limit: int) -> list[ScoreRecord]:
        """The newest `limit` records of a stage not voided and not acknowledged."""
        waiting = [r for r in self.records
                   if r.stage is stage and not r.voided and not r.acknowledged]
        waiting.sort(key=lambda r: (r.recorded_at, r.entry_id), reverse=True)
        return waiting[:limit]

    def excluded_first(self, limit: int) -> tuple[int, Sequence[Excluded]]:
        """How many scores cannot be ranked, and the first `limit` of them by entry id."""
        return len(self.excluded), self.excluded[:limit]


# ---- reading the database --------------------------------------------------------------------


def _utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: they were stored in UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def shown_names(session: Session, names: NameMode,
                patron_ids: Sequence[str] | None = None) -> dict[str, str]:
    """Patron id -> the name the page shows, for every patron (or those given) who has one."""
    if names == "entry_code":
        return {}
    query = select(Patron.patron_id, Patron.name, Patron.name_consent, Patron.screen_name)
    if patron_ids is not None:
        query = query.where(Patron.patron_id.in_(patron_ids))
    shown: dict[str, str] = {}
    for patron_id, name, consent, screen in session.execute(query):
        value = display_name(names, full_name=name, consent=consent, screen_name=screen)
        if value is not None:
            shown[patron_id] = value
    return shown


def _heat_day(entry: Entry | None, recorded_at: datetime, stage: Stage,
              settings: TournamentSettings) -> date:
    if entry is not None and entry.heat_day is not None:
        return entry.heat_day
    if stage is Stage.QUALIFYING:
        day = settings.schedule.heat_day(recorded_at)
        if day is not None:
            return day
    return recorded_at.astimezone(settings.tz).date()


def score_record(score: Score, entry: Entry | None, settings: TournamentSettings
                 ) -> ScoreRecord | Excluded:
    """A stored score as the standings count it (its entry's rulings applied), or why not."""
    def excluded(reason: str) -> Excluded:
        return Excluded(entry_id=score.entry_id, table=score.table_id, stage=score.stage,
                        score_cents=score.score_cents, reason=reason)

    if entry is None:
        return excluded("no registered entry with this id")
    if entry.status in UNPAID_STATUSES:  # e.g. refunded after its table's fault (D60)
        return excluded(f"the entry was {entry.status}")
    if entry.disqualified_at is not None:
        return excluded("the entry was disqualified (rule 57)")
    try:
        stage = Stage(score.stage)
    except ValueError:
        return excluded(f"unknown stage {score.stage!r}")
    voided = score.voided_at is not None or score.status == "voided"
    try:
        status = ScoreStatus.FINISHED if score.status == "voided" else ScoreStatus(score.status)
    except ValueError:
        return excluded(f"unknown score status {score.status!r}")
    if entry.stage != stage.value:
        return excluded(f"the entry is a {entry.stage} entry, the score a {stage.value} score")
    recorded_at = _utc(score.recorded_at)
    assert recorded_at is not None
    try:
        record = ScoreRecord(
            entry_id=score.entry_id, patron_id=entry.patron_id, stage=stage,
            heat_id=score.heat_id or entry.heat_id or stage.value, table=score.table_id,
            score_cents=score.counted_cents, hands=score.hands, status=status,
            recorded_at=recorded_at, acknowledged_at=_utc(score.counted_acknowledged_at),
            voided=voided,
            heat_day=_heat_day(entry, recorded_at, stage, settings),
            corrected=score.corrected_cents is not None,
        )
        check_record(record, settings)
    except StandingsError as exc:
        return excluded(str(exc))
    return record


def paid_cents(entry: Entry) -> int | None:
    """What a qualifying entry adds to the pools (its buy-in), None when nothing: not a
    qualifying entry, free, refunded or voided."""
    if (entry.stage == Stage.QUALIFYING.value and entry.buy_in_cents > 0
            and entry.status not in UNPAID_STATUSES):
        return entry.buy_in_cents
    return None


def lineup_seat(entry: Entry) -> LineupSeat | None:
    """A semi-final or Final place as the line-ups show it (None for any other entry)."""
    if entry.stage not in (Stage.SEMI_FINAL.value, Stage.FINAL.value) or (
            entry.status in UNPAID_STATUSES):
        return None
    return LineupSeat(stage=Stage(entry.stage), entry_id=entry.entry_id,
                      patron_id=entry.patron_id, heat_id=entry.heat_id, table=entry.table_id,
                      seat=entry.seat, proxy=entry.played_by is not None)


def load_snapshot(session: Session, settings: TournamentSettings, *,
                  names: NameMode = "entry_code") -> Snapshot:
    """Read scores, entries (for pools, line-ups and codes) and, if shown, patrons' names."""
    records: list[ScoreRecord] = []
    excluded: list[Excluded] = []
    rows = session.execute(
        select(Score, Entry).outerjoin(Entry, Entry.entry_id == Score.entry_id)
        .order_by(Score.entry_id)
    ).all()
    for score, entry in rows:
        result = score_record(score, entry, settings)
        if isinstance(result, ScoreRecord):
            records.append(result)
        else:
            excluded.append(result)
    paid = 0
    buy_ins = 0
    lineups: list[LineupSeat] = []
    codes: dict[str, str] = {}
    for entry in session.scalars(select(Entry).order_by(Entry.entry_id)):
        if entry.entry_code is not None:
            codes[entry.entry_id] = entry.entry_code
        cents = paid_cents(entry)
        if cents is not None:
            paid += 1
            buy_ins += cents
        seat = lineup_seat(entry)
        if seat is not None:
            lineups.append(seat)
    disputed = frozenset(session.scalars(
        select(Dispute.entry_id).where(Dispute.resolved_at.is_(None))))
    return Snapshot(records=tuple(records), excluded=tuple(excluded), paid_entries=paid,
                    buy_ins_cents=buy_ins, lineups=tuple(lineups),
                    names=shown_names(session, names), disputed=disputed, codes=codes)
