"""The desk of a simulated floor (`showdown simulate floor`), in the floor's own process: its
manager enrols a clerk and a pit supervisor who sign in as themselves; patrons register, buy
an entry for every heat and are seated by signed desk commands over MQTT; each table gets its
staff roster, and a heat is closed once its acknowledged scores are in the central database.

It is the `FloorDesk` every table asks (floor.table), directly or over a
table process's channel, and it keeps the floor's calendar: the floor opens once every table
is up; past the day's last heat that fits, the tables wait for each other and the last one
moves the floor's clock on to the next heat day's opening.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from floor.demo_people import enrol_desk, roster_command
from floor.virtual_time import FloorClock
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk.auth import SignInRefused, authorise, sign_in
from leaderboard.desk.permissions import allowed
from leaderboard.models import Score
from simulators.patrons import SimPatron, make_patrons
from simulators.table_stuck import TableStuck

if TYPE_CHECKING:
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["DESK_MANAGER", "DESK_STAFF", "FloorDeskService"]

DESK_MANAGER: Final = "floor-manager"
DESK_STAFF: Final = (("floor-clerk", "clerk"), ("floor-supervisor", "supervisor"))
CENTRAL_WAIT_S: Final = 60.0  # a real timeout: the central service never answered
_LOOK_AGAIN_S: Final = 0.5  # the longest a wait on the central service goes without looking
_HEAT_HANDS: Final = 10  # a qualifying heat's hands (rule 14)
HEAT_MARGIN: Final = 1.5  # heats' length left in the day's window to open another
_T = TypeVar("_T")


class FloorDeskService:
    """The floor's desk (see the module docstring); `scores` holds each table's entries'
    scores as the central database stored them."""

    def __init__(self, service: LeaderboardService, clock: FloorClock,
                 settings: TournamentSettings, *, tables: list[str], players: int,
                 hand_seconds: float, seed: int) -> None:
        self.service, self.clock, self.settings = service, clock, settings
        self.players, self.hand_seconds = players, hand_seconds
        self.scores: dict[str, dict[str, int]] = {t: {} for t in tables}
        self.opened_at: float | None = None  # perf_counter when the floor opened
        self.opened_cpu = 0.0  # this process's CPU seconds then
        self._rng = random.Random(seed)
        self._tokens: dict[str, str] = {}
        self._passwords: dict[str, str] = {}
        self._patrons: dict[str, list[str]] = {}  # table -> its patrons' ids
        self._commands: dict[int, desk.DeskCommand] = {}  # seq -> command, to send again
        self._night = asyncio.Condition()
        self._resting = 0  # tables waiting for the next heat day
        self._waiting: set[str] = set(tables)  # tables not yet up
        self._gone: set[str] = set()  # tables no longer playing
        clock.playing = len(tables)

    # ---- the floor's calendar ---------------------------------------------------------

    async def table_gone(self, table: str) -> None:
        """A table stopped playing (its heats played, failed or its process died); once."""
        async with self._night:
            if table in self._gone:
                return
            self._gone.add(table)
            self._waiting.discard(table)
            self.clock.playing = max(0, self.clock.playing - 1)
            self._night.notify_all()

    async def before_heat(self, table: str) -> None:
        """Return when the table may open its next heat (see the module docstring)."""
        if table in self._waiting:
            async with self._night:
                self._waiting.discard(table)
                self._night.notify_all()
                await self._night.wait_for(lambda: not self._waiting)
                if self.opened_at is None:
                    self.opened_at, self.opened_cpu = time.perf_counter(), time.process_time()
        await self._day(table)

    async def _day(self, table: str) -> None:
        schedule = self.settings.schedule
        margin = timedelta(seconds=HEAT_MARGIN * _HEAT_HANDS * self.hand_seconds)
        now = self.clock.wall()
        day = schedule.heat_day(now)
        if day is not None and now + margin < schedule.opens_at(day) + schedule.window.length:
            return
        async with self._night:
            self._resting += 1
            night = self.clock.elapsed
            if self._resting >= self.clock.playing:
                following = (day or now.astimezone(schedule.tz).date()) + timedelta(days=1)
                if following > schedule.last_day:
                    self._resting -= 1
                    raise TableStuck(f"qualifying's last heat day ({schedule.last_day}) is"
                                     " over: ask for fewer hands")
                self.clock.advance_to(schedule.opens_at(following))
                self._night.notify_all()
            else:
                await self._night.wait_for(lambda: self.clock.elapsed > night
                                           or self._resting >= self.clock.playing)
                if self.clock.elapsed == night:  # the others stopped: this one wakes the day
                    self._resting -= 1
                    await self._day(table)
                    return
            self._resting -= 1

    # ---- what a table asks ------------------------------------------------------------

    async def send_roster(self, table: str, args: dict[str, Any]) -> None:
        """Send the table its staff roster (audited at the desk)."""
        await self._send(await asyncio.to_thread(
            self._desk, "staff.send_roster",
            lambda s, _st, by: roster_command(s, self.clock.wall, by, table=table, args=args)))

    async def buy_entries(self, table: str) -> list[tuple[str, str]]:
        """An entry (cash) for each of the table's patrons: (entry id, patron id) each."""
        def buy(session: Session, settings: TournamentSettings, by: str
                ) -> list[tuple[str, str]]:
            return [(desk.buy_entry(session, settings, self.clock.wall, actor=by,
                                    patron_id=patron, payment="cash").entry_id, patron)
                    for patron in self._patrons[table]]

        return await asyncio.to_thread(self._desk, "entry.buy", buy)

    async def open_heat(self, table: str) -> tuple[str, int]:
        """Open a qualifying heat at the table and send the command: (heat id, its seq)."""
        opened = await asyncio.to_thread(self._desk, "heat.open", lambda s, st, by: (
            desk.open_heat(s, st, self.clock.wall, actor=by, table=table,
                           stage=Stage.QUALIFYING)))
        await self._send(opened)
        return str(opened.args["heat_id"]), opened.seq

    async def seat(self, table: str, entry: str, seat: int, proofs: dict[str, str]) -> int:
        """Seat the entry with its patron's proofs and send the command; its seq."""
        seating = await asyncio.to_thread(self._desk, "entry.seat", lambda s, st, by: (
            desk.seat_entry(s, st, self.clock.wall, actor=by, entry_id=entry, table=table,
                            seat=seat)))
        command = seating.command
        command = desk.DeskCommand(seq=command.seq, table=command.table,
                                   command=command.command, args={**command.args, **proofs})
        await self._send(command)
        return command.seq

    async def send_again(self, ref: int) -> None:
        """Send a command again, with the same seq."""
        await self._send(self._commands[ref])

    async def close_heat(self, table: str, entries: list[str]) -> None:
        """Wait for the entries' acknowledged scores centrally, then close the heat."""
        self.scores[table].update(await self._scores(entries))
        closed = await asyncio.to_thread(self._desk, "heat.close", lambda s, _st, by: (
            desk.close_heat(s, self.clock.wall, actor=by, table=table)))
        await self._send(closed)

    # ---- the desk's people ------------------------------------------------------------

    def sign_in_desk(self) -> None:
        """Enrol the desk's people (the first manager enrols the others); each signs in."""
        wall = self.clock.wall
        self._passwords = {s: secrets.token_urlsafe(18)
                           for s, _ in ((DESK_MANAGER, ""), *DESK_STAFF)}
        with Session(self._engine(), expire_on_commit=False) as session:
            enrol_desk(session, wall, manager=DESK_MANAGER, manager_name="Floor Manager",
                       staff=DESK_STAFF, passwords=self._passwords)
            for staff_id, _role in DESK_STAFF:
                self._tokens[staff_id] = sign_in(
                    session, wall, staff_id=staff_id,
                    passphrase_text=self._passwords[staff_id], client="demo").token

    def register(self, tables: list[str]) -> None:
        """The floor's patrons register at the desk, `players` for each table."""
        today = self.clock.wall().astimezone(self.settings.tz).date()
        people = make_patrons(len(tables) * self.players, rng=self._rng, today=today,
                              under_age=0)
        for n, table in enumerate(tables):
            group = people[n * self.players:(n + 1) * self.players]
            self._patrons[table] = self._desk("patron.register", partial(
                _register, clock=self.clock, people=group))

    def _engine(self) -> Any:
        engine = self.service.engine
        if engine is None:
            raise desk.DeskError("the central service is not running")
        return engine

    def _desk(self, action: str, work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """Run `work` as the desk person whose role may take `action`, through their own
        session (signing in again when it has lapsed in virtual time)."""
        staff_id = next(s for s, role in DESK_STAFF if allowed(role, action))
        with Session(self._engine()) as session:
            try:
                actor = authorise(session, self.clock.wall, self._tokens[staff_id], action)
            except SignInRefused:
                session.rollback()
                self._tokens[staff_id] = sign_in(
                    session, self.clock.wall, staff_id=staff_id,
                    passphrase_text=self._passwords[staff_id], client="demo").token
                actor = authorise(session, self.clock.wall, self._tokens[staff_id], action)
            return work(session, self.settings, actor.staff_id)

    async def _send(self, command: desk.DeskCommand) -> None:
        link = self.service.link
        if link is None:
            raise desk.DeskError("the central service is not connected")
        self._commands[command.seq] = command
        await link.send(command)

    async def _scores(self, entries: list[str]) -> dict[str, int]:
        """The entries' acknowledged scores once the central database has them all: woken by
        each new standings document, looking again at least every `_LOOK_AGAIN_S`."""
        def read() -> dict[str, int]:
            with Session(self._engine()) as session:
                return {r.entry_id: r.score_cents for r in session.scalars(
                    select(Score).where(Score.entry_id.in_(entries),
                                        Score.acknowledged_at.is_not(None)))}

        feed = self.service.feed
        deadline = time.monotonic() + CENTRAL_WAIT_S
        while True:
            version = feed.version if feed is not None else 0
            found = await asyncio.to_thread(read)
            if len(found) == len(entries):
                return found
            left = deadline - time.monotonic()
            if left < 0:
                missing = ", ".join(sorted(set(entries) - set(found)))
                raise TimeoutError(f"the central database has no acknowledged score for"
                                   f" {missing} after {CENTRAL_WAIT_S:.0f} s")
            if feed is None:
                await asyncio.sleep(_LOOK_AGAIN_S)
            else:
                await feed.wait_newer(version, timeout=min(left, _LOOK_AGAIN_S))


def _register(session: Session, settings: TournamentSettings, by: str, *, clock: FloorClock,
              people: list[SimPatron]) -> list[str]:
    """The desk registers simulated patrons; their ids."""
    return [desk.register_patron(session, settings, clock.wall, actor=by, name=p.name,
                                 id_kind=p.id_kind, id_number=p.id_number,
                                 birth_date=p.birth_date, name_consent=True).patron_id
            for p in people]  # simulated patrons agree to be named on the page
