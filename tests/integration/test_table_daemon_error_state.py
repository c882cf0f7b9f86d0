"""The table daemon's error state (issue 5 §4): a journal damaged while the daemon was stopped
(an edited record, or a file cut short that SQLite cannot read at all) makes it publish only
its availability with the fault (none of the journal's undelivered messages), take no device
input, answer `status` on its local API, still serve `showdown recall` (or say in one line that
the file cannot be read), and stay in the error state until the explicit operator command.
"""

from __future__ import annotations

import random
import secrets
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.journal import Journal
from controller.journal.models import TRIGGERS
from controller.local_api import call
from controller.wiring import wire_table
from simulators.players import VirtualPlayer
from tests.fixtures.services import MqttBroker
from tests.integration.daemon_support import (
    REPO,
    RecordingNotify,
    Subscriber,
    Table,
    desk_sender,
    forget_on_broker,
    free_port,
    make_table,
    pending_in,
    running,
)

# ---- 3. the error state -----------------------------------------------------------------------

def tamper(path: Path, *statements: str) -> None:
    """Change the stopped daemon's journal with raw SQL: triggers off, change, triggers back."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for name in TRIGGERS:
            con.execute(f"DROP TRIGGER {name}")
        for sql in statements:
            con.execute(sql)
        for sql in TRIGGERS.values():
            con.execute(sql)
    finally:
        con.close()


def showdown(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the `showdown` command line as an operator would."""
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=REPO)


async def play_offline(table: Table, hands: int) -> list[str]:
    """Play `hands` hands while the broker is unreachable; returns the hand ids (all pending)."""
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:
        vt = wired.virtual_table(seed=5, players=2)  # desk commands straight in: no broker
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-damaged")
        for seat in (1, 2):
            await vt.send_desk("seat", entry_id=f"E{seat}", seat=seat)
        await vt.until("the entries to be seated", lambda s: len(s.get("seats", {})) == 2)
        players = {seat: VirtualPlayer(name=f"player {seat}", rng=random.Random(seat))
                   for seat in (1, 2)}
        for _ in range(hands):
            await vt.play_hand(players)
        assert await stop() == 0
    with Journal.open(table.config.journal, read_only=True) as journal:
        return [m.body["hand_id"] for m in journal.latest_messages(("hand.settled",), 100)]


def damage(path: Path, how: str) -> None:
    """Damage a stopped daemon's journal: edit a card read, or cut the file short."""
    if how == "edited_card":
        tamper(path, "UPDATE journal SET payload = replace(payload, '\"card\":\"', "
                     "'\"card\":\"A') WHERE seq = (SELECT min(seq) FROM journal "
                     "WHERE kind = 'card')")
    else:
        size = path.stat().st_size
        with path.open("r+b") as f:
            f.truncate(size // 2)


async def error_state_run(table: Table, host: str, port: int) -> tuple[Subscriber, dict[str, Any],
                                                                       RecordingNotify]:
    """Start the daemon on a damaged journal; what it published, its status, its notices.

    The barrier: once the error availability is seen, an unsigned command is sent to the
    table's cmd topic. The link answers it with a `command_rejected` notice on the events
    topic, on the same connection and after anything it had begun to publish; when that
    notice has arrived, whatever the daemon published before it has arrived too.
    """
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with Subscriber(host, port, table) as sub:
        async with running(daemon) as stop:
            status = await call(table.config.api.socket, {"action": "status"})
            # No device input: nothing was connected; nobody can sign in at the console, and
            # a button pressed is refused naming the error state.
            assert daemon.devices is None
            signed = await call(table.config.api.socket,
                                {"action": "sign_in", "staff_id": "D1", "pin": "1234"})
            assert signed["ok"] is False and "error state" in signed["error"], signed
            pressed = await call(table.config.api.socket, {"action": "no_more_bets"})
            assert pressed["ok"] is False and "error state" in pressed["error"], pressed
            await sub.wait_for("the availability with the error", lambda: any(
                a.body["state"] == "online" and a.body["status"]["state"] == "error"
                for a in sub.availability))
            async with aiomqtt.Client(host, port,
                                      identifier=f"barrier-{secrets.token_hex(4)}") as client:
                await client.publish(table.topics.cmd, b"barrier: not an envelope", qos=1)
            await sub.wait_for("the barrier's rejection", lambda: any(
                e.type == "command_rejected" for e in sub.unsequenced))
            assert await stop() == 0
        await sub.wait_for("the clean offline", lambda: any(
            a.body["state"] == "offline" and a.body.get("clean") for a in sub.availability))
    return sub, status, notify


# A truncated journal in the fast lane; the edited card (the same daemon run) in the soak tier.
@pytest.mark.parametrize("how", [pytest.param("edited_card", marks=pytest.mark.soak),
                                 "truncated"])
async def test_a_damaged_journal_puts_the_table_in_the_error_state(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path, how: str) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    offline = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", seed=5)
    hand_ids = await play_offline(offline, hands=2)
    journal_path = offline.config.journal
    assert len(hand_ids) == 2 and pending_in(journal_path) > 0
    with Journal.open(journal_path, read_only=True) as journal:
        last_seq = journal.last_seq()  # what the leaderboard would know from the table
    damage(journal_path, how)
    readable = how != "truncated"  # SQLite can still read the edited file, not the cut one
    table = offline.with_broker(f"{host}:{port}")
    try:
        sub, status, notify = await error_state_run(table, host, port)
        # The local API answers status, in the error state, naming the fault.
        assert status["ok"] is True
        detail = status["detail"]
        assert detail["state"] == "error" and detail["faults"], detail
        # READY=1 still comes (the service is up and answering), with the error as STATUS.
        assert notify.calls[0] == "READY=1"
        assert any(c.startswith("STATUS=error state") for c in notify.calls), notify.calls
        # Its availability carries the error and the fault.
        assert sub.bad == []
        errors = [a for a in sub.availability if a.body["state"] == "online"]
        assert errors and all(a.body["status"]["state"] == "error" for a in errors)
        assert errors[-1].body["status"]["faults"] == detail["faults"]
        # (That it publishes nothing else: test_the_error_state_publishes_no_stored_message.)

        # Game recall still prints the last hands, under the damage it found (exit 1: a check
        # found problems) and the error state's faults; from a file SQLite cannot read it
        # says so in one line.
        recall = showdown("recall", "--journal", str(journal_path), "--last", "10")
        if readable:
            assert recall.returncode == 1, recall.stderr
            assert "JOURNAL DAMAGED: " in recall.stdout, recall.stdout
            assert "ERROR STATE: 1 open fault(s)" in recall.stdout, recall.stdout
            for hand_id in hand_ids:
                assert hand_id in recall.stdout
        else:
            assert recall.returncode != 0
            assert "Traceback" not in recall.stderr and "malformed" in recall.stderr

        # It never clears itself: started again, it is in the error state again.
        again, status, _ = await error_state_run(table, host, port)
        assert status["detail"]["state"] == "error"
        assert status["detail"]["faults"] == detail["faults"]
        assert again.bad == []

        # Clearing needs the explicit, logged operator command. A damaged journal cannot have
        # its faults cleared (docs/journal.md): it is replaced (kept aside, never deleted),
        # and the table starts afresh with its message seq continuing.
        refused = showdown("journal", "clear-faults", "--journal", str(journal_path),
                           "--operator", "T. Technician (4711)", "--why", "test")
        assert refused.returncode == 3  # refused by the rules (docs/cli.md, exit codes)
        assert "Traceback" not in refused.stderr and refused.stderr.strip(), refused.stderr
        replaced = showdown("journal", "replace", "--journal", str(journal_path),
                            "--operator", "T. Technician (4711)",
                            "--why", "journal failed verification in a test",
                            *(() if readable else ("--last-seq", str(last_seq))))
        assert replaced.returncode == 0, replaced.stdout + replaced.stderr
        assert list(journal_path.parent.glob(f"{journal_path.name}.retired-*"))
        notify = RecordingNotify()
        wired = wire_table(table.config, notify=notify)
        daemon = wired.daemon
        notify.daemon = daemon
        async with Subscriber(host, port, table) as sub, running(daemon) as stop:
            status = await call(table.config.api.socket, {"action": "status"})
            assert status["detail"]["state"] == "running" and status["detail"]["faults"] == []
            assert daemon.devices is not None
            vt = wired.virtual_table(desk=desk_sender(table, host, port, daemon=daemon))
            await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-afresh")
            await sub.wait_for("the new heat", lambda: any(
                m.type == "heat.opened" for m in sub.arrivals))
            assert await stop() == 0
        assert sub.bad == []
        assert min(sub.by_seq) == last_seq + 1  # the new journal continues the table's seq
        opened = next(m for m in sub.arrivals if m.type == "heat.opened")
        assert opened.body["heat_id"] == "qualifying-afresh"
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)


async def test_the_error_state_publishes_no_stored_message(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    offline = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}", seed=5)
    notify = RecordingNotify()
    wired = wire_table(offline.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:  # the broker is unreachable: everything stays pending
        vt = wired.virtual_table(seed=5, players=1)
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-pending")
        await vt.send_desk("seat", entry_id="E1", seat=1)
        assert await stop() == 0
    pending = pending_in(offline.config.journal)
    assert pending >= 4
    tamper(offline.config.journal, "UPDATE journal SET payload = replace(payload, "
                                   "'qualifying-pending', 'qualifying-changed') "
                                   "WHERE kind = 'desk'")
    table = offline.with_broker(f"{host}:{port}")
    try:
        sub, status, _ = await error_state_run(table, host, port)
        assert status["detail"]["state"] == "error"
        assert [f"{e.seq} {e.type}" for e in sub.arrivals] == []
        assert pending_in(table.config.journal) == pending
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)
