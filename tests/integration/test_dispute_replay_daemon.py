"""`dispute replay` on a journal a running table daemon wrote: the virtual desk and dealer
play a heat on the simulated shoe and chip reader through the real drivers (staff roster and
sign-ins, the chip float's starting stacks, payouts checked by the readers); the heat's bundle,
exported with the table's config, replays to every line, also through the devices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from controller.journal import Journal
from controller.wiring import wire_table
from tests.integration.daemon_support import free_port, make_table, running


@pytest.mark.soak  # a long walk: make test-soak (D387)
@pytest.mark.slow
async def test_a_daemons_heat_replays_line_by_line(tmp_path: Path, short_dir: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    table = make_table(tmp_path, short_dir, f"127.0.0.1:{free_port()}")
    wired = wire_table(table.config)
    async with running(wired.daemon) as stop:
        vt = wired.virtual_table(seed=9, players=2, heats=1)
        await vt.run()
        assert await stop() == 0
    journal = table.config.journal
    with Journal.open(journal, read_only=True) as j:
        hands = [m.body for m in j.messages(1) if m.type == "hand.settled"]
        kinds = {r.kind for r in j.records()}
    assert len(hands) >= 10 and {"staff", "chips", "card", "dealer", "desk"} <= kinds
    heat = str(hands[0]["heat_id"])
    keys = tmp_path / "tables.keys"
    keys.write_text(table.signer.public_key.enrolment_line() + "\n", encoding="utf-8")
    out = tmp_path / "heat.json"
    capsys.readouterr()
    assert main(["dispute", "export", "--heat", heat, "--journal", str(journal), "--key",
                 str(table.config.table_key), "--venue", table.config.venue, "--by", "S1",
                 "--out", str(out), "--config", str(table.path)]) == 0
    capsys.readouterr()
    code = main(["dispute", "replay", str(out), "--keys", str(keys), "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    assert got["differences"] == [] and code == 0
    assert len(got["hand_ids"]) == len(hands)
    payouts = [g for g in got["lines"] if g["subject"] == "payout.checked"
               and g["item"] == "outcome"]
    assert payouts and {g["recorded"] for g in payouts} <= {"verified", "overridden"}
    # one hand, replayed from the drivers' readings
    one = tmp_path / "hand.json"
    assert main(["dispute", "export", "--hand", str(hands[3]["hand_id"]), "--journal",
                 str(journal), "--key", str(table.config.table_key), "--venue",
                 table.config.venue, "--by", "S1", "--out", str(one),
                 "--config", str(table.path)]) == 0
    capsys.readouterr()
    code = main(["dispute", "replay", str(one), "--keys", str(keys), "--devices",
                 "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    assert [d["match"] for d in got["devices"]] == [True, True]
    assert got["differences"] == [] and code == 0
