"""The tournament chip inventory (COMAR 36.05.02.06), before and after: from the stored
reconciliations (`showdown chips inventory --db`, SQLite and PostgreSQL) and from a table's
journal (`--journal`), valued by the chip registry; missing chips named by UID."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from cli.main import main
from controller.clock import ClockReading
from controller.journal import Journal
from game.chips.inventory import build_inventory, reports_of
from game.chips.registry import Chip, ChipRegistry, parse_uid
from game.messages.chips import ChipsReconciled
from leaderboard.projections import project
from tests.fixtures.services import Database
from tests.leaderboard.test_projections_chips import ALL_BACK, BACK
from tests.leaderboard.test_projections_console import sealed
from wire.outbox import Outgoing

A, B, C = "E05D010101000001", "E05D010101000002", "E05D010003000001"
FLOAT = "E05D010001000009"


def registry_file(tmp_path: Path) -> Path:
    path = tmp_path / "chips.csv"
    path.write_text("uid_hex,value_cents,chip_set\n"
                    f"{A},2500,showdown-2026\n{B},2500,showdown-2026\n"
                    f"{C},50000,showdown-2026\n{FLOAT},10000,showdown-2026\n", encoding="utf-8")
    return path


def rows_of(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_inventory_counts_by_denomination_and_names_the_missing_chips() -> None:
    registry = ChipRegistry([Chip(uid=parse_uid(u), value_cents=v, chip_set="showdown-2026")
                             for u, v in ((A, 2500), (B, 2500), (C, 50_000), (FLOAT, 10_000))])
    one = ChipsReconciled.decode(BACK)
    found = build_inventory(reports_of([("t01", 5, one)]), registry=registry, source="test")
    by = {r.denomination_cents: (r.registered, r.issued, r.held, r.returned, r.missing)
          for r in found.rows}
    assert by == {2500: (2, 2, 2, 1, 1), 10_000: (1, 0, 0, 0, 0), 50_000: (1, 0, 1, 1, 0)}
    assert found.totals()["missing_cents"] == 2500
    assert found.missing == [{"uid": B, "chip_set": "showdown-2026", "entry_id": "E1",
                              "table": "t01", "heat_id": "heat-1", "seat": 2,
                              "value_cents": 2500}]
    counts_only = build_inventory(reports_of([("t01", 5, one)]), registry=None, source="test")
    assert [r.csv() for r in counts_only.rows] == [
        ("showdown-2026", "?", "?", "?", "?", "2", "5000", "3", "55000", "2", "52500", "1",
         "2500")]  # without a registry the values are the reports' own


def test_the_central_inventory_reads_the_stored_reconciliations(
    engine: sa.Engine, database_url: Database, tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    with engine.begin() as connection:
        for seq, body in ((1, BACK), (2, ALL_BACK)):
            project(connection, sealed("chips.reconciled", body, seq))
    registry = registry_file(tmp_path)
    assert main(["chips", "inventory", "--db", database_url.url, "--registry",
                 str(registry)]) == 0
    rows = {r["denomination_cents"]: r for r in rows_of(capsys.readouterr().out)}
    assert (rows["2500"]["registered"], rows["2500"]["issued"], rows["2500"]["returned"],
            rows["2500"]["missing"], rows["2500"]["missing_cents"]) == ("2", "4", "3", "1",
                                                                         "2500")
    out = tmp_path / "inventory.json"
    assert main(["chips", "inventory", "--db", database_url.url, "--format", "json",
                 "--out", str(out)]) == 0
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert [m["uid"] for m in data["missing"]] == [B]
    assert [e["entry_id"] for e in data["entries"]] == ["E1", "E2"]
    assert "1 chips missing" in capsys.readouterr().out


def test_the_tables_inventory_reads_its_journal(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t01.journal"
    message = ChipsReconciled.decode(ALL_BACK)
    with Journal.open(path) as journal:
        journal.append(kind="dealer", payload={"action": "return_chips", "seat": 2},
                       clock=ClockReading(wall=datetime(2026, 7, 3, 14, tzinfo=UTC), mono_ns=1,
                                          boot_id="b"),
                       outgoing=lambda _r: [Outgoing(message=message)])
    assert main(["chips", "inventory", "--journal", str(path), "--registry",
                 str(registry_file(tmp_path)), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["missing"] == 0 and data["totals"]["returned_cents"] == 55_000
    assert data["totals"]["registered_cents"] == 65_000


def test_a_database_that_does_not_exist_is_refused_and_never_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'nothing.sqlite'}"
    assert main(["chips", "inventory", "--db", url]) == 2
    assert "no such database file (nothing created)" in capsys.readouterr().err
    assert not (tmp_path / "nothing.sqlite").exists()

