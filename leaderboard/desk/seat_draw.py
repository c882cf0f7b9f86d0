"""The Final's seat draw (rule 40; R10): drawn once with the OS CSPRNG, stored before any
seat is given, and replayable from what was stored."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.draw import RECOMMENDED_BYTES, DrawError, draw_seats
from game.tournament.entries import Stage
from game.tournament.schema import MAX_SEATS, TournamentSettings
from leaderboard.desk.action import begin_action, conflict_on_race, desk_now, write_audit
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.ids import FINAL_HEAT
from leaderboard.desk.lookups import PLAYED, get_entry, stage_entries
from leaderboard.desk.values import DrawOutcome, Replay
from leaderboard.eligibility import as_utc
from leaderboard.models import Draw, Entry
from runtime.clocks import WallClock

RandomBytes = Callable[[int], bytes]


def _draw_seats(settings: TournamentSettings) -> list[int]:
    return list(range(1, (settings.final.seats_per_heat or MAX_SEATS) + 1))


def _apply_draw(session: Session, row: Draw, now: datetime, actor: str) -> dict[str, int]:
    """Give each Final place its drawn seat (idempotent) and commit."""
    draw_id = row.id
    seats = {str(a["finalist"]): int(a["seat"]) for a in row.result["assignments"]}
    entries = [get_entry(session, entry_id) for entry_id in sorted(seats)]
    changed = [e for e in entries
               if e.seat != seats[e.entry_id] or e.heat_id != FINAL_HEAT]

    def raced() -> str:
        held = session.execute(select(Entry.entry_id, Entry.seat).where(
            Entry.stage == Stage.FINAL.value, Entry.heat_id == FINAL_HEAT,
            Entry.table_id.is_(None))).all()
        wrong = [f"{e} holds seat {s}" for e, s in sorted(held)
                 if s is not None and seats.get(e) != s]
        return (f"the seats of draw {draw_id} cannot be given: "
                + ("; ".join(wrong) or "another desk changed the Final's seats meanwhile")
                + ", which the draw did not give: a supervisor must resolve it")

    if changed:
        with conflict_on_race(session, raced):
            # Free the seats first: a seat moving from one place to another never
            # collides with itself on the way (one place per heat and seat).
            for entry in changed:
                entry.seat = None
            session.flush()
            for entry in changed:
                entry.seat, entry.heat_id = seats[entry.entry_id], FINAL_HEAT
            write_audit(session, now, actor, "final.seats_applied", detail={
                "draw_id": draw_id, "seats": {e.entry_id: seats[e.entry_id] for e in changed}})
            session.commit()
    else:
        session.commit()
    return seats


def draw_final(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
               random_bytes: RandomBytes = secrets.token_bytes,
               why: str | None = None) -> DrawOutcome:
    """Draw the Final's seats (rule 40) with the OS CSPRNG and an unbiased shuffle.

    The random bytes, the finalists and the result are committed in a `Draw` row before any
    seat is given; if a draw row exists (say the desk crashed after drawing) it is used
    again and nothing is drawn anew (R10).
    """
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = session.scalar(select(Draw).where(Draw.stage == Stage.FINAL.value).order_by(Draw.id))
    reused = row is not None
    if row is None:
        finalists = [e.entry_id for e in stage_entries(session, Stage.FINAL)]
        if not finalists:
            raise Conflict("no Final places are allocated")
        seated = [e for e in stage_entries(session, Stage.FINAL) if e.status in PLAYED]
        if seated:
            raise Conflict(f"Final place {seated[0].entry_id} is already seated")
        data = random_bytes(RECOMMENDED_BYTES)
        try:
            drawn = draw_seats(finalists, _draw_seats(settings), data)
        except DrawError as exc:
            raise DeskError(str(exc)) from None
        row = Draw(stage=Stage.FINAL.value, random_hex=data.hex(),
                   finalists=list(drawn.finalists), result=drawn.log_record(),
                   drawn_at=as_utc(now), drawn_by=actor)

        def raced() -> str:
            other = session.scalar(select(Draw).where(Draw.stage == Stage.FINAL.value))
            who = f"draw {other.id} by {other.drawn_by}" if other is not None else "a draw"
            return (f"the Final's seats were drawn at the same moment at another desk ({who});"
                    " that draw is in force and this one was not stored: run the draw again"
                    " to give its seats")

        # One draw per stage: the first one stored is in force.
        with conflict_on_race(session, raced):
            session.add(row)
            session.flush()
            write_audit(session, now, actor, "final.drawn", detail={
                "draw_id": row.id, "seats": {a.finalist: a.seat for a in drawn.assignments}},
                why=why)
            session.commit()  # stored before use: a crash from here on reuses this draw
    seats = _apply_draw(session, row, now, actor)
    return DrawOutcome(draw_id=row.id, seats=seats, random_hex=row.random_hex, reused=reused)


def replay_draw(session: Session, draw_id: int) -> Replay:
    """Recompute a stored draw from its stored bytes, finalists and seats."""
    row = session.get(Draw, draw_id)
    if row is None:
        raise NotFound(f"no draw {draw_id}")
    try:
        data = bytes.fromhex(row.random_hex)
        again = draw_seats(list(row.finalists), [int(s) for s in row.result["seats"]], data)
    except (DrawError, ValueError, KeyError, TypeError) as exc:
        raise DeskError(f"draw {draw_id} cannot be replayed: {exc}") from None
    stored = tuple(sorted((str(a["finalist"]), int(a["seat"]))
                          for a in row.result["assignments"]))
    replayed = tuple(sorted((a.finalist, a.seat) for a in again.assignments))
    return Replay(draw_id=row.id, stored=stored, replayed=replayed, bytes_used=again.bytes_used)
