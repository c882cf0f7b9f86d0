"""`showdown simulate table --config FILE`: its paths (run.dir, table.tournament,
table.paytables) are relative to the file, never to the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor.rehearsal_config import read_sim_table
from runtime.settings_files import default_paytables_path, default_tournament_path


def test_the_rehearsals_paths_are_relative_to_its_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("etc", "cwd", "home"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHOWDOWN_TOURNAMENT", raising=False)
    monkeypatch.delenv("SHOWDOWN_PAYTABLES", raising=False)
    path = tmp_path / "etc" / "rehearsal.toml"
    path.write_text('[run]\ndir = "../var/simtable"\n\n[table]\n'
                    'tournament = "tournament.toml"\npaytables = "~/paytables.toml"\n')
    config = read_sim_table(Path("../etc/rehearsal.toml"))
    assert config.directory == tmp_path / "etc" / "../var/simtable"
    assert config.tournament == tmp_path / "etc" / "tournament.toml"
    assert config.paytables == tmp_path / "home" / "paytables.toml"
    path.write_text('[run]\ndir = "/srv/simtable"\n')  # absolute stays; defaults: shipped
    config = read_sim_table(path)
    assert config.directory == Path("/srv/simtable")
    assert (config.tournament, config.paytables) == (default_tournament_path(),
                                                     default_paytables_path())
