"""Prizes (rules 4, 17, 18, 52, 55): weekly, top score and Final books awarded once, claimed
once by the winner before the deadline."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.prizes import (
    PrizeBook,
    PrizeError,
    PrizeKind,
    final_book,
    pools_taken,
    top_score_book,
    weekly_book,
)
from game.tournament.schema import TournamentSettings
from game.tournament.standings import (
    StandingsError,
    final_standings,
    qualifying_leaderboard,
    weekly_leaderboard,
)
from leaderboard.desk.action import begin_action, conflict_on_race, desk_now, write_audit
from leaderboard.desk.duties import check_duty
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.fees import entry_fees
from leaderboard.desk.lookups import get_patron, stage_entries
from leaderboard.desk.scores import score_records
from leaderboard.desk.values import PrizeView
from leaderboard.eligibility import as_utc, from_db, normalize_id
from leaderboard.models import AuditEntry, PrizeAward
from runtime.clocks import WallClock

AWARDED: Final = "prize.awarded"


def awarded_by(session: Session, award_id: int) -> tuple[str, ...]:
    """Who recorded the award of prize ``award_id`` (its `prize.awarded` audit rows)."""
    rows = session.scalars(select(AuditEntry).where(AuditEntry.action == AWARDED))
    return tuple(r.actor for r in rows
                 if any(isinstance(a, dict) and a.get("award_id") == award_id
                        for a in (r.detail or {}).get("awards", ())))


def prize_status(row: PrizeAward, now: datetime) -> str:
    """claimed, withheld (the winner disqualified, rule 57), or unclaimed until the
    deadline and expired from it (game.tournament.prizes rule)."""
    if row.claimed_at is not None:
        return "claimed"
    if row.withheld_at is not None:
        return "withheld"
    return "expired" if as_utc(now) >= from_db(row.deadline) else "unclaimed"


def _view(row: PrizeAward, now: datetime) -> PrizeView:
    return PrizeView(award_id=row.id, kind=row.kind, place=row.place, entry_id=row.entry_id,
                     patron_id=row.patron_id, amount_cents=row.amount_cents,
                     awarded_at=from_db(row.awarded_at), deadline=from_db(row.deadline),
                     claimed_at=from_db(row.claimed_at) if row.claimed_at else None,
                     claimed_by=row.claimed_by, status=prize_status(row, now))


def _book(session: Session, settings: TournamentSettings, now: datetime, *, kind: PrizeKind,
          week: int | None, prize_cents: int | None) -> PrizeBook:
    fees = entry_fees(session)  # the buy-ins kept: a refunded one left the pools
    pools = pools_taken(sum(f.entries for f in fees), sum(f.cents for f in fees), settings)
    if kind is PrizeKind.WEEKLY:
        if week is None or prize_cents is None:
            raise DeskError("a weekly prize needs the week and the prize amount")
        weeks = settings.weekly_prizes.weeks
        if not 1 <= week <= weeks:
            raise DeskError(f"week {week} has no weekly prize: only weeks 1 to {weeks} do"
                            " (rule 17)")
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if now < end:
            raise Conflict(f"week {week} runs until {end:%Y-%m-%d %H:%M}")
        records = score_records(session, settings, Stage.QUALIFYING)
        return weekly_book(weekly_leaderboard(records, settings, week), settings, prize_cents)
    if kind is PrizeKind.TOP_SCORE:
        if now < settings.schedule.ends_at:
            raise Conflict(f"qualifying ends at {settings.schedule.ends_at:%Y-%m-%d %H:%M}")
        records = score_records(session, settings, Stage.QUALIFYING)
        return top_score_book(qualifying_leaderboard(records, settings), pools, settings)
    finals = stage_entries(session, Stage.FINAL)
    if not finals:
        raise Conflict("no Final places are allocated")
    records = score_records(session, settings, Stage.FINAL)
    board = final_standings(records, settings)
    # A place is settled once its score counts, or can never count (voided, its holder
    # disqualified): the others are paid by position, the empty place's share unawarded.
    settled = {p.record.entry_id for p in board.places} | {r.entry_id for r in records if r.voided}
    waiting = [e.entry_id for e in finals if e.entry_id not in settled
               and e.disqualified_at is None]
    if waiting:
        raise Conflict(f"{len(finals) - len(waiting)} of {len(finals)} Final places are settled"
                       f" so far; waiting for the counted score of {', '.join(waiting)}")
    return final_book(board, pools, settings)


def award_prizes(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
                 kind: str, week: int | None = None, prize_cents: int | None = None,
                 why: str | None = None) -> tuple[PrizeView, ...]:
    """Record the awards of one prize book (weekly, top score or Final) with their claim
    deadlines (rule 55); each book is recorded once. Remainders go to the audit row."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    try:
        pkind = PrizeKind(kind)
    except ValueError:
        raise DeskError(f"unknown prize kind {kind!r} (one of"
                        f" {', '.join(k.value for k in PrizeKind)})") from None
    if pkind is not PrizeKind.WEEKLY and (week is not None or prize_cents is not None):
        raise DeskError(f"the {pkind} prize takes no week or amount: it comes from the pools")
    query = select(PrizeAward).where(PrizeAward.kind == pkind.value)
    if pkind is PrizeKind.WEEKLY:
        query = query.where(PrizeAward.place == week)
    if session.scalars(query).first() is not None:
        what = (f"week {week}'s prize is" if pkind is PrizeKind.WEEKLY
                else f"the {pkind} prizes are")
        raise Conflict(f"{what} already awarded")
    try:
        book = _book(session, settings, now, kind=pkind, week=week, prize_cents=prize_cents)
    except DeskError:
        raise
    except (PrizeError, StandingsError, ValueError) as exc:
        raise DeskError(str(exc)) from None
    rows = []
    what = f"week {week}'s prize" if pkind is PrizeKind.WEEKLY else f"the {pkind} prizes"
    with conflict_on_race(session, lambda: f"{what} were awarded at the same moment at another"
                          " desk: nothing was recorded twice; look at the prizes again"):
        for award in book.awards:
            place = award.week if award.week is not None else award.position
            row = PrizeAward(kind=pkind.value, place=place or 0, entry_id=award.entry_id,
                             patron_id=award.patron_id, amount_cents=award.amount_cents,
                             awarded_at=as_utc(now), deadline=as_utc(award.claim_deadline))
            session.add(row)
            rows.append(row)
        session.flush()
        write_audit(session, now, actor, AWARDED, detail={
            "kind": pkind.value, "week": week, "total_cents": book.total_cents,
            "awards": [{"award_id": r.id, "entry_id": r.entry_id, "patron_id": r.patron_id,
                        "place": r.place, "amount_cents": r.amount_cents} for r in rows],
            "remainders": [{"reason": r.reason.value, "amount_cents": r.amount_cents,
                            "detail": r.detail} for r in book.remainders]}, why=why)
        session.commit()
    return tuple(_view(r, now) for r in rows)


def claim_prize(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
                award_id: int, id_number: str, receipt: str | None = None,
                why: str | None = None) -> PrizeView:
    """Record that the winner collected and signed for a prize (rule 55): the claimant's
    document must be one the winning patron presented, and the claim must come before the
    deadline; a withheld prize (the winner disqualified, rule 57) is not paid."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = session.get(PrizeAward, award_id)
    if row is None:
        raise NotFound(f"no prize award {award_id}")
    check_duty("award / pay prize", actor=actor, earlier=awarded_by(session, award_id))
    if row.claimed_at is not None:
        raise Conflict(f"prize {award_id} was claimed at {from_db(row.claimed_at):%Y-%m-%d %H:%M}"
                       f" by {row.claimed_by}")
    if row.withheld_at is not None:
        raise Conflict(f"prize {award_id} is withheld: the winner was disqualified (rule 57):"
                       f" {row.withheld_reason}")
    if prize_status(row, now) == "expired":
        local = from_db(row.deadline).astimezone(settings.tz)
        raise Conflict(f"prize {award_id} ({format_rand(row.amount_cents)}) expired at"
                       f" {local:%Y-%m-%d %H:%M} (rule 55: claims within"
                       f" {settings.prizes.claim_days} days)")
    try:
        number = normalize_id(id_number)
    except ValueError as exc:
        raise DeskError(str(exc)) from None
    winner = get_patron(session, row.patron_id)
    if number != winner.id_number and number not in {d.number for d in winner.documents}:
        raise Conflict(f"the document shown is not that of the prize winner {winner.patron_id}")
    # Compare-and-set: of two desks claiming at the same moment, one records the claim.
    claimed = session.execute(
        update(PrizeAward).where(PrizeAward.id == award_id, PrizeAward.claimed_at.is_(None))
        .values(claimed_at=as_utc(now), claimed_by=f"{winner.name} ({winner.patron_id})"[:200])
        .execution_options(synchronize_session=False))
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        session.rollback()
        raise Conflict(f"prize {award_id} was claimed at the same moment at another desk:"
                       " pay it once")
    session.refresh(row)
    write_audit(session, now, actor, "prize.claimed", detail={
        "award_id": row.id, "patron_id": winner.patron_id, "amount_cents": row.amount_cents,
        "receipt": receipt}, why=why)
    session.commit()
    return _view(row, now)


def prizes(session: Session, clock: WallClock) -> tuple[PrizeView, ...]:
    """Every prize awarded, with its status now."""
    now = desk_now(clock)
    rows = session.scalars(select(PrizeAward).order_by(PrizeAward.id)).all()
    return tuple(_view(r, now) for r in rows)
