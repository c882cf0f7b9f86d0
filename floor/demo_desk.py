"""The demo floor's state and its desk: the files a run writes (the tournament settings on the
demo's calendar, the keys, the central service's and each table's config), the calendar clock,
the desk staff who sign in each simulated day and act under their own sessions, the patrons
who register, and reading the central database (floor.demo plays on it).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import time
import tomllib
from collections.abc import Callable
from datetime import date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from sqlalchemy.orm import Session

from floor.calendar import (
    CalendarClock,
    DemoCalendar,
    demo_tournament,
    plan_calendar,
)
from floor.demo_people import DemoTable, enrol_desk, free_port
from floor.demo_plan import SERVICE_TOML, FloorPlan, FloorReport
from floor.progress import Narrator
from game.tournament.entries import Stage
from game.tournament.schedule import WEEKDAYS
from game.tournament.schema import parse_tournament
from leaderboard import desk
from leaderboard.desk.auth import authorise, sign_in, sign_out
from leaderboard.desk.permissions import allowed
from runtime.settings_files import default_paytables_path, default_tournament_path, read_tournament
from simulators.patrons import SimPatron, make_patrons
from simulators.table_toml import new_table_home, simulated_table_toml
from wire.signing import Signer, save_private_key

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from controller.wiring import WiredTable
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["DESK_MANAGER", "DESK_STAFF", "FloorDesk", "demo_settings"]

# The desk's people: the demo's database is new, so its first manager is enrolled as
# `showdown desk init` does, and enrols a clerk and a pit supervisor; each signs in (a
# passphrase drawn for the run and forgotten) and acts under their own session.
DESK_MANAGER: Final = "demo-manager"
DESK_STAFF: Final = (("demo-clerk", "clerk"), ("demo-supervisor", "supervisor"),
                     ("demo-manager", "manager"))
LEADERBOARD_KEY_ID: Final = "leaderboard"
SCORE_WAIT_S: Final = 60.0
_DESK_OPENS: Final = timedelta(minutes=30)  # the desk opens before the first heat window
_T = TypeVar("_T")


def demo_settings(plan: FloorPlan, *, today: date | None = None
                  ) -> tuple[DemoCalendar, str, TournamentSettings]:
    """The demo's calendar, its tournament file's text and the settings it gives (the
    shipped ones on the demo's calendar with the plan's `rules`); ValueError (a ConfigError
    for a bad setting) says what does not fit, e.g. fewer entries than semi-final places."""
    template = plan.tournament_file or default_tournament_path()
    shipped = read_tournament(template)
    starts_on = str(plan.rules.get("weekly_prizes.week_starts_on",
                                   WEEKDAYS[shipped.weekly_prizes.starts_on]))
    if starts_on not in WEEKDAYS:
        raise ValueError(f"weekly_prizes.week_starts_on: {starts_on!r} is not a weekday")
    calendar = plan_calendar(plan.days, today=today or datetime.now(shipped.tz).date(),
                             week_starts_on=starts_on, tz=shipped.tz)
    text = demo_tournament(template.read_text("utf-8"), calendar, plan.rules)
    settings = parse_tournament(tomllib.loads(text), "the demo's tournament settings",
                                tz=shipped.tz)
    entries = plan.tables * plan.players * plan.heats - (1 if plan.withdrawal else 0)
    advance = settings.qualifying.advance or 0
    if plan.whole and entries < advance:
        raise ValueError(
            f"{plan.tables} tables x {plan.players} players x {plan.heats} heats give"
            f" {entries} qualifying scores, but the semi-finals take {advance}"
            " (qualifying.advance): play more days or heats, or qualifying only")
    return calendar, text, settings


class FloorDesk:
    """The floor's state, its files, its clock and its desk (SimulatedFloor plays on it)."""

    def __init__(self, plan: FloorPlan, *, out: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.report = FloorReport(seed=plan.seed)
        self.narrator = Narrator(out, live=plan.progress)
        self.service: LeaderboardService | None = None
        self.tables: dict[str, WiredTable] = {}
        self.dealers: dict[str, DemoTable] = {}
        self.rng = random.Random(plan.seed)
        self._ids = random.Random(f"{plan.seed}:entry-ids")
        self.settings: TournamentSettings | None = None
        self.calendar: DemoCalendar | None = None
        self.clock = CalendarClock(datetime.now().astimezone())
        self.names: dict[str, str] = self.report.names  # patron id -> name
        self.people: dict[str, SimPatron] = {}  # patron id -> the person (documents)
        self.patrons: list[str] = []  # registered patron ids, in registration order
        self._seated: dict[str, tuple[Stage, list[tuple[str, str]]]] = {}  # table -> in play
        self._faults_shown: dict[str, int] = {}  # table -> fault lines printed
        self._tokens: dict[str, str] = {}  # the desk staff's session tokens
        self._passwords: dict[str, str] = {}

    # ---- telling -------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """One narrative line."""
        self.narrator.say(text)

    def local(self, when: datetime | None = None) -> datetime:
        """`when` (default: now on the demo's clock) in venue time."""
        assert self.settings is not None
        return (when or self.clock()).astimezone(self.settings.tz)

    async def jump(self, when: datetime, what: str) -> None:
        """Move the calendar forward to `when` and say what happens then."""
        if self.plan.stage_pause:
            await asyncio.sleep(self.plan.stage_pause)
        self.clock.jump_to(when)
        await asyncio.to_thread(self.shift)  # the desk's people sign in for the day
        local = self.local()
        self.report.calendar.append((what, local))
        self.say(f"\n== {local:%a %d %b %Y %H:%M} - {what} ==")

    # ---- files ---------------------------------------------------------------------------

    def _write_files(self, broker: str) -> tuple[Path, dict[str, Path]]:
        plan, d = self.plan, self.plan.directory
        calendar, text, settings = demo_settings(plan)
        self.calendar, self.settings = calendar, settings
        d.mkdir(parents=True, exist_ok=True)
        tournament = self.report.tournament = d / "tournament-demo.toml"
        tournament.write_text(text, encoding="utf-8")
        self.clock = CalendarClock(settings.schedule.opens_at(calendar.first_day) - _DESK_OPENS)
        lb_key = Signer.generate(LEADERBOARD_KEY_ID)
        save_private_key(lb_key, d / "leaderboard.key")
        paytables = plan.paytables_file or default_paytables_path()
        tables: dict[str, Path] = {}
        table_keys: dict[str, str] = {}
        for n in range(1, plan.tables + 1):
            table = f"t{n:02d}"
            home, table_keys[table] = new_table_home(d, table)
            tables[table] = home / "table.toml"
            self.report.journals[table] = home / "journal.sqlite"
            tables[table].write_text(simulated_table_toml(
                venue=plan.venue, table=table, broker=broker, tournament=tournament,
                paytables=paytables, journal="journal.sqlite",
                desk_keys={LEADERBOARD_KEY_ID: lb_key.public_key.base64},
                seed=plan.seed * 100 + n, players=plan.players, hand_pause=plan.hand_pause,
                virtual_dealer=False), encoding="utf-8")
        port = free_port(plan.http_host, plan.http_port)
        database = self.report.database = (plan.database
                                            or f"sqlite:///{d / 'leaderboard.sqlite3'}")
        inline = "\n".join(f'{t} = "{k}"' for t, k in table_keys.items())
        service = d / "leaderboard.toml"
        service.write_text(SERVICE_TOML.format(
            venue=plan.venue, database=database, tournament=tournament, broker=broker,
            host=plan.http_host, port=port, tables=inline), encoding="utf-8")
        return service, tables

    # ---- the desk ------------------------------------------------------------------------

    def _engine(self) -> Engine:
        engine = self.service.engine if self.service is not None else None
        if engine is None:
            raise RuntimeError("the leaderboard service is not running")
        return engine

    def desk_action(self, action: str,
                    work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """Run ``work`` as the desk person whose role may take ``action`` (a clerk where a
        clerk may, then the supervisor, then the manager), checked and recorded through
        their session."""
        assert self.settings is not None
        staff_id = next(s for s, role in DESK_STAFF if allowed(role, action))
        with Session(self._engine()) as session:
            actor = authorise(session, self.clock, self._tokens[staff_id], action).staff_id
            return work(session, self.settings, actor)

    async def at_desk(self, action: str,
                      work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """`desk_action` off the event loop; the page is told something changed (as the
        desk API does after every action)."""
        try:
            return await asyncio.to_thread(self.desk_action, action, work)
        finally:
            feed = self.service.feed if self.service is not None else None
            if feed is not None:
                feed.changed("desk")

    def read(self, read: Callable[[Session, TournamentSettings], _T]) -> _T:
        """What the demo's narrator reads in the central database (no desk action)."""
        assert self.settings is not None
        with Session(self._engine()) as session:
            return read(session, self.settings)

    def _sign_in_desk(self) -> None:
        """Enrol the desk's people (the first manager, who enrols the others) and sign each in."""
        passwords = self._passwords
        passwords.update({s: secrets.token_urlsafe(18) for s, _ in DESK_STAFF})
        with Session(self._engine(), expire_on_commit=False) as session:
            manager = enrol_desk(session, self.clock, manager=DESK_MANAGER,
                                 manager_name="Demo Manager", staff=DESK_STAFF,
                                 passwords=passwords)
            sign_out(session, self.clock, manager)
        self.shift()

    def shift(self) -> None:
        """The desk's people sign in for the day (signing out of the last day's sessions)."""
        with Session(self._engine(), expire_on_commit=False) as session:
            for staff_id, _ in DESK_STAFF:
                old = self._tokens.pop(staff_id, None)
                if old is not None:
                    with contextlib.suppress(desk.DeskError, ValueError):
                        sign_out(session, self.clock, old)
                self._tokens[staff_id] = sign_in(
                    session, self.clock, staff_id=staff_id,
                    passphrase_text=self._passwords[staff_id], client="demo").token

    async def _register(self) -> None:
        plan, settings, calendar = self.plan, self.settings, self.calendar
        assert settings is not None
        assert calendar is not None
        advance = settings.qualifying.advance or 0
        people = make_patrons(max(plan.tables * plan.players + 2, advance + 3), rng=self.rng,
                              today=calendar.first_day)

        def register(session: Session, s: TournamentSettings, actor: str,
                     person: SimPatron) -> str | None:
            try:
                patron = desk.register_patron(
                    session, s, self.clock, actor=actor, name=person.name,
                    id_kind=person.id_kind, id_number=person.id_number,
                    birth_date=person.birth_date, name_consent=True)  # the demo shows names
            except desk.Refused as exc:
                self.report.refused.append(f"{person.name}: {exc}")
                return None
            return patron.patron_id

        for person in people:
            patron_id = await self.at_desk("patron.register", partial(register, person=person))
            if patron_id is None:
                self.say(f"desk: REFUSED {person.name} (born {person.birth_date}):"
                         f" {self.report.refused[-1].split(': ', 1)[1]}")
            else:
                self.names[patron_id] = person.name
                self.people[patron_id] = person
                self.patrons.append(patron_id)
        self.say(f"desk: {len(self.patrons)} patrons registered, {len(self.report.refused)}"
                 " refused")

    async def _send(self, command: desk.DeskCommand) -> None:
        link = self.service.link if self.service is not None else None
        if link is None:
            raise desk.DeskError("the leaderboard service is not connected")
        await link.send(command)

    async def central(self, read: Callable[[Session, TournamentSettings], _T],
                      done: Callable[[_T], bool], lacking: Callable[[_T], str]) -> _T:
        """What `read` finds in the central database, once `done` with it (polled)."""
        deadline = time.monotonic() + SCORE_WAIT_S
        while True:
            value = await asyncio.to_thread(self.read, read)
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"the leaderboard has {lacking(value)} after"
                                   f" {SCORE_WAIT_S:.0f} s")
            await asyncio.sleep(0.1)

    def short(self, patron: str) -> str:
        """A patron's first name and initial (as the page shows them)."""
        first, _, last = self.names.get(patron, patron).partition(" ")
        return f"{first} {last[:1]}." if last else first
