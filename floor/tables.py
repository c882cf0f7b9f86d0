"""A table of the simulated floor: its daemon wired from its config file on the floor's clock
(`wire`), with its simulated devices and its virtual dealer (`FloorTable`), as both
`showdown demo` and `showdown simulate floor` run it.

In the demo the tournament (floor.tournament) drives the tables: it opens each heat, seats its
entries and has the scores acknowledged in table order (`AckTurns`). On the load floor each
table drives itself (`play_table`): it plays whole qualifying heats that the floor's desk
opens, seats and closes, asking through a `TableDesk`: the floor's own (floor.run) when the
table runs in the floor's process, or a channel to it when the table runs in a process of its
own (floor.process), as on a real floor where every table is a PC of its own. Either way the
table side is this code.

Scores tie often, and ties rank by the earlier acknowledgement (tournament.md): tables that
play a round in parallel therefore acknowledge one after the other, in table order, so that a
seed gives the same ranking however fast each table happened to play.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from controller.config import parse_table_config
from controller.wiring import DaemonHandle, SimTiming, WiredTable, wire_table
from floor.clock import FloorClock
from leaderboard.desk.errors import DeskError
from simulators.table_play import TableStuck, VirtualTable
from wire.messages import CloseHeat, StaffRoster

if TYPE_CHECKING:
    from controller.app import TableDaemon

__all__ = ["AckTurns", "FloorTable", "TableDesk", "TableOrders", "TableResult", "play_table",
           "subscribed", "wire"]

_SAFETY_SWEEP_MS: Final = 1000  # a chip reader's sweep interval when it sweeps on change
_SENDS: Final = 3  # a desk command's deliveries before the table is given up on
_RESEND_AFTER_S: Final = 10.0  # real seconds: the table never showed the command applied
_DEMO_PAUSE_S: Final = 0.4  # `showdown demo`'s default pause between hands
_OUTBOX_WAIT_S: Final = 60.0  # a real timeout: the table's outbox was never delivered
_OUTBOX_LOOK_S: Final = 0.05
_SUBSCRIBED_WAIT_S: Final = 60.0


def wire(path: Path, clock: FloorClock, timing: SimTiming | None = None) -> WiredTable:
    """The table daemon its config file names, on the floor's clock."""
    config = parse_table_config(tomllib.loads(path.read_text("utf-8")), source=str(path),
                                base=path.resolve().parent)
    return wire_table(config, clock=clock.reading, timing=timing)


async def subscribed(daemon: TableDaemon) -> None:
    """Return once the table has subscribed to its commands: the broker queues desk commands
    only for a session it has seen (a real timeout)."""
    if daemon.link is not None:
        async with asyncio.timeout(_SUBSCRIBED_WAIT_S):
            await daemon.link.wait_subscribed()


class AckTurns:
    """Tables acknowledge their heat's scores in a fixed order (one round of parallel heats)."""

    def __init__(self, order: Sequence[str]) -> None:
        self._pending = list(order)
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def turn(self, table: str) -> AsyncIterator[None]:
        """Wait until the tables before `table` have acknowledged (or given up), then hold
        the turn while `table`'s participants acknowledge."""
        async with self._changed:
            await self._changed.wait_for(lambda: not self._pending
                                         or self._pending[0] == table
                                         or table not in self._pending)
        try:
            yield
        finally:
            await self.release(table)

    async def release(self, table: str) -> None:
        """`table` is done (or stopped): the next table's turn."""
        async with self._changed:
            if table in self._pending:
                self._pending.remove(table)
            self._changed.notify_all()


class FloorTable(VirtualTable):
    """The virtual dealer of a floor's table, whose participants acknowledge in their turn
    (`turns`, if set)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turns: AckTurns | None = None

    async def acknowledge_all(self) -> None:
        """Every score waiting at the table is acknowledged, when it is this table's turn."""
        if self.turns is None:
            await super().acknowledge_all()
            return
        async with self.turns.turn(self.table.table_id):
            await super().acknowledge_all()


@dataclass(frozen=True, slots=True, kw_only=True)
class TableOrders:
    """What one table plays: its config file, hands (whole heats), players, the pace."""

    table: str
    config: Path
    hands: int
    players: int
    hand_seconds: float
    timeout: float  # the virtual dealer's wait for its table (real seconds)
    pace: Literal["full", "demo"] = "full"
    sweep_on_change: bool = True
    profile: bool = False  # sample the table's threads (bench/floor_rate.py)


@dataclass(slots=True)
class TableResult:
    """What a table did, for the floor's report."""

    table: str
    journal: Path | None = None  # its journal, checked against the central database
    scores: dict[str, int] = field(default_factory=dict)  # entry -> score, as stored centrally
    hands: int = 0
    heats: int = 0
    wall_s: float = 0.0  # real seconds from its first heat to its last
    problem: str | None = None
    published: int = 0  # messages its MQTT link published
    resent: int = 0  # desk commands sent again (the table never showed one applied)
    last_seq: int = 0  # its journal's last message once its outbox was delivered
    cpu_s: float = 0.0  # CPU seconds its process spent from its first heat to its last
    inputs: int = 0  # inputs its journal took in that time
    transactions: int = 0  # the journal's transactions for them (group commit)
    profile: dict[str, Any] = field(default_factory=dict)  # FloorSampler.summary()


class TableDesk(Protocol):
    """What a table that drives its own heats asks of the floor's desk (each command it
    makes is sent at once; `ref`
    names it to send it again)."""

    async def send_roster(self, table: str, args: dict[str, Any]) -> None:
        """Send the table the staff roster enrolling its virtual staff."""

    async def before_heat(self, table: str) -> None:
        """Return when the table may open its next heat (the floor's day and start)."""

    async def buy_entries(self, table: str) -> list[tuple[str, str]]:
        """The table's patrons buy an entry each for its next heat: (entry, patron) each."""

    async def open_heat(self, table: str) -> tuple[str, int]:
        """Open the table's next heat: (heat id, ref of the command)."""

    async def seat(self, table: str, entry: str, seat: int, proofs: dict[str, str]) -> int:
        """Seat the entry at the seat with its patron's proofs; ref of the command."""

    async def send_again(self, ref: int) -> None:
        """Send a command again (the table never showed it applied)."""

    async def close_heat(self, table: str, entries: list[str]) -> None:
        """Once the entries' acknowledged scores are central, close the table's heat."""

    async def table_gone(self, table: str) -> None:
        """The table has stopped playing (its heats played, or it failed)."""


async def play_table(orders: TableOrders, clock: FloorClock, desk: TableDesk, *,
                     finished: Callable[[TableResult], Awaitable[None]],
                     stop: asyncio.Event) -> TableResult:
    """Run the table's daemon until `stop`; its dealer plays the heats, waits until its
    outbox is delivered and reports with `finished` (once, whatever happened)."""
    full = orders.sweep_on_change and orders.pace == "full"
    # Sweeping when chips move, the readers' own sweeps are only a safety net.
    timing = SimTiming(sweep_on_change=True, sweep_ms=_SAFETY_SWEEP_MS) if full \
        else SimTiming()
    wired = wire(orders.config, clock, timing)
    result = TableResult(table=orders.table)
    dealer = _Dealer(orders, clock, desk, wired, result)

    async def play(daemon: TableDaemon) -> None:
        sampler = None
        if orders.profile:
            from floor.profile import FloorSampler  # noqa: PLC0415

            sampler = FloorSampler().start()
        try:
            await dealer.play(daemon)
        finally:
            if sampler is not None:
                result.profile = sampler.stop().summary()
            await finished(result)

    try:
        await wired.daemon.run(stop, extra=play)
    finally:
        if not dealer.reported:
            result.problem = result.problem or f"{orders.table}: the table daemon stopped"
    return result


class _Dealer:
    """The table's virtual dealer and its share of the desk's work for each heat."""

    def __init__(self, orders: TableOrders, clock: FloorClock, desk: TableDesk,
                 wired: WiredTable, result: TableResult) -> None:
        self.orders, self.clock, self.desk = orders, clock, desk
        self.wired, self.result = wired, result
        self.reported = False
        self._seated: list[str] = []

    async def play(self, daemon: TableDaemon) -> None:
        o, run = self.orders, self.result
        started, cpu = time.perf_counter(), time.process_time()
        inputs, transactions = daemon.inputs.inputs, daemon.inputs.batches
        try:
            sim = daemon.config.sim
            assert sim is not None
            demo = o.pace == "demo"
            shoe, chips = self.wired.devices.shoe_sim, self.wired.devices.rfid_sim
            if shoe is None or chips is None:
                raise TableStuck("the table's shoe and chip reader are not simulators")
            dealer = FloorTable(
                (_PolledHandle if demo else DaemonHandle)(daemon), shoe=shoe, chips=chips,
                ids=self.wired.devices.id_simulator, desk=self._table_desk, seed=sim.seed,
                players=o.players, timeout=o.timeout,
                hand_pause=_DEMO_PAUSE_S if demo else 0.0)
            await subscribed(daemon)
            await dealer.ensure_roster()
            while run.hands < o.hands:
                await self._heat(dealer)
                run.hands, run.heats = dealer.hands_played, run.heats + 1
        except (TableStuck, DeskError, TimeoutError) as exc:
            run.problem = f"{o.table}: {exc}"
        finally:
            run.wall_s = time.perf_counter() - started
            run.cpu_s = time.process_time() - cpu  # the whole process's, in a process a table
            run.inputs = daemon.inputs.inputs - inputs
            run.transactions = daemon.inputs.batches - transactions
        with contextlib.suppress(DeskError):  # the others' hands no longer share its time
            await self.desk.table_gone(o.table)
        await self._delivered(daemon)
        self.reported = True

    async def _delivered(self, daemon: TableDaemon) -> None:
        """Wait (a real timeout) until the table's outbox is delivered; its figures."""
        journal = daemon.journal
        deadline = time.monotonic() + _OUTBOX_WAIT_S
        while journal is not None and journal.pending_count() \
                and time.monotonic() < deadline:
            await asyncio.sleep(_OUTBOX_LOOK_S)
        if journal is not None:
            self.result.last_seq = journal.last_seq()
        if daemon.link is not None:
            self.result.published = daemon.link.counters().published

    async def _heat(self, dealer: VirtualTable) -> None:
        table = self.orders.table
        await self.desk.before_heat(table)
        await subscribed(self.wired.daemon)
        bought = await self.desk.buy_entries(table)
        dealer.patron_of.update(bought)  # a patron's card and PIN are theirs, not an entry's
        entries = [entry for entry, _patron in bought]
        heat_id, ref = await self.desk.open_heat(table)
        await self._until_applied(dealer, ref, f"heat {heat_id} to open",
                                  lambda s: s.get("heat") == heat_id)
        seats: dict[int, str] = {}
        for seat, entry in enumerate(entries, start=1):
            proofs = await dealer.seat_proofs(entry)  # the patron's card and PIN, hashed
            ref = await self.desk.seat(table, entry, seat, proofs)
            await self._until_applied(dealer, ref, f"{entry} to be seated", _seat_taken(seat))
            seats[seat] = entry
        self._seated = list(entries)
        await dealer.until("the entries to be seated",
                           lambda s: len(s.get("seats", {})) == len(seats))
        await dealer.play_heat(seats, between_hands=self._hand_played)

    async def _until_applied(self, dealer: VirtualTable, ref: int, what: str,
                             check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Wait until the table shows a desk command applied: a delivery that went missing
        is sent again with the same seq (a table applies a command once), as a desk clerk
        would; each resend is counted in the report."""
        for attempt in range(1, _SENDS + 1):
            if attempt > 1:
                await self.desk.send_again(ref)
            patience, dealer.timeout = dealer.timeout, _RESEND_AFTER_S
            try:
                await dealer.until(what, check)
                return
            except TableStuck:
                if attempt == _SENDS:
                    raise
                self.result.resent += 1
            finally:
                dealer.timeout = patience

    async def _hand_played(self, _hands: int) -> None:
        """A hand is over: the floor's clock moves on by this table's share of it."""
        self.clock.hand_played(self.orders.hand_seconds)

    async def _table_desk(self, command: str, **args: Any) -> None:
        """The virtual dealer's desk: the staff roster; closing the heat."""
        table = self.orders.table
        if command == StaffRoster.NAME:
            await self.desk.send_roster(table, args)
        elif command == CloseHeat.NAME:
            entries, self._seated = self._seated, []
            await self.desk.close_heat(table, entries)
        else:
            raise DeskError(f"the floor's desk does not send {command}")


def _seat_taken(seat: int) -> Callable[[Mapping[str, Any]], bool]:
    """A status check: the seat is taken."""
    return lambda status: str(seat) in status.get("seats", {})


class _PolledHandle(DaemonHandle):
    """A daemon's handle without change notices: the virtual dealer polls (the demo pace)."""

    changed = None  # type: ignore[assignment]
