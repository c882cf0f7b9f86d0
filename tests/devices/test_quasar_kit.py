"""The Metratec QuasarMX through the conformance kit: several readers a table (one on a
pty, one on TCP), the suite on its simulator, and a recording of simulated readers (as if
they were real) replayed through the driver: a polled, request/response protocol whose every
answer the replay gives after its request."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from drivers.readings import SPOTS, SpotId
from simulators.quasar_table import QuasarTable, ReaderPlan

CHIP_CHECKS = ["connect", "full sweep", "chip moved", "stack of 20", "garbage", "stall",
               "unplug and reconnect", "sweep time", "chip to report"]


def _table_toml(path: Path, readers: list[tuple[str, list[str]]]) -> Path:
    """A [rfid] section of QuasarMX readers: (``url = ...`` or ``host = ...``, spots)."""
    lines = ['[rfid]', 'driver = "metratec-quasarmx"', 'stall_seconds = 0.5', '']
    for where, spots in readers:
        lines += ['[[rfid.readers]]', where, '[rfid.readers.antennas]']
        lines += [f'"{i // 4 + 1}.{i % 4 + 1}" = "{spot}"' for i, spot in enumerate(spots)]
        lines.append('')
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _spots(count: int) -> list[str]:
    return [f"{seat}/{spot}" for seat in range(1, 7) for spot in SPOTS][:count]


def _check(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, dict[str, Any]]:
    code = main(["devices", "check", "--driver", "metratec-quasarmx", *words, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_two_readers_pass_every_check(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    spots = _spots(8)
    config = _table_toml(tmp_path / "table.toml", [
        ('url = "/dev/showdown/quasarmx-1"', spots[:4]), ('host = "10.0.7.23"', spots[4:])])
    code, report = _check(capsys, "--config", str(config), "--sim-speed", "4",
                          "--timeout", "3")
    rows = {r["check"]: (r["status"], r["detail"]) for r in report["rows"]}
    assert list(rows) == CHIP_CHECKS
    assert {c: s for c, (s, _) in rows.items()} == dict.fromkeys(CHIP_CHECKS, "PASS"), rows
    assert "running 4x the device's speed" in report["against"]
    assert code == 0


@pytest.mark.soak
@pytest.mark.parametrize("spots", [16, 42])
def test_a_full_table_passes_at_the_devices_own_speed(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, spots: int) -> None:
    names = _spots(42)
    config = _table_toml(tmp_path / "table.toml", [
        ('url = "/dev/showdown/quasarmx-1"', names[:14]),
        ('url = "/dev/showdown/quasarmx-2"', names[14:28]), ('host = "10.0.7.23"', names[28:])])
    code, report = _check(capsys, "--config", str(config), "--spots", str(spots))
    rows = {r["check"]: (r["status"], r["detail"]) for r in report["rows"]}
    assert {c: s for c, (s, _) in rows.items()} == dict.fromkeys(CHIP_CHECKS, "PASS"), rows
    assert f"a sweep of {spots} spots holding" in rows["sweep time"][1]
    assert rows["sweep time"][1].endswith("(stacks of 1..20)")
    assert code == 0


@pytest.mark.soak
def test_simulated_readers_recorded_as_real_ones_replay_through_the_driver(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spots = [SpotId(1, s) for s in SPOTS[:4]] + [SpotId(2, s) for s in SPOTS[:4]]
    plans = [ReaderPlan(ports={i + 1: s for i, s in enumerate(spots[:4])}),
             ReaderPlan(ports={i + 1: s for i, s in enumerate(spots[4:])}, transport="tcp")]
    with QuasarTable(plans, speed=4.0) as table:
        pty, tcp = table.links()
        config = _table_toml(tmp_path / "table.toml", [
            (f'url = "{pty.url}"', [f"{s.seat}/{s.spot}" for s in spots[:4]]),
            (f'host = "127.0.0.1"\nport = {tcp.port}', [f"{s.seat}/{s.spot}" for s in spots[4:]])])
        out = tmp_path / "quasar.capture.jsonl"
        uids = [bytes([0xE0, 0x04, 0, 0, 0, 0, 0, n]) for n in range(1, 6)]

        def lay() -> None:
            time.sleep(0.5)
            table.place(1, "ante", uids=uids[:3])
            time.sleep(0.5)
            table.place(2, "odds", uids=uids[3:])
            time.sleep(0.5)
            table.remove(1, "ante")

        player = threading.Thread(target=lay)
        player.start()
        code = main(["devices", "record", "--driver", "metratec-quasarmx", "--config",
                     str(config), "--out", str(out), "--seconds", "2"])
        player.join()
    assert code == 0
    head = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert [d["where"] for d in head["devices"]] == [["readers", 0, "url"],
                                                     ["readers", 1, "host"]]
    capsys.readouterr()
    assert main(["devices", "check", "--driver", "metratec-quasarmx", "--capture", str(out),
                 "--json"]) == 0
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["host requests"]["detail"] == "the driver wrote exactly as recorded"
    assert "from 2 devices" in rows["replay"]["detail"]
    assert "inventory" in rows["readings"]["detail"]
