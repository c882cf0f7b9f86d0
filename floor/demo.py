"""A simulated casino floor playing a whole tournament: the central leaderboard service, several
simulated tables and simulated patrons: the composition root `showdown demo` runs.

Everything is the production code wired as on a real floor, in one process:

- an MQTT broker (the embedded amqtt one, or a given ``host:port`` such as Mosquitto);
- the central service (leaderboard.app.LeaderboardService) with its database, its page and
  its desk API, ingesting what every table publishes and verifying each signature;
- one table daemon per table (built by controller.wiring) with its simulated shoe and chip
  reader, its own key, and the leaderboard's key enrolled as its desk key;
- the registration desk (leaderboard.desk) staffed by a clerk and a pit supervisor who sign in
  each simulated day: patrons register (one is refused: under 18), buy R100 entries and are
  seated by signed desk commands over MQTT; a virtual dealer with virtual players plays each
  heat, pays and takes every hand until the chip readers verify the payout, and each patron
  acknowledges their score by tapping their rewards card on the table's ID reader.

The calendar is compressed (floor.calendar): one clock, read by the desk,
the central service and the tables, jumps from heat day to heat day (they straddle a prize
week's start), then to the semi-finals, the Final and the prize days. The stages after
qualifying (floor.stages): the semi-final places allocated, proxies
nominated for a patron's extra places, heats and seats chosen, the two semi-final heats
played in parallel, the Final's places allocated and its seats drawn, the Final played with
the bonus markers, every prize awarded and all but one claimed. The summary
(floor.summary) reads what the central database holds.

Faults, each put right as on a floor: one overpay (``FloorPlan.overpay_hand``) the table
refuses to move on from until the supervisor overrides it; one dispute (the first table's
first finished participant), ruled on at the desk; one patron who leaves mid-heat
(``FloorPlan.withdrawal``) and is withdrawn (no score, rule 14); and ``deck_mode`` decks
the tables' deck checks hold.

A seed replays the run: the patrons, who plays which heat at which table and seat, the entry
ids, the cards and the players' choices, the Final's seat draw (seeded in the demo, drawn from
the OS's CSPRNG on a floor) and so the winners.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.wiring import DaemonHandle, WiredTable, wire_table
from floor.calendar import (
    demo_tournament,
)
from floor.demo_desk import SCORE_WAIT_S, FloorDesk
from floor.demo_people import (
    AckTurns,
    DemoTable,
    buy,
    resolve,
    roster_command,
    until_stopped,
)
from floor.demo_plan import FloorPlan, FloorReport
from floor.progress import Bar
from game.money import format_rand
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.models import Dispute, Entry, Score
from leaderboard.projections import WITHDRAWN
from simulators.table_play import TableStuck
from wire.messages import CloseHeat, StaffRoster

if TYPE_CHECKING:

    from controller.app import TableDaemon
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["FloorPlan", "FloorReport", "SimulatedFloor", "demo_tournament"]
# The first table's first finished participant disputes its score, then acknowledges it.
DISPUTE_NOTE = "I think my last hand was paid short; the supervisor showed me the record"
DISPUTE_RULING = "hand record and payout check reviewed with the participant: score stands"

_READY_WAIT_S: Final = 60.0
_T = TypeVar("_T")
_LEAVES_AFTER: Final = 3  # hands
_LEAVES_WHY: Final = "felt unwell"
_HEAT_EVERY: Final = timedelta(minutes=25)  # a table's heats a day (desk sessions idle at 30)


class FloorStopped(RuntimeError):
    """The tournament cannot go on (a table stuck, a desk refusal): the summary says why."""


class SimulatedFloor(FloorDesk):
    """Runs a FloorPlan (see the module docstring); `run(stop)` returns a FloorReport."""

    # ---- running -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, linger: float | None = 0.0) -> FloorReport:
        """Start everything, play the tournament, show the summary, stop.

        `linger`: seconds to keep serving the page after the last stage (None: until `stop`).
        """
        from controller.embedded_broker import EmbeddedBroker  # noqa: PLC0415

        async with contextlib.AsyncExitStack() as stack:
            if self.plan.broker is None:
                embedded = await stack.enter_async_context(EmbeddedBroker())
                broker, kind = f"127.0.0.1:{embedded.port}", "embedded amqtt broker"
            else:
                broker, kind = self.plan.broker, "MQTT broker"
            service_file, table_files = self._write_files(broker)
            with self.narrator:
                await self._play(stop, (broker, kind), service_file, table_files, linger)
        return self.report

    async def _play(self, stop: asyncio.Event, broker_kind: tuple[str, str], service_file: Path,
                    table_files: dict[str, Path], linger: float | None) -> None:
        from floor.summary import summary  # noqa: PLC0415
        from leaderboard.app import LeaderboardService  # noqa: PLC0415
        from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

        broker, kind = broker_kind
        config = read_leaderboard_config(service_file)
        service = self.service = LeaderboardService(config, clock=self.clock,
                                                    settings=self.settings)
        service_stop = asyncio.Event()
        service_task = asyncio.create_task(service.run(service_stop), name="floor.leaderboard")
        try:
            ready, _ = await until_stopped(_ready(service, service_task), stop)
            if not ready:
                return
            url = self.report.url = f"http://{config.http.host}:{service.port}/"
            self.say(f"showdown demo: a whole tournament on {self.plan.tables} simulated"
                     f" tables, the central leaderboard service, simulated patrons (seed"
                     f" {self.plan.seed})")
            self.say(f"  leaderboard page : {url}    <- open it in a browser")
            self.say(f"  JSON API         : {url}api/standings")
            self.say(f"  {kind:<17}: {broker}")
            self.say(f"  files            : {self.plan.directory}")
            self._say_calendar()
            await asyncio.to_thread(self._sign_in_desk)
            await self._register()
            await self._with_tables(stop, table_files)
            self._tally()
            await asyncio.to_thread(summary, self)
            if linger is None:
                if not stop.is_set():
                    self.say(f"\nthe tournament is over; the page stays up at {url}"
                             " - press Ctrl-C to stop")
                await stop.wait()
            elif linger > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(linger):
                        await stop.wait()
        finally:
            service_stop.set()
            await service_task

    def _say_calendar(self) -> None:
        settings, calendar = self.settings, self.calendar
        assert settings is not None
        assert calendar is not None
        weekly = settings.weekly_prizes
        weeks = sorted({weekly.week_of(settings.schedule, d) for d in calendar.days})
        self.say(f"  calendar         : {len(calendar.days)} qualifying heat days"
                 f" {calendar.first_day:%a %d %b} to {calendar.last_day:%a %d %b %Y}"
                 f" (prize weeks {', '.join(map(str, weeks))}), {self.plan.heats_per_day}"
                 f" heat(s) a table a day; semi-finals {calendar.semi_final:%a %d %b %H:%M},"
                 f" Final {calendar.final:%H:%M} (simulated: the clock jumps between them)")

    async def _with_tables(self, stop: asyncio.Event, table_files: dict[str, Path]) -> None:
        import tomllib  # noqa: PLC0415

        from controller.config import parse_table_config  # noqa: PLC0415

        table_stop = asyncio.Event()
        ups: list[asyncio.Event] = []
        async with asyncio.TaskGroup() as tg:
            for table, path in table_files.items():
                config = parse_table_config(tomllib.loads(path.read_text("utf-8")),
                                            source=str(path), base=path.parent)
                wired = self.tables[table] = wire_table(config, clock=self.clock.table_clock())
                up = asyncio.Event()
                ups.append(up)
                tg.create_task(wired.daemon.run(table_stop, extra=self._dealer(
                    wired, up, table_stop)), name=f"floor.{table}")
            try:
                await until_stopped(self._tournament(ups), stop)
            finally:
                table_stop.set()

    async def _tournament(self, ups: Sequence[asyncio.Event]) -> None:
        from floor import stages as demo_stages  # noqa: PLC0415

        try:
            try:
                async with asyncio.timeout(_READY_WAIT_S):
                    await asyncio.gather(*(up.wait() for up in ups))
            except TimeoutError:
                raise FloorStopped("the tables did not start") from None
            missing = sorted(set(self.tables) - set(self.dealers))
            if missing:
                raise FloorStopped(f"no virtual dealer at {', '.join(missing)}")
            await self._qualifying()
            if self.plan.whole:
                await demo_stages.finals(self)
        except (FloorStopped, TableStuck, desk.DeskError, TimeoutError) as exc:
            self.report.problems.append(str(exc))
            self.say(f"STOPPED: {exc}")

    def _dealer(self, wired: WiredTable, up: asyncio.Event, table_stop: asyncio.Event
                ) -> Callable[[TableDaemon], Coroutine[Any, Any, None]]:
        table = wired.daemon.config.table

        async def run(daemon: TableDaemon) -> None:
            try:
                sim, shoe, chips = daemon.config.sim, wired.devices.shoe_sim, \
                    wired.devices.rfid_sim
                assert sim is not None
                assert shoe is not None
                assert chips is not None
                first_table = table == "t01"
                dealer = DemoTable(
                    DaemonHandle(daemon), shoe=shoe, chips=chips,
                    ids=wired.devices.id_simulator, desk=self._table_desk(table),
                    seed=sim.seed, players=self.plan.players, hand_pause=self.plan.hand_pause,
                    timeout=30.0, overpay_hand=self.plan.overpay_hand if first_table else None,
                    dispute_note=DISPUTE_NOTE if first_table else None,
                    deck_mode=self.plan.deck_mode)
                if daemon.link is not None:  # a broker drops commands for an unknown session
                    async with asyncio.timeout(SCORE_WAIT_S):
                        await daemon.link.wait_subscribed()
                await dealer.ensure_roster()
                self.dealers[table] = dealer
            except (TableStuck, desk.DeskError, TimeoutError) as exc:
                self.report.problems.append(f"{table}: {exc}")
                self.say(f"{table}: STOPPED: {exc}")
            finally:
                up.set()
            await table_stop.wait()

        return run

    def _tally(self) -> None:
        """The virtual dealers' counters into the report."""
        r = self.report
        for dealer in self.dealers.values():
            r.payouts_verified += dealer.payouts_verified
            r.overpays += dealer.faults_injected
            r.overrides += dealer.overrides
            r.hands_refused += dealer.hands_blocked
            r.deck_holds += dealer.deck_holds
            r.chips_reconciled += len(dealer.reconciled)
            r.chips_missing += sum(dealer.reconciled.values())

    # ---- qualifying ----------------------------------------------------------------------

    def _round(self) -> dict[str, list[tuple[str, str]]]:
        """Who plays the next round of heats: table -> (patron, entry id), seeded."""
        plan = self.plan
        chosen = self.rng.sample(self.patrons, plan.tables * plan.players)
        return {table: [(p, f"E-{self._ids.getrandbits(64):016x}")
                        for p in chosen[n * plan.players:(n + 1) * plan.players]]
                for n, table in enumerate(sorted(self.tables))}

    async def _qualifying(self) -> None:
        settings, calendar, plan = self.settings, self.calendar, self.plan
        assert settings is not None
        assert calendar is not None
        from floor.stages import award_due_weeks  # noqa: PLC0415

        hands = settings.qualifying.rules.hands
        for n, day in enumerate(calendar.days, start=1):
            opens = settings.schedule.opens_at(day)
            await self.jump(opens + timedelta(minutes=5),
                            f"qualifying heat day {n} of {len(calendar.days)}")
            await award_due_weeks(self)
            bar = self.narrator.bar(f"qualifying day {n}/{len(calendar.days)} {day:%a %d %b}",
                                    hands * plan.tables * plan.heats_per_day)
            for r in range(plan.heats_per_day):
                if r:
                    self.clock.jump_to(opens + timedelta(minutes=5) + r * _HEAT_EVERY)
                last = n == len(calendar.days) and r == plan.heats_per_day - 1
                turns = AckTurns(sorted(self.tables))
                picks = self._round()
                await self.parallel(self._qualifying_heat(
                    table, day=day.strftime("%Y%m%d"), number=r + 1, picks=picks[table],
                    turns=turns, bar=bar, withdrawal=plan.withdrawal and last
                    and table == "t01") for table in sorted(self.tables))
            bar.finish()
        self.report.stages.append(Stage.QUALIFYING.value)

    async def parallel(self, heats: Any) -> None:
        """Play heats side by side; the first failure stops the tournament once all end."""
        results = await asyncio.gather(*heats, return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        for error in failed:
            if not isinstance(error, FloorStopped | TableStuck | desk.DeskError | TimeoutError):
                raise error
        if failed:
            raise FloorStopped("; ".join(str(e) for e in failed))

    async def _qualifying_heat(self, table: str, *, day: str, number: int,
                               picks: Sequence[tuple[str, str]], turns: AckTurns, bar: Bar,
                               withdrawal: bool) -> None:
        try:
            for patron, entry in picks:
                await self.at_desk("entry.buy", partial(buy, clock=self.clock,
                                                        patron_id=patron, entry_id=entry))
            seats = [(seat, entry, patron) for seat, (patron, entry) in enumerate(picks, 1)]
            self.report.entries_seated += len(seats)
            await self.play_heat(table, stage=Stage.QUALIFYING, heat_id=f"q-{day}-{table}-{number}",
                                 seats=seats, turns=turns, bar=bar, withdrawal=withdrawal)
            self.report.heats_played += 1
        finally:
            await turns.release(table)
        dealer = self.dealers[table]
        dealer.overpay_hand = None  # the first heat's only

    # ---- one heat, any stage -------------------------------------------------------------

    async def play_heat(self, table: str, *, stage: Stage, heat_id: str,
                        seats: Sequence[tuple[int, str, str]], turns: AckTurns | None, bar: Bar,
                        withdrawal: bool = False) -> int:
        """Open the heat at the table, seat (seat, entry, player) each, play it to the end,
        have the scores acknowledged (in `turns`) and close it; the hands played. A table
        that stops gives up its turn, so that the others do not wait for it."""
        try:
            return await self._heat(table, stage=stage, heat_id=heat_id, seats=seats,
                                    turns=turns, bar=bar, withdrawal=withdrawal)
        finally:
            if turns is not None:
                await turns.release(table)

    async def _heat(self, table: str, *, stage: Stage, heat_id: str,
                    seats: Sequence[tuple[int, str, str]], turns: AckTurns | None, bar: Bar,
                    withdrawal: bool) -> int:
        assert self.settings is not None
        dealer = self.dealers[table]
        link = self.tables[table].daemon.link
        if link is not None:  # the broker queues commands only for a table it has seen
            async with asyncio.timeout(SCORE_WAIT_S):
                await link.wait_subscribed()
        opened = await self.at_desk("heat.open", lambda s, st, by: desk.open_heat(
            s, st, self.clock, actor=by, table=table, stage=stage, heat_id=heat_id))
        await self._send(opened)
        await dealer.until(f"heat {heat_id} to open", lambda status: status.get("heat") == heat_id)
        for seat, entry, _ in seats:
            seating = await self.at_desk("entry.seat", partial(
                _seat, clock=self.clock, entry_id=entry, table=table,
                seat=seat if stage is Stage.QUALIFYING else None))
            # The player's rewards card and PIN, as hashes, for the acknowledgement.
            proofs = await dealer.seat_proofs(entry)
            await self._send(replace(seating.command, args={**seating.command.args, **proofs}))
        self._seated[table] = (stage, [(e, p) for _, e, p in seats])
        await dealer.until("the entries to be seated",
                           lambda status: len(status.get("seats", {})) == len(seats))
        who = ", ".join(f"seat {n} {self.short(p)} ({e})" for n, e, p in seats)
        self.say(f"{table}: heat {heat_id}: {who}")
        leaver = max(seats) if withdrawal and len(seats) > 1 else None

        async def between(hands: int) -> None:
            bar.advance()
            if leaver is not None:
                await self._leave(table, dealer, leaver, hands)

        dealer.turns = turns
        before = dealer.hands_played
        try:
            await dealer.play_heat({n: e for n, e, _ in seats}, between_hands=between)
        finally:
            dealer.turns = None
        played = dealer.hands_played - before
        self.report.hands_played += played
        bar.advance(self.settings.stage(stage).rules.hands - played)  # entries ended early
        for line in dealer.fault_log[self._faults_shown.get(table, 0):]:
            self.say(f"{table}:   {line}")
        self._faults_shown[table] = len(dealer.fault_log)
        return played

    async def _leave(self, table: str, dealer: DemoTable, leaver: tuple[int, str, str],
                     hands: int) -> None:
        """After the third hand the patron in the `leaver` (seat, entry, patron) leaves: the
        desk unseats the entry, and the leaderboard, told by the table, withdraws it."""
        seat, entry, patron = leaver
        if hands != _LEAVES_AFTER or entry in self.report.withdrawn:
            return
        if str(seat) not in dealer.table.status().get("seats", {}):
            return  # the entry has already ended (its chips ran out)
        command = await self.at_desk("entry.unseat", lambda s, _st, by: desk.unseat_entry(
            s, self.clock, actor=by, entry_id=entry, why=_LEAVES_WHY))
        await self._send(command)
        await dealer.until(f"seat {seat} to be free",
                           lambda status: str(seat) not in status.get("seats", {}))
        stage, seated = self._seated.get(table, (Stage.QUALIFYING, []))
        self._seated[table] = (stage, [(e, p) for e, p in seated if e != entry])
        await self.central(lambda s, _: (row.status if (row := s.get(Entry, entry)) else None),
                           lambda value: value == WITHDRAWN, lambda _: f"not withdrawn {entry}")
        self.report.withdrawn[entry] = hands
        self.say(f"{table}:   {self.short(patron)} ({entry}) left after {hands} hands"
                 f" ({_LEAVES_WHY}): unseated by the desk, withdrawn, no score (rule 14)")

    def _table_desk(self, table: str) -> Callable[..., Coroutine[Any, Any, None]]:
        """The virtual dealer's desk: it sends the staff roster (recorded in the desk's
        audit), and closing the heat waits for its scores to reach the leaderboard (the
        desk refuses to close a heat whose scores it has not seen)."""

        async def send(command: str, **args: Any) -> None:
            if command == StaffRoster.NAME:
                await self._send(await self.at_desk("staff.send_roster", lambda s, _st, by: (
                    roster_command(s, self.clock, by, table=table, args=args))))
                return
            if command != CloseHeat.NAME:
                raise desk.DeskError(f"the floor's desk does not send {command} for the dealer")
            stage, seated = self._seated.pop(table, (Stage.QUALIFYING, []))
            scores = await self._scores([e for e, _ in seated])
            for entry, patron in seated:
                score, method, note = scores[entry]
                if stage is Stage.QUALIFYING:
                    self.report.scores[entry] = score
                disputed = f" after disputing it ({note})" if note else ""
                self.say(f"{table}:   {self.short(patron)} ({entry}) scored"
                         f" {format_rand(score)}, acknowledged by {method}{disputed}")
                if note:  # the pit supervisor rules on it at the desk
                    await self.at_desk("dispute.resolve", partial(
                        _resolve, clock=self.clock, entry_id=entry, resolution=DISPUTE_RULING))
                    self.say(f"{table}:   dispute of {entry} resolved at the desk:"
                             f" {DISPUTE_RULING}")
            closed = await self.at_desk("heat.close", lambda s, _st, by: desk.close_heat(
                s, self.clock, actor=by, table=table))
            await self._send(closed)

        return send

    async def _scores(self, entries: Sequence[str]) -> dict[str, tuple[int, str, str | None]]:
        """The entries' scores once the leaderboard has them all, acknowledged: (score, the
        acknowledgement's method, the note of a dispute), as the central database holds them."""
        def scores(session: Session, _: TournamentSettings
                   ) -> dict[str, tuple[int, str, str | None]]:
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

def _seat(session: Session, settings: TournamentSettings, by: str, *, clock: Any,
          entry_id: str, table: str, seat: int | None) -> desk.Seating:
    return desk.seat_entry(session, settings, clock, actor=by, entry_id=entry_id, table=table,
                           seat=seat)


def _resolve(session: Session, _: TournamentSettings, by: str, *, clock: Any, entry_id: str,
             resolution: str) -> None:
    resolve(session, clock, by, entry_id=entry_id, resolution=resolution)


async def _ready(service: LeaderboardService, task: asyncio.Task[Any]) -> None:
    """The service ready, or the error that stopped it."""
    waiting = asyncio.ensure_future(service.ready.wait())
    await asyncio.wait({waiting, task}, return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():
        waiting.cancel()
        task.result()  # raises what stopped it
        raise RuntimeError("the leaderboard stopped before it was ready")
