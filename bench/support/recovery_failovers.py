"""Rows of bench/recovery.py: the central database's primary lost, and the active central
instance lost.

Both run the real central service (`showdown leaderboard serve`) and a real simulated table
daemon (`showdown table run`, virtual desk and dealer playing heats) on the machine's
Mosquitto, the table taking the centre's resend requests (its key enrolled beside the
desk's, as tests/integration/test_database_failover.py does). Then, ``--repeats`` times,
mid-play:

- database: a PostgreSQL primary and a synchronous streaming standby on loopback
  (tests/integration/pg_pair.py), the service on the multi-host URL
  (``target_session_attrs=read-write``); the primary is SIGKILLed and the standby promoted
  at once, then the lost node rebuilt as the new standby. Timed from the kill to the first
  message received after it seen stored (polled: an upper bound, as it waits for the
  table's next message too); the service's own log gives when the batch caught by the loss
  was stored again. The service is never restarted.
- central: two instances on one database, active and standby by the central lease
  (tests/integration/central_pair.py; PostgreSQL schema when the machine's server answers,
  else a SQLite file); the active one is SIGKILLed, timed until the survivor serves ingest
  (/healthz subscribed), the page (/api/standings) and the desk API (the largest of the
  three), then the killed one started again as the standby, so the roles alternate.

At the end every message the table journaled up to the last checked must be stored once:
lost = journaled seqs not stored, doubled = rows beyond one per (table, seq).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from controller.journal import Journal
from leaderboard.models import Message
from support.recovery_table import Goal, Options, Outcome
from tests import services
from tests.integration import pg_pair
from tests.integration.central_pair import CentralPair
from tests.integration.cluster_support import (
    GUARD_S,
    Service,
    ServiceLog,
    central_config,
    table_config,
    tournament_now,
    wait_until,
)
from wire.signing import load_private_key

__all__ = ["central_rows", "database_rows"]

DATABASE_GOAL = Goal(10.0, "s")  # issue 34: database failover under 10 s
CENTRAL_GOAL = Goal(10.0, "s")  # issue 34: central failover under 10 s
DATABASE_FAILURE = "database primary lost"
CENTRAL_FAILURE = "active central instance lost"
HAND_PAUSE_S = 1.0
NEW_BETWEEN = 3  # messages stored between one loss and the next
FIRST_STORED = 5  # messages stored before the first loss
POLL_S = 0.05  # how often the database is looked at for the first write after a loss


def p99(values: list[float]) -> float:
    """Nearest-rank 99th percentile (the largest of fewer than 100 values)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(0.99 * len(ordered))) - 1]


class _Count:
    """The table's stored messages, each look on a new connection (a pooled one could stay
    on a lost server); a look that fails (mid-failover) answers -1 or None."""

    def __init__(self, url: str, table: str) -> None:
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        self.table = table

    def stored(self) -> int:
        try:
            with Session(self.engine) as session:
                return int(session.scalar(sa.select(sa.func.count()).select_from(Message)
                                          .where(Message.table_id == self.table)) or 0)
        except Exception:  # between a loss and the takeover
            return -1

    def first_after(self, moment: datetime) -> datetime | None:
        try:
            with Session(self.engine) as session:
                return session.scalar(sa.select(sa.func.min(Message.received_at)).where(
                    Message.table_id == self.table, Message.received_at > moment))
        except Exception:
            return None

    def heats_closed(self) -> int:
        try:
            with Session(self.engine) as session:
                return int(session.scalar(sa.select(sa.func.count()).select_from(Message).where(
                    Message.table_id == self.table, Message.type == "heat.closed")) or 0)
        except Exception:
            return 0

    def seqs(self) -> tuple[int, set[int]]:
        """(rows, distinct seqs) stored for the table."""
        with Session(self.engine) as session:
            rows = [int(s) for s in session.scalars(
                sa.select(Message.seq).where(Message.table_id == self.table))]
        return len(rows), set(rows)


def _as_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _stamp(event: dict[str, object]) -> datetime:
    """A JSON log line's timestamp."""
    return _as_utc(datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00")))


@dataclass(slots=True)
class Drill:
    """What the losses gave."""

    back_s: list[float] = field(default_factory=list)  # the row's figure, each loss
    parts: list[str] = field(default_factory=list)  # each loss's breakdown, as printed
    journaled: int = 0
    stored: int = 0
    lost: int = 0
    doubled: int = 0
    stopped: str = ""  # why the losses stopped early, if they did
    killed: list[datetime] = field(default_factory=list)  # when each loss began
    restarted: bool = False  # a service that should have stayed up did not
    setting: str = ""  # the database and the like, as printed


@dataclass(slots=True)
class _Table:
    """The simulated table daemon, its id and journal, and the messages' count."""

    daemon: Service
    table: str
    journal: Path
    count: _Count
    heats: int

    def stalled(self) -> str | None:
        event = self.daemon.log.last("virtual dealer stopped")
        return None if event is None else str(event.get("reason"))

    def over(self) -> bool:
        return self.count.heats_closed() >= self.heats or self.stalled() is not None

    def why_over(self, done: int) -> str:
        reason = self.stalled()
        return (f"the play ended after {done} losses ("
                + (f"the virtual dealer stopped: {reason}" if reason else
                   f"its {self.heats} heats closed") + ")")


def _enrol_central(table_path: Path, central_key: Path) -> None:
    """The centre's key among the table's command keys: it takes the centre's resends."""
    key = load_private_key(central_key)
    text = table_path.read_text()
    if "[keys.desk]\n" not in text:
        raise RuntimeError(f"{table_path}: no [keys.desk] to enrol the centre's key in")
    table_path.write_text(text.replace(
        "[keys.desk]\n", f'[keys.desk]\n{key.key_id} = "{key.public_key.base64}"\n', 1))


def _heats(repeats: int) -> int:
    """Heats enough for every loss to fall mid-play (a loss cycle takes a few hands)."""
    return max(2, repeats // 3 + 2)


def _settle(drill: Drill, table: _Table, *alive: Service) -> None:
    """Wait until the table's journal is all sent and stored; lost and doubled."""
    def complete() -> bool:
        with Journal.open(table.journal, read_only=True) as journal:
            last, pending = journal.last_seq(), journal.pending_count()
        _, seqs = table.count.seqs()
        drill.journaled = last
        return pending == 0 and len(seqs & set(range(1, last + 1))) >= last

    wait_until("every journaled message stored", complete, table.daemon, *alive)


def _tally(drill: Drill, table: _Table) -> None:
    rows, seqs = table.count.seqs()
    drill.stored = rows
    drill.lost = len(set(range(1, drill.journaled + 1)) - seqs)
    drill.doubled = rows - len(seqs)


def _seen(what: str, check: Callable[[], bool], started: float, *alive: Service) -> float:
    """Seconds from ``started`` (time.monotonic()) until ``check`` holds, looked at every
    POLL_S (the figure is an upper bound by that much and a query)."""
    deadline = started + GUARD_S
    while not check():
        for service in alive:
            if not service.alive():
                tail = service.log.path.read_text(errors="replace")[-3000:]
                raise AssertionError(f"{what}: {service.args[:2]} exited: {tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"never saw {what}")
        time.sleep(POLL_S)
    return time.monotonic() - started


def _lose_primary(pair: pg_pair.PgPair, table: _Table, central: Service, n: int,
                  drill: Drill) -> None:
    """SIGKILL the primary, promote the standby, time the first write stored after it,
    rebuild the lost node as the standby, wait for a few more messages."""
    before = table.count.stored()
    killed = datetime.now(UTC)
    t0 = time.monotonic()
    lost = pair.kill_primary()
    kill_s = time.monotonic() - t0
    promoted = pair.promote()
    promote_s = time.monotonic() - t0 - kill_s
    back = _seen("a write after the promotion",
                 lambda: table.count.first_after(killed) is not None, t0, table.daemon, central)
    t1 = time.monotonic()
    pair.rebuild()
    drill.back_s.append(back)
    drill.killed.append(killed)
    drill.parts.append(
        f"{n + 1}: {lost.name} SIGKILLed ({kill_s:.2f} s), {promoted.name} promoted in"
        f" {promote_s:.2f} s, a message received after the kill seen stored {back:.2f} s"
        f" after it; {lost.name} rebuilt as the standby in"
        f" {time.monotonic() - t1:.1f} s")
    wait_until("new messages after the rebuild",
               lambda: table.count.stored() >= before + NEW_BETWEEN or table.over(),
               table.daemon, central)


def _lose_active(pair: CentralPair, table: _Table, n: int, drill: Drill) -> None:
    """SIGKILL the active instance, time the survivor serving, start the lost one again as
    the standby, wait for a few more messages."""
    before = table.count.stored()
    killed = datetime.now(UTC)
    failover = pair.kill_active()
    survivor = pair.services[failover.survivor]
    wait_until("a message stored by the survivor",
               lambda: table.count.first_after(killed) is not None, table.daemon, survivor)
    first = table.count.first_after(killed)
    assert first is not None
    stored_s = (_as_utc(first) - killed).total_seconds()
    drill.back_s.append(failover.serving_s)
    drill.parts.append(
        f"{n + 1}: {failover.lost} SIGKILLed, {failover.survivor} serves ingest"
        f" {failover.ingest_s:.2f} s, page {failover.page_s:.2f} s, desk API"
        f" {failover.desk_s:.2f} s after the kill; the first message it stored was received"
        f" {stored_s:.2f} s after the kill")
    pair.restart(failover.lost)
    wait_until(f"central {failover.lost} standby",
               lambda: pair.role(failover.lost) == "standby",
               survivor, pair.services[failover.lost])
    wait_until("new messages after the takeover",
               lambda: table.count.stored() >= before + NEW_BETWEEN or table.over(),
               table.daemon, survivor)


def _retried(log: ServiceLog, killed: list[datetime]) -> str:
    """The service's own account: batches that met the lost database, when each loss's
    first was stored again."""
    backs = [_stamp(e) for e in log.events("ingest_database_back")]
    after = []
    for n, moment in enumerate(killed):
        until = killed[n + 1] if n + 1 < len(killed) else None
        first = next((b for b in backs if b > moment and (until is None or b < until)), None)
        after.append("-" if first is None else f"{(first - moment).total_seconds():.2f}")
    return (f"batches that met the lost database and were stored again: {len(backs)} (of"
            f" {sum(1 for _ in log.events('ingest_database_lost'))} lost); the first stored"
            f" again after each loss (the service's log; -: none was storing then):"
            f" {', '.join(after)} s; resend"
            f" requests {sum(1 for _ in log.events('ingest_resend_requested'))}")


def _database_drill(options: Options, broker: str) -> Drill:
    drill = Drill()
    pair = pg_pair.PgPair(synchronous=True, commit_level="on")
    pair.start()
    try:
        url = pair.url()
        root = options.scratch / "database"
        token = secrets.token_hex(3)
        venue, table_id = f"dbrow-{token}", f"t-{token}"
        tournament = tournament_now(root)
        heats = _heats(options.repeats)
        table_path, signer = table_config(root / "table", venue=venue, table=table_id,
                                          brokers=[broker], hand_pause=HAND_PAUSE_S,
                                          tournament=tournament, heats=heats)
        central_path, sqlite_url = central_config(root / "central", venue=venue,
                                                  brokers=[broker], tables={table_id: signer},
                                                  tournament=tournament)
        central_path.write_text(central_path.read_text().replace(
            f'database = "{sqlite_url}"', f'database = "{url}"'))
        _enrol_central(table_path, root / "central" / "leaderboard.key")
        central = Service(["leaderboard", "serve", "--config", str(central_path)],
                          ServiceLog(root / "central.log"))
        table = _Table(Service(["table", "run", "--config", str(table_path)],
                               ServiceLog(root / "table.log")),
                       table_id, root / "table" / "journal.sqlite", _Count(url, table_id), heats)
        drill.setting = (f"PostgreSQL {pg_pair.PG_BIN.parent.name}, a synchronous standby"
                         " (synchronous_commit = on)")
        try:
            central.start()
            wait_until("the central service ready",
                       lambda: central.log.last("ready") is not None, central)
            assert central.process is not None
            pid = central.process.pid
            table.daemon.start()
            wait_until("the first messages stored",
                       lambda: table.count.stored() >= FIRST_STORED, table.daemon, central)
            for n in range(options.repeats):
                if table.over():
                    drill.stopped = table.why_over(n)
                    break
                _lose_primary(pair, table, central, n, drill)
            _settle(drill, table, central)
            drill.restarted = not central.alive() or central.process.pid != pid
            drill.parts.append(_retried(central.log, drill.killed))
        finally:
            table.daemon.stop()
            central.stop()
        _tally(drill, table)
        table.count.engine.dispose()
    finally:
        pair.stop()
    return drill


def _database_kind(options: Options) -> str:
    choice = str(getattr(options.args, "database", "auto"))
    if choice != "auto":
        return choice
    return "postgresql" if services.postgres_up() else "sqlite"


def _central_drill(options: Options, broker: str) -> Drill:
    from support.ingest_tables import Database  # noqa: PLC0415 (its imports are heavy)

    drill = Drill()
    root = options.scratch / "central"
    root.mkdir(parents=True, exist_ok=True)
    kind = _database_kind(options)
    db = Database(kind, root)
    try:
        token = secrets.token_hex(3)
        venue, table_id = f"centralrow-{token}", f"t-{token}"
        tournament = tournament_now(root)
        heats = _heats(options.repeats)
        table_path, signer = table_config(root / "table", venue=venue, table=table_id,
                                          brokers=[broker], hand_pause=HAND_PAUSE_S,
                                          tournament=tournament, heats=heats)
        pair = CentralPair.configure(root / "pair", venue=venue, database=db.url,
                                     broker=broker, tables={table_id: signer},
                                     tournament=tournament)
        _enrol_central(table_path, root / "pair" / "leaderboard.key")
        table = _Table(Service(["table", "run", "--config", str(table_path)],
                               ServiceLog(root / "table.log")),
                       table_id, root / "table" / "journal.sqlite", _Count(db.url, table_id),
                       heats)
        drill.setting = (f"{'PostgreSQL schema' if kind == 'postgresql' else 'SQLite file'},"
                         " the default lease (5 s)")
        try:
            pair.start()
            table.daemon.start()
            wait_until("the first messages stored",
                       lambda: table.count.stored() >= FIRST_STORED, table.daemon,
                       *pair.services.values())
            for n in range(options.repeats):
                if table.over():
                    drill.stopped = table.why_over(n)
                    break
                _lose_active(pair, table, n, drill)
            active = pair.active()
            if active is None:
                drill.restarted = True
                drill.stopped = "no single active instance at the end"
            else:
                _settle(drill, table, pair.services[active])
        finally:
            table.daemon.stop()
            pair.stop()
        _tally(drill, table)
        table.count.engine.dispose()
    finally:
        db.close()
    return drill


def _outcome(failure: str, drill: Drill, goal: Goal, *, measure: str, extra: list[str]
             ) -> Outcome:
    wrong = None
    if drill.lost or drill.doubled:
        wrong = f"{drill.lost} messages lost, {drill.doubled} doubled"
    if drill.restarted:
        wrong = "; ".join(w for w in (wrong, "a service did not stay up or come back") if w)
    details = [f"{drill.setting}; {drill.journaled:,} messages journaled, {drill.stored:,}"
               f" stored ({drill.lost} lost, {drill.doubled} doubled)",
               *drill.parts, *extra, *([drill.stopped] if drill.stopped else [])]
    if not drill.back_s:
        return Outcome(failure=failure, goal=goal, lost=drill.lost, doubled=drill.doubled,
                       wrong=wrong or "no loss measured", note=drill.stopped,
                       details=details)
    samples = drill.back_s
    return Outcome(
        failure=failure,
        measure=(f"p99 (nearest rank: the largest of fewer than 100) of {len(samples)}"
                 f" {measure}"),
        value=p99(samples), goal=goal, lost=drill.lost, doubled=drill.doubled, wrong=wrong,
        baseline=(f"median {sorted(samples)[len(samples) // 2]:.2f} s, min"
                  f" {min(samples):.2f} s (same run)"),
        details=["each: " + ", ".join(f"{s:.2f}" for s in samples) + " s", *details])


def _missing(failure: str, goal: Goal, needs: str) -> list[Outcome]:
    return [Outcome(failure=failure, goal=goal, note=f"not measured: needs {needs}")]


def _broker() -> str | None:
    return "{}:{}".format(*services.MOSQUITTO) if services.mosquitto_up() else None


async def database_rows(options: Options) -> list[Outcome]:
    """The central database's primary SIGKILLed ``repeats`` times mid-play."""
    if not pg_pair.available():
        return _missing(DATABASE_FAILURE, DATABASE_GOAL,
                        f"the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup in"
                        f" {pg_pair.PG_BIN}; PG_BIN= names another folder)")
    broker = _broker()
    if broker is None:
        return _missing(DATABASE_FAILURE, DATABASE_GOAL,
                        "Mosquitto on {}:{}".format(*services.MOSQUITTO))
    drill = await asyncio.to_thread(_database_drill, options, broker)
    return [_outcome(
        DATABASE_FAILURE, drill, DATABASE_GOAL, measure=
        "SIGKILLs of the primary (the standby promoted at once) -> a message received after"
        f" the kill seen stored (polled every {POLL_S} s; the service never restarted)",
        extra=["the standby is promoted as soon as the primary is gone (the drill's pg_ctl"
         " promote): a venue's failover manager adds its time to notice the loss (Patroni:"
         " up to its ttl, 30 s by default) and its promotion"])]


async def central_rows(options: Options) -> list[Outcome]:
    """The active central instance SIGKILLed ``repeats`` times mid-play."""
    broker = _broker()
    if broker is None:
        return _missing(CENTRAL_FAILURE, CENTRAL_GOAL,
                        "Mosquitto on {}:{}".format(*services.MOSQUITTO))
    drill = await asyncio.to_thread(_central_drill, options, broker)
    return [_outcome(
        CENTRAL_FAILURE, drill, CENTRAL_GOAL, measure=
        "SIGKILLs of the active instance -> the standby serves ingest, page and desk API"
        " (the largest of the three)",
        extra=["the standby takes over once the lost one's lease has run out"])]


if __name__ == "__main__":
    import argparse
    import sys
    import tempfile
    import traceback

    from support.recovery_table import print_outcomes

    parser = argparse.ArgumentParser(description="The database and central failover rows.")
    parser.add_argument("--rows", default="database,central",
                        help="database, central or both (default both)")
    parser.add_argument("--repeats", type=int, default=10, help="losses a row (default 10)")
    parser.add_argument("--quick", action="store_true", help="one loss a row")
    parser.add_argument("--database", choices=["auto", "sqlite", "postgresql"], default="auto",
                        help="the central row's database (auto: PostgreSQL if it answers)")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1
    chosen = [r.strip() for r in args.rows.split(",") if r.strip()]

    async def _main() -> int:
        outcomes: list[Outcome] = []
        with tempfile.TemporaryDirectory(prefix="bench-failovers-") as scratch:
            options = Options(quick=args.quick, scratch=Path(scratch), repeats=args.repeats,
                              args=args)
            for name in chosen:
                row = {"database": database_rows, "central": central_rows}[name]
                started = time.perf_counter()
                try:
                    outcomes.extend(await row(options))
                except Exception as exc:  # as bench/recovery.py: a wrong result
                    traceback.print_exc()
                    outcomes.append(Outcome(failure=name, wrong=f"did not finish: {exc!r}"))
                print(f"row {name}: measured in {time.perf_counter() - started:.0f} s",
                      flush=True)
        print_outcomes(outcomes)
        return 1 if any(o.wrong for o in outcomes) else 0

    sys.exit(asyncio.run(_main()))
