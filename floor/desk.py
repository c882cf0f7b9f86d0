"""The floor's registration desk, staffed by simulated people acting through the real desk
functions (leaderboard.desk) under their own signed-in sessions: what both `showdown demo`
and `showdown simulate floor` drive.

The central database is new, so its first manager is enrolled as `showdown desk init` does,
and enrols a clerk and a pit supervisor; each signs in (a passphrase drawn for the run and
forgotten) and every desk action is taken by the person whose role may take it (a clerk where
a clerk may, then the supervisor, then the manager), checked and audited through their
session. A session that has lapsed in floor time is signed in again; `shift()` signs
everyone in for a new day. Patrons register, buy entries, are seated and unseated; heats are
opened and closed; staff rosters and every other command go to the tables as signed desk
commands over MQTT (kept by seq, to be sent again when a delivery went missing); what the
desk waits for in the central database (scores, a withdrawal) is read as the page is
told something changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.auth import SignInRefused, authorise, init_first_manager, sign_in, sign_out
from leaderboard.desk.command_log import record_command
from leaderboard.desk.disputes import resolve_dispute
from leaderboard.desk.permissions import allowed
from leaderboard.models import Dispute, Score
from runtime.clocks import WallClock
from wire.messages import StaffRoster

if TYPE_CHECKING:
    from floor.clock import FloorClock
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService
    from simulators.patrons import SimPatron

__all__ = ["CENTRAL_WAIT_S", "FloorDesk", "desk_staff"]

CENTRAL_WAIT_S: Final = 60.0  # a real timeout: the central service never caught up
_LOOK_AGAIN_S: Final = 0.1  # the longest a wait on the central database goes without looking
_T = TypeVar("_T")
# a score as the central database holds it: (cents, acknowledged by, a dispute's note)
ScoreRow = tuple[int, str, str | None]


def desk_staff(prefix: str) -> tuple[tuple[str, str], ...]:
    """The desk's people, (staff id, role), the first manager last."""
    return ((f"{prefix}-clerk", "clerk"), (f"{prefix}-supervisor", "supervisor"),
            (f"{prefix}-manager", "manager"))


class FloorDesk:
    """The desk (see the module docstring): `sign_in()` once the central service is up."""

    def __init__(self, service: LeaderboardService, clock: FloorClock,
                 settings: TournamentSettings, *, staff: str = "floor",
                 tell_page: bool = True) -> None:
        """`staff`: the prefix of the people's ids (demo-clerk ...); `tell_page`: the page
        is told after every action, as the desk API does."""
        self.service, self.clock, self.settings = service, clock, settings
        self.staff = desk_staff(staff)
        self.refused: list[str] = []  # "name: why" of each registration refused
        self._tell_page = tell_page
        self._tokens: dict[str, str] = {}
        self._passwords: dict[str, str] = {}
        self._commands: dict[int, desk.DeskCommand] = {}  # seq -> command, to send again

    # ---- the people ---------------------------------------------------------------------

    def sign_in(self) -> None:
        """Enrol the desk's people (the first manager, who enrols the others) and sign each
        in."""
        manager, _ = self.staff[-1]
        self._passwords = {s: secrets.token_urlsafe(18) for s, _ in self.staff}
        with Session(self._engine(), expire_on_commit=False) as session:
            token = _enrol(session, self.clock.wall, manager=manager, staff=self.staff,
                           passwords=self._passwords)
            sign_out(session, self.clock.wall, token)
        self.shift()

    def shift(self) -> None:
        """The desk's people sign in for the day (signing out of the last day's sessions)."""
        wall = self.clock.wall
        with Session(self._engine(), expire_on_commit=False) as session:
            for staff_id, _ in self.staff:
                old = self._tokens.pop(staff_id, None)
                if old is not None:
                    with contextlib.suppress(desk.DeskError, ValueError):
                        sign_out(session, wall, old)
                self._tokens[staff_id] = sign_in(
                    session, wall, staff_id=staff_id,
                    passphrase_text=self._passwords[staff_id], client="demo").token

    def act(self, action: str, work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """Run `work` as the desk person whose role may take `action`, through their own
        session (signing in again when it has lapsed in floor time)."""
        wall = self.clock.wall
        staff_id = next(s for s, role in self.staff if allowed(role, action))
        with Session(self._engine()) as session:
            try:
                actor = authorise(session, wall, self._tokens[staff_id], action)
            except SignInRefused:
                session.rollback()
                self._tokens[staff_id] = sign_in(
                    session, wall, staff_id=staff_id,
                    passphrase_text=self._passwords[staff_id], client="demo").token
                actor = authorise(session, wall, self._tokens[staff_id], action)
            return work(session, self.settings, actor.staff_id)

    async def at_desk(self, action: str,
                      work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """`act` off the event loop; then the page is told something changed."""
        try:
            return await asyncio.to_thread(self.act, action, work)
        finally:
            feed = self.service.feed
            if feed is not None and self._tell_page:
                feed.changed("desk")

    def read(self, read: Callable[[Session, TournamentSettings], _T]) -> _T:
        """What `read` finds in the central database (no desk action)."""
        with Session(self._engine()) as session:
            return read(session, self.settings)

    async def central(self, read: Callable[[Session, TournamentSettings], _T],
                      done: Callable[[_T], bool], lacking: Callable[[_T], str]) -> _T:
        """What `read` finds in the central database, once `done` with it: woken by each
        new standings document, looking again at least every `_LOOK_AGAIN_S`."""
        feed = self.service.feed
        deadline = time.monotonic() + CENTRAL_WAIT_S
        while True:
            version = feed.version if feed is not None else 0
            value = await asyncio.to_thread(self.read, read)
            if done(value):
                return value
            left = deadline - time.monotonic()
            if left < 0:
                raise TimeoutError(f"the central database has {lacking(value)} after"
                                   f" {CENTRAL_WAIT_S:.0f} s")
            if feed is None:
                await asyncio.sleep(_LOOK_AGAIN_S)
            else:
                await feed.wait_newer(version, timeout=min(left, _LOOK_AGAIN_S))

    # ---- commands to the tables ---------------------------------------------------------

    async def send(self, command: desk.DeskCommand) -> desk.DeskCommand:
        """Send a desk command to its table (kept to be sent again); the command."""
        link = self.service.link
        if link is None:
            raise desk.DeskError("the central service is not connected")
        self._commands[command.seq] = command
        await link.send(command)
        return command

    async def send_again(self, seq: int) -> None:
        """Send a command again, with the same seq (a table applies a command once)."""
        await self.send(self._commands[seq])

    async def roster(self, table: str, args: dict[str, Any]) -> None:
        """Send the table the staff roster enrolling its virtual staff (audited)."""
        await self.send(await self.at_desk("staff.send_roster", lambda s, _st, by: (
            roster_command(s, self.clock.wall, by, table=table, args=args))))

    async def open_heat(self, table: str, *, stage: Stage = Stage.QUALIFYING,
                        heat_id: str | None = None) -> desk.DeskCommand:
        """Open a heat at the table and send the command."""
        return await self.send(await self.at_desk("heat.open", lambda s, st, by: (
            desk.open_heat(s, st, self.clock.wall, actor=by, table=table, stage=stage,
                           heat_id=heat_id))))

    async def seat(self, table: str, entry: str, seat: int | None,
                   proofs: Mapping[str, str]) -> desk.DeskCommand:
        """Seat the entry (at `seat`, or the place's own) with its patron's proofs (their
        rewards card and PIN, hashed) and send the command."""
        seating = await self.at_desk("entry.seat", lambda s, st, by: desk.seat_entry(
            s, st, self.clock.wall, actor=by, entry_id=entry, table=table, seat=seat))
        command = seating.command
        return await self.send(desk.DeskCommand(
            seq=command.seq, table=command.table, command=command.command,
            args={**command.args, **proofs}))

    async def unseat(self, entry: str, why: str) -> desk.DeskCommand:
        """Unseat an entry whose patron has left and send the command."""
        return await self.send(await self.at_desk("entry.unseat", lambda s, _st, by: (
            desk.unseat_entry(s, self.clock.wall, actor=by, entry_id=entry, why=why))))

    async def close_heat(self, table: str) -> desk.DeskCommand:
        """Close the table's heat and send the command."""
        return await self.send(await self.at_desk("heat.close", lambda s, _st, by: (
            desk.close_heat(s, self.clock.wall, actor=by, table=table))))

    # ---- patrons ------------------------------------------------------------------------

    async def register(self, people: Sequence[SimPatron]) -> list[str | None]:
        """Each person registers at the desk; their patron ids, None for one refused (why
        in `refused`). Simulated patrons agree to be named on the page."""
        def register(session: Session, s: TournamentSettings, actor: str, *,
                     person: SimPatron) -> str | None:
            try:
                return desk.register_patron(
                    session, s, self.clock.wall, actor=actor, name=person.name,
                    id_kind=person.id_kind, id_number=person.id_number,
                    birth_date=person.birth_date, name_consent=True).patron_id
            except desk.Refused as exc:
                self.refused.append(f"{person.name}: {exc}")
                return None

        return [await self.at_desk("patron.register", partial(register, person=person))
                for person in people]

    async def buy(self, patron_id: str, entry_id: str | None = None) -> str:
        """A buy-in for the patron, in cash (under `entry_id`, else the desk's); the id."""
        return await self.at_desk("entry.buy", lambda s, st, by: desk.buy_entry(
            s, st, self.clock.wall, actor=by, patron_id=patron_id, payment="cash",
            entry_id=entry_id).entry_id)

    async def resolve(self, entry: str, resolution: str) -> None:
        """The supervisor's ruling on a dispute, recorded at the desk (audited)."""
        await self.at_desk("dispute.resolve", lambda s, _st, by: resolve_dispute(
            s, self.clock.wall, actor=by, entry_id=entry, resolution=resolution))

    async def scores(self, entries: Sequence[str]) -> dict[str, ScoreRow]:
        """The entries' scores once the central database has them all, acknowledged:
        (cents, the acknowledgement's method, the note of a dispute) each."""
        def scores(session: Session, _: TournamentSettings) -> dict[str, ScoreRow]:
            notes = {d.entry_id: d.note for d in session.scalars(
                select(Dispute).where(Dispute.entry_id.in_(entries)))}
            return {r.entry_id: (r.score_cents, str(r.ack_method), notes.get(r.entry_id))
                    for r in session.scalars(
                        select(Score).where(Score.entry_id.in_(entries),
                                            Score.acknowledged_at.is_not(None)))}

        return await self.central(
            scores, lambda rows: len(rows) == len(entries),
            lambda rows: "no acknowledged score for"
                         f" {', '.join(sorted(set(entries) - set(rows)))}")

    def _engine(self) -> Any:
        engine = self.service.engine
        if engine is None:
            raise desk.DeskError("the central service is not running")
        return engine


def roster_command(session: Session, clock: WallClock, by: str, *, table: str,
                   args: dict[str, Any]) -> desk.DeskCommand:
    """Record the sending of a table's staff roster in the desk's audit (who is enrolled,
    never their hashes); the command to send."""
    roster = StaffRoster.decode(args)
    actor = begin_action(session, by)
    row = write_audit(session, desk_now(clock), actor, StaffRoster.NAME, detail={
        "table": table, "command": StaffRoster.NAME, "version": roster.version,
        "members": [{"staff_id": m.staff_id, "role": m.role} for m in roster.members]})
    command = record_command(session, row, table, roster)  # its seq: docs/desk-commands.md
    session.commit()
    return command


def _enrol(session: Session, clock: WallClock, *, manager: str,
           staff: Sequence[tuple[str, str]], passwords: Mapping[str, str]) -> str:
    """Enrol a new database's first manager, who enrols the other `staff` (id, role) with
    their `passwords`, as `showdown desk init` and the desk do; the manager's session token."""
    name = manager.replace("-", " ").title()
    init_first_manager(session, clock, staff_id=manager, name=name,
                       passphrase_text=passwords[manager])
    token = sign_in(session, clock, staff_id=manager, passphrase_text=passwords[manager],
                    client="demo").token
    for staff_id, role in staff:
        if staff_id == manager:
            continue
        actor = authorise(session, clock, token, "staff.enrol").staff_id
        desk.enrol_staff(session, clock, actor=actor, staff_id=staff_id,
                         name=staff_id.replace("-", " ").title(), role=role,
                         desk_passphrase=passwords[staff_id])
    return token
