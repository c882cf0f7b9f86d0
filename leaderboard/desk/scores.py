"""Stored scores as standings records, for the boards, the line-ups and the prizes."""

from __future__ import annotations

from datetime import date

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.tournament.standings import ScoreRecord, ScoreStatus
from leaderboard.desk.errors import DeskError
from leaderboard.desk.lookups import local_day
from leaderboard.eligibility import from_db
from leaderboard.models import Entry, Score
from leaderboard.projections import UNPAID_STATUSES


def heat_day_of(settings: TournamentSettings, score: Score, entry: Entry) -> date:
    """The venue-local day whose heat a score belongs to (its week, for the weekly prize)."""
    return entry.heat_day or local_day(settings, from_db(score.recorded_at))


def score_records(session: Session, settings: TournamentSettings,
                  stage: Stage) -> list[ScoreRecord]:
    """Every stored score of a stage as a standings record (the place's holder as patron)."""
    out: list[ScoreRecord] = []
    rows = session.execute(
        select(Score, Entry).join(Entry, Entry.entry_id == Score.entry_id)
        .where(Score.stage == stage.value).order_by(Score.entry_id)
    ).all()
    for score, entry in rows:
        voided = score.voided_at is not None or score.status == "voided" or (
            entry.status in UNPAID_STATUSES  # e.g. a table that came back after its fault
        ) or entry.disqualified_at is not None  # rule 57
        try:
            status = ScoreStatus(score.status) if not voided else ScoreStatus.FINISHED
        except ValueError:
            raise DeskError(f"entry {score.entry_id}: unknown score status {score.status!r}"
                            ) from None
        recorded = from_db(score.recorded_at)
        ack = score.counted_acknowledged_at  # a supervisor's correction is final (D65)
        acked = from_db(ack) if ack else None
        out.append(ScoreRecord(
            entry_id=score.entry_id, patron_id=entry.patron_id, stage=stage,
            heat_id=score.heat_id or entry.heat_id or "-", table=score.table_id,
            score_cents=score.counted_cents, hands=score.hands, status=status,
            recorded_at=recorded, acknowledged_at=acked, voided=voided,
            heat_day=heat_day_of(settings, score, entry),
            corrected=score.corrected_cents is not None))
    return out
