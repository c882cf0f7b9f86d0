"""What the system shows about the tournament, read back for the comparison: the central
``scores``, the standings document of each stage (leaderboard.standings.view, what GET
/api/standings and the page serve), each prize week's leaders as the page shows them during
that week, the desk's semi-final and Final places and seats, the stored seat draw, the
``prize_awards`` with their claims, and the remainders the desk recorded with each award.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard.desk.lineups import places
from leaderboard.models import AuditEntry, PrizeAward, Score
from leaderboard.standings.view import ViewOptions, standings
from runtime.settings_files import read_tournament

__all__ = ["AwardRow", "Observed", "ScoreRow", "observe"]


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreRow:
    """A central ``scores`` row as stored."""

    entry_id: str
    table: str
    score_cents: int
    counted_cents: int
    hands: int
    status: str
    recorded_at: datetime
    acknowledged_at: datetime | None  # the counted acknowledgement (a ruling's, if none)
    voided: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AwardRow:
    """A ``prize_awards`` row."""

    award_id: int
    kind: str
    place: int
    entry_id: str
    patron_id: str
    amount_cents: int
    deadline: datetime
    claimed_at: datetime | None
    claimed_by: str | None
    withheld: bool


@dataclass(slots=True, kw_only=True)
class Observed:
    """Everything the comparison holds the recomputation against."""

    scores: dict[str, ScoreRow] = field(default_factory=dict)
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> standings
    weeks: dict[int, dict[str, Any]] = field(default_factory=dict)  # week -> the page's week
    allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # audit places
    desk_places: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    awards: list[AwardRow] = field(default_factory=list)
    award_remainders: dict[tuple[str, int | None], list[tuple[str, int]]] = field(
        default_factory=dict)


def _scores(session: Session, observed: Observed) -> None:
    for s in session.scalars(select(Score).order_by(Score.entry_id)):
        recorded = _utc(s.recorded_at)
        assert recorded is not None
        observed.scores[s.entry_id] = ScoreRow(
            entry_id=s.entry_id, table=s.table_id, score_cents=s.score_cents,
            counted_cents=s.counted_cents, hands=s.hands, status=s.status,
            recorded_at=recorded, acknowledged_at=_utc(s.counted_acknowledged_at),
            voided=s.voided_at is not None or s.status == "voided")


def _desk(session: Session, observed: Observed, settings_path: Path) -> None:
    settings = read_tournament(settings_path)
    for action, stage in (("semi_final.allocated", "semi_final"), ("final.allocated", "final")):
        row = session.scalars(select(AuditEntry).where(AuditEntry.action == action)
                              .order_by(AuditEntry.id)).first()
        if row is not None:
            observed.allocations[stage] = list((row.detail or {}).get("places", []))
        shown = places(session, settings, Stage(stage)) if row is not None else ()
        observed.desk_places[stage] = [
            {"entry_id": p.entry_id, "won_by": p.won_by, "holder": p.holder,
             "position": p.position, "score_cents": p.score_cents, "heat": p.heat,
             "seat": p.seat, "table": p.table} for p in shown]
    for a in session.scalars(select(PrizeAward).order_by(PrizeAward.id)):
        deadline = _utc(a.deadline)
        assert deadline is not None
        observed.awards.append(AwardRow(
            award_id=a.id, kind=a.kind, place=a.place, entry_id=a.entry_id,
            patron_id=a.patron_id, amount_cents=a.amount_cents, deadline=deadline,
            claimed_at=_utc(a.claimed_at), claimed_by=a.claimed_by,
            withheld=a.withheld_at is not None))
    for row in session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.awarded")
                               .order_by(AuditEntry.id)):
        detail = row.detail or {}
        key = (str(detail.get("kind")), detail.get("week"))
        observed.award_remainders[key] = sorted(
            (str(r["reason"]), int(r["amount_cents"])) for r in detail.get("remainders", []))


def observe(engine: Engine, settings_path: Path, *, venue: str, now: datetime,
            week_moments: dict[int, datetime]) -> Observed:
    """Read what the system shows at `now` (aware); each prize week's leaders as shown at the
    moment given for that week."""
    observed = Observed()
    with Session(engine) as session, session.begin():
        _scores(session, observed)
        _desk(session, observed, settings_path)
    settings = read_tournament(settings_path)
    for stage in Stage:
        options = ViewOptions(venue=venue, title="e2e", rows=100_000, stage=stage)
        observed.documents[stage.value] = standings(engine, settings, options, now=now)
    for week, moment in week_moments.items():
        options = ViewOptions(venue=venue, title="e2e", rows=100_000, stage=Stage.QUALIFYING)
        doc = standings(engine, settings, options, now=moment + timedelta(0))
        observed.weeks[week] = doc["week"]
    return observed
