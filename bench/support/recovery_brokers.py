"""Rows of bench/recovery.py: a broker node lost under a table, and under the central service.

A three-node NATS cluster on loopback (tests/integration/nats_cluster.py: JetStream, the
MQTT streams replicated on every node), the real central service (`showdown leaderboard
serve`, SQLite) and a real simulated table daemon (`showdown table run`, virtual desk and
dealer playing heats), each given the three MQTT addresses in its own order
(tests/integration/cluster_support.py, as test_broker_cluster.py runs them). Then, N times:

- the node the table is on is SIGKILLed; timed from the kill to the table's ``mqtt_resumed``
  (its first message acknowledged on another node: its birth), read from its JSON log;
  the node is started again and the cluster waits until every replica is current;
- the same for the node the central service is on, to its ``ingest_subscribed`` on another.

At the end (the play goes on meanwhile) every message the table journaled must be stored in
the central database once: lost = journaled seqs not stored, doubled = a (table, seq) stored
twice; the copies the ingest dropped as duplicates are shown.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import shutil
import sqlite3
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from controller.journal import Journal
from runtime.net import answers
from support.recovery_table import Goal, Options, Outcome
from tests.integration.cluster_support import (
    Service,
    ServiceLog,
    central_config,
    table_config,
    tournament_now,
    wait_until,
)
from tests.integration.nats_cluster import NATS_SERVER, NatsCluster

__all__ = ["broker_rows"]

TABLE_GOAL = Goal(6.0, "s")
CENTRAL_GOAL = Goal(10.0, "s")
HAND_PAUSE_S = 1.0


CURRENT_GUARD_S = 45.0  # a restarted node's replicas: how long to wait for them to be current


class _Cluster(NatsCluster):
    """The test's cluster; a restarted node whose replicas are not all current within
    CURRENT_GUARD_S is noted, not waited for (a consumer replica stayed behind for minutes
    once, on a loaded machine), and the drill goes on with the others current."""

    def __init__(self, root: Path, *, nodes: int = 3) -> None:
        super().__init__(root, nodes=nodes)
        self.behind: list[str] = []

    def wait_healthy(self) -> None:
        """The first start as the test's; after a restart, a node whose JetStream health
        check still fails after CURRENT_GUARD_S (a consumer replica not current) is noted and
        the drill goes on once its MQTT listener answers."""
        if not self._up:
            super().wait_healthy()
            return
        deadline = time.monotonic() + CURRENT_GUARD_S
        while True:
            running = [n for n in self.nodes if n.process is not None]
            for node in running:
                assert node.process is not None
                if node.process.poll() is not None:
                    raise RuntimeError(f"nats node {node.name} exited")
            if all(n.healthy() for n in running):
                return
            if time.monotonic() > deadline and all(answers("127.0.0.1", n.mqtt)
                                                   for n in running):
                self.behind.extend(f"{n.name} unhealthy" for n in running if not n.healthy())
                return
            if time.monotonic() > deadline + 120:
                raise TimeoutError("a restarted NATS node's MQTT listener never answered")
            time.sleep(0.1)

    def wait_current(self) -> None:
        deadline = time.monotonic() + CURRENT_GUARD_S
        while True:
            behind = self.lagging()
            if not behind:
                return
            if time.monotonic() > deadline:
                self.behind.extend(behind[:3])
                return
            time.sleep(0.2)


def p99(values: list[float]) -> float:
    """Nearest-rank 99th percentile (the largest of fewer than 100 values)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(0.99 * len(ordered))) - 1]


@dataclass(slots=True)
class Drill:
    """What the kills gave."""

    table_s: list[float] = field(default_factory=list)
    table_logged_s: list[float] = field(default_factory=list)  # the daemon's own figure
    central_s: list[float] = field(default_factory=list)
    both: int = 0  # kills of a node both were on
    restart_s: list[float] = field(default_factory=list)  # a node's restart until current
    journaled: int = 0
    stored: int = 0
    lost: int = 0
    doubled: int = 0
    duplicates: int | None = None
    behind: list[str] = field(default_factory=list)  # replicas not current after a restart
    stopped: str = ""  # why the kills stopped early (the cluster), if they did


def _stamp(event: dict[str, object]) -> datetime:
    return datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00"))


def _broker_of(log: ServiceLog) -> str | None:
    last = log.last("mqtt_broker_in_use")
    return None if last is None else str(last["broker"])


def _seqs(database: str, table: str) -> tuple[int, int]:
    """(rows, distinct seqs) the central database holds for the table."""
    path = database.removeprefix("sqlite:///")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows, distinct = con.execute(
            "SELECT count(*), count(DISTINCT seq) FROM messages WHERE table_id = ?",
            (table,)).fetchone()
    finally:
        con.close()
    return int(rows), int(distinct)


def _kill_and_time(cluster: NatsCluster, index: int, log: ServiceLog, event: str,
                   *services: Service) -> tuple[float, dict[str, object]]:
    """SIGKILL node ``index``; seconds from the kill to the next ``event`` in ``log``."""
    seen = sum(1 for _ in log.events(event))
    killed = datetime.now(UTC)
    cluster.kill(index)
    wait_until(f"{event} after node {index + 1} was lost",
               lambda: sum(1 for _ in log.events(event)) > seen, *services)
    after = list(log.events(event))[seen]
    return (_stamp(after) - killed).total_seconds(), after


@dataclass(slots=True)
class _Floor:
    """The cluster, the central service and the table daemon of the drill."""

    cluster: _Cluster
    central: Service
    daemon: Service
    database: str
    table: str
    journal: Path


def _floor(root: Path, heats: int) -> _Floor:
    """A fresh cluster with the central service and a table daemon on it (not started)."""
    cluster = _Cluster(root / "nats", nodes=3)
    cluster.start()
    token = secrets.token_hex(3)
    venue, table = f"recovery-{token}", f"t-{token}"
    tournament = tournament_now(root)
    table_path, signer = table_config(root / "table", venue=venue, table=table,
                                      brokers=[cluster.nodes[i].mqtt_address for i in (0, 2, 1)],
                                      hand_pause=HAND_PAUSE_S, tournament=tournament,
                                      heats=heats)
    central_path, database = central_config(root / "central", venue=venue,
                                            brokers=cluster.mqtt_brokers(1),
                                            tables={table: signer}, tournament=tournament)
    central = Service(["leaderboard", "serve", "--config", str(central_path)],
                      ServiceLog(root / "central.log"))
    daemon = Service(["table", "run", "--config", str(table_path)],
                     ServiceLog(root / "table.log"))
    return _Floor(cluster, central, daemon, database, table, root / "table" / "journal.sqlite")


def _lose(floor: _Floor, whose: Service, event: str, drill: Drill
          ) -> tuple[float, dict[str, object]]:
    """Kill the node ``whose`` service is on, time it to ``event``, start the node again."""
    where = _broker_of(whose.log)
    assert where is not None
    index = floor.cluster.node_of_port(int(where.rsplit(":", 1)[1]))
    other = floor.central if whose is floor.daemon else floor.daemon
    drill.both += _broker_of(other.log) == where
    got = _kill_and_time(floor.cluster, index, whose.log, event, floor.daemon, floor.central)
    started = time.monotonic()
    floor.cluster.restart(index)
    drill.restart_s.append(time.monotonic() - started)
    return got


def _count(floor: _Floor, drill: Drill) -> None:
    """Lost and doubled: the journal's messages up to the last checked against the centre."""
    rows, distinct = _seqs(floor.database, floor.table)
    with Journal.open(floor.journal, read_only=True) as journal:
        journaled = {m.seq for m in journal.messages(1, drill.journaled)}
    con = sqlite3.connect(f"file:{floor.database.removeprefix('sqlite:///')}?mode=ro", uri=True)
    try:
        stored = {int(s) for (s,) in con.execute(
            "SELECT seq FROM messages WHERE table_id = ? AND seq <= ?",
            (floor.table, drill.journaled))}
    finally:
        con.close()
    drill.stored = rows
    drill.lost = len(journaled - stored)
    drill.doubled = rows - distinct


def _drill(options: Options) -> Drill:
    floor = _floor(options.scratch / "brokers", options.args.broker_heats)
    central, daemon = floor.central, floor.daemon
    drill = Drill()
    try:
        central.start()
        wait_until("the central service ready", lambda: central.log.last("ready") is not None,
                   central)
        ready = central.log.last("ready")
        assert ready is not None
        daemon.start()
        wait_until("the table on a node", lambda: _broker_of(daemon.log) is not None, daemon)
        wait_until("messages ingested", lambda: _seqs(floor.database, floor.table)[0] >= 5,
                   daemon, central)
        try:
            for _ in range(options.repeats):
                seconds, resumed = _lose(floor, daemon, "mqtt_resumed", drill)
                drill.table_s.append(seconds)
                drill.table_logged_s.append(float(str(resumed.get("seconds", "nan"))))
                seconds, _ = _lose(floor, central, "ingest_subscribed", drill)
                drill.central_s.append(seconds)
        except (RuntimeError, TimeoutError) as exc:  # the cluster, not our services: noted
            drill.stopped = f"the drill stopped after {len(drill.table_s)} + " \
                            f"{len(drill.central_s)} kills: {str(exc)[:300]}"
            for node in floor.cluster.nodes:
                if node.process is None:  # back to three nodes for the count at the end
                    floor.cluster._spawn(node)

        def complete() -> bool:
            with Journal.open(floor.journal, read_only=True) as journal:
                last, pending = journal.last_seq(), journal.pending_count()
            drill.journaled = last
            return pending == 0 and _seqs(floor.database, floor.table)[1] >= last

        wait_until("every journaled message stored", complete, daemon, central)
        try:
            with urllib.request.urlopen(str(ready["url"]) + "healthz",  # noqa: S310
                                        timeout=10) as answer:
                drill.duplicates = json.loads(answer.read()).get("ingest", {}).get("duplicates")
        except OSError:
            drill.duplicates = None
    finally:
        drill.behind = floor.cluster.behind
        daemon.stop()
        central.stop()
        floor.cluster.stop()
        if options.args.logs is not None:  # the services' and nodes' logs, kept to read
            options.args.logs.mkdir(parents=True, exist_ok=True)
            for log in (central.log.path, daemon.log.path,
                        *(n.log for n in floor.cluster.nodes)):
                shutil.copy(log, options.args.logs / log.name)
    _count(floor, drill)
    return drill


async def broker_rows(options: Options) -> list[Outcome]:
    """A broker node lost under the table, and under the central service, N times each."""
    if not Path(NATS_SERVER).exists():
        note = f"not measured: needs nats-server ({NATS_SERVER})"
        return [Outcome(failure="broker node lost under a table", goal=TABLE_GOAL, note=note),
                Outcome(failure="broker node lost under the centre", goal=CENTRAL_GOAL,
                        note=note)]
    drill = await asyncio.to_thread(_drill, options)
    common = [f"{drill.journaled:,} messages journaled, {drill.stored:,} stored "
              f"({drill.lost} lost, {drill.doubled} doubled), copies dropped by the ingest: "
              f"{drill.duplicates}; {drill.both} of "
              f"{len(drill.table_s) + len(drill.central_s)} kills hit a node both were on",
              "a node's restart until every replica is current: "
              + ", ".join(f"{s:.1f}" for s in drill.restart_s) + " s"
              + (f"; not current or healthy after {CURRENT_GUARD_S:.0f} s (the drill went "
                 "on): " + "; ".join(drill.behind) if drill.behind else ""),
              *([drill.stopped] if drill.stopped else [])]
    wrong = None
    if drill.lost or drill.doubled:
        wrong = f"{drill.lost} messages lost, {drill.doubled} doubled"
    return [_outcome("broker node lost under a table", "the table's node", "its first message "
                     "acknowledged on another node (mqtt_resumed)", drill.table_s, TABLE_GOAL,
                     drill=drill, wrong=wrong, details=[
                         *common, "the daemon's own figure (from noticing the loss): "
                         + ", ".join(f"{s:.2f}" for s in drill.table_logged_s) + " s"]),
            _outcome("broker node lost under the centre", "the central service's node",
                     "subscribed on another node (ingest_subscribed)", drill.central_s,
                     CENTRAL_GOAL, drill=drill, wrong=wrong, details=[])]


def _outcome(failure: str, whose: str, until: str, samples: list[float], goal: Goal, *,
             drill: Drill, wrong: str | None, details: list[str]) -> Outcome:
    if not samples:
        return Outcome(failure=failure, goal=goal, lost=drill.lost, doubled=drill.doubled,
                       wrong=wrong, note=drill.stopped or "no kill measured", details=details)
    return Outcome(
        failure=failure, measure=f"p99 of {len(samples)} SIGKILLs of {whose} -> {until}",
        value=p99(samples), goal=goal, lost=drill.lost, doubled=drill.doubled, wrong=wrong,
        baseline=f"median {sorted(samples)[len(samples) // 2]:.2f} s",
        details=["each: " + ", ".join(f"{s:.2f}" for s in samples) + " s", *details])
