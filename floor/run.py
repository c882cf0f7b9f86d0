"""A whole simulated floor at full speed in virtual time: what `showdown simulate floor` runs.

The production parts, wired as on a real floor: in the floor's process an MQTT broker
(embedded amqtt, or a given one such as Mosquitto), the central service (leaderboard.app
.LeaderboardService: ingest, standings, page, desk API) and the desk
(floor.desk, the same desk the demo's tournament drives); in a process of its own per table
(floor.process; or all in the floor's process, `processes=False`) the
table daemon (controller.wiring: the simulated shoe on a pty behind the real serial driver,
the simulated chip reader as a pyusb backend behind the real USB driver, the ID reader on a
pty, the journal) and its virtual dealer (floor.tables). The desk's clerk
and supervisor sign in as themselves; patrons register, buy an entry for every heat and are
seated by signed desk commands; a virtual dealer plays each heat, the readers verify every
payout and each patron acknowledges with a card tap.

Nothing waits on the wall clock for the simulation's sake: every table, the central service
and the desk read one `FloorClock` (shared memory) that moves on by the simulated length of
each hand played; the virtual dealer is woken by each input its table applies; the chip
readers sweep as soon as chips move; there are no pauses between hands. Real timeouts stay
real.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from floor.clock import FloorClock
from floor.desk import FloorDesk
from floor.plan import (
    HEAT_HANDS,
    HEAT_MARGIN,
    FloorFiles,
    LoadPlan,
    tournament_settings,
    write_files,
)
from floor.tables import TableOrders, TableResult, play_table
from game.poker.evaluate import evaluate
from leaderboard.models import Message, TableProgress
from runtime.event_loop import EventLoopChoiceError, loop_factory
from simulators.patrons import make_patrons
from simulators.table_stuck import TableStuck

if TYPE_CHECKING:
    from floor.process import TableProcess
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["FloorError", "FloorRun", "broker_for", "central_service", "until_stopped"]

_CENTRAL_WAIT_S: Final = 60.0  # a real timeout: the central service never caught up
_DRAIN_LOOK_S: Final = 0.05  # the last messages change no standings: look again this often
_T = TypeVar("_T")


class FloorError(Exception):
    """The floor cannot run as asked (a database in use, a calendar too short)."""


# ---- the central side, for both floors ---------------------------------------------------


async def broker_for(stack: contextlib.AsyncExitStack, given: str | None) -> tuple[str, bool]:
    """The broker's "host:port" and whether it is embedded: `given`, else an embedded one
    started on `stack`."""
    from controller.embedded_broker import EmbeddedBroker  # noqa: PLC0415

    if given is not None:
        return given, False
    embedded = await stack.enter_async_context(EmbeddedBroker())
    return f"127.0.0.1:{embedded.port}", True


@contextlib.asynccontextmanager
async def central_service(files: FloorFiles, clock: FloorClock, settings: TournamentSettings,
                          *, stop: asyncio.Event | None = None
                          ) -> AsyncIterator[LeaderboardService | None]:
    """The central service on the floor's clock, from its config file: yields it once it
    is ready (None if `stop` was set first; what stopped it raises) and stops it after."""
    from leaderboard.app import LeaderboardService  # noqa: PLC0415
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

    config = read_leaderboard_config(files.service)
    service = LeaderboardService(config, clock=clock.wall, settings=settings)
    service_stop = asyncio.Event()
    task = asyncio.create_task(service.run(service_stop), name="floor.leaderboard")
    try:
        ready, _ = await until_stopped(_ready(service, task), stop or asyncio.Event())
        yield service if ready else None
    finally:
        service_stop.set()
        await task


async def _ready(service: LeaderboardService, task: asyncio.Task[Any]) -> None:
    """The service ready, or the error that stopped it."""
    waiting = asyncio.ensure_future(service.ready.wait())
    await asyncio.wait({waiting, task}, return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():
        waiting.cancel()
        task.result()  # raises what stopped it
        raise RuntimeError("the central service stopped before it was ready")


async def until_stopped(work: Awaitable[_T], stop: asyncio.Event) -> tuple[bool, _T | None]:
    """Run `work` until it ends or `stop` is set: (finished, its result); its error raises."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        return False, None
    return True, task.result()


# ---- the load floor ----------------------------------------------------------------------


class FloorRun:
    """Runs a load floor (see the module docstring); `run()` fills `tables` and `problems`."""

    def __init__(self, plan: LoadPlan, *, out: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.out = out
        try:
            _, _, self.settings = tournament_settings(plan)
        except ValueError as exc:
            raise FloorError(str(exc)) from None
        self.clock = FloorClock.virtual(self.settings.schedule.starts_at)
        if plan.processes:  # each table's process runs on the chosen loop
            try:
                loop_factory()
            except EventLoopChoiceError as exc:
                raise FloorError(str(exc)) from None
        self.tables: dict[str, TableResult] = {}
        self.problems: list[str] = []
        self.service: LeaderboardService | None = None
        self.desk: HeatDesk | None = None
        self.processes: dict[str, TableProcess] = {}  # table -> its process, while it runs
        self.broker_kind = ""
        self.wall_s = 0.0  # real seconds of play (the floor opened to the last message stored)
        self.cpu_s = 0.0  # this process's CPU seconds in that time (broker, service, desk)

    def _write_files(self, broker: str) -> FloorFiles:
        files = write_files(self.plan, broker, log_level="error")
        for table, journal in files.journals.items():
            self.tables[table] = TableResult(table=table, journal=journal)
        return files

    async def run(self) -> None:
        """Start the broker, the service and the tables, play every table's hands, stop."""
        async with contextlib.AsyncExitStack() as stack:
            broker, embedded = await broker_for(stack, self.plan.broker)
            self.broker_kind = "embedded amqtt" if embedded else "MQTT broker"
            files = self._write_files(broker)
            async with central_service(files, self.clock, self.settings) as service:
                assert service is not None
                self.service = service
                await self._serve(service, files)

    async def _serve(self, service: LeaderboardService, files: FloorFiles) -> None:
        held = await asyncio.to_thread(self._messages_held)
        if held:
            raise FloorError(f"the floor needs an empty central database: it already"
                             f" holds {held} table messages")
        p = self.plan
        desk = FloorDesk(service, self.clock, self.settings, tell_page=False)
        await asyncio.to_thread(desk.sign_in)
        self.desk = HeatDesk(desk, tables=list(files.tables), hand_seconds=p.hand_seconds)
        today = self.clock.wall().astimezone(self.settings.tz).date()
        people = make_patrons(p.tables * p.players, rng=random.Random(p.seed), today=today,
                              under_age=0)
        ids = await desk.register(people)
        for n, table in enumerate(files.tables):
            self.desk.patrons[table] = [i for i in ids[n * p.players:(n + 1) * p.players]
                                        if i is not None]
        await self._tables(files.tables)

    def _orders(self, table: str, path: Path) -> TableOrders:
        p = self.plan
        return TableOrders(table=table, config=path, hands=p.hands, players=p.players,
                           hand_seconds=p.hand_seconds, timeout=p.timeout, pace=p.pace,
                           sweep_on_change=p.sweep_on_change,
                           profile=p.profile and table == next(iter(self.tables)))

    async def _tables(self, table_files: dict[str, Path]) -> None:
        assert self.desk is not None
        desk = self.desk
        if self.plan.processes:
            results = await self._in_processes(table_files, desk)
        else:
            evaluate("Ah Kh Qh Jh Th 2c 3d")  # its lookup tables are built once, before play
            results = await self._in_this_process(table_files, desk)
        for result in results:
            result.journal = self.tables[result.table].journal
            result.scores.update(desk.scores.get(result.table, {}))
            self.tables[result.table] = result

    async def _in_this_process(self, table_files: dict[str, Path],
                               desk: HeatDesk) -> list[TableResult]:
        stop = asyncio.Event()
        finished: list[TableResult] = []

        async def report(result: TableResult) -> None:
            finished.append(result)
            await desk.table_gone(result.table)
            if len(finished) == len(table_files):
                await self._drained(finished)
                stop.set()

        async with asyncio.TaskGroup() as tg:
            for table, path in table_files.items():
                tg.create_task(play_table(self._orders(table, path), self.clock, desk,
                                          finished=report, stop=stop), name=f"floor.{table}")
        return finished

    async def _in_processes(self, table_files: dict[str, Path],
                            desk: HeatDesk) -> list[TableResult]:
        from floor.process import TableProcess  # noqa: PLC0415

        processes: list[TableProcess] = []
        try:
            for table, path in table_files.items():
                processes.append(TableProcess(self._orders(table, path), self.clock, desk,
                                              gone=desk.table_gone))
                self.processes[table] = processes[-1]
            await asyncio.gather(*(p.done.wait() for p in processes))
            results = [p.result for p in processes]
            await self._drained(results)
        finally:
            for problem in await asyncio.gather(*(p.stop() for p in processes)):
                if problem is not None:
                    self.problems.append(problem)
        return results

    async def _drained(self, results: list[TableResult]) -> None:
        """Wait until the central database holds each table's messages up to the last seq
        it journaled (a real timeout: it never did); the floor's wall time ends then."""
        def behind() -> list[str]:
            with Session(self._engine()) as session:
                held = {t: int(s) for t, s in session.execute(
                    select(TableProgress.table_id, TableProgress.contiguous_seq))}
            return [f"{r.table} (central has up to seq {held.get(r.table, 0)} of {r.last_seq})"
                    for r in results if held.get(r.table, 0) < r.last_seq]

        feed = self.service.feed if self.service is not None else None
        deadline = time.monotonic() + _CENTRAL_WAIT_S
        while late := await asyncio.to_thread(behind):
            left = deadline - time.monotonic()
            if left < 0:
                self.problems.append("the central database never caught up with "
                                     + ", ".join(late))
                break
            version = feed.version if feed is not None else 0
            if feed is None:
                await asyncio.sleep(_DRAIN_LOOK_S)
            else:
                await feed.wait_newer(version, timeout=min(left, _DRAIN_LOOK_S))
        opened = self.desk.opened_at if self.desk is not None else None
        if opened is not None and self.desk is not None:
            self.wall_s = time.perf_counter() - opened
            self.cpu_s = time.process_time() - self.desk.opened_cpu

    def _messages_held(self) -> int:
        with Session(self._engine()) as session:
            return int(session.scalar(select(func.count()).select_from(Message)) or 0)

    def _engine(self) -> Any:
        engine = self.service.engine if self.service is not None else None
        if engine is None:
            raise FloorError("the central service is not running")
        return engine


class HeatDesk:
    """The floor's desk as the load floor's tables ask it (a `floor.tables.TableDesk`):
    each table's patrons buy an entry for each of its heats, which the desk opens, seats
    and closes once its acknowledged scores are central (`scores`: table -> entry -> score).

    It keeps the floor's heat days: the floor opens once every table is up; past the day's
    last heat that fits, the tables wait for each other and the last one moves the floor's
    clock on to the next heat day's opening."""

    def __init__(self, desk: FloorDesk, *, tables: list[str], hand_seconds: float) -> None:
        self.desk, self.clock, self.settings = desk, desk.clock, desk.settings
        self.hand_seconds = hand_seconds
        self.patrons: dict[str, list[str]] = {t: [] for t in tables}  # table -> patron ids
        self.scores: dict[str, dict[str, int]] = {t: {} for t in tables}
        self.opened_at: float | None = None  # perf_counter when the floor opened
        self.opened_cpu = 0.0  # this process's CPU seconds then
        self._night = asyncio.Condition()
        self._resting = 0  # tables waiting for the next heat day
        self._waiting: set[str] = set(tables)  # tables not yet up
        self._gone: set[str] = set()  # tables no longer playing
        self.clock.playing = len(tables)

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
        """Return when the table may open its next heat (see the class docstring)."""
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
        margin = timedelta(seconds=HEAT_MARGIN * HEAT_HANDS * self.hand_seconds)
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

    async def send_roster(self, table: str, args: dict[str, Any]) -> None:
        """Send the table its staff roster (audited at the desk)."""
        await self.desk.roster(table, args)

    async def buy_entries(self, table: str) -> list[tuple[str, str]]:
        """An entry (cash) for each of the table's patrons: (entry id, patron id) each."""
        return [(await self.desk.buy(patron), patron) for patron in self.patrons[table]]

    async def open_heat(self, table: str) -> tuple[str, int]:
        """Open a qualifying heat at the table and send the command: (heat id, its seq)."""
        opened = await self.desk.open_heat(table)
        return str(opened.args["heat_id"]), opened.seq

    async def seat(self, table: str, entry: str, seat: int, proofs: dict[str, str]) -> int:
        """Seat the entry with its patron's proofs and send the command; its seq."""
        return (await self.desk.seat(table, entry, seat, proofs)).seq

    async def send_again(self, ref: int) -> None:
        """Send a command again, with the same seq."""
        await self.desk.send_again(ref)

    async def close_heat(self, table: str, entries: list[str]) -> None:
        """Wait for the entries' acknowledged scores centrally, then close the heat."""
        scores = await self.desk.scores(entries)
        self.scores[table].update({e: cents for e, (cents, _, _) in scores.items()})
        await self.desk.close_heat(table)
