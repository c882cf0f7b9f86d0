"""A simulated table killed mid-hand and started again raises no alert about the hand it
voids, and deals no deck it dealt before (issue 34 point 5; D405, D406).

`showdown table run` on a simulated table (shoe and chip reader through the real drivers,
the virtual desk and dealer, its own embedded broker) is SIGKILLed a few times while a hand
is in progress with its wagers locked, and started again each time with the same config
(the same ``[sim] seed``, as under systemd). Each restart voids the interrupted hand. Then a
last start plays the open heat out and stops with SIGTERM. What its journal published must
hold: every voided hand voided once, with the restart's reason; no `wager_changed` (nor any
other wager or chip alert) at all; no `deck_suspect` (each start deals new decks, never an
earlier start's again); and each start's simulated shoe seeded anew, as its log says.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from controller.journal import Journal
from tests.integration.crash_support import CrashTable, DaemonProcess, daemon_status

pytestmark = [pytest.mark.slow, pytest.mark.soak]

KILLS = 4
RESTART_REASON = "hand interrupted by a restart of the table PC"
GUARD_S = 60.0  # against a hang only


async def _until(table: CrashTable, daemon: DaemonProcess, check: Any) -> dict[str, Any]:
    deadline = time.monotonic() + GUARD_S
    while daemon.alive and time.monotonic() < deadline:
        status = await daemon_status(table.socket)
        if status is not None and check(status):
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"the table never got there:\n{daemon.output()[-3000:]}")


def _embedded(table: CrashTable, *, heats: int) -> None:
    """The crash table's config on its own embedded broker (no broker outside)."""
    table.write_config(heats=heats, seed=7)
    text = table.config.read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    doc["mqtt"] = {"broker": "embedded"}
    table.config.write_text(tomli_w.dumps(doc), encoding="utf-8")


async def test_a_restart_mid_hand_raises_no_alert_and_repeats_no_deck(tmp_path: Path) -> None:
    table = CrashTable(root=tmp_path / "table", host="127.0.0.1", port=1)
    log = tmp_path / "daemon.log"
    rng = random.Random(34)
    _embedded(table, heats=1_000)
    killed: list[str] = []
    for _ in range(KILLS):
        daemon = DaemonProcess(table.config, log)
        try:
            cards = rng.randint(1, 8)  # a card read: the hand's wagers are locked
            status = await _until(table, daemon, lambda s, c=cards: (
                (s.get("hand") or {}).get("cards_read", -1) >= c
                and s["hand"]["hand_id"] not in killed))
        finally:
            daemon.kill()
        killed.append(status["hand"]["hand_id"])
    _embedded(table, heats=0)  # the last start plays the open heat out
    final = DaemonProcess(table.config, log)
    try:
        await _until(table, final, lambda s: s.get("heat") is None and s.get("hand") is None
                     and s.get("hands_opened", 0) > len(killed))
    finally:
        assert final.terminate() == 0, final.output()[-3000:]

    with Journal.open(table.journal, read_only=True) as journal:
        messages = journal.messages(1)
    alerts = Counter(str(m.body.get("kind")) for m in messages if m.type == "alert")
    voided = Counter(str(m.body["hand_id"]) for m in messages if m.type == "hand.voided")
    reasons = {m.body["void"]["reason"] for m in messages if m.type == "hand.voided"}
    settled = [m.body["hand_id"] for m in messages if m.type == "hand.settled"]
    seeds = [json.loads(line)["shoe_seed"] for line in log.read_text().splitlines()
             if '"sim_shoe_seeded"' in line]
    print(f"\nkilled mid-hand {killed}; voided {dict(voided)}; settled {len(settled)};"
          f" alerts {dict(alerts)}; shoe seeds {seeds}")

    assert set(voided) == set(killed), (voided, killed)  # each interrupted hand voided
    assert set(voided.values()) == {1}, voided  # once
    assert reasons == {RESTART_REASON}, reasons
    assert not set(voided) & set(settled)
    assert alerts["wager_changed"] == 0, alerts
    assert not alerts.keys() & {"late_wager", "wager_invalid", "chip_clone", "chip_pooling"}
    assert alerts["deck_suspect"] == 0, alerts
    assert len(seeds) == KILLS + 1 and len(set(seeds)) == len(seeds), seeds
    assert seeds[0] == 7  # a new journal: the configured seed itself
