"""A dispute of a settled hand from the table's console to the desk's ruling and back, through a
real broker: the dealer disputes a hand (``hand.disputed``), the central service stores it, a
supervisor voids the hand while the entry still plays, the signed ``correct_hand`` command
moves the entry's chips at the table (``hand.corrected``; the hand's record is unchanged), and
the score the table records at the end of the heat counts the void.

The daemon runs in the test's loop with the simulated devices; what the table publishes is
read off the broker by a subscriber and projected into a desk database (SQLite) as the ingest
projects it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from controller.wiring import wire_table
from leaderboard import desk
from leaderboard.db import make_engine, upgrade
from leaderboard.desk import dispute_records as disputes
from leaderboard.models import Hand, HandCorrection
from leaderboard.projections import project
from simulators.players import VirtualPlayer
from tests.fixtures.services import MqttBroker
from tests.integration.daemon_support import (
    Subscriber,
    desk_sender,
    forget_on_broker,
    make_table,
    running,
)
from tests.leaderboard.desk_fields import HEAT_TIME, buy
from tests.leaderboard.desk_helpers import FakeClock, register, settings


def _project_new(engine: sa.Engine, sub: Subscriber, done: set[int]) -> None:
    with Session(engine) as s:
        for seq, envelope in sorted(sub.by_seq.items()):
            if seq not in done:
                project(s.connection(), envelope)
                done.add(seq)
        s.commit()


async def test_a_hand_voided_by_ruling_moves_the_chips_back_at_the_table(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    table = make_table(tmp_path, short_dir, f"{host}:{port}")
    wired = wire_table(table.config)
    daemon = wired.daemon
    engine = make_engine(f"sqlite:///{tmp_path / 'desk.sqlite'}")
    upgrade(engine)
    clock = FakeClock(HEAT_TIME)
    tid = table.config.table
    with Session(engine, expire_on_commit=False) as s:
        entry = buy(s, clock, register(s, clock, "8001015009087"))
        opened = desk.open_heat(s, settings(), clock, actor="desk-1", table=tid,
                                stage="qualifying")
        seating = desk.seat_entry(s, settings(), clock, actor="desk-1", entry_id=entry,
                                  table=tid, seat=1)
    projected: set[int] = set()
    try:
        async with Subscriber(host, port, table) as sub, running(daemon) as stop:
            send = desk_sender(table, host, port, daemon=daemon)
            vt = wired.virtual_table(desk=send, seed=5, players=1)
            await vt.send_desk(opened.command, **opened.args)
            await vt.send_desk(seating.command.command, **seating.command.args)
            await vt.until("the entry seated", lambda st: "1" in st.get("seats", {}))
            starting = daemon.status()["seats"]["1"]["balance"]
            players = {1: VirtualPlayer(name="player 1", rng=random.Random(1))}
            await vt.play_hand(players)
            await vt.play_hand(players)
            seat_before = daemon.status()["seats"]["1"]
            await sub.wait_for("two settled hands", lambda: sum(
                1 for m in sub.by_seq.values() if m.type == "hand.settled") == 2)
            settled = [m.body for m in sub.by_seq.values() if m.type == "hand.settled"]
            first = settled[0]
            won = first["nets"]["1"]
            # The dealer disputes the first hand at the console.
            await vt.console("dispute_hand", hand_id=first["hand_id"], seat=1,
                             reason="the odds were paid on a hand that did not open")
            await sub.wait_for("the dispute", lambda: any(
                m.type == "hand.disputed" for m in sub.by_seq.values()))
            _project_new(engine, sub, projected)
            with Session(engine, expire_on_commit=False) as s:
                [raised] = disputes.dispute_records(s, status="open")
                assert (raised.raised_by_role, raised.raised_by) == (
                    "dealer", vt.staff.dealer.staff_id)
                ruled = disputes.rule_dispute(s, settings(), clock, actor="S3-Mokoena",
                                              dispute_id=raised.dispute_id,
                                              ruling="hand_voided",
                                              why="the dealer's hand did not open")
            command = ruled.command
            assert command is not None and command.table == tid
            await send(command.command, **command.args)
            await sub.wait_for("the correcting record", lambda: any(
                m.type == "hand.corrected" for m in sub.by_seq.values()))
            seat_after = daemon.status()["seats"]["1"]
            assert seat_after["balance"] == seat_before["balance"] - won
            assert seat_after["hands_played"] == seat_before["hands_played"] - 1
            while daemon.status()["seats"]:
                await vt.play_hand(players)
            assert daemon.journal is not None
            await sub.wait_all(daemon.journal.last_seq)
            _project_new(engine, sub, projected)
            assert await stop() == 0
    finally:
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)
    bodies: list[tuple[str, dict[str, Any]]] = [
        (m.type, dict(m.body)) for _, m in sorted(sub.by_seq.items())]
    [corrected] = [b for t, b in bodies if t == "hand.corrected"]
    assert (corrected["hand_id"], corrected["recorded_net"], corrected["counted_net"],
            corrected["dispute_id"]) == (first["hand_id"], won, 0, raised.dispute_id)
    hands = [b for t, b in bodies if t == "hand.settled"]
    [score] = [b for t, b in bodies if t == "score.recorded"]
    counted = sum(h["nets"]["1"] for h in hands if h["hand_id"] != first["hand_id"])
    assert score["score"] == starting + counted  # the voided hand counts nothing
    assert score["hands"] == len(hands) - 1
    with Session(engine) as s:
        stored = s.get(Hand, first["hand_id"])
        assert stored is not None and stored.body["nets"]["1"] == won  # never edited
        rows = s.scalars(sa.select(HandCorrection)).all()
        assert [(r.hand_id, r.dispute_id, r.balance_before - r.balance_after) for r in rows
                ] == [(first["hand_id"], raised.dispute_id, won)]
        closed = disputes.close_dispute(s, clock, actor="S3-Mokoena",
                                        dispute_id=raised.dispute_id,
                                        outcome="told at the table: the hand is void")
    assert closed.status == "closed"
