"""A simulated casino floor: the central leaderboard service, several simulated tables and
simulated patrons at the registration desk: the composition root `showdown demo` runs.

Everything is the production code wired as on a real floor, in one process:

- an MQTT broker (the embedded amqtt one, or a given ``host:port`` such as Mosquitto);
- the central service (leaderboard.app.LeaderboardService) with its database, its page and
  its desk API, ingesting what every table publishes and verifying each signature;
- one table daemon per table (built by controller.wiring) with its simulated shoe and chip
  reader, its own key, and the leaderboard's key enrolled as its desk key;
- the registration desk (leaderboard.desk): patrons register (one is refused: under 18),
  buy R100 entries, and are seated by signed desk commands over MQTT (each with the hashes of
  the patron's rewards card and PIN); the desk sends each table its staff roster (a virtual
  dealer and supervisor, who sign in at the console with their PINs); a virtual dealer with
  virtual players plays each heat, pays and takes every hand until the chip readers verify
  the payout, and each patron acknowledges their score by tapping their rewards card on the
  table's ID reader;
- one overpay (``FloorPlan.overpay_hand``): in that hand of the first table's first heat the
  dealer pays one chip too many; the table raises the payout alert and refuses the next hand
  until the virtual supervisor overrides with a reason;
- one dispute: the first table's first finished participant disputes its score with a note
  (published, stored centrally in ``disputes``), then acknowledges it; each score line says
  how it was acknowledged, as the central database recorded it;
- one patron leaves mid-heat (``FloorPlan.withdrawal``, with 2 or more players a heat):
  after the third hand of the first table's last heat the desk unseats the last seat's
  entry, the table reports it, and the leaderboard marks the entry withdrawn (no score,
  rule 14).

The tournament settings are the shipped ones with the calendar moved so that a heat opened
two hours ago and stays open for most of a day: see `demo_tournament`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import socket
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.commands.demo_floor_plan import (
    SERVICE_TOML,
    FloorPlan,
    FloorReport,
    demo_tournament,
)
from controller.wiring import WiredTable, wire_table
from game.money import format_rand
from game.tournament import Stage
from leaderboard import desk
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.command_log import record_command
from leaderboard.desk.disputes import resolve_dispute
from leaderboard.desk_auth import authorise, init_first_manager, sign_in, sign_out
from leaderboard.desk_roles import allowed
from leaderboard.models import Dispute, Entry, Score
from leaderboard.projections import WITHDRAWN
from runtime.clocks import utc_now
from runtime.settings_files import default_tournament_path, read_tournament
from simulators.patrons import SimPatron, make_patrons
from simulators.table_play import TableStuck, VirtualTable
from simulators.table_toml import simulated_table_toml
from wire.messages import CloseHeat, StaffRoster
from wire.signing import Signer, save_private_key

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from controller.app import TableDaemon
    from game.tournament_schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["FloorPlan", "FloorReport", "SimulatedFloor", "demo_tournament"]
# The first table's first finished participant disputes its score, then acknowledges it.
DISPUTE_NOTE = "I think my last hand was paid short; the supervisor showed me the record"
DISPUTE_RULING = "hand record and payout check reviewed with the participant: score stands"

# The desk's people: the demo's database is new, so its first manager is enrolled as
# `showdown desk init` does, and enrols a clerk and a pit supervisor; each signs in (a
# passphrase drawn for the run and forgotten) and acts under their own session.
DESK_MANAGER: Final = "demo-manager"
DESK_STAFF: Final = (("demo-clerk", "clerk"), ("demo-supervisor", "supervisor"))
LEADERBOARD_KEY_ID: Final = "leaderboard"
_SCORE_WAIT_S: Final = 60.0
_T = TypeVar("_T")
_LEAVES_AFTER: Final = 3  # hands
_LEAVES_WHY: Final = "felt unwell"


class _Pool:
    """Patrons free to take a seat (a person plays one entry at a time)."""

    def __init__(self, patrons: Sequence[tuple[str, str]], rng: random.Random) -> None:
        self._free = list(patrons)
        self._rng = rng
        self._changed = asyncio.Condition()

    async def take(self, count: int) -> list[tuple[str, str]]:
        async with self._changed:
            await self._changed.wait_for(lambda: len(self._free) >= count)
            chosen = self._rng.sample(self._free, count)
            for patron in chosen:
                self._free.remove(patron)
            return chosen

    async def give_back(self, patrons: Sequence[tuple[str, str]]) -> None:
        async with self._changed:
            self._free.extend(patrons)
            self._changed.notify_all()


def free_port(host: str, wanted: int) -> int:
    """`wanted` if it can be listened on now, else 0 (any free port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, wanted))
        except OSError:
            return 0
    return wanted


class SimulatedFloor:
    """Runs a FloorPlan (see the module docstring); `run(stop)` returns a FloorReport."""

    def __init__(self, plan: FloorPlan, *, out: Callable[[str], None] = print) -> None:
        self.plan = plan
        self.out = out
        self.report = FloorReport()
        self.service: LeaderboardService | None = None
        self.tables: dict[str, WiredTable] = {}
        self._rng = random.Random(plan.seed)
        self._settings: TournamentSettings | None = None
        self._names: dict[str, str] = {}  # patron id -> name
        self._seated: dict[str, list[tuple[str, str]]] = {}  # table -> (entry, patron) in play
        self._faults_shown: dict[str, int] = {}  # table -> fault lines printed
        self._tokens: dict[str, str] = {}  # the desk staff's session tokens

    # ---- files ------------------------------------------------------------------------

    def _write_files(self, broker: str) -> tuple[Path, dict[str, Path]]:
        plan, d = self.plan, self.plan.directory
        now = datetime.now(read_tournament().tz)
        tournament = d / "tournament-demo.toml"
        tournament.write_text(demo_tournament(default_tournament_path().read_text("utf-8"),
                                              now), encoding="utf-8")
        lb_key = Signer.generate(LEADERBOARD_KEY_ID)
        save_private_key(lb_key, d / "leaderboard.key")
        config_dir = default_tournament_path().parent
        tables: dict[str, Path] = {}
        table_keys: dict[str, str] = {}
        for n in range(1, plan.tables + 1):
            table = f"t{n:02d}"
            home = d / table
            home.mkdir()
            key = Signer.generate(table)
            save_private_key(key, home / "table.key")
            table_keys[table] = key.public_key.base64
            tables[table] = home / "table.toml"
            tables[table].write_text(simulated_table_toml(
                venue=plan.venue, table=table, broker=broker, tournament=tournament,
                paytables=config_dir / "paytables.toml",
                desk_keys={LEADERBOARD_KEY_ID: lb_key.public_key.base64},
                seed=plan.seed * 100 + n, players=plan.players, hand_pause=plan.hand_pause,
                virtual_dealer=False), encoding="utf-8")
        port = free_port(plan.http_host, plan.http_port)
        database = plan.database or f"sqlite:///{d / 'leaderboard.sqlite3'}"
        inline = "\n".join(f'{t} = "{k}"' for t, k in table_keys.items())
        service = d / "leaderboard.toml"
        service.write_text(SERVICE_TOML.format(
            venue=plan.venue, database=database, tournament=tournament, broker=broker,
            host=plan.http_host, port=port, tables=inline), encoding="utf-8")
        return service, tables

    # ---- running ----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, linger: float | None = 0.0) -> FloorReport:
        """Start everything, play every table's heats, show the standings, stop.

        `linger`: seconds to keep serving the page after the last heat (None: until `stop`).
        """
        from controller.embedded_broker import EmbeddedBroker  # noqa: PLC0415

        async with contextlib.AsyncExitStack() as stack:
            if self.plan.broker is None:
                embedded = await stack.enter_async_context(EmbeddedBroker())
                broker, kind = f"127.0.0.1:{embedded.port}", "embedded amqtt broker"
            else:
                broker, kind = self.plan.broker, "MQTT broker"
            service_file, table_files = self._write_files(broker)
            await self._play(stop, (broker, kind), service_file, table_files, linger)
        return self.report

    async def _play(self, stop: asyncio.Event, broker_kind: tuple[str, str], service_file: Path,
                    table_files: dict[str, Path], linger: float | None) -> None:
        broker, kind = broker_kind
        from leaderboard.app import LeaderboardService  # noqa: PLC0415
        from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

        config = read_leaderboard_config(service_file)
        self._settings = read_tournament(config.tournament)
        service = self.service = LeaderboardService(config)
        service_stop = asyncio.Event()
        service_task = asyncio.create_task(service.run(service_stop), name="floor.leaderboard")
        try:
            await _first(service.ready.wait(), service_task, stop, what="the leaderboard")
            if stop.is_set():
                return
            url = self.report.url = f"http://{config.http.host}:{service.port}/"
            self.out(f"showdown demo floor: {self.plan.tables} simulated tables, the central"
                     f" leaderboard service, simulated patrons (seed {self.plan.seed})")
            self.out(f"  leaderboard page : {url}    <- open it in a browser")
            self.out(f"  JSON API         : {url}api/standings")
            self.out(f"  {kind:<17}: {broker}")
            self.out(f"  files            : {self.plan.directory}")
            await asyncio.to_thread(self._sign_in_desk)
            await self._register()
            await self._tables(stop, table_files)
            await self._summary()
            if linger is None:
                if not stop.is_set():
                    self.out(f"\nevery heat is played; the page stays up at {url}"
                             " - press Ctrl-C to stop")
                await stop.wait()
            elif linger > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(linger):
                        await stop.wait()
        finally:
            service_stop.set()
            await service_task

    # ---- the desk ---------------------------------------------------------------------

    def _engine(self) -> Engine:
        engine = self.service.engine if self.service is not None else None
        if engine is None:
            raise RuntimeError("the leaderboard service is not running")
        return engine

    def _desk(self, action: str, work: Callable[[Session, TournamentSettings, str], _T]) -> _T:
        """Run ``work`` as the desk person whose role may take ``action`` (a clerk where a
        clerk may, else the supervisor), checked and recorded through their session."""
        assert self._settings is not None
        staff_id = next(s for s, role in DESK_STAFF if allowed(role, action))
        with Session(self._engine()) as session:
            actor = authorise(session, utc_now, self._tokens[staff_id], action).staff_id
            return work(session, self._settings, actor)

    def _read(self, read: Callable[[Session, TournamentSettings], _T]) -> _T:
        """What the demo's narrator reads in the central database (no desk action)."""
        assert self._settings is not None
        with Session(self._engine()) as session:
            return read(session, self._settings)

    def _sign_in_desk(self) -> None:
        """Enrol the desk's people (the first manager, who enrols the others) and sign each in."""
        passwords = {s: secrets.token_urlsafe(18) for s, _ in ((DESK_MANAGER, ""), *DESK_STAFF)}
        with Session(self._engine(), expire_on_commit=False) as session:
            init_first_manager(session, utc_now, staff_id=DESK_MANAGER, name="Demo Manager",
                               passphrase_text=passwords[DESK_MANAGER])
            manager = sign_in(session, utc_now, staff_id=DESK_MANAGER,
                              passphrase_text=passwords[DESK_MANAGER], client="demo").token
            for staff_id, role in DESK_STAFF:
                actor = authorise(session, utc_now, manager, "staff.enrol").staff_id
                desk.enrol_staff(session, utc_now, actor=actor, staff_id=staff_id,
                                 name=staff_id.replace("-", " ").title(), role=role,
                                 desk_passphrase=passwords[staff_id])
                self._tokens[staff_id] = sign_in(session, utc_now, staff_id=staff_id,
                                                 passphrase_text=passwords[staff_id],
                                                 client="demo").token
            sign_out(session, utc_now, manager)

    async def _register(self) -> None:
        plan = self.plan
        settings = self._settings
        assert settings is not None
        today = datetime.now(settings.tz).date()
        people = make_patrons(plan.tables * plan.players + 2, rng=self._rng, today=today)

        def register(session: Session, s: TournamentSettings, actor: str,
                     person: SimPatron) -> str | None:
            try:
                patron = desk.register_patron(
                    session, s, utc_now, actor=actor, name=person.name,
                    id_kind=person.id_kind, id_number=person.id_number,
                    birth_date=person.birth_date)
            except desk.Refused as exc:
                self.report.refused.append(f"{person.name}: {exc}")
                return None
            return patron.patron_id

        for person in people:
            patron_id = await asyncio.to_thread(self._desk, "patron.register",
                                                partial(register, person=person))
            if patron_id is None:
                self.out(f"desk: REFUSED {person.name} (born {person.birth_date}):"
                         f" {self.report.refused[-1].split(': ', 1)[1]}")
            else:
                self._names[patron_id] = person.name
        self.out(f"desk: {len(self._names)} patrons registered, {len(self.report.refused)}"
                 " refused")

    async def _tables(self, stop: asyncio.Event, table_files: dict[str, Path]) -> None:
        import tomllib  # noqa: PLC0415

        from controller.config import parse_table_config  # noqa: PLC0415

        pool = _Pool(sorted(self._names.items()), self._rng)
        done: list[asyncio.Event] = []
        async with asyncio.TaskGroup() as tg:
            table_stop = asyncio.Event()
            runs = []
            for table, path in table_files.items():
                config = parse_table_config(tomllib.loads(path.read_text("utf-8")),
                                            source=str(path), base=path.parent)
                wired = self.tables[table] = wire_table(config)
                finished = asyncio.Event()
                done.append(finished)
                runs.append(tg.create_task(
                    wired.daemon.run(table_stop, extra=self._dealer(wired, pool, finished)),
                    name=f"floor.{table}"))
            all_done = asyncio.gather(*(e.wait() for e in done))
            await _first(all_done, None, stop, what="the tables")
            all_done.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await all_done
            table_stop.set()

    def _dealer(self, wired: WiredTable, pool: _Pool, finished: asyncio.Event
                ) -> Callable[[TableDaemon], Coroutine[Any, Any, None]]:
        table = wired.daemon.config.table

        async def run(daemon: TableDaemon) -> None:
            dealer: VirtualTable | None = None
            try:
                sim = daemon.config.sim
                assert sim is not None
                first_table = table == "t01"
                dealer = wired.virtual_table(
                    desk=self._table_desk(table), seed=sim.seed, players=self.plan.players,
                    hand_pause=sim.hand_pause, timeout=30.0,
                    overpay_hand=self.plan.overpay_hand if first_table else None,
                    dispute_note=DISPUTE_NOTE if first_table else None,
                    deck_mode=self.plan.deck_mode)
                await dealer.ensure_roster()
                for n in range(1, self.plan.heats + 1):
                    await self._heat(table, dealer, pool, withdrawal=(
                        self.plan.withdrawal and first_table and n == self.plan.heats))
                    dealer.overpay_hand = None  # the first heat's only
            except (TableStuck, desk.DeskError, TimeoutError) as exc:
                self.report.problems.append(f"{table}: {exc}")
                self.out(f"{table}: STOPPED: {exc}")
            finally:
                if dealer is not None:
                    self.report.payouts_verified += dealer.payouts_verified
                    self.report.overpays += dealer.faults_injected
                    self.report.overrides += dealer.overrides
                    self.report.hands_refused += dealer.hands_blocked
                    self.report.deck_holds += dealer.deck_holds
                    self.report.chips_reconciled += len(dealer.reconciled)
                    self.report.chips_missing += sum(dealer.reconciled.values())
                finished.set()

        return run

    async def _send(self, command: desk.DeskCommand) -> None:
        link = self.service.link if self.service is not None else None
        if link is None:
            raise desk.DeskError("the leaderboard service is not connected")
        await link.send(command)

    async def _heat(self, table: str, dealer: VirtualTable, pool: _Pool, *,
                    withdrawal: bool = False) -> None:
        link = self.tables[table].daemon.link
        if link is not None:  # the broker queues commands only for a table it has seen
            async with asyncio.timeout(_SCORE_WAIT_S):
                await link.wait_subscribed()
        patrons = await pool.take(self.plan.players)
        try:
            entries = [await asyncio.to_thread(self._desk, "entry.buy",
                                               partial(_buy, patron_id=pid))
                       for pid, _ in patrons]
            opened = await asyncio.to_thread(self._desk, "heat.open", lambda s, st, by: (
                desk.open_heat(s, st, utc_now, actor=by, table=table,
                               stage=Stage.QUALIFYING)))
            await self._send(opened)
            heat_id = str(opened.args["heat_id"])
            await dealer.until(f"heat {heat_id} to open",
                               lambda status: status.get("heat") == heat_id)
            seats: dict[int, str] = {}
            for seat, entry in enumerate(entries, start=1):
                seating = await asyncio.to_thread(self._desk, "entry.seat", lambda s, st, by: (
                    desk.seat_entry(s, st, utc_now, actor=by, entry_id=entry,  # noqa: B023
                                    table=table, seat=seat)))  # noqa: B023
                # The patron's rewards card and PIN, as hashes, for the acknowledgement.
                proofs = await dealer.seat_proofs(entry)
                await self._send(replace(seating.command,
                                         args={**seating.command.args, **proofs}))
                seats[seat] = entry
            self.report.entries_seated += len(seats)
            self._seated[table] = [(e, patrons[n - 1][0]) for n, e in seats.items()]
            await dealer.until("the entries to be seated",
                               lambda status: len(status.get("seats", {})) == len(seats))
            who = ", ".join(f"seat {n} {self._short(patrons[n - 1][1])} ({e})"
                            for n, e in seats.items())
            self.out(f"{table}: heat {heat_id}: {who}")
            leaves = max(seats) if withdrawal and len(seats) > 1 else None
            await dealer.play_heat(seats, between_hands=None if leaves is None else partial(
                self._leave, table, dealer, (leaves, seats[leaves], patrons[leaves - 1][0])))
            self.report.heats_played += 1
            for line in dealer.fault_log[self._faults_shown.get(table, 0):]:
                self.out(f"{table}:   {line}")
            self._faults_shown[table] = len(dealer.fault_log)
        finally:
            await pool.give_back(patrons)

    async def _leave(self, table: str, dealer: VirtualTable, leaver: tuple[int, str, str],
                     hands: int) -> None:
        """After the third hand the patron in the `leaver` (seat, entry, patron) leaves: the
        desk unseats the entry, and the leaderboard, told by the table, withdraws it (D55)."""
        seat, entry, patron = leaver
        if hands != _LEAVES_AFTER or entry in self.report.withdrawn:
            return
        if str(seat) not in dealer.table.status().get("seats", {}):
            return  # the entry has already ended (its chips ran out)
        command = await asyncio.to_thread(self._desk, "entry.unseat", lambda s, _st, by: (
            desk.unseat_entry(s, utc_now, actor=by, entry_id=entry, why=_LEAVES_WHY)))
        await self._send(command)
        await dealer.until(f"seat {seat} to be free",
                           lambda status: str(seat) not in status.get("seats", {}))
        self._seated[table] = [(e, p) for e, p in self._seated.get(table, []) if e != entry]
        await self._withdrawn(entry)
        self.report.withdrawn[entry] = hands
        self.out(f"{table}:   {self._short(self._names.get(patron, patron))} ({entry}) left"
                 f" after {hands} hands ({_LEAVES_WHY}): unseated by the desk, withdrawn,"
                 " no score (rule 14)")

    async def _withdrawn(self, entry: str) -> None:
        """Wait until the leaderboard has the table's report that the entry left."""
        def status(session: Session, _: TournamentSettings) -> str | None:
            row = session.get(Entry, entry)
            return None if row is None else row.status

        await self._central(status, lambda value: value == WITHDRAWN,
                            lambda _: f"not withdrawn {entry}")

    async def _central(self, read: Callable[[Session, TournamentSettings], _T],
                       done: Callable[[_T], bool], lacking: Callable[[_T], str]) -> _T:
        """What `read` finds in the central database, once `done` with it (polled)."""
        deadline = time.monotonic() + _SCORE_WAIT_S
        while True:
            value = await asyncio.to_thread(self._read, read)
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"the leaderboard has {lacking(value)} after"
                                   f" {_SCORE_WAIT_S:.0f} s")
            await asyncio.sleep(0.1)

    def _table_desk(self, table: str) -> Callable[..., Coroutine[Any, Any, None]]:
        """The virtual dealer's desk: it sends the staff roster (recorded in the desk's
        audit), and closing the heat waits for its scores to reach the leaderboard (the
        desk refuses to close a heat whose scores it has not seen)."""

        async def send(command: str, **args: Any) -> None:
            if command == StaffRoster.NAME:
                await self._send(await asyncio.to_thread(
                    self._desk, "staff.send_roster",
                    partial(_roster_command, table=table, args=args)))
                return
            if command != CloseHeat.NAME:
                raise desk.DeskError(f"the floor's desk does not send {command} for the dealer")
            seated = self._seated.pop(table, [])
            scores = await self._scores([e for e, _ in seated])
            for entry, patron in seated:
                score, method, note = scores[entry]
                self.report.scores[entry] = score
                disputed = f" after disputing it ({note})" if note else ""
                self.out(f"{table}:   {self._short(self._names.get(patron, patron))}"
                         f" ({entry}) scored {format_rand(score)}, acknowledged by"
                         f" {method}{disputed}")
                if note:  # the pit supervisor rules on it at the desk
                    await asyncio.to_thread(self._desk, "dispute.resolve", partial(
                        _resolve, entry_id=entry, resolution=DISPUTE_RULING))
                    self.out(f"{table}:   dispute of {entry} resolved at the desk:"
                             f" {DISPUTE_RULING}")
            closed = await asyncio.to_thread(self._desk, "heat.close", lambda s, _st, by: (
                desk.close_heat(s, utc_now, actor=by, table=table)))
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

        return await self._central(
            scores, lambda rows: len(rows) == len(entries),
            lambda rows: "no acknowledged score for"
                         f" {', '.join(sorted(set(entries) - set(rows)))}")

    @staticmethod
    def _short(name: str) -> str:
        first, _, last = name.partition(" ")
        return f"{first} {last[:1]}." if last else first

    async def _summary(self) -> None:
        from leaderboard.standings_view import ViewOptions, format_text, standings  # noqa: PLC0415

        assert self._settings is not None
        engine = self._engine()
        settings = self._settings
        doc = await asyncio.to_thread(standings, engine, settings, ViewOptions(
            venue=self.plan.venue, title=settings.venue_name, rows=12,
            names="first_name_initial"), now=utc_now())
        self.out("\n" + format_text(doc))


def _roster_command(session: Session, settings: TournamentSettings, by: str, *, table: str,
                    args: dict[str, Any]) -> desk.DeskCommand:
    """Record the sending of a table's staff roster in the desk's audit (who is enrolled,
    never their hashes); the command to send."""
    del settings
    roster = StaffRoster.decode(args)
    actor = begin_action(session, by)
    row = write_audit(session, desk_now(utc_now), actor, StaffRoster.NAME, detail={
        "table": table, "command": StaffRoster.NAME, "version": roster.version,
        "members": [{"staff_id": m.staff_id, "role": m.role} for m in roster.members]})
    command = record_command(session, row, table, roster)  # its seq: docs/desk-commands.md
    session.commit()
    return command


def _buy(session: Session, settings: TournamentSettings, by: str, *, patron_id: str) -> str:
    """A desk buy-in for the patron; the new entry's id."""
    return desk.buy_entry(session, settings, utc_now, actor=by,
                          patron_id=patron_id, payment="cash").entry_id


async def _first(awaitable: Any, task: asyncio.Task[Any] | None, stop: asyncio.Event, *,
                 what: str) -> None:
    """Wait for `awaitable`, or `stop`; a `task` that ends first raises its error."""
    waiting = asyncio.ensure_future(awaitable)
    stopped = asyncio.ensure_future(stop.wait())
    watched: set[asyncio.Future[Any]] = {waiting, stopped}
    if task is not None:
        watched.add(task)
    try:
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not waiting.done():
            waiting.cancel()
    if task is not None and task.done() and not waiting.done():
        task.result()  # raises what stopped it
        raise RuntimeError(f"{what} stopped before it was ready")


def _resolve(session: Session, _: TournamentSettings, by: str, *, entry_id: str,
             resolution: str) -> None:
    """The supervisor's ruling on a dispute, recorded at the desk (audited)."""
    resolve_dispute(session, utc_now, actor=by, entry_id=entry_id,
                    resolution=resolution)
