"""The configs `showdown install` writes name their neighbours by relative paths (desk.key,
venue-ca.pem, mqtt-desk.toml): installed under a root and read from another working directory,
each is found beside the config, as on the finished machine (D334)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.plan import DeskRequest, plan_desk
from deploy.sources import read_templates
from deploy.steps import File
from leaderboard.desk.config import read_desk_config

CREDENTIALS = ('[mqtt]\nhost = "broker.casino.lan"\nport = 8883\nusername = "desk"\n'
               'password = "pw"\ntls = true\nca_file = "venue-ca.pem"\n')


def test_the_installed_desk_config_finds_its_files_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    steps = plan_desk(DeskRequest(venue="casino-1", database="sqlite:////srv/lb.sqlite3",
                                  brokers=("broker.casino.lan:8883",),
                                  api_url="https://10.20.0.5:8443/", ca_pem="PEM",
                                  ca_source="venue-ca.pem", credentials=CREDENTIALS),
                      read_templates())
    for step in steps:
        if isinstance(step, File):
            target = root / step.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.content)
    etc = root / "etc/showdown"
    config = read_desk_config(etc / "desk.toml")
    assert config.signing_key == etc / "desk.key"
    assert config.api_ca_file == etc / "venue-ca.pem"
    assert config.ca_file == etc / "venue-ca.pem"
    assert (config.host, config.username, config.password) == ("broker.casino.lan", "desk", "pw")
    assert config.database == "sqlite:////srv/lb.sqlite3"
    assert list(cwd.iterdir()) == []
