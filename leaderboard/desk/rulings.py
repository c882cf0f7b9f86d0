"""A supervisor's rulings on a recorded score (rules 22, 23): void it, or correct its
figure. The table's record is never changed: a void marks it, a correction is kept beside
it, and the standings count the ruling. A ruling is refused once the standings it would
change have been used: the next stage's places allocated, or a prize awarded from them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.table import ScoreVoided
from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.prizes import PrizeKind
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import begin_action, desk_now, require_reason, write_audit
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.lookups import get_entry, stage_entries, stage_of
from leaderboard.desk.scores import heat_day_of
from leaderboard.desk.values import ScoreRuling
from leaderboard.eligibility import as_utc
from leaderboard.models import Entry, PrizeAward, Score
from leaderboard.projections import UNPAID_STATUSES
from runtime.clocks import WallClock

_MAX_CENTS = 2**63 - 1


def void_score(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
               entry_id: str, why: str) -> ScoreRuling:
    """Void an entry's recorded score: it stays in the record, marked, and no longer counts."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the score is voided")
    score, entry = _ruled(session, settings, entry_id, "voided")
    score.voided_at, score.void_reason = as_utc(now), f"{reason} (by {actor})"
    write_audit(session, now, actor, ScoreVoided.TYPE, detail={
        "entry_id": score.entry_id, "table": score.table_id, "seq": score.seq,
        "stage": score.stage, "recorded_cents": score.score_cents,
        "counted_cents": score.counted_cents}, why=reason)
    session.commit()
    return _ruling(score, entry, "voided", now, reason)


def correct_score(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
                  entry_id: str, score_cents: int, why: str) -> ScoreRuling:
    """Rule a corrected figure for an entry's score; the table's figure stays in the record
    and the standings count this one (a later correction replaces it, audited)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the score is corrected")
    if isinstance(score_cents, bool) or not isinstance(score_cents, int):
        raise DeskError(f"the corrected score must be whole cents, not {score_cents!r}")
    if not 0 <= score_cents <= _MAX_CENTS:
        raise DeskError(f"the corrected score must be 0 or more cents, not {score_cents}")
    score, entry = _ruled(session, settings, entry_id, "corrected")
    apply_correction(session, now, actor, score, score_cents=score_cents, reason=reason)
    session.commit()
    return _ruling(score, entry, "corrected", now, reason)


def apply_correction(session: Session, now: datetime, actor: str, score: Score, *,
                     score_cents: int, reason: str) -> None:
    """Keep a corrected figure beside the score and audit it (the caller checked the round
    with `ruled_score` and commits)."""
    if score_cents == score.counted_cents:
        raise Conflict(f"entry {score.entry_id}'s score already counts"
                       f" {format_rand(score_cents)}")
    previous = score.counted_cents
    score.corrected_cents, score.corrected_at = score_cents, as_utc(now)
    score.correction_reason = f"{reason} (by {actor})"
    write_audit(session, now, actor, "score.corrected", detail={
        "entry_id": score.entry_id, "table": score.table_id, "seq": score.seq,
        "stage": score.stage, "recorded_cents": score.score_cents,
        "previous_cents": previous, "corrected_cents": score_cents,
        "acknowledged": score.acknowledged_at is not None}, why=reason)


def round_over(session: Session, settings: TournamentSettings, entry: Entry,
               score: Score | None) -> str | None:
    """Why the round of an entry's score is over (rule 22: its stage's standings were used
    for the next stage or a prize), or None while disputes may still be raised and ruled."""
    return _standings_used(session, settings, score, entry)


def ruled_score(session: Session, settings: TournamentSettings, entry_id: str,
                ruling: str) -> tuple[Score, Entry]:
    """The score a ruling may change, or the error saying why it may not."""
    return _ruled(session, settings, entry_id, ruling)


def _ruled(session: Session, settings: TournamentSettings, entry_id: str,
           ruling: str) -> tuple[Score, Entry]:
    """The score a ruling may change, or the error saying why it may not."""
    entry = get_entry(session, entry_id)
    score = session.get(Score, entry.entry_id)
    if score is None:
        raise NotFound(f"entry {entry.entry_id} has no recorded score")
    if entry.status in UNPAID_STATUSES:
        raise Conflict(f"entry {entry.entry_id} was {entry.status}: its score does not count")
    if score.voided_at is not None or score.status == "voided":
        raise Conflict(f"entry {entry.entry_id}'s score is voided"
                       f" ({score.void_reason or 'by its table'})")
    used = _standings_used(session, settings, score, entry)
    if used is not None:
        raise Conflict(f"entry {entry.entry_id}'s {score.stage} score can no longer be"
                       f" {ruling}: {used} (rule 22: disputes are raised within the round)")
    return score, entry


def _standings_used(session: Session, settings: TournamentSettings, score: Score | None,
                    entry: Entry) -> str | None:
    """What has already been decided from the standings this score is in, or None."""
    rows = session.scalars(select(PrizeAward).order_by(PrizeAward.id)).all()
    awards = {(a.kind, a.place) for a in rows}
    own = next((a for a in rows if a.entry_id == entry.entry_id), None)
    if own is not None:
        return f"it won the {own.kind} prize (award {own.id})"
    stage = stage_of(entry)
    if stage is Stage.QUALIFYING:
        if stage_entries(session, Stage.SEMI_FINAL):
            return "the semi-final places were allocated from the qualifying standings"
        if any(kind == PrizeKind.TOP_SCORE.value for kind, _ in awards):
            return "the Top Score Progressive was awarded"
        day = heat_day_of(settings, score, entry) if score is not None else entry.heat_day
        week = None if day is None else settings.weekly_prizes.week_of(settings.schedule, day)
        if week is not None and (PrizeKind.WEEKLY.value, week) in awards:
            return f"week {week}'s prize was awarded"
    elif stage is Stage.SEMI_FINAL:
        if stage_entries(session, Stage.FINAL):
            return "the Final places were allocated from the semi-final standings"
    elif any(kind == PrizeKind.FINAL.value for kind, _ in awards):
        return "the Final prizes were awarded"
    return None


def _ruling(score: Score, entry: Entry, ruling: str, now: datetime, why: str) -> ScoreRuling:
    return ScoreRuling(entry_id=entry.entry_id, ruling=ruling, stage=score.stage,
                       table=score.table_id, recorded_cents=score.score_cents,
                       counted_cents=None if ruling == "voided" else score.counted_cents,
                       at=now, why=why)
