"""A whole simulated floor at full speed in virtual time: what `showdown simulate floor` runs.

The production parts, wired as on a real floor: in the floor's process an MQTT broker
(embedded amqtt, or a given one such as Mosquitto), the central service (leaderboard.app
.LeaderboardService: ingest, standings, page, desk API) and the desk
(floor.desk); in a process of its own per table
(floor.process; or all in the floor's process, `processes=False`) the
table daemon (controller.wiring: the simulated shoe on a pty behind the real serial driver,
the simulated chip reader as a pyusb backend behind the real USB driver, the ID reader on a
pty, the journal) and its virtual dealer (floor.table). The desk's clerk
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
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from floor.desk import HEAT_MARGIN, FloorDeskService
from floor.table import TableOrders, TableResult, play_table
from floor.virtual_time import FloorClock
from game.poker.evaluate import evaluate
from leaderboard.models import Message, TableProgress
from runtime.event_loop import EventLoopChoiceError, loop_factory
from runtime.settings_files import default_tournament_path, read_tournament
from simulators.table_toml import new_table_home, simulated_table_toml
from wire.signing import Signer, save_private_key

if TYPE_CHECKING:
    from floor.process import TableProcess
    from leaderboard.app import LeaderboardService

__all__ = ["FloorError", "FloorOptions", "FloorRun", "TableRun"]

LEADERBOARD_KEY_ID: Final = "leaderboard"
_CENTRAL_WAIT_S: Final = 60.0  # a real timeout: the central service never caught up
_DRAIN_LOOK_S: Final = 0.05  # the last messages change no standings: look again this often
_HEAT_HANDS: Final = 10  # a qualifying heat's hands (rule 14)

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
    # the venue id in topics and client ids; "": "floor" on the embedded broker, and on a
    # given (shared) broker one of this run's own, so that no retained message or persistent
    # session of an earlier run reaches it (a retained status signed by an earlier run's
    # table key was rejected centrally, at random, on the machine's Mosquitto)
    venue: str = ""
    timeout: float = 30.0  # the virtual dealer's wait for its table (real seconds)
    # "demo": the pace `showdown demo` plays at (0.4 s between hands, chip readers that only
    # sweep every 50 ms, a dealer polling its table every 10 ms), a baseline for benches
    pace: Literal["full", "demo"] = "full"
    processes: bool = True  # each table in a process of its own (False: all in this one)
    profile: bool = False  # the first table samples its threads (bench/floor.py)

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 20:
            raise ValueError(f"--tables must be 1..20, got {self.tables}")
        if not 1 <= self.hands <= 10_000:
            raise ValueError(f"--hands must be 1..10000 (per table), got {self.hands}")
        if not 1 <= self.players <= 6:
            raise ValueError(f"--players must be 1..6, got {self.players}")
        if not 1.0 <= self.hand_seconds <= 3600.0:
            raise ValueError(f"--hand-seconds must be 1..3600, got {self.hand_seconds:g}")
        if not self.venue:
            object.__setattr__(self, "venue", "floor" if self.broker is None
                               else f"floor-{secrets.token_hex(3)}")


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
    last_seq: int = 0  # its journal's last message when it finished
    cpu_s: float = 0.0  # CPU seconds of its process while it played (a process a table)
    inputs: int = 0  # inputs its journal took while it played
    transactions: int = 0  # the journal's transactions for them (group commit)
    profile: dict[str, Any] = field(default_factory=dict)  # its sampler's counts, if asked


class FloorRun:
    """Runs a floor (see the module docstring); `run()` fills `tables` and `problems`."""

    def __init__(self, options: FloorOptions, *, out: Callable[[str], None] = print) -> None:
        self.options = options
        self.out = out
        self.settings = read_tournament(default_tournament_path())
        self.clock = FloorClock(self.settings.schedule.starts_at)
        self._check_calendar()
        if options.processes:  # each table's process runs on the chosen loop
            try:
                loop_factory()
            except EventLoopChoiceError as exc:
                raise FloorError(str(exc)) from None
        self.tables: dict[str, TableRun] = {}
        self.problems: list[str] = []
        self.service: LeaderboardService | None = None
        self.desk: FloorDeskService | None = None
        self.processes: dict[str, TableProcess] = {}  # table -> its process, while it runs
        self.broker_kind = ""
        self.wall_s = 0.0  # real seconds of play (the floor opened to the last message stored)
        self.cpu_s = 0.0  # this process's CPU seconds in that time (broker, service, desk)

    def _check_calendar(self) -> None:
        """Refuse a run whose hands cannot be played in qualifying's heat days."""
        o, schedule = self.options, self.settings.schedule
        heat = _HEAT_HANDS * o.hand_seconds
        window = schedule.window.length.total_seconds()
        per_day = max(1, int((window - HEAT_MARGIN * heat) // heat) + 1)
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
            o = self.options
            self.desk = FloorDeskService(service, self.clock, self.settings,
                                         tables=list(table_files), players=o.players,
                                         hand_seconds=o.hand_seconds, seed=o.seed)
            await asyncio.to_thread(self.desk.sign_in_desk)
            await asyncio.to_thread(self.desk.register, list(table_files))
            await self._tables(table_files)
        finally:
            stop.set()
            await task

    def _orders(self, table: str, path: Path) -> TableOrders:
        o = self.options
        return TableOrders(table=table, config=path, hands=o.hands, players=o.players,
                           hand_seconds=o.hand_seconds, timeout=o.timeout, pace=o.pace,
                           sweep_on_change=o.sweep_on_change,
                           profile=o.profile and table == next(iter(self.tables)))

    async def _tables(self, table_files: dict[str, Path]) -> None:
        assert self.desk is not None
        desk = self.desk
        if self.options.processes:
            results = await self._in_processes(table_files, desk)
        else:
            evaluate("Ah Kh Qh Jh Th 2c 3d")  # its lookup tables are built once, before play
            results = await self._in_this_process(table_files, desk)
        for result in results:
            run = self.tables[result.table]
            run.hands, run.heats, run.wall_s = result.hands, result.heats, result.wall_s
            run.problem, run.published, run.resent = (result.problem, result.published,
                                                      result.resent)
            run.last_seq, run.profile, run.cpu_s = result.last_seq, result.profile, result.cpu_s
            run.inputs, run.transactions = result.inputs, result.transactions
            run.scores.update(desk.scores.get(result.table, {}))

    async def _in_this_process(self, table_files: dict[str, Path],
                               desk: FloorDeskService) -> list[TableResult]:
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
                            desk: FloorDeskService) -> list[TableResult]:
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
