"""Issue 34 §4: links that recover at once, as whole processes. A private Mosquitto; the real
central service (SQLite) and a real simulated table daemon, both with a 2 s keepalive.

First the table daemon is frozen (SIGSTOP) past its keepalive, so the broker drops it, and
thawed (SIGCONT); then the broker is frozen past the keepalive, so both clients notice the
silence, and thawed. After each SIGCONT the next message is delivered (the table's birth
acknowledged, the central service subscribed again) within the keepalive plus one back-off
step; nothing is lost (every seq stored once at the central service); the lost connections
are warnings, one each, with no error-level line and no traceback. The times are printed.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from controller.journal import Journal
from leaderboard.models import Message
from tests.fixtures.private_mosquitto import PrivateMosquitto
from tests.integration.cluster_support import (
    Service,
    ServiceLog,
    central_config,
    table_config,
    tournament_now,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.soak]

KEEPALIVE_S = 2
FIRST_STEP_S = 0.5  # the default backoff_initial_s: an outage's first wait is at most this
MARGIN_S = 2.0  # for a loaded 2-core machine (paho's keepalive check ticks once a second)
TABLE_FREEZE_S = 12.0  # Mosquitto 2.0 drops a silent 2 s-keepalive client after 3 to 11 s
BROKER_FREEZE_S = 8.0  # past twice the keepalive: both clients notice the silence


def _stored(database: str, table: str) -> list[int]:
    engine = create_engine(database)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(Message.seq).where(Message.table_id == table)))
    finally:
        engine.dispose()


def _keepalive(path: Path) -> None:
    """Add ``keepalive_s`` to the [mqtt] section of a config file."""
    text = path.read_text()
    path.write_text(re.sub(r"^(\[mqtt\]\n(?:.*\n)*?brokers = .*\n)",
                           rf"\g<1>keepalive_s = {KEEPALIVE_S}\n", text, count=1,
                           flags=re.MULTILINE))
    assert f"keepalive_s = {KEEPALIVE_S}" in path.read_text()


def _at(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["timestamp"]))


def _after(log: ServiceLog, name: str, moment: datetime) -> list[dict[str, Any]]:
    return [e for e in log.events(name) if _at(e) >= moment]


def _step_at(log: ServiceLog, moment: datetime) -> float:
    """The back-off step under way at ``moment``: the last wait logged before it since the
    last connection, else the first step."""
    waits = [e for e in log.events("mqtt_reconnect_wait") if _at(e) <= moment]
    connects = [e for e in log.events("mqtt_broker_in_use") if _at(e) <= moment]
    if waits and (not connects or _at(waits[-1]) > _at(connects[-1])):
        return max(float(waits[-1]["delay_s"]), FIRST_STEP_S)
    return FIRST_STEP_S


def _freeze(pid: int, seconds: float) -> datetime:
    """Stop ``pid`` for ``seconds``; the moment just before SIGCONT (taken before, not after:
    a CONNECT waiting on a frozen broker is answered at once, and this process may be
    scheduled out between the signal and a clock read made after it)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        thawing = datetime.now(UTC)
        os.kill(pid, signal.SIGCONT)
    return thawing


def _noise(log: ServiceLog) -> list[dict[str, Any]]:
    """Error-level lines, and any line carrying a traceback."""
    return [e for e in log.events() if e.get("level") in ("error", "critical")
            or "exception" in e or "Traceback" in str(e)]


def test_a_frozen_table_and_a_frozen_broker_recover_within_the_keepalive_and_a_step(
        tmp_path: Path) -> None:
    broker = PrivateMosquitto(tmp_path / "mosquitto")
    broker.start()
    token = secrets.token_hex(3)
    venue, table = f"freeze-{token}", f"t-{token}"
    tournament = tournament_now(tmp_path)
    table_path, signer = table_config(tmp_path / "table", venue=venue, table=table,
                                      brokers=[broker.address], hand_pause=1.0,
                                      tournament=tournament, heats=3)
    central_path, database = central_config(tmp_path / "central", venue=venue,
                                            brokers=[broker.address], tables={table: signer},
                                            tournament=tournament)
    _keepalive(table_path)
    _keepalive(central_path)
    central = Service(["leaderboard", "serve", "--config", str(central_path)],
                      ServiceLog(tmp_path / "central.log"))
    daemon = Service(["table", "run", "--config", str(table_path)],
                     ServiceLog(tmp_path / "table.log"))
    journal_path = tmp_path / "table" / "journal.sqlite"
    figures: list[str] = []
    try:
        central.start()
        wait_until("the central service subscribed",
                   lambda: central.log.last("ingest_subscribed") is not None, central)
        daemon.start()
        wait_until("hands played (mid-heat)", lambda: sum(
            1 for _ in daemon.log.events("hand.settled")) >= 2, daemon, central)
        assert daemon.process is not None and central.process is not None

        # 1. The table daemon frozen past its keepalive: the broker drops it.
        thawed = _freeze(daemon.process.pid, TABLE_FREEZE_S)
        step = _step_at(daemon.log, thawed)
        wait_until("the table's next message acknowledged after the thaw", lambda: bool(
            _after(daemon.log, "mqtt_resumed", thawed)
            or _after(daemon.log, "mqtt_outbox_resumed", thawed)), daemon, central)
        lost = _after(daemon.log, "mqtt_disconnected", thawed)
        assert lost, "the broker did not drop the frozen table: freeze it longer"
        resumed = _after(daemon.log, "mqtt_resumed", thawed)[0]
        table_s = (_at(resumed) - thawed).total_seconds()
        figures.append(f"table frozen {TABLE_FREEZE_S:.0f} s: its birth acknowledged"
                       f" {table_s:.2f} s after SIGCONT ({lost[0]['error']})")
        assert table_s <= KEEPALIVE_S + step + MARGIN_S, figures

        # 2. The broker frozen past the keepalive: both clients notice and reconnect.
        before = datetime.now(UTC)
        assert broker.process is not None
        thawed = _freeze(broker.process.pid, BROKER_FREEZE_S)
        table_step, central_step = _step_at(daemon.log, thawed), _step_at(central.log, thawed)
        wait_until("the table's birth acknowledged after the broker's thaw",
                   lambda: bool(_after(daemon.log, "mqtt_resumed", thawed)), daemon, central)
        wait_until("the central service subscribed after the broker's thaw",
                   lambda: bool(_after(central.log, "ingest_subscribed", thawed)),
                   daemon, central)
        table_lost = _after(daemon.log, "mqtt_disconnected", before)
        central_lost = _after(central.log, "mqtt_disconnected", before)
        assert table_lost and central_lost, "the frozen broker went unnoticed"
        table_s = (_at(_after(daemon.log, "mqtt_resumed", thawed)[0]) - thawed).total_seconds()
        central_s = (_at(_after(central.log, "ingest_subscribed", thawed)[0])
                     - thawed).total_seconds()
        noticed_s = (_at(table_lost[0]) - before).total_seconds()
        figures.append(f"broker frozen {BROKER_FREEZE_S:.0f} s: the table noticed after"
                       f" {noticed_s:.2f} s ({table_lost[0]['error']}); after SIGCONT the"
                       f" table's birth acknowledged in {table_s:.2f} s (step {table_step} s),"
                       f" the central service subscribed in {central_s:.2f} s"
                       f" (step {central_step} s)")
        assert table_s <= KEEPALIVE_S + table_step + MARGIN_S, figures
        assert central_s <= KEEPALIVE_S + central_step + MARGIN_S, figures

        # Everything the table journaled reaches the central service, once.
        def complete() -> bool:
            with Journal.open(journal_path, read_only=True) as journal:
                last, pending = journal.last_seq(), journal.pending_count()
            return pending == 0 and len(_stored(database, table)) == last

        wait_until("every message stored", complete, daemon, central)
    finally:
        table_code = daemon.stop()
        central_code = central.stop()
        broker.close()
    print("\n" + "\n".join(figures))
    assert (table_code, central_code) == (0, 0)
    with Journal.open(journal_path, read_only=True) as journal:
        last = journal.last_seq()
    stored = _stored(database, table)
    assert sorted(stored) == list(range(1, last + 1))  # none lost, none twice
    for log in (daemon.log, central.log):
        assert _noise(log) == [], _noise(log)[:5]
        # Each lost connection is one warning of the session (and nothing else of MQTT).
        mqtt_warnings = [e["event"] for e in log.events()
                         if e.get("level") == "warning" and str(e.get("event", "")).startswith(
                             "mqtt_")]
        assert mqtt_warnings == ["mqtt_disconnected"] * len(mqtt_warnings), mqtt_warnings
    print(f"{last} messages, all stored once; table warnings:"
          f" {[e['event'] for e in daemon.log.events() if e.get('level') == 'warning']};"
          f" central warnings:"
          f" {[e['event'] for e in central.log.events() if e.get('level') == 'warning']}")
