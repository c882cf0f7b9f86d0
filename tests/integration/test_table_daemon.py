"""The table daemon in-process, with the simulators and a real MQTT broker (issue 5 §4): a
whole qualifying heat on the embedded broker and on the machine's Mosquitto publishes the
scores the game core recomputes from the published hands (`game.wagers.settle.settle_hand`, the
shipped paytables, the starting chips); chips left on a spot when its seat changes entry; a
full systemd notification socket never stops the daemon.

Each test builds a table config in tmp_path (tests/integration/daemon_support.py) and runs
`TableDaemon.run()` in the test's event loop with the simulated shoe and chip reader behind
the real drivers. Only unique venue and table ids are used, and what a test leaves on the
machine's Mosquitto (the daemon's persistent session, its retained status) is cleared.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

from controller.app import TableDaemon
from controller.journal import Journal
from controller.local_api import call
from controller.wiring import wire_table
from tests.fixtures.services import MqttBroker
from tests.integration.daemon_support import (
    GUARD_S,
    REPO,
    RecordingNotify,
    Subscriber,
    check_heat,
    desk_sender,
    forget_on_broker,
    free_port,
    make_table,
    pending_in,
    running,
    stored_bodies,
)
from wire.messages import Availability

# ---- 1. a whole qualifying heat ---------------------------------------------------------------

async def test_a_whole_qualifying_heat_publishes_the_game_cores_scores(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    table = make_table(tmp_path, short_dir, f"{host}:{port}")
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    played = asyncio.get_running_loop().create_future()

    async def play(d: TableDaemon) -> None:
        vt = wired.virtual_table(desk=desk_sender(table, host, port, daemon=daemon), seed=7,
                                 players=3, heats=1)
        try:
            await vt.run()
        except BaseException as exc:
            played.set_exception(exc)
            raise
        played.set_result(vt.hands_played)

    try:
        async with Subscriber(host, port, table) as sub:
            async with running(daemon, play) as stop:
                async with asyncio.timeout(GUARD_S * 2):
                    hands_played = await played
                assert daemon.journal is not None
                await sub.wait_all(daemon.journal.last_seq)
                assert await stop() == 0
            # What the stop itself recorded (the devices' "disconnected" alerts) is
            # published before the clean disconnect too.
            last_seq = max(stored_bodies(table.config.journal))
            await sub.wait_all(lambda: last_seq)
            # The clean stop said so: the retained status is the clean "offline".
            await sub.wait_for("the clean offline", lambda: any(
                a.body["state"] == "offline" for a in sub.availability))
        assert pending_in(table.config.journal) == 0
        expected = check_heat(sub, last_seq)
        assert sum(1 for m in sub.by_seq.values() if m.type == "hand.settled") == hands_played
        assert len(expected) == 3
        # Every entry's chips came back to the table's float (rule 19), published in order.
        reconciled = [m.body for m in sub.by_seq.values() if m.type == "chips.reconciled"]
        assert len(reconciled) == 3 and all(b["missing"] == [] for b in reconciled)
        # What arrived is exactly what the journal stored, seq by seq.
        assert {s: dict(m.body) for s, m in sub.by_seq.items()} == {
            s: dict(b) for s, b in stored_bodies(table.config.journal).items()}
        # READY after the self-test and before the first card; STOPPING at the end.
        assert notify.calls[0] == "READY=1" and notify.calls[-1] == "STOPPING=1"
        assert notify.calls.count("READY=1") == 1
        with Journal.open(table.config.journal, read_only=True) as journal:
            cards = [r.seq for r in journal.records() if r.kind == "card"]
        assert cards and notify.ready_after_record is not None
        assert min(cards) > notify.ready_after_record
        online = [a for a in sub.availability if a.body["state"] == "online"]
        assert online and online[0].body["status"]["state"] == "online"
        # its journal never rotated: a resend reaches back to seq 1 (D414)
        assert online[0].body["status"][Availability.FIRST_RESENDABLE] == 1
        offline = [a for a in sub.availability if a.body["state"] == "offline"]
        assert offline[-1].body["clean"] is True
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)


# ---- chips that stay on a spot when its seat changes hands -------------------------------------

async def test_chips_left_on_a_spot_are_still_seen_when_the_seat_changes_entry(
        tmp_path: Path, short_dir: Path) -> None:
    # No broker is needed: the link keeps trying in the background; desk commands go straight in.
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    daemon = wired.daemon
    notify.daemon = daemon
    async with running(daemon) as stop:
        assert daemon.devices is not None
        chips = wired.devices.rfid_sim
        vt = wired.virtual_table()
        await vt.send_desk("open_heat", stage="qualifying", heat_id="qualifying-spots")
        await vt.send_desk("seat", entry_id="E1", seat=1)
        await vt.send_desk("seat", entry_id="E2", seat=2)
        chips.place(1, "ante", 2500)
        chips.place(1, "odds", 2500)
        await vt.until("seat 1's chips", lambda s: s["spots"].get("1") == {
            "ante": 2500, "odds": 2500})
        # Seat 1's entry leaves and another sits down; the chips stay where they are.
        await vt.send_desk("unseat", seat=1, reason="test: the entry leaves")
        await vt.send_desk("seat", entry_id="E3", seat=1)
        # Barrier: chips put on seat 2 are seen only after the reader has swept every antenna
        # again since the change of entry, seat 1's included.
        chips.place(2, "ante", 5000)
        chips.place(2, "odds", 5000)
        await vt.until("seat 2's chips", lambda s: s["spots"].get("2") == {
            "ante": 5000, "odds": 5000})
        spots = daemon.status()["spots"]
        assert await stop() == 0
    assert spots["1"] == {"ante": 2500, "odds": 2500}, spots


# ---- systemd's notification socket --------------------------------------------------------------

async def test_a_full_notification_socket_does_not_stop_the_daemon(
        tmp_path: Path, short_dir: Path) -> None:
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    path = short_dir / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    env = {k: v for k, v in os.environ.items() if k != "WATCHDOG_PID"}
    env.update(NOTIFY_SOCKET=str(path), WATCHDOG_USEC="100000")  # a ping every 50 ms
    log = (tmp_path / "daemon.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "cli", "table", "run", "--config",
                                str(table.path)], stdout=log, stderr=subprocess.STDOUT,
                               env=env, cwd=REPO)
    try:
        receiver.settimeout(GUARD_S)
        while b"READY=1" not in receiver.recv(4096):
            pass
        # Stop reading, like a supervisor that is busy; fill what is left of the queue.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as filler:
            while True:
                try:
                    filler.sendto(b"FILLER=1", socket.MSG_DONTWAIT, str(path))
                except BlockingIOError:
                    break
        # The daemon pings every 50 ms: over 40 status requests, 50 ms apart, it pings about
        # 40 times into the full queue; each request must still be answered.
        for _ in range(40):
            try:
                answer = await call(table.config.api.socket, {"action": "status"}, timeout=5.0)
            except TimeoutError:
                answer = None
            assert answer is not None, "the daemon stopped answering once the queue was full"
            assert answer["ok"] is True
            await asyncio.sleep(0.05)
    finally:
        receiver.close()  # a blocked send then fails, and the daemon can stop
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
