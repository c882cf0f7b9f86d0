"""The configs `showdown install` writes name their neighbours by relative paths (the desk's
venue-ca.pem): installed under a root and read from another working directory, each is found
beside the config, as on the finished machine (D334)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.plan import DeskRequest, plan_desk
from deploy.sources import read_templates
from deploy.steps import File
from leaderboard.desk.config import read_desk_config


def test_the_installed_desk_config_finds_its_files_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    steps = plan_desk(DeskRequest(venue="casino-1", api_url="https://10.20.0.5:8443/",
                                  ca_pem="PEM", ca_source="venue-ca.pem", terminal="desk-1"),
                      read_templates())
    for step in steps:
        if isinstance(step, File):
            target = root / step.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.content)
    etc = root / "etc/showdown"
    config = read_desk_config(etc / "desk.toml")
    assert config.api_ca_file == etc / "venue-ca.pem"
    assert (config.api_url, config.terminal) == ("https://10.20.0.5:8443/", "desk-1")
    assert list(cwd.iterdir()) == []
