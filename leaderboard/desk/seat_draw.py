"""The Final's seat draw (rule 40; R10): drawn once with the OS CSPRNG, stored before any
seat is given, and replayable from what was stored.

The draw is made in two steps (issue 33, D380): `commit_draw` draws the seed with `secrets`,
stores it unrevealed and records its SHA-256 in the audit before a witness (an active
supervisor or manager other than the person drawing); `draw_final` with that commitment then
draws the seats from the seed, reveals it, and uses the commitment once. Anyone holding the
record can check sha256(seed) == the committed digest and replay the seats from the seed.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.draw import RECOMMENDED_BYTES, DrawError, draw_seats
from game.tournament.entries import Stage
from game.tournament.schema import MAX_SEATS, TournamentSettings
from leaderboard.desk.action import begin_action, conflict_on_race, desk_now, write_audit
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.ids import FINAL_HEAT
from leaderboard.desk.lookups import PLAYED, get_entry, stage_entries
from leaderboard.desk.values import Commitment, DrawOutcome, Replay
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import Draw, DrawCommitment, Entry, StaffRecord
from runtime.clocks import WallClock

RandomBytes = Callable[[int], bytes]

COMMITMENT_VALID: Final = timedelta(minutes=30)  # default: [draw] commitment_minutes
WITNESS_ROLES: Final = ("supervisor", "manager")
COMMITTED: Final = "final.draw_committed"


def seed_digest(seed_hex: str) -> str:
    """The SHA-256 (hex) of a seed given in hex: what a commitment records and shows."""
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


def commitment_view(row: DrawCommitment) -> Commitment:
    """A stored commitment as the desk shows it (never its seed)."""
    return Commitment(commitment_id=row.id, stage=row.stage, seed_sha256=row.seed_sha256,
                      witness=row.witness, committed_by=row.committed_by,
                      committed_at=from_db(row.committed_at),
                      expires_at=from_db(row.expires_at),
                      used_at=from_db(row.used_at) if row.used_at is not None else None)


def _witness(session: Session, witness: str, actor: str) -> str:
    """The witness's staff id, when they may witness ``actor``'s draw."""
    witness = witness.strip()
    if witness == actor:
        raise DeskError(f"the witness must be someone other than the person drawing ({actor})")
    member = session.get(StaffRecord, witness)
    if member is None:
        raise DeskError(f"witness {witness!r} is not an enrolled staff member")
    if not member.active:
        raise DeskError(f"witness {witness!r} is disabled: an active staff member witnesses")
    if member.role not in WITNESS_ROLES:
        raise DeskError(f"witness {witness!r} is a {member.role}: a supervisor or manager"
                        " witnesses the draw")
    return witness


def commit_draw(session: Session, clock: WallClock, *, actor: str, stage: str, witness: str,
                valid_for: timedelta = COMMITMENT_VALID,
                random_bytes: RandomBytes = secrets.token_bytes,
                why: str | None = None) -> Commitment:
    """Draw the Final's seed with the OS CSPRNG and commit to it: stored unrevealed, its
    SHA-256 recorded in the audit under ``actor`` and the witness, usable once until
    ``valid_for`` has passed (D380)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    if stage != Stage.FINAL.value:
        raise DeskError(f"only the Final's seats are drawn, not the {stage!r} stage's")
    who = _witness(session, witness, actor)
    drawn = session.scalar(select(Draw).where(Draw.stage == stage))
    if drawn is not None:
        raise Conflict(f"the Final's seats were drawn already (draw {drawn.id})")
    live = session.scalar(select(DrawCommitment).where(
        DrawCommitment.stage == stage, DrawCommitment.used_at.is_(None),
        DrawCommitment.expires_at > as_utc(now)).order_by(DrawCommitment.id))
    if live is not None:
        raise Conflict(f"commitment {live.id} (seed SHA-256 {live.seed_sha256}) is still"
                       f" open until {from_db(live.expires_at).isoformat()}: draw with it,"
                       " or wait until it expires")
    seed = random_bytes(RECOMMENDED_BYTES)
    row = DrawCommitment(stage=stage, seed_hex=seed.hex(),
                         seed_sha256=hashlib.sha256(seed).hexdigest(), witness=who,
                         committed_by=actor, committed_at=as_utc(now),
                         expires_at=as_utc(now + valid_for))
    session.add(row)
    session.flush()
    write_audit(session, now, actor, COMMITTED, detail={
        "commitment_id": row.id, "stage": stage, "seed_sha256": row.seed_sha256,
        "witness": who, "expires_at": as_utc(now + valid_for).isoformat()}, why=why)
    session.commit()
    return commitment_view(row)


def _use_commitment(session: Session, commitment_id: int, now: datetime,
                    actor: str) -> DrawCommitment:
    """The commitment a draw may use now (refused: unknown, used, expired, own witness)."""
    row = session.get(DrawCommitment, commitment_id)
    if row is None:
        raise NotFound(f"no draw commitment {commitment_id}")
    if row.stage != Stage.FINAL.value:
        raise Conflict(f"commitment {commitment_id} is for the {row.stage} stage")
    if row.used_at is not None:
        raise Conflict(f"commitment {commitment_id} was used at "
                       f"{from_db(row.used_at).isoformat()}: a commitment draws once")
    if from_db(row.expires_at) <= now:
        raise Conflict(f"commitment {commitment_id} expired at "
                       f"{from_db(row.expires_at).isoformat()}: commit a new seed")
    if row.witness == actor:
        raise DeskError(f"{actor} witnessed commitment {commitment_id}: the witness cannot"
                        " draw with it")
    return row


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
               why: str | None = None, commitment_id: int | None = None) -> DrawOutcome:
    """Draw the Final's seats (rule 40) with the OS CSPRNG and an unbiased shuffle.

    With ``commitment_id`` the seats are drawn from that commitment's seed (`commit_draw`),
    which is revealed and used once; without, from fresh random bytes. The random bytes, the
    finalists and the result are committed in a `Draw` row before any seat is given; if a
    draw row exists (say the desk crashed after drawing) it is used again and nothing is
    drawn anew (R10), unless another commitment is named (refused: drawn already).
    """
    actor = begin_action(session, actor)
    now = desk_now(clock)
    row = session.scalar(select(Draw).where(Draw.stage == Stage.FINAL.value).order_by(Draw.id))
    if (row is not None and commitment_id is not None
            and row.commitment_id != commitment_id):
        raise Conflict(f"the Final's seats were drawn already (draw {row.id} by"
                       f" {row.drawn_by}): commitment {commitment_id} cannot draw again")
    reused = row is not None
    committed: DrawCommitment | None = None
    if row is None:
        finalists = [e.entry_id for e in stage_entries(session, Stage.FINAL)]
        if not finalists:
            raise Conflict("no Final places are allocated")
        seated = [e for e in stage_entries(session, Stage.FINAL) if e.status in PLAYED]
        if seated:
            raise Conflict(f"Final place {seated[0].entry_id} is already seated")
        if commitment_id is not None:
            committed = _use_commitment(session, commitment_id, now, actor)
            data = bytes.fromhex(committed.seed_hex)
        else:
            data = random_bytes(RECOMMENDED_BYTES)
        try:
            drawn = draw_seats(finalists, _draw_seats(settings), data)
        except DrawError as exc:
            raise DeskError(str(exc)) from None
        row = Draw(stage=Stage.FINAL.value, random_hex=data.hex(),
                   finalists=list(drawn.finalists), result=drawn.log_record(),
                   drawn_at=as_utc(now), drawn_by=actor,
                   commitment_id=committed.id if committed is not None else None)
        detail: dict[str, object] = {}
        if committed is not None:
            committed.used_at = as_utc(now)
            detail = {"commitment_id": committed.id, "seed_sha256": committed.seed_sha256,
                      "seed_hex": committed.seed_hex, "witness": committed.witness}

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
                "draw_id": row.id, "seats": {a.finalist: a.seat for a in drawn.assignments},
                **detail}, why=why)
            session.commit()  # stored before use: a crash from here on reuses this draw
    seats = _apply_draw(session, row, now, actor)
    return DrawOutcome(draw_id=row.id, seats=seats, random_hex=row.random_hex, reused=reused,
                       commitment=_commitment_of(session, row))


def _commitment_of(session: Session, row: Draw) -> Commitment | None:
    if row.commitment_id is None:
        return None
    committed = session.get(DrawCommitment, row.commitment_id)
    return commitment_view(committed) if committed is not None else None


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
    commitment = _commitment_of(session, row)
    return Replay(draw_id=row.id, stored=stored, replayed=replayed, bytes_used=again.bytes_used,
                  random_hex=row.random_hex, drawn_by=row.drawn_by,
                  drawn_at=from_db(row.drawn_at), commitment=commitment,
                  seed_matches_commitment=None if commitment is None
                  else seed_digest(row.random_hex) == commitment.seed_sha256)
