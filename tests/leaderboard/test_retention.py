"""Retention of the promotion's records (issue 33 point 6, D381): the [retention] settings,
`showdown doctor --central` warning below the Consumer Protection Act's 3 years (regulation
11) or when backups go before the records, and the backup's pruning never removing a backup
younger than the retention."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.doctor.central import check_central
from cli.doctor.table import OK, WARN, Probes
from cli.main import main
from game.errors import ConfigError
from leaderboard.backup import backup_sqlite
from leaderboard.config import read_leaderboard_config
from leaderboard.db import make_engine, upgrade
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import write_config
from wire.signing import Signer

PROBES = Probes(clock_synced=lambda: True, fail_below_bytes=0, warn_below_bytes=0)


@pytest.fixture
def config(tmp_path: Path, mqtt_broker: MqttBroker) -> Path:
    path = write_config(tmp_path, mqtt_broker, f"t{secrets.token_hex(3)}/v1",
                        Signer.generate("t01"))
    engine = make_engine(read_leaderboard_config(path).database)
    upgrade(engine)
    engine.dispose()
    return path


def _with(path: Path, text: str) -> Path:
    path.write_text(path.read_text() + "\n" + text + "\n")
    return path


def test_the_settings_default_to_three_years_and_bad_values_name_their_key(
        config: Path) -> None:
    kept = read_leaderboard_config(config).retention
    assert (kept.records_years, kept.backups_years, kept.commitment_minutes) == (3, 3, 30)
    original = config.read_text()
    for text, key in (("[retention]\nrecords_years = 0", "retention.records_years"),
                      ('[retention]\nbackups_years = "3"', "retention.backups_years"),
                      ("[retention]\nrecords_year = 3", "retention.records_year"),
                      ("[draw]\ncommitment_minutes = 0", "draw.commitment_minutes")):
        config.write_text(original + "\n" + text + "\n")
        with pytest.raises(ConfigError) as caught:
            read_leaderboard_config(config)
        assert caught.value.key == key, text
    config.write_text(original)


async def _retention(path: Path) -> tuple[str, str]:
    found = {f.check: f for f in await asyncio.to_thread(check_central, path, PROBES)}
    return found["retention"].status, found["retention"].found


async def test_doctor_warns_below_three_years_or_when_backups_go_first(config: Path) -> None:
    original = config.read_text()
    assert await _retention(config) == (OK, "records kept 3 years, backups 3 years")
    status, said = await _retention(_with(config, "[retention]\nrecords_years = 2"))
    assert status == WARN and "regulation 11" in said and "records kept 2 years" in said
    config.write_text(original)
    status, said = await _retention(
        _with(config, "[retention]\nrecords_years = 5\nbackups_years = 4"))
    assert status == WARN and "backups would be pruned before the records" in said
    config.write_text(original)
    assert (await _retention(_with(config, "[retention]\nrecords_years = 5\n"
                                           "backups_years = 5")))[0] == OK


def _database(tmp_path: Path) -> Path:
    path = tmp_path / "lb.sqlite3"
    engine = sa.create_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


def test_pruning_keeps_every_backup_younger_than_the_retention(tmp_path: Path) -> None:
    db = _database(tmp_path)
    out = tmp_path / "backups"
    out.mkdir()
    now = datetime(2026, 7, 10, 4, 0, tzinfo=UTC)
    ages = (1200, 1000, 400, 10, 1)  # days before `now`
    for days in ages:
        backup_sqlite(db, out, now=now - timedelta(days=days))
    made = backup_sqlite(db, out, keep=2, now=now, retain_days=3 * 366)
    # Newest 2 kept by count; of the rest, only those older than 3 years (1098 days) go.
    gone = sorted(p.name for p in made.removed)
    assert gone == [f"leaderboard-{now - timedelta(days=1200):%Y%m%dT%H%M%SZ}.sqlite3"]
    assert len(list(out.iterdir())) == len(ages) + 1 - 1
    # Without a retention the count alone decides (as before).
    again = backup_sqlite(db, out, keep=2, now=now + timedelta(hours=1))
    assert len(again.removed) == len(ages) + 1 - 1 + 1 - 2


def test_the_backup_command_honours_the_retention(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    db = _database(tmp_path)
    out = tmp_path / "backups"
    out.mkdir()
    old = datetime.now(UTC) - timedelta(days=500)
    backup_sqlite(db, out, now=old)
    backup_sqlite(db, out, now=old + timedelta(days=1))
    url = f"sqlite:///{db}"
    assert main(["leaderboard", "backup", "--db", url, "--out", str(out),
                 "--keep-last", "1"]) == 0
    assert len(list(out.iterdir())) == 3  # 500 days < 3 years: nothing pruned
    assert "removed" not in capsys.readouterr().out
    max(out.iterdir()).unlink()  # the backup just made: the next one gets the same name
    assert main(["leaderboard", "backup", "--db", url, "--out", str(out),
                 "--keep-last", "1", "--retain-years", "1"]) == 0
    assert capsys.readouterr().out.count("removed older backup") == 2
    assert main(["leaderboard", "backup", "--db", url, "--out", str(out),
                 "--keep-last", "1", "--retain-years", "0"]) == 2
    assert "--retain-years must be 1..100" in capsys.readouterr().err
