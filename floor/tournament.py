"""A simulated casino floor playing a whole tournament: the central leaderboard service, several
simulated tables and simulated patrons: the composition root `showdown demo` runs.

Everything is the production code wired as on a real floor, in one process, through the
floor's own pieces (the plan and its files, floor.plan; the clock, floor.clock; the desk,
floor.desk; the tables, floor.tables; the report, floor.report), as `showdown simulate floor`
plays them:

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

The calendar is compressed (floor.plan's `plan_calendar`): one clock (floor.clock), read by
the desk,
the central service and the tables, jumps from heat day to heat day (they straddle a prize
week's start), then to the semi-finals, the Final and the prize days. The stages after
qualifying (below): the semi-final places allocated, proxies
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
import random
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.wiring import DaemonHandle, WiredTable
from floor.clock import FloorClock
from floor.desk import FloorDesk
from floor.plan import DemoCalendar, FloorFiles, TournamentPlan, tournament_settings, write_files
from floor.progress import Bar, Narrator, ordinal
from floor.report import FloorReport
from floor.run import broker_for, central_service, until_stopped
from floor.tables import AckTurns, FloorTable, subscribed, wire
from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.prizes import PrizeKind
from game.words import book_name, spoken
from leaderboard import desk
from leaderboard.desk.values import Place
from leaderboard.models import Entry, PrizeAward
from leaderboard.projections import WITHDRAWN
from runtime.clocks import WallClock
from simulators.patrons import SimPatron, make_patrons
from simulators.table_play import TableStuck
from wire.messages import CloseHeat, StaffRoster

if TYPE_CHECKING:
    from controller.app import TableDaemon
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["FloorStopped", "SimulatedFloor"]
# The first table's first finished participant disputes its score, then acknowledges it.
DISPUTE_NOTE = "I think my last hand was paid short; the supervisor showed me the record"
DISPUTE_RULING = "hand record and payout check reviewed with the participant: score stands"

_READY_WAIT_S: Final = 60.0
_LEAVES_AFTER: Final = 3  # hands
_LEAVES_WHY: Final = "felt unwell"
_HEAT_EVERY: Final = timedelta(minutes=25)  # a table's heats a day (desk sessions idle at 30)
_DESK_OPENS: Final = timedelta(minutes=30)  # the desk opens before the first heat window


class FloorStopped(RuntimeError):
    """The tournament cannot go on (a table stuck, a desk refusal): the summary says why."""


class SimulatedFloor:
    """Runs a TournamentPlan (see the module docstring); `run(stop)` returns a FloorReport."""

    def __init__(self, plan: TournamentPlan, *, out: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.report = FloorReport(seed=plan.seed)
        self.narrator = Narrator(out, live=plan.progress)
        self.service: LeaderboardService | None = None
        self._desk: FloorDesk | None = None
        self.tables: dict[str, WiredTable] = {}
        self.dealers: dict[str, FloorTable] = {}
        self.rng = random.Random(plan.seed)
        self._ids = random.Random(f"{plan.seed}:entry-ids")
        self.settings: TournamentSettings | None = None
        self.calendar: DemoCalendar | None = None
        self.clock = FloorClock.calendar(datetime.now().astimezone())
        self.names: dict[str, str] = self.report.names  # patron id -> name
        self.people: dict[str, SimPatron] = {}  # patron id -> the person (documents)
        self.patrons: list[str] = []  # registered patron ids, in registration order
        self._seated: dict[str, tuple[Stage, list[tuple[str, str]]]] = {}  # table -> in play
        self._faults_shown: dict[str, int] = {}  # table -> fault lines printed

    @property
    def desk(self) -> FloorDesk:
        """The floor's desk (once the central service is up)."""
        if self._desk is None:
            raise RuntimeError("the leaderboard service is not running")
        return self._desk

    # ---- telling -------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """One narrative line."""
        self.narrator.say(text)

    def local(self, when: datetime | None = None) -> datetime:
        """`when` (default: now on the floor's clock) in venue time."""
        assert self.settings is not None
        return (when or self.clock.wall()).astimezone(self.settings.tz)

    def short(self, patron: str) -> str:
        """A patron's first name and initial (as the page shows them)."""
        first, _, last = self.names.get(patron, patron).partition(" ")
        return f"{first} {last[:1]}." if last else first

    async def jump(self, when: datetime, what: str) -> None:
        """Move the calendar forward to `when` and say what happens then."""
        if self.plan.stage_pause:
            await asyncio.sleep(self.plan.stage_pause)
        self.clock.advance_to(when)
        await asyncio.to_thread(self.desk.shift)  # the desk's people sign in for the day
        local = self.local()
        self.report.calendar.append((what, local))
        self.say(f"\n== {local:%a %d %b %Y %H:%M} - {what} ==")

    def _write_files(self, broker: str) -> FloorFiles:
        calendar, text, settings = tournament_settings(self.plan)
        assert calendar is not None
        self.calendar, self.settings = calendar, settings
        files = write_files(self.plan, broker, tournament_text=text,
                            hand_pause=self.plan.hand_pause, log_level="warning")
        self.clock = FloorClock.calendar(settings.schedule.opens_at(calendar.first_day)
                                         - _DESK_OPENS)
        self.report.tournament, self.report.database = files.tournament, files.database
        self.report.journals.update(files.journals)
        return files

    async def _register(self) -> None:
        plan, settings, calendar = self.plan, self.settings, self.calendar
        assert settings is not None
        assert calendar is not None
        advance = settings.qualifying.advance or 0
        people = make_patrons(max(plan.tables * plan.players + 2, advance + 3), rng=self.rng,
                              today=calendar.first_day)
        for person, patron_id in zip(people, await self.desk.register(people), strict=True):
            if patron_id is None:
                self.report.refused.append(self.desk.refused[-1])
                self.say(f"desk: REFUSED {person.name} (born {person.birth_date}):"
                         f" {self.report.refused[-1].split(': ', 1)[1]}")
            else:
                self.names[patron_id] = person.name
                self.people[patron_id] = person
                self.patrons.append(patron_id)
        self.say(f"desk: {len(self.patrons)} patrons registered, {len(self.report.refused)}"
                 " refused")

    # ---- running -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, linger: float | None = 0.0) -> FloorReport:
        """Start everything, play the tournament, show the summary, stop.

        `linger`: seconds to keep serving the page after the last stage (None: until `stop`).
        """
        async with contextlib.AsyncExitStack() as stack:
            broker, embedded = await broker_for(stack, self.plan.broker)
            kind = "embedded amqtt broker" if embedded else "MQTT broker"
            files = self._write_files(broker)
            with self.narrator:
                await self._play(stop, (broker, kind), files, linger)
        return self.report

    async def _play(self, stop: asyncio.Event, broker_kind: tuple[str, str], files: FloorFiles,
                    linger: float | None) -> None:
        from floor.summary import summary  # noqa: PLC0415

        broker, kind = broker_kind
        assert self.settings is not None
        async with central_service(files, self.clock, self.settings, stop=stop) as service:
            if service is None:
                return
            self.service = service
            self._desk = FloorDesk(service, self.clock, self.settings, staff="demo")
            url = self.report.url = f"http://{service.config.http.host}:{service.port}/"
            self.say(f"showdown demo: a whole tournament on {self.plan.tables} simulated"
                     f" tables, the central leaderboard service, simulated patrons (seed"
                     f" {self.plan.seed})")
            self.say(f"  leaderboard page : {url}    <- open it in a browser")
            self.say(f"  JSON API         : {url}api/standings")
            self.say(f"  {kind:<17}: {broker}")
            self.say(f"  files            : {self.plan.directory}")
            self._say_calendar()
            await asyncio.to_thread(self.desk.sign_in)
            await self._register()
            await self._with_tables(stop, files.tables)
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
        table_stop = asyncio.Event()
        ups: list[asyncio.Event] = []
        async with asyncio.TaskGroup() as tg:
            for table, path in table_files.items():
                wired = self.tables[table] = wire(path, self.clock)
                up = asyncio.Event()
                ups.append(up)
                tg.create_task(wired.daemon.run(table_stop, extra=self._dealer(
                    wired, up, table_stop)), name=f"floor.{table}")
            try:
                await until_stopped(self._tournament(ups), stop)
            finally:
                table_stop.set()

    async def _tournament(self, ups: Sequence[asyncio.Event]) -> None:
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
                await finals(self)
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
                dealer = FloorTable(
                    DaemonHandle(daemon), shoe=shoe, chips=chips,
                    ids=wired.devices.id_simulator, desk=self._table_desk(table),
                    seed=sim.seed, players=self.plan.players, hand_pause=self.plan.hand_pause,
                    timeout=30.0, overpay_hand=self.plan.overpay_hand if first_table else None,
                    dispute_note=DISPUTE_NOTE if first_table else None,
                    deck_mode=self.plan.deck_mode)
                await subscribed(daemon)  # a broker drops commands for an unknown session
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
                    self.clock.advance_to(opens + timedelta(minutes=5) + r * _HEAT_EVERY)
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
                await self.desk.buy(patron, entry)
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
        await subscribed(self.tables[table].daemon)
        await self.desk.open_heat(table, stage=stage, heat_id=heat_id)
        await dealer.until(f"heat {heat_id} to open", lambda status: status.get("heat") == heat_id)
        for seat, entry, _ in seats:
            # The player's rewards card and PIN, as hashes, for the acknowledgement.
            proofs = await dealer.seat_proofs(entry)
            await self.desk.seat(table, entry, seat if stage is Stage.QUALIFYING else None,
                                 proofs)
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

    async def _leave(self, table: str, dealer: FloorTable, leaver: tuple[int, str, str],
                     hands: int) -> None:
        """After the third hand the patron in the `leaver` (seat, entry, patron) leaves: the
        desk unseats the entry, and the leaderboard, told by the table, withdraws it."""
        seat, entry, patron = leaver
        if hands != _LEAVES_AFTER or entry in self.report.withdrawn:
            return
        if str(seat) not in dealer.table.status().get("seats", {}):
            return  # the entry has already ended (its chips ran out)
        await self.desk.unseat(entry, _LEAVES_WHY)
        await dealer.until(f"seat {seat} to be free",
                           lambda status: str(seat) not in status.get("seats", {}))
        stage, seated = self._seated.get(table, (Stage.QUALIFYING, []))
        self._seated[table] = (stage, [(e, p) for e, p in seated if e != entry])
        await self.desk.central(lambda s, _: (row.status if (row := s.get(Entry, entry)) else None),
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
                await self.desk.roster(table, args)
                return
            if command != CloseHeat.NAME:
                raise desk.DeskError(f"the floor's desk does not send {command} for the dealer")
            stage, seated = self._seated.pop(table, (Stage.QUALIFYING, []))
            scores = await self.desk.scores([e for e, _ in seated])
            for entry, patron in seated:
                score, method, note = scores[entry]
                if stage is Stage.QUALIFYING:
                    self.report.scores[entry] = score
                disputed = f" after disputing it ({note})" if note else ""
                self.say(f"{table}:   {self.short(patron)} ({entry}) scored"
                         f" {format_rand(score)}, acknowledged by {method}{disputed}")
                if note:  # the pit supervisor rules on it at the desk
                    await self.desk.resolve(entry, DISPUTE_RULING)
                    self.say(f"{table}:   dispute of {entry} resolved at the desk:"
                             f" {DISPUTE_RULING}")
            await self.desk.close_heat(table)

        return send


# ---- the stages after qualifying ---------------------------------------------------------

_CHOOSE_AFTER: Final = timedelta(hours=10)  # the morning after qualifying ends: places
_PRIZE_AFTER: Final = timedelta(hours=1)  # after the Final starts: its prizes
_CLAIMS_AT: Final = timedelta(days=1, hours=-5)  # the winners come the next day, at noon


async def finals(floor: SimulatedFloor) -> None:
    """Everything after qualifying, stage by stage."""
    await semi_finals(floor)
    await final(floor)
    await prizes(floor)


# ---- line-ups ----------------------------------------------------------------------------


async def _proxies(floor: SimulatedFloor, stage: Stage, places: Sequence[Place]) -> None:
    """A patron holding several places of `stage` plays the best of them; a proxy, drawn
    from the registered patrons holding or playing no place of the stage, plays each other."""
    involved = {p.holder for p in places}
    free = [p for p in floor.patrons if p not in involved]
    held: dict[str, list[Place]] = {}
    for place in places:
        held.setdefault(place.holder, []).append(place)
    for holder, mine in held.items():
        for extra in mine[1:]:
            if not free:
                raise desk.Conflict(f"no registered patron is free to play {extra.entry_id}"
                                    f" for {floor.short(holder)}")
            proxy = free.pop(floor.rng.randrange(len(free)))
            await floor.desk.at_desk("place.proxy", lambda s, st, by: desk.nominate_proxy(
                s, st, floor.clock.wall, actor=by, entry_id=extra.entry_id,  # noqa: B023
                proxy_patron_id=proxy))  # noqa: B023
            floor.report.proxies[extra.entry_id] = proxy
            floor.say(f"desk: {floor.short(holder)} holds {len(mine)} {spoken(stage)} places:"
                      f" {floor.short(proxy)} plays {extra.entry_id} as proxy (rules 25, 41)")


def _places(floor: SimulatedFloor, stage: Stage) -> tuple[Place, ...]:
    return floor.desk.read(lambda s, st: desk.places(s, st, stage))


def _seats(places: Sequence[Place], heat: int) -> list[tuple[int, str, str]]:
    return sorted((p.seat or 0, p.entry_id, p.player) for p in places if p.heat == heat)


async def semi_finals(floor: SimulatedFloor) -> None:
    """Allocate the semi-final places, proxies, heats and seats; play the heats."""
    settings = floor.settings
    assert settings is not None
    await floor.jump(settings.schedule.ends_at + _CHOOSE_AFTER,
                     "qualifying has ended: the semi-final places")
    await award_due_weeks(floor)
    allocated = await floor.desk.at_desk("places.allocate", lambda s, st, by: desk.allocate_semis(
        s, st, floor.clock.wall, actor=by))
    floor.say(f"desk: the top {len(allocated)} qualifying scores go to the semi-finals:")
    for p in allocated:
        floor.say(f"  {ordinal(p.position or 0):>4} {floor.short(p.holder):<14}"
                  f" {format_rand(p.score_cents or 0):>10}  ({p.won_by} -> {p.entry_id})")
    await _proxies(floor, Stage.SEMI_FINAL, allocated)
    sset = settings.semi_final
    heats, per_heat = sset.heats or 1, sset.seats_per_heat or 6
    free = [(h, s) for h in range(1, heats + 1) for s in range(1, per_heat + 1)]
    for place in allocated:  # in qualifying order, each chooses from the seats left (rule 27)
        heat, seat = free.pop(floor.rng.randrange(len(free)))
        await floor.desk.at_desk("place.choose_seat", lambda s, st, by: desk.choose_seat(
            s, st, floor.clock.wall, actor=by, entry_id=place.entry_id, heat=heat,  # noqa: B023
            seat=seat))  # noqa: B023
    places = _places(floor, Stage.SEMI_FINAL)
    await floor.jump(sset.starts_at or floor.clock.wall(), "the semi-finals")
    tables = sorted(floor.tables)
    hands = sset.rules.hands
    for wave in range(0, heats, len(tables)):
        numbers = list(range(wave + 1, min(heats, wave + len(tables)) + 1))
        at = dict(zip(numbers, tables, strict=False))
        turns = AckTurns([at[h] for h in numbers])
        bars = {h: floor.narrator.bar(f"semi-final heat {h} at {at[h]}", hands) for h in numbers}
        await floor.parallel(floor.play_heat(
            at[h], stage=Stage.SEMI_FINAL, heat_id=desk.semi_heat_id(h), seats=_seats(places, h),
            turns=turns, bar=bars[h]) for h in numbers)
        for bar in bars.values():
            bar.finish()
    floor.report.stages.append(Stage.SEMI_FINAL.value)


def _draw_bytes(seed: int) -> desk.RandomBytes:
    """The demo's seat draw bytes, from the seed (a floor's come from the OS's CSPRNG)."""
    rng = random.Random(f"{seed}:final-draw")
    return rng.randbytes


async def final(floor: SimulatedFloor) -> None:
    """Allocate the Final's places, proxies, the seat draw; play the Final."""
    settings = floor.settings
    assert settings is not None
    await floor.jump(settings.final.starts_at or floor.clock.wall(), "the Final")
    allocated = await floor.desk.at_desk("places.allocate", lambda s, st, by: desk.allocate_final(
        s, st, floor.clock.wall, actor=by))
    floor.say(f"desk: the top {len(allocated)} of the semi-finals go to the Final")
    await _proxies(floor, Stage.FINAL, allocated)
    # The seed is committed first (its SHA-256 shown and audited, a supervisor witnessing,
    # D380), then revealed by the draw that uses it.
    witness = next(s for s, role in floor.desk.staff if role == "supervisor")
    committed = await floor.desk.at_desk("draw.commit", lambda s, _, by: desk.commit_draw(
        s, floor.clock.wall, actor=by, stage=Stage.FINAL.value, witness=witness,
        random_bytes=_draw_bytes(floor.plan.seed)))
    floor.say(f"desk: the Final's seed committed before the draw (SHA-256"
              f" {committed.seed_sha256}, witness {witness})")
    drawn = await floor.desk.at_desk("draw.final", lambda s, st, by: desk.draw_final(
        s, st, floor.clock.wall, actor=by, commitment_id=committed.commitment_id))
    floor.report.draw = {"draw_id": drawn.draw_id, "random_hex": drawn.random_hex,
                         "seats": dict(drawn.seats)}
    places = _places(floor, Stage.FINAL)
    markers = settings.final.rules.markers
    floor.say(f"desk: the Final's seats drawn (draw {drawn.draw_id}, bytes seeded by the demo;"
              f" replay: showdown desk draw replay); {markers} bonus markers of"
              f" {format_rand(settings.marker_value_cents)} each per finalist")
    for p in sorted(places, key=lambda p: p.seat or 0):
        floor.say(f"  seat {p.seat}: {floor.short(p.player)} ({p.entry_id})")
    bar = floor.narrator.bar("the Final at t01", settings.final.rules.hands)
    await floor.play_heat("t01", stage=Stage.FINAL, heat_id=desk.FINAL_HEAT,
                          seats=_seats(places, int(desk.FINAL_HEAT.rsplit("-", 1)[-1])),
                          turns=None, bar=bar)
    bar.finish()
    floor.report.stages.append(Stage.FINAL.value)


# ---- prizes ------------------------------------------------------------------------------


def _weeks(floor: SimulatedFloor) -> list[int]:
    """The prize weeks that have heat days and pay a prize (rule 17)."""
    settings, calendar = floor.settings, floor.calendar
    assert settings is not None
    assert calendar is not None
    weekly = settings.weekly_prizes
    return sorted({w for d in calendar.days if (w := weekly.week_of(settings.schedule, d))
                   <= weekly.weeks})


def _awarded(session: Session, _: TournamentSettings) -> set[tuple[str, int]]:
    return {(k, p) for k, p in session.execute(select(PrizeAward.kind, PrizeAward.place))}


async def award_due_weeks(floor: SimulatedFloor) -> None:
    """Award the weekly prize of every prize week that has ended and has not been awarded."""
    settings = floor.settings
    assert settings is not None
    now = floor.clock.wall()
    awarded = await floor.desk.at_desk("prizes.show", lambda s, st, _by: _awarded(s, st))
    for week in _weeks(floor):
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if end > now or (PrizeKind.WEEKLY.value, week) in awarded:
            continue
        await _award(floor, PrizeKind.WEEKLY, week=week)


async def _award(floor: SimulatedFloor, kind: PrizeKind, *, week: int | None = None) -> None:
    settings = floor.settings
    assert settings is not None
    amount = settings.weekly_prizes.prize_cents if kind is PrizeKind.WEEKLY else None
    what = f"week {week}'s prize" if week is not None else f"the {book_name(kind.value)} prizes"
    try:
        views = await floor.desk.at_desk("prize.award", lambda s, st, by: desk.award_prizes(
            s, st, floor.clock.wall, actor=by, kind=kind.value, week=week, prize_cents=amount))
    except desk.Conflict as exc:
        floor.say(f"desk: {what}: none awarded ({exc})")
        return
    for v in views:
        label = f"week {v.place}" if kind is PrizeKind.WEEKLY else ordinal(v.place)
        floor.say(f"desk: {book_name(kind.value)} prize {label}: {format_rand(v.amount_cents)} to"
                  f" {floor.short(v.patron_id)} ({v.entry_id}), to be claimed by"
                  f" {floor.local(v.deadline):%a %d %b %Y %H:%M}")


async def prizes(floor: SimulatedFloor) -> None:
    """The Final's and the top scores' prizes, the weeks still to pay, then the claims."""
    settings = floor.settings
    assert settings is not None
    await floor.jump((settings.final.starts_at or floor.clock.wall()) + _PRIZE_AFTER,
                     "after the Final: the prizes")
    await _award(floor, PrizeKind.FINAL)
    await _award(floor, PrizeKind.TOP_SCORE)
    await award_due_weeks(floor)
    for week in _weeks(floor):  # a prize week that ends after the Final
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if end > floor.clock.wall():
            await floor.jump(end + timedelta(hours=12), f"prize week {week} has ended")
            await award_due_weeks(floor)
    floor.report.stages.append("prizes")
    await claims(floor)


async def claims(floor: SimulatedFloor) -> None:
    """The winners come to the desk with their document and sign for their prize; the
    `unclaimed` ones (drawn by the seed) do not come (open until their deadline)."""
    views = floor.desk.read(lambda s, _st: desk.prizes(s, floor.clock.wall))
    if not views:
        return
    day = floor.local().replace(hour=12, minute=0, second=0, microsecond=0)
    await floor.jump(day + timedelta(days=1), "the winners claim their prizes")
    stay_away = set(floor.rng.sample([v.award_id for v in views],
                                     min(floor.plan.unclaimed, len(views))))
    for v in views:
        if v.award_id in stay_away:
            floor.say(f"desk: prize {v.award_id} ({format_rand(v.amount_cents)},"
                      f" {floor.short(v.patron_id)}) not claimed yet: open until"
                      f" {floor.local(v.deadline):%a %d %b %Y %H:%M} (rule 55)")
            continue
        person = floor.people[v.patron_id]
        await floor.desk.at_desk("prize.claim", partial(
            _claim, clock=floor.clock.wall, award_id=v.award_id, id_number=person.id_number))
        floor.say(f"desk: {floor.short(v.patron_id)} claimed prize {v.award_id}"
                  f" ({format_rand(v.amount_cents)}) showing {person.id_kind.replace('_', ' ')}"
                  f" {person.id_number}")
    floor.report.stages.append("claims")


def _claim(session: Session, settings: TournamentSettings, by: str, *, clock: WallClock,
           award_id: int, id_number: str) -> None:
    desk.claim_prize(session, settings, clock, actor=by, award_id=award_id,
                     id_number=id_number, receipt=f"demo receipt {award_id}")

