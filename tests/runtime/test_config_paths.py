"""runtime.config_paths: a path or a SQLite URL in a config file is relative to the file's
folder, whatever the working directory; an absolute one stays; ``~`` is the home directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config_paths import config_database_url, config_path


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config's folder; the test runs from another working directory."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "etc"


def test_a_relative_path_is_relative_to_the_config_folder(elsewhere: Path) -> None:
    assert config_path("journal.sqlite", elsewhere) == elsewhere / "journal.sqlite"
    assert config_path("../var/t01/table.key", elsewhere) == elsewhere / ".." / "var/t01/table.key"
    assert config_path("/var/lib/showdown/journal.sqlite", elsewhere) == \
        Path("/var/lib/showdown/journal.sqlite")
    assert config_path("~/keys/t01.key", elsewhere) == elsewhere.parent / "home/keys/t01.key"


def test_a_relative_base_is_made_absolute_once_not_left_to_the_working_directory(
        elsewhere: Path) -> None:
    got = config_path("journal.sqlite", Path("conf"))
    assert got.is_absolute() and got == elsewhere.parent / "cwd" / "conf" / "journal.sqlite"


@pytest.mark.parametrize(("url", "expected"), [
    ("sqlite:///leaderboard.sqlite3", "sqlite:///{base}/leaderboard.sqlite3"),
    ("sqlite:///../var/lb.sqlite?timeout=5", "sqlite:///{base}/../var/lb.sqlite?timeout=5"),
    ("sqlite+pysqlite:///db/lb.sqlite", "sqlite+pysqlite:///{base}/db/lb.sqlite"),
    ("sqlite:///~/lb.sqlite", "sqlite:///{home}/lb.sqlite"),
    ("sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3",
     "sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3"),
    ("sqlite://", "sqlite://"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
    ("sqlite:///file:lb?mode=ro&uri=true", "sqlite:///file:lb?mode=ro&uri=true"),
    ("postgresql+psycopg://showdown@db.casino.lan/showdown",
     "postgresql+psycopg://showdown@db.casino.lan/showdown"),
])
def test_a_relative_sqlite_file_in_a_url_is_relative_to_the_config_folder(
        elsewhere: Path, url: str, expected: str) -> None:
    assert config_database_url(url, elsewhere) == expected.format(
        base=elsewhere, home=elsewhere.parent / "home")
