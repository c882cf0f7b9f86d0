"""The bench's API on a running table daemon: each action changes the simulated device and the
daemon sees it (a card dealt reaches the hand, chips placed become the wager the status shows,
a stack placed from the tray is issued to the entry and then wagered from, a tap reaches the
console's gate, an unplugged shoe is the table's device fault); bad input is refused with a
specific reason and changes nothing; another client gets 403."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.console.app import create_console_app
from controller.sim_bench.app import create_bench_app
from controller.sim_bench.bench import Bench, BenchDevices
from controller.sim_bench.server import DaemonBenchView
from tests.controller.console.support import DEALER, asgi_call
from tests.controller.sim_bench.support import bench_table, spots


async def test_chips_placed_become_the_wager_and_a_dealt_card_reaches_the_hand(
        tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        [entry] = await table.open_heat((1,), stacks=False)
        dealer = await table.sign_in(DEALER)

        # The starting stack from the tray, issued by the table as it reads it (no button,
        # D346), handed to the player.
        status, answer = await bench.post("/api/chips/place", {"seat": 1, "spot": "ante",
                                                               "cents": 200_000,
                                                               "from": "tray"})
        assert (status, answer["ok"]) == (200, True), answer
        await table.until("the stack to be read", lambda s: spots(s, 1) == {"ante": 200_000})
        await table.until("the stack to be issued",
                          lambda s: entry in ((s.get("chips") or {}).get("held") or {}))
        status, answer = await bench.post("/api/chips/take", {"seat": 1, "spot": "ante"})
        assert status == 200 and "took R2,000.00" in answer["done"]
        await table.until("the stack to be picked up", lambda s: spots(s, 1) == {})
        _, state = await bench.get("/api/state")
        assert state["devices"]["rfid"]["seats"]["1"] == {"entry_id": entry, "stack": 200_000}

        # Wagers from the seat's stack (R500 chips: the first is changed on the spot, from
        # the tray, as a table requiring issued chips sees it; the Odds comes from the
        # change); then R1,000 of its own chips. The status shows the wagers, the bench what
        # lies where and what the stack holds.
        status, answer = await bench.post("/api/chips/place",
                                          {"seat": 1, "spot": "ante", "cents": 2_500})
        assert status == 200, answer
        assert "with change made on the spot (R500.00 changed from the tray)" in answer["done"]
        status, answer = await bench.post("/api/chips/place",
                                          {"seat": 1, "spot": "odds", "cents": 2_500})
        assert status == 200 and "change" not in answer["done"], answer
        status, answer = await bench.post("/api/chips/place",
                                          {"seat": 1, "spot": "trips_plus", "cents": 100_000})
        assert (status, answer["done"]) == (200, "placed R1,000.00 (2 chips) from seat 1's"
                                                 " stack on seat 1 trips_plus"), answer
        await table.until("the wagers", lambda s: spots(s, 1) == {
            "ante": 2_500, "odds": 2_500, "trips_plus": 100_000})
        _, state = await bench.get("/api/state")
        rfid = state["devices"]["rfid"]
        assert rfid["lying"] == {"1/ante": 2_500, "1/odds": 2_500, "1/trips_plus": 100_000}
        assert rfid["seats"]["1"]["stack"] == 95_000  # R2,000 less the three wagers
        status, answer = await bench.post("/api/chips/place",
                                          {"seat": 1, "spot": "play", "cents": 150_000})
        assert status == 409 and "seat 1's stack holds R950.00" in answer["error"]
        status, _ = await bench.post("/api/chips/take", {"seat": 1, "spot": "trips_plus"})
        await table.until("trips taken", lambda s: spots(s, 1) == {"ante": 2_500, "odds": 2_500})

        # A chosen card, then the next card: both reach the daemon's hand.
        await table.act(dealer, "no_more_bets")
        status, answer = await bench.post("/api/shoe/deal", {"card": "Ah"})
        assert (status, answer["card"]) == (200, "Ah")
        status, answer = await bench.post("/api/shoe/deal", {})
        assert status == 200 and answer["card"] != "Ah"
        await table.until("two cards read",
                          lambda s: (s.get("hand") or {}).get("cards_read") == 2)
        assert table.daemon.service is not None and table.daemon.service.core.hand is not None
        read = [str(c) for _, c in table.daemon.service.core.hand.cards()]
        assert read == ["Ah", answer["card"]]

        # A card already dealt in this hand is refused, and the shoe deals nothing.
        status, answer = await bench.post("/api/shoe/deal", {"card": "ah"})
        assert status == 409 and "Ah was dealt already in this hand" in answer["error"]
        _, state = await bench.get("/api/state")
        assert state["devices"]["shoe"]["dealt"] == read
        assert table.status()["hand"]["cards_read"] == 2


async def test_bad_input_is_refused_with_the_reason_and_changes_nothing(
        tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        await table.open_heat((1,), stacks=False)
        cases = [
            ("/api/shoe/deal", {"card": "Xz"}, 400, "card: invalid card 'Xz'"),
            ("/api/shoe/deal", {"card": 7}, 400, "card: a card such as"),
            ("/api/chips/place", {"seat": 9, "spot": "ante", "cents": 2_500}, 400,
             "seat 9 ante: no such spot"),
            ("/api/chips/place", {"seat": 1, "spot": "side", "cents": 2_500}, 400,
             "spot: one of ante"),
            ("/api/chips/place", {"seat": 1, "spot": "ante", "cents": -5}, 400,
             "cents: a whole number of cents above 0"),
            ("/api/chips/place", {"seat": 1, "spot": "ante", "cents": 2_500}, 409,
             "seat 1's stack holds R0.00: it cannot wager R25.00"),
            ("/api/chips/place", {"seat": 2, "spot": "ante", "cents": 2_500}, 409,
             "seat 2 has no entry seated"),
            ("/api/chips/place", {"seat": 1, "spot": "ante", "cents": 2_501, "from": "tray"},
             409, "the tray cannot make R25.01"),
            ("/api/chips/place", {"seat": 1, "spot": "ante", "cents": 100, "from": "pocket"},
             400, "from: \"stack\""),
            ("/api/chips/take", {"seat": 1, "spot": "ante"}, 409, "no chips lie on seat 1 ante"),
            ("/api/ids/tap", {"number": ""}, 400, "number: the card's number"),
            ("/api/ids/tap", {"number": "6012", "form": "barcode"}, 400, "form: one of"),
            ("/api/shoe/fault", {"name": "smoke", "value": 1}, 400,
             "fault 'smoke' does not exist; the faults are"),
            ("/api/shoe/fault", {"name": "delay"}, 400, "fault delay needs a value"),
            ("/api/shoe/fault", {"name": "silent", "value": 1}, 400,
             "fault silent: the value is true or false"),
            ("/api/rfid/fault", {"name": "corrupt", "value": 2}, 400,
             "the chip reader: fault corrupt is a probability within 0..1"),
            ("/api/printer/unplug", {}, 404, "no bench action 'printer/unplug'"),
        ]
        for path, body, code, words in cases:
            status, answer = await bench.post(path, body)
            assert (status, answer["ok"]) == (code, False), (path, body, answer)
            assert words in answer["error"], (path, body, answer)
        # Nothing changed: no card read, no chip on the felt, no fault switched on.
        _, state = await bench.get("/api/state")
        assert state["devices"]["shoe"]["dealt"] == []
        assert state["devices"]["rfid"]["lying"] == {}
        assert all(not state["devices"][d]["faults"] for d in ("shoe", "rfid", "id_reader"))
        assert table.status()["spots"] == {"1": {}}
        assert table.daemon.faults == []


async def test_take_an_amount_then_the_rest(tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        await table.open_heat((1,), stacks=False)
        status, _ = await bench.post("/api/chips/place", {"seat": 1, "spot": "ante",
                                                          "cents": 3_750, "from": "tray"})
        assert status == 200
        await table.until("R37.50", lambda s: spots(s, 1) == {"ante": 3_750})
        status, answer = await bench.post("/api/chips/take", {"seat": 1, "spot": "ante",
                                                              "cents": 500})
        assert status == 409 and "(worth R37.50) cannot make R5.00" in answer["error"]
        status, answer = await bench.post("/api/chips/take", {"seat": 1, "spot": "ante",
                                                              "cents": 1_250})
        assert status == 200 and answer["done"].startswith("took R12.50"), answer
        await table.until("R25 left", lambda s: spots(s, 1) == {"ante": 2_500})


async def test_unplug_plug_faults_and_a_tap_reach_the_daemon(tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        await table.open_heat((1,), stacks=False)
        status, answer = await bench.post("/api/shoe/unplug")
        assert (status, answer["done"]) == (200, "the shoe unplugged")
        await table.until("the shoe's fault", lambda s: any(
            "disconnected" in str(v) for v in (s.get("device_faults") or {}).values()))
        _, state = await bench.get("/api/state")
        assert state["devices"]["shoe"]["plugged"] is False
        status, _ = await bench.post("/api/shoe/plug")
        assert status == 200
        await table.until("the shoe back", lambda s: not any(
            "disconnected" in str(v) for v in (s.get("device_faults") or {}).values()))

        # The dealer signs in on the console with the employee card tapped on the bench.
        app = create_console_app(table.daemon, table.daemon.config.console).app
        body = json.dumps({"method": "card", "wait": 5}).encode()
        request = asyncio.ensure_future(asgi_call(app, "POST", "/api/sign-in", body=body,
                                                  headers={"content-type": "application/json"}))
        gate = table.daemon.gate
        assert gate is not None
        await table.until("the console to wait for a tap", lambda _: gate.waiting_for is not None)
        status, answer = await bench.post("/api/ids/tap", {"number": DEALER["card"]})
        assert status == 200 and answer["done"] == "tapped card …0042 (track2)"
        signed_in = await request
        assert signed_in.json()["detail"]["staff_id"] == DEALER["staff_id"]

        status, answer = await bench.post("/api/rfid/fault", {"name": "silent", "value": True})
        assert status == 200
        status, answer = await bench.post("/api/id_reader/fault", {"name": "garbage"})
        assert (status, answer["done"]) == (200, "the ID reader: garbage on the next message")
        _, state = await bench.get("/api/state")
        assert state["devices"]["rfid"]["faults"] == [{"name": "silent", "value": True}]
        status, _ = await bench.post("/api/rfid/fault", {"name": "silent", "value": False})
        _, state = await bench.get("/api/state")
        assert state["devices"]["rfid"]["faults"] == []


async def test_another_client_gets_403_and_a_device_not_simulated_409(tmp_path: Path) -> None:
    async with bench_table(tmp_path, id_reader=False) as bench:
        status, answer = await bench.post("/api/ids/tap", {"number": "6012345678900001"})
        assert status == 409 and "the ID reader of this table is not simulated" in answer["error"]
        _, state = await bench.get("/api/state")
        assert state["devices"]["id_reader"] == {"simulated": False}
        daemon = bench.table.daemon

        app = create_bench_app(Bench(DaemonBenchView(daemon), BenchDevices()),
                               daemon.config.bench).app
        refused = await asgi_call(app, "GET", "/api/state", client=("10.0.0.9", 5000))
        assert refused.status == 403
        assert "the bench does not serve 10.0.0.9" in refused.json()["error"]
        allowed = await asgi_call(app, "GET", "/", client=("127.0.0.1", 5000))
        assert allowed.status == 200 and b"Technician's bench" in allowed.body


async def test_a_jammed_shoe_a_power_cut_and_an_unknown_chip(tmp_path: Path) -> None:
    async with bench_table(tmp_path) as bench:
        table = bench.table
        await table.open_heat((1,), stacks=False)
        status, answer = await bench.post("/api/shoe/state", {"state": "jam"})
        assert (status, answer["done"]) == (200, "the shoe reports jam")
        status, answer = await bench.post("/api/shoe/deal", {"card": "Ks"})
        assert status == 409 and answer["error"].startswith("the shoe refused:"), answer
        status, answer = await bench.post("/api/shoe/state", {"state": "melted"})
        assert status == 400 and answer["error"] == "state: one of jam, cover_open, empty, ready"
        status, _ = await bench.post("/api/shoe/state", {"state": "ready"})
        assert status == 200
        status, answer = await bench.post("/api/shoe/deal", {"card": "Ks"})
        assert status == 200, answer
        status, answer = await bench.post("/api/shoe/power")
        assert (status, answer["done"]) == (200, "the shoe lost power and came back")

        journal = table.daemon.journal
        assert journal is not None

        def alerted(kind: str) -> bool:
            return any(m.type == "alert" and m.body.get("kind") == kind
                       for m in journal.messages(1))

        assert not alerted("unknown_chip")
        status, answer = await bench.post("/api/chips/unknown", {"seat": 1, "spot": "ante"})
        assert (status, answer["done"]) == (
            200, "laid 1 chip the registry does not know on seat 1 ante"), answer
        await table.until("the unknown chip's alert", lambda _: alerted("unknown_chip"))
        await table.until("the power cut, as the table sees it",
                          lambda _: alerted("device_session_changed"))
        status, answer = await bench.post("/api/chips/unknown", {"seat": 1, "spot": "ante",
                                                                 "count": 0})
        assert status == 400 and answer["error"] == "count: 1 to 20 chips"
