"""A whole simulated floor at full speed in virtual time: what `showdown simulate floor` runs.

The production parts, wired as on a real floor, in one process: an MQTT broker (embedded
amqtt, or a given one such as Mosquitto), the central service (leaderboard.app
.LeaderboardService: ingest, standings, page, desk API) and one table daemon per table
(controller.wiring: the simulated shoe on a pty behind the real serial driver, the simulated
chip reader as a pyusb backend behind the real USB driver, the ID reader on a pty, the
journal). The desk's clerk and supervisor sign in as themselves; patrons register, buy an
entry for every heat and are seated by signed desk commands; a virtual dealer plays each
heat, the readers verify every payout and each patron acknowledges with a card tap.

Nothing waits on the wall clock for the simulation's sake: every table, the central service
and the desk read one `FloorClock` that moves on by the simulated length of each hand played;
the virtual dealer is woken by each input its table applies; the chip readers sweep as soon
as chips move; there are no pauses between hands. Real timeouts stay real.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import time
import tomllib
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from controller.commands.demo_desk import enrol_desk, roster_command
from controller.config import parse_table_config
from controller.virtual_time import FloorClock
from controller.wiring import DaemonHandle, SimTiming, WiredTable, wire_table
from game.evaluate import evaluate
from game.tournament import Stage
from leaderboard import desk
from leaderboard.desk_auth import SignInRefused, authorise, sign_in
from leaderboard.desk_roles import allowed
from leaderboard.models import Message, Score, TableProgress
from runtime.settings_files import default_tournament_path, read_tournament
from simulators.patrons import SimPatron, make_patrons
from simulators.table_play import TableStuck, VirtualTable
from simulators.table_toml import new_table_home, simulated_table_toml
from wire.messages import CloseHeat, StaffRoster
from wire.signing import Signer, save_private_key

if TYPE_CHECKING:
    from controller.app import TableDaemon
    from game.tournament_schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["FloorError", "FloorOptions", "FloorRun", "TableRun"]

LEADERBOARD_KEY_ID: Final = "leaderboard"
DESK_MANAGER: Final = "floor-manager"
DESK_STAFF: Final = (("floor-clerk", "clerk"), ("floor-supervisor", "supervisor"))
_CENTRAL_WAIT_S: Final = 60.0  # a real timeout: the central service never answered
_LOOK_AGAIN_S: Final = 0.5  # the longest a wait on the central service goes without looking
_DRAIN_LOOK_S: Final = 0.05  # the last messages change no standings: look again this often
_SAFETY_SWEEP_MS: Final = 1000  # a chip reader's sweep interval when it sweeps on change
_SENDS: Final = 3  # a desk command's deliveries before the table is given up on
_RESEND_AFTER_S: Final = 10.0  # real seconds: the table never showed the command applied
_DEMO_PAUSE_S: Final = 0.4  # `showdown demo`'s default pause between hands
_HEAT_HANDS: Final = 10  # a qualifying heat's hands (rule 14)
_HEAT_MARGIN: Final = 1.5  # heats' length left in the day's window to open another
_T = TypeVar("_T")

SERVICE_TOML: Final = """\
# The central service of a simulated floor (written by `showdown simulate floor`).
[service]
venue = "{venue}"
database = "{database}"
tournament = "{tournament}"
debounce_seconds = {debounce}
[mqtt]
broker = "{broker}"
[keys]
signing_key = "leaderboard.key"
[keys.tables]
{tables}
[http]
host = "127.0.0.1"
port = 0
desk_api = true
[log]
format = "console"
level = "error"
"""


class FloorError(Exception):
    """The floor cannot run as asked (a database in use, a calendar too short)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorOptions:
    """What the floor runs: tables, hands per table (whole heats), players, seed, where."""

    directory: Path
    tables: int = 8
    hands: int = 20  # per table, played in whole heats (a heat ends when its entries do)
    players: int = 3  # per heat
    seed: int = 2026
    broker: str | None = None  # "host:port"; None: an embedded broker on a free port
    database: str | None = None  # URL; None: SQLite in `directory`
    hand_seconds: float = 60.0  # a hand's simulated length at one table
    debounce_seconds: float = 0.0  # the standings' recomputation after changes
    sweep_on_change: bool = True  # the chip readers sweep as soon as chips move
    venue: str = "floor"
    timeout: float = 30.0  # the virtual dealer's wait for its table (real seconds)
    # "demo": the pace `showdown demo` plays at (0.4 s between hands, chip readers that only
    # sweep every 50 ms, a dealer polling its table every 10 ms), a baseline for benches
    pace: Literal["full", "demo"] = "full"

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 20:
            raise ValueError(f"--tables must be 1..20, got {self.tables}")
        if not 1 <= self.hands <= 10_000:
            raise ValueError(f"--hands must be 1..10000 (per table), got {self.hands}")
        if not 1 <= self.players <= 6:
            raise ValueError(f"--players must be 1..6, got {self.players}")
        if not 1.0 <= self.hand_seconds <= 3600.0:
            raise ValueError(f"--hand-seconds must be 1..3600, got {self.hand_seconds:g}")


@dataclass(slots=True)
class TableRun:
    """One table's share of the run, for the report."""

    table: str
    journal: Path
    hands: int = 0
    heats: int = 0
    wall_s: float = 0.0  # real seconds from its first heat to its last
    scores: dict[str, int] = field(default_factory=dict)  # entry -> score, as stored centrally
    problem: str | None = None
    published: int = 0  # messages its MQTT link published
    resent: int = 0  # desk commands sent again (the table never showed one applied)


class FloorRun:
    """Runs a floor (see the module docstring); `run()` fills `tables` and `problems`."""

    def __init__(self, options: FloorOptions, *, out: Callable[[str], None] = print) -> None:
        self.options = options
        self.out = out
        self.settings = read_tournament(default_tournament_path())
        self.clock = FloorClock(self.settings.schedule.starts_at)
        self._check_calendar()
        self.tables: dict[str, TableRun] = {}
        self.wired: dict[str, WiredTable] = {}
        self.problems: list[str] = []
        self.service: LeaderboardService | None = None
        self.broker_kind = ""
        self.wall_s = 0.0  # real seconds of play (first heat opened to last heat closed)
        self._rng = random.Random(options.seed)
        self._tokens: dict[str, str] = {}
        self._passwords: dict[str, str] = {}
        self._patrons: dict[str, list[str]] = {}  # table -> its patrons' ids
        self._seated: dict[str, list[str]] = {}  # table -> entries of the heat in play
        self._playing = 0  # tables still playing (the clock's share of each hand)
        self._night = asyncio.Condition()
        self._resting = 0  # tables waiting for the next heat day

    def _check_calendar(self) -> None:
        """Refuse a run whose hands cannot be played in qualifying's heat days."""
        o, schedule = self.options, self.settings.schedule
        heat = _HEAT_HANDS * o.hand_seconds
        window = schedule.window.length.total_seconds()
        per_day = max(1, int((window - _HEAT_MARGIN * heat) // heat) + 1)
        heats = -(-o.hands // _HEAT_HANDS)
        days = (schedule.last_day - schedule.first_day).days + 1
        if -(-heats // per_day) > days:
            raise FloorError(
                f"{o.hands} hands a table at {o.hand_seconds:g} s a hand need"
                f" {-(-heats // per_day)} heat days; qualifying has {days}: ask for fewer"
                " hands or shorter ones (--hand-seconds)")

    # ---- files ------------------------------------------------------------------------

    def _write_files(self, broker: str) -> tuple[Path, dict[str, Path]]:
        o, d = self.options, self.options.directory
        tournament = default_tournament_path()
        lb_key = Signer.generate(LEADERBOARD_KEY_ID)
        save_private_key(lb_key, d / "leaderboard.key")
        tables: dict[str, Path] = {}
        keys: dict[str, str] = {}
        for n in range(1, o.tables + 1):
            table = f"t{n:02d}"
            home, keys[table] = new_table_home(d, table)
            tables[table] = home / "table.toml"
            tables[table].write_text(simulated_table_toml(
                venue=o.venue, table=table, broker=broker, tournament=tournament,
                paytables=tournament.parent / "paytables.toml",
                desk_keys={LEADERBOARD_KEY_ID: lb_key.public_key.base64},
                seed=o.seed * 100 + n, players=o.players, virtual_dealer=False,
                log_level="error"), encoding="utf-8")
            self.tables[table] = TableRun(table=table, journal=home / "journal.sqlite")
        database = o.database or f"sqlite:///{d / 'leaderboard.sqlite3'}"
        service = d / "leaderboard.toml"
        service.write_text(SERVICE_TOML.format(
            venue=o.venue, database=database, tournament=tournament, broker=broker,
            debounce=o.debounce_seconds,
            tables="\n".join(f'{t} = "{k}"' for t, k in keys.items())), encoding="utf-8")
        return service, tables

    # ---- running ----------------------------------------------------------------------

    async def run(self) -> None:
        """Start the broker, the service and the tables, play every table's hands, stop."""
        from controller.embedded_broker import EmbeddedBroker  # noqa: PLC0415

        async with contextlib.AsyncExitStack() as stack:
            if self.options.broker is None:
                embedded = await stack.enter_async_context(EmbeddedBroker())
                broker, self.broker_kind = f"127.0.0.1:{embedded.port}", "embedded amqtt"
            else:
                broker, self.broker_kind = self.options.broker, "MQTT broker"
            service_file, table_files = self._write_files(broker)
            await self._serve(service_file, table_files)

    async def _serve(self, service_file: Path, table_files: dict[str, Path]) -> None:
        from leaderboard.app import LeaderboardService  # noqa: PLC0415
        from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

        config = read_leaderboard_config(service_file)
        service = self.service = LeaderboardService(config, clock=self.clock.wall,
                                                    settings=self.settings)
        stop = asyncio.Event()
        task = asyncio.create_task(service.run(stop), name="floor.leaderboard")
        try:
            ready = asyncio.ensure_future(service.ready.wait())
            await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                ready.cancel()
                task.result()  # raises what stopped it
                raise RuntimeError("the central service stopped before it was ready")
            held = await asyncio.to_thread(self._messages_held)
            if held:
                raise FloorError(f"the floor needs an empty central database: it already"
                                 f" holds {held} table messages")
            await asyncio.to_thread(self._sign_in_desk)
            await asyncio.to_thread(self._register)
            evaluate("Ah Kh Qh Jh Th 2c 3d")  # its lookup tables are built once, before play
            await self._tables(table_files)
        finally:
            stop.set()
            await task

    async def _tables(self, table_files: dict[str, Path]) -> None:
        full = self.options.sweep_on_change and self.options.pace == "full"
        # Sweeping when chips move, the readers' own sweeps are only a safety net.
        timing = SimTiming(sweep_on_change=True, sweep_ms=_SAFETY_SWEEP_MS) if full \
            else SimTiming()
        stop = asyncio.Event()
        async with asyncio.TaskGroup() as tg:
            dealers = []
            for table, path in table_files.items():
                config = parse_table_config(tomllib.loads(path.read_text("utf-8")),
                                            source=str(path), base=path.parent)
                wired = self.wired[table] = wire_table(config, clock=self.clock,
                                                       timing=timing)
                done = asyncio.Event()
                dealers.append(done)
                tg.create_task(wired.daemon.run(stop, extra=self._dealer(wired, done)),
                               name=f"floor.{table}")
            self._playing = len(dealers)
            started = time.perf_counter()
            await asyncio.gather(*(d.wait() for d in dealers))
            await self._drained()
            self.wall_s = time.perf_counter() - started
            for table, wired in self.wired.items():
                if wired.daemon.link is not None:
                    self.tables[table].published = wired.daemon.link.counters().published
            stop.set()

    async def _drained(self) -> None:
        """Wait until every table's outbox is delivered and the central database holds each
        table's messages up to its last seq (a real timeout: it never did)."""
        def behind() -> list[str]:
            with Session(self._engine()) as session:
                held = {t: int(s) for t, s in session.execute(
                    select(TableProgress.table_id, TableProgress.contiguous_seq))}
            late = []
            for table, wired in self.wired.items():
                journal = wired.daemon.journal
                if journal is None:
                    continue
                last = journal.last_seq()
                if journal.pending_count() or held.get(table, 0) < last:
                    late.append(f"{table} (central has up to seq {held.get(table, 0)} of {last})")
            return late

        feed = self.service.feed if self.service is not None else None
        deadline = time.monotonic() + _CENTRAL_WAIT_S
        while late := await asyncio.to_thread(behind):
            left = deadline - time.monotonic()
            if left < 0:
                self.problems.append("the central database never caught up with "
                                     + ", ".join(late))
                return
            version = feed.version if feed is not None else 0
            if feed is None:
                await asyncio.sleep(_DRAIN_LOOK_S)
            else:
                await feed.wait_newer(version, timeout=min(left, _DRAIN_LOOK_S))

    def _dealer(self, wired: WiredTable, done: asyncio.Event
                ) -> Callable[[TableDaemon], Coroutine[Any, Any, None]]:
        table = wired.daemon.config.table
        run = self.tables[table]

        async def play(daemon: TableDaemon) -> None:
            started = time.perf_counter()
            try:
                sim = daemon.config.sim
                assert sim is not None
                demo = self.options.pace == "demo"
                shoe, chips = wired.devices.shoe_sim, wired.devices.rfid_sim
                if shoe is None or chips is None:
                    raise TableStuck("the table's shoe and chip reader are not simulators")
                dealer = VirtualTable(
                    (_PolledHandle if demo else DaemonHandle)(daemon), shoe=shoe, chips=chips,
                    ids=wired.devices.id_simulator, desk=self._table_desk(table),
                    seed=sim.seed, players=self.options.players, timeout=self.options.timeout,
                    hand_pause=_DEMO_PAUSE_S if demo else 0.0)
                await dealer.ensure_roster()
                while run.hands < self.options.hands:
                    await self._heat(table, dealer)
                    run.hands, run.heats = dealer.hands_played, run.heats + 1
            except (TableStuck, desk.DeskError, TimeoutError) as exc:
                run.problem = f"{table}: {exc}"
            finally:
                run.wall_s = time.perf_counter() - started
                async with self._night:
                    self._playing -= 1
                    self._night.notify_all()
                done.set()

        return play

    # ---- one heat ---------------------------------------------------------------------

    async def _heat(self, table: str, dealer: VirtualTable) -> None:
        await self._before_heat()
        link = self.wired[table].daemon.link
        if link is not None:  # the broker queues commands only for a table it has seen
            async with asyncio.timeout(_CENTRAL_WAIT_S):
                await link.wait_subscribed()
        entries = [await asyncio.to_thread(self._desk, "entry.buy",
                                           partial(_buy, clock=self.clock, patron_id=patron))
                   for patron in self._patrons[table]]
        opened = await asyncio.to_thread(self._desk, "heat.open", lambda s, st, by: (
            desk.open_heat(s, st, self.clock.wall, actor=by, table=table,
                           stage=Stage.QUALIFYING)))
        heat_id = str(opened.args["heat_id"])
        await self._until_applied(table, dealer, opened, f"heat {heat_id} to open",
                                  lambda s: s.get("heat") == heat_id)
        seats: dict[int, str] = {}
        for seat, entry in enumerate(entries, start=1):
            seating = await asyncio.to_thread(self._desk, "entry.seat", partial(
                _seat, clock=self.clock, entry_id=entry, table=table, seat=seat))
            proofs = await dealer.seat_proofs(entry)  # the patron's card and PIN, hashed
            await self._until_applied(
                table, dealer, replace(seating.command,
                                       args={**seating.command.args, **proofs}),
                f"{entry} to be seated", _seat_taken(seat))
            seats[seat] = entry
        self._seated[table] = list(entries)
        await dealer.until("the entries to be seated",
                           lambda s: len(s.get("seats", {})) == len(seats))
        await dealer.play_heat(seats, between_hands=self._hand_played)

    async def _until_applied(self, table: str, dealer: VirtualTable,
                             command: desk.DeskCommand, what: str,
                             check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Send a desk command until the table shows it applied: a delivery that went
        missing is sent again with the same seq (a table applies a command once), as a desk
        clerk would; each resend is counted in the report."""
        for attempt in range(1, _SENDS + 1):
            await self._send(command)
            patience, dealer.timeout = dealer.timeout, _RESEND_AFTER_S
            try:
                await dealer.until(what, check)
                return
            except TableStuck:
                if attempt == _SENDS:
                    raise
                self.tables[table].resent += 1
            finally:
                dealer.timeout = patience

    async def _hand_played(self, _hands: int) -> None:
        """A hand is over at one table: the floor's clock moves on by its share of it."""
        self.clock.advance(self.options.hand_seconds / max(1, self._playing))

    async def _before_heat(self) -> None:
        """Past the day's last heat that fits, wait for the other tables to finish theirs;
        the last one moves the floor's clock on to the next heat day's opening."""
        schedule = self.settings.schedule
        margin = timedelta(seconds=_HEAT_MARGIN * _HEAT_HANDS * self.options.hand_seconds)
        now = self.clock.wall()
        day = schedule.heat_day(now)
        if day is not None and now + margin < schedule.opens_at(day) + schedule.window.length:
            return
        async with self._night:
            self._resting += 1
            night = self.clock.elapsed
            if self._resting >= self._playing:
                following = (day or now.astimezone(schedule.tz).date()) + timedelta(days=1)
                if following > schedule.last_day:
                    raise TableStuck(f"qualifying's last heat day ({schedule.last_day}) is"
                                     " over: ask for fewer hands")
                self.clock.advance_to(schedule.opens_at(following))
                self._night.notify_all()
            else:
                await self._night.wait_for(lambda: self.clock.elapsed > night
                                           or self._resting >= self._playing)
                if self.clock.elapsed == night:  # the others stopped: this one wakes the day
                    self._resting -= 1
                    await self._before_heat()
                    return
            self._resting -= 1

    # ---- the desk ---------------------------------------------------------------------

    def _messages_held(self) -> int:
        with Session(self._engine()) as session:
            return int(session.scalar(select(func.count()).select_from(Message)) or 0)

    def _engine(self) -> Any:
        engine = self.service.engine if self.service is not None else None
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

    def _sign_in_desk(self) -> None:
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

    def _register(self) -> None:
        """The floor's patrons register at the desk, `players` for each table."""
        o = self.options
        today = self.clock.wall().astimezone(self.settings.tz).date()
        people = make_patrons(o.tables * o.players, rng=self._rng, today=today, under_age=0)
        for n, table in enumerate(self.tables):
            self._patrons[table] = [
                self._desk("patron.register", partial(_register, clock=self.clock, person=p))
                for p in people[n * o.players:(n + 1) * o.players]]

    async def _send(self, command: desk.DeskCommand) -> None:
        link = self.service.link if self.service is not None else None
        if link is None:
            raise desk.DeskError("the central service is not connected")
        await link.send(command)

    def _table_desk(self, table: str) -> Callable[..., Coroutine[Any, Any, None]]:
        """The virtual dealer's desk: the staff roster (audited); closing the heat waits for
        its acknowledged scores to reach the central database (the desk refuses otherwise)."""

        async def send(command: str, **args: Any) -> None:
            if command == StaffRoster.NAME:
                await self._send(await asyncio.to_thread(
                    self._desk, "staff.send_roster",
                    lambda s, _st, by: roster_command(s, self.clock.wall, by, table=table,
                                                      args=args)))
                return
            if command != CloseHeat.NAME:
                raise desk.DeskError(f"the floor's desk does not send {command}")
            entries = self._seated.pop(table, [])
            self.tables[table].scores.update(await self._scores(entries))
            closed = await asyncio.to_thread(self._desk, "heat.close", lambda s, _st, by: (
                desk.close_heat(s, self.clock.wall, actor=by, table=table)))
            await self._send(closed)

        return send

    async def _scores(self, entries: list[str]) -> dict[str, int]:
        """The entries' acknowledged scores once the central database has them all: woken by
        each new standings document, looking again at least every `_LOOK_AGAIN_S`."""
        def read() -> dict[str, int]:
            with Session(self._engine()) as session:
                return {r.entry_id: r.score_cents for r in session.scalars(
                    select(Score).where(Score.entry_id.in_(entries),
                                        Score.acknowledged_at.is_not(None)))}

        feed = self.service.feed if self.service is not None else None
        deadline = time.monotonic() + _CENTRAL_WAIT_S
        while True:
            version = feed.version if feed is not None else 0
            found = await asyncio.to_thread(read)
            if len(found) == len(entries):
                return found
            left = deadline - time.monotonic()
            if left < 0:
                missing = ", ".join(sorted(set(entries) - set(found)))
                raise TimeoutError(f"the central database has no acknowledged score for"
                                   f" {missing} after {_CENTRAL_WAIT_S:.0f} s")
            if feed is None:
                await asyncio.sleep(_LOOK_AGAIN_S)
            else:
                await feed.wait_newer(version, timeout=min(left, _LOOK_AGAIN_S))


def _seat_taken(seat: int) -> Callable[[Mapping[str, Any]], bool]:
    """A status check: the seat is taken."""
    return lambda status: str(seat) in status.get("seats", {})


class _PolledHandle(DaemonHandle):
    """A daemon's handle without change notices: the virtual dealer polls (the demo pace)."""

    changed = None  # type: ignore[assignment]


def _register(session: Session, settings: TournamentSettings, by: str, *, clock: FloorClock,
              person: SimPatron) -> str:
    """The desk registers a simulated patron; the patron's id."""
    return desk.register_patron(session, settings, clock.wall, actor=by, name=person.name,
                                id_kind=person.id_kind, id_number=person.id_number,
                                birth_date=person.birth_date).patron_id


def _buy(session: Session, settings: TournamentSettings, by: str, *, clock: FloorClock,
         patron_id: str) -> str:
    """A desk buy-in (cash) for the patron; the new entry's id."""
    return desk.buy_entry(session, settings, clock.wall, actor=by,
                          patron_id=patron_id, payment="cash").entry_id


def _seat(session: Session, settings: TournamentSettings, by: str, *, clock: FloorClock,
          entry_id: str, table: str, seat: int) -> desk.Seating:
    """The desk seats the entry at the table's seat."""
    return desk.seat_entry(session, settings, clock.wall, actor=by, entry_id=entry_id,
                           table=table, seat=seat)
