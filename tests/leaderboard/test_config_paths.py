"""Every path of the leaderboard's and the desk's config files is relative to the file, never to
the working directory: key files, TLS files, the credentials file (its own files relative to
it), the tournament settings and the database: a relative SQLite URL, and the leaderboard's
default `sqlite:///leaderboard.sqlite3` beside its config (D334). Each test reads the file from
another working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import tomli_w

from leaderboard.config import read_leaderboard_config
from leaderboard.desk.config import read_desk_config
from wire.signing import Signer

T01 = Signer.from_seed("t01", bytes(range(32))).public_key


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config's folder; the working directory is another one, HOME a third."""
    for name in ("etc", "cwd", "home"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "etc"


def leaderboard(etc: Path, **sections: dict[str, object]) -> Path:
    data: dict[str, object] = {
        "service": {"venue": "casino-1"}, "mqtt": {"broker": "127.0.0.1:1883"},
        "keys": {"signing_key": "keys/lb.key", "tables": {"t01": T01.base64}}}
    data.update(sections)
    path = etc / "leaderboard.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def test_the_default_database_is_beside_the_leaderboard_config(etc: Path) -> None:
    config = read_leaderboard_config(leaderboard(etc))
    assert config.database == f"sqlite:///{etc}/leaderboard.sqlite3"
    assert config.signing_key == etc / "keys/lb.key"


@pytest.mark.parametrize(("written", "expected"), [
    ("sqlite:///state/lb.sqlite3", "sqlite:///{etc}/state/lb.sqlite3"),
    ("sqlite:///~/lb.sqlite3", "sqlite:///{home}/lb.sqlite3"),
    ("sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3",
     "sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3"),
    ("postgresql+psycopg://showdown@/showdown", "postgresql+psycopg://showdown@/showdown"),
])
def test_a_relative_sqlite_url_is_relative_to_the_leaderboard_config(
        etc: Path, written: str, expected: str) -> None:
    config = read_leaderboard_config(leaderboard(etc, service={
        "venue": "casino-1", "database": written}))
    assert config.database == expected.format(etc=etc, home=etc.parent / "home")


def test_every_file_key_of_the_leaderboard_is_relative_to_its_config(etc: Path) -> None:
    (etc / "tables.pub").write_text(f"t01 {T01.base64}\n")
    (etc / "mqtt.pw").write_text("s3cret\n")
    (etc / "creds").mkdir()
    (etc / "creds/lb.toml").write_text(
        '[mqtt]\nhost = "mqtt1"\nport = 8883\nusername = "leaderboard"\ntls = true\n'
        'ca_file = "venue-ca.pem"\ncert_file = "../tls/lb.pem"\nkey_file = "../tls/lb.key"\n')
    tls = etc / "tls"
    tls.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=lb",
                    "-keyout", str(tls / "https.key"), "-out", str(tls / "https.pem")],
                   check=True, capture_output=True)
    config = read_leaderboard_config(leaderboard(
        etc, service={"venue": "casino-1", "tournament": "settings/tournament.toml"},
        mqtt={"credentials_file": "creds/lb.toml", "password_file": "mqtt.pw"},
        keys={"signing_key": "~/lb.key", "tables_file": "tables.pub"},
        http={"tls_cert_file": "tls/https.pem", "tls_key_file": "tls/https.key"}))
    assert config.tournament == etc / "settings/tournament.toml"
    assert config.signing_key == etc.parent / "home/lb.key"
    assert config.tables == {"t01": T01.base64}
    assert config.mqtt.password == "s3cret"  # noqa: S105
    assert (config.mqtt.ca_file, config.mqtt.cert_file, config.mqtt.key_file) == (
        etc / "creds/venue-ca.pem", etc / "creds/../tls/lb.pem", etc / "creds/../tls/lb.key")
    assert (config.http.tls_cert_file, config.http.tls_key_file) == (
        etc / "tls/https.pem", etc / "tls/https.key")


def desk(etc: Path, **sections: dict[str, object]) -> Path:
    data: dict[str, object] = {"desk": {"api_url": "https://lb.casino.lan:8443/"}}
    data.update(sections)
    path = etc / "desk.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def test_every_file_key_of_the_desk_is_relative_to_desk_toml(etc: Path) -> None:
    # A workstation names no database, key or broker files any more (issue 33): the venue CA
    # and the tournament settings are its only files.
    (etc / "settings").mkdir()
    (etc / "settings/tournament.toml").write_text("")
    (etc / "api-ca.pem").write_text("")
    config = read_desk_config(desk(
        etc, desk={"tournament": "settings/tournament.toml",
                   "api_url": "https://lb.casino.lan:8443/", "api_ca_file": "api-ca.pem"}))
    assert config.tournament == etc / "settings/tournament.toml"
    assert config.api_ca_file == etc / "api-ca.pem"
