"""Every bad configuration ends as ONE line naming the file and the key, with exit 2 (a service
that does not answer: 69), never a traceback or "internal error" (docs/exit-codes.md).

Table-driven: each case starts from a valid config directory of its command, breaks one thing
and runs the real command line in a subprocess (as an operator would), asserting the exit
code, one line on stderr, the file and the key named in it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_UNAVAILABLE, EXIT_USAGE
from wire.signing import Signer, save_private_key

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """One broken configuration: how to break it, the command, what the line must name."""

    name: str
    command: str  # "serve", "table", "check", "desk", "desk-down", "table-status",
    # "heat", "demo", "standings"
    breaks: Callable[[Path], None]
    names: tuple[str, ...]  # what the one line must contain (the file, the key)
    code: int = EXIT_USAGE
    as_nobody: bool = False  # permissions mean nothing to root: drop its DAC override


def _lb(tmp: Path) -> None:
    save_private_key(Signer.generate("leaderboard"), tmp / "lb.key")
    table = Signer.generate("t01")
    (tmp / "tables.pub").write_text(table.public_key.enrolment_line() + "\n")
    (tmp / "leaderboard.toml").write_text(
        '[service]\nvenue = "casino-1"\n'
        f'database = "sqlite:///{tmp / "lb.sqlite3"}"\n'
        '[mqtt]\nbroker = "127.0.0.1:1"\n'
        '[keys]\nsigning_key = "lb.key"\ntables_file = "tables.pub"\n'
        '[http]\nport = 0\ndesk_api = true\n'
        '[log]\nlevel = "info"\n')
    save_private_key(Signer.generate("t01"), tmp / "t01.key")
    (tmp / "table.toml").write_text(
        '[table]\nvenue = "goldreef"\nid = "t01"\njournal = "journal.sqlite"\n'
        '[keys]\ntable_key = "t01.key"\n[keys.desk]\n'
        '[shoe]\nkind = "sim"\n[rfid]\nkind = "sim"\n'
        '[mqtt]\nbroker = "embedded"\n[api]\nsocket = "console.sock"\n'
        '[console]\nbind = "127.0.0.1"\nport = 0\n'
        '[sim]\nseed = 1\nheats = 0\n[log]\nlevel = "info"\n')
    shutil.copy(ROOT / "config" / "tournament.toml", tmp / "tournament.toml")


def _edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        text = (tmp / name).read_text()
        assert old in text, (name, old)
        (tmp / name).write_text(text.replace(old, new, 1))
    return breaks


def _write(name: str, content: bytes) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        path = tmp / name
        path.unlink()
        path.write_bytes(content)
        path.chmod(0o600)
    return breaks


def _new(name: str, text: str) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        (tmp / name).write_text(text)
    return breaks


def _remove(name: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).unlink()


def _directory(name: str) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        (tmp / name).unlink()
        (tmp / name).mkdir()
    return breaks


def _loop(name: str) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        (tmp / name).unlink()
        (tmp / f"{name}.2").symlink_to(tmp / name)
        (tmp / name).symlink_to(tmp / f"{name}.2")
    return breaks


def _unreadable(name: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / name).chmod(0)


def _database(url: str) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        lines = (tmp / LB).read_text().splitlines(keepends=True)
        (tmp / LB).write_text("".join(f'database = "{url}"\n' if line.startswith("database")
                                      else line for line in lines))
    return breaks


_HELD: list[socket.socket] = []  # ports a case takes, closed after its test


def _port_taken(name: str, old: str, new: str) -> Callable[[Path], None]:
    """Take a free port on 127.0.0.1 (listening, as another service would) and edit it into
    the file: ``new`` holds ``{port}``."""
    def breaks(tmp: Path) -> None:
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen()
        _HELD.append(held)
        _edit(name, old, new.format(port=held.getsockname()[1]))(tmp)
    return breaks


def _other_tables_key(tmp: Path) -> None:
    (tmp / "t01.key").unlink()
    save_private_key(Signer.generate("t02"), tmp / "t01.key")


def _also(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def breaks(tmp: Path) -> None:
        for step in steps:
            step(tmp)
    return breaks


LB, TB = "leaderboard.toml", "table.toml"
CASES = [
    # the leaderboard service's config and what it names
    Case("config missing", "serve", _remove(LB), (LB, "cannot read")),
    Case("config a directory", "serve", _directory(LB), (LB, "directory")),
    Case("config unreadable", "serve", _unreadable(LB), (LB, "ermission"), as_nobody=True),
    Case("config a symlink loop", "serve", _loop(LB), (LB, "symbolic links")),
    Case("config bad TOML", "serve", _edit(LB, "[service]", "[service"), (LB, "TOML")),
    Case("config unknown key", "serve", _edit(LB, "[http]\n", "[http]\nprot = 1\n"),
         (LB, "http.prot")),
    Case("config wrong type", "serve", _edit(LB, "port = 0", 'port = "eighty"'),
         (LB, "http.port")),
    Case("signing key missing", "serve", _remove("lb.key"), (LB, "keys.signing_key", "lb.key")),
    Case("signing key not a key file", "serve", _write("lb.key", b"hello"),
         (LB, "keys.signing_key", "lb.key")),
    Case("signing key wrong size", "serve", _write(
        "lb.key", b'{"format": "showdown-ed25519-private-key", "version": 1, "name":'
        b' "leaderboard", "seed": "AAAA"}'), (LB, "keys.signing_key", "32 bytes")),
    Case("signing key open to others", "serve", lambda t: (t / "lb.key").chmod(0o644),
         (LB, "keys.signing_key", "chmod 600")),
    Case("signing key a symlink loop", "serve", _loop("lb.key"),
         (LB, "keys.signing_key", "symbolic links")),
    Case("signing key a directory", "serve", _directory("lb.key"),
         (LB, "keys.signing_key", "lb.key")),
    Case("tables file missing", "serve", _remove("tables.pub"),
         (LB, "keys.tables_file", "tables.pub")),
    Case("tables file bad key", "serve", _write("tables.pub", b"t01 not-base64!\n"),
         (LB, "keys.tables_file", "tables.pub")),
    Case("shared desk token left in", "serve",
         _edit(LB, "desk_api = true", 'desk_token_file = "desk-token"'),
         (LB, "http.desk_token_file", "signs in with their own staff account")),
    Case("unknown log level", "serve", _edit(LB, 'level = "info"', 'level = "chatty"'),
         (LB, "log.level")),
    Case("database URL invalid", "serve", _edit(LB, "sqlite:///", "nosuchdb+x://"),
         (LB, "service.database")),
    Case("database URL not a URL", "serve", _edit(LB, "sqlite:///", "sqlite:/"),
         (LB, "service.database")),
    Case("database unreachable", "serve", _database(
        "postgresql+psycopg://nobody@127.0.0.1:1/x?connect_timeout=2"),
         (LB, "service.database", "did not answer"), code=EXIT_UNAVAILABLE),
    Case("broker address bad", "serve", _edit(LB, "127.0.0.1:1", "127.0.0.1:99999"),
         (LB, "mqtt.broker")),
    Case("tournament file missing", "serve", _edit(
        LB, "[service]\n", '[service]\ntournament = "nope.toml"\n'), ("nope.toml",)),
    Case("tournament unknown key", "serve", _also(
        _edit(LB, "[service]\n", '[service]\ntournament = "tournament.toml"\n'),
        _edit("tournament.toml", "[venue]\n", "[venue]\ncolour = 1\n")),
         ("tournament.toml", "venue.colour")),
    # the table daemon's config
    Case("table config missing", "table", _remove(TB), (TB, "cannot read")),
    Case("table unknown log level", "table", _edit(TB, 'level = "info"', 'level = "loud"'),
         (TB, "log.level")),
    Case("table key not a key file", "table", _write("t01.key", b"{}"),
         (TB, "keys.table_key", "t01.key")),
    Case("table key a symlink loop", "table", _loop("t01.key"),
         (TB, "keys.table_key", "symbolic links")),
    Case("table broker address bad", "table", _edit(TB, 'broker = "embedded"',
                                                    'broker = "localhost"'), (TB, "mqtt.broker")),
    Case("table broker and brokers both", "table", _edit(
        TB, 'broker = "embedded"', 'broker = "a:1"\nbrokers = ["b:1"]'), (TB, "mqtt.brokers")),
    Case("table cluster address bad", "table", _edit(
        TB, 'broker = "embedded"', 'brokers = ["a:1", "b"]'), (TB, "mqtt.brokers[1]")),
    Case("table credentials file missing", "table", _edit(
        TB, 'broker = "embedded"', 'credentials_file = "mqtt-t01.toml"'),
         (TB, "mqtt.credentials_file", "mqtt-t01.toml")),
    Case("central cluster address repeated", "serve", _edit(
        LB, 'broker = "127.0.0.1:1"', 'brokers = ["127.0.0.1:1", "127.0.0.1:1"]'),
         (LB, "mqtt.brokers[1]", "listed twice")),
    Case("chip registry missing", "table", _edit(
        TB, '[keys]', '[files]\nchips = "chips.csv"\n[keys]'), (TB, "files.chips", "chips.csv")),
    Case("chip registry bad", "table", _also(
        _edit(TB, '[keys]', '[files]\nchips = "chips.csv"\n[keys]'),
        _new("chips.csv", "uid,value\nzz,abc\n")), (TB, "files.chips", "chips.csv")),
    Case("table wrong type", "table", _edit(TB, "seed = 1", 'seed = "one"'), (TB, "sim.seed")),
    # check-config and the desk
    Case("check-config tournament a directory", "check",
         _directory("tournament.toml"), ("tournament.toml",)),
    Case("desk API unreachable", "desk-down",
         _new("desk.toml", '[desk]\napi_url = "http://127.0.0.1:1/"\n'),
         ("desk.toml", "desk.api_url", "http://127.0.0.1:1/"), code=EXIT_UNAVAILABLE),
    Case("desk config unknown key", "desk-config",
         _new("desk.toml", '[desk]\napi_url = "https://lb.casino.lan/"\nvenu = "x"\n'),
         ("desk.toml", "desk.venu")),
    Case("desk config names a database", "desk-config",
         _new("desk.toml", '[desk]\napi_url = "https://lb.casino.lan/"\n'
              'database = "sqlite:///x.sqlite3"\n'),
         ("desk.toml", "desk.database", "goes through the central service")),
    Case("desk config holds a signing key", "desk-config",
         _new("desk.toml", '[desk]\napi_url = "https://lb.casino.lan/"\n'
              'signing_key = "desk.key"\n'),
         ("desk.toml", "desk.signing_key", "goes through the central service")),
    Case("desk API in clear text off the loopback", "desk-config",
         _new("desk.toml", '[desk]\napi_url = "http://lb.casino.lan:8080/"\n'),
         ("desk.toml", "desk.api_url", "clear text")),
    Case("table daemon not running", "table-status", lambda _: None,
         (TB, "api.socket", "no table daemon answers"), code=EXIT_UNAVAILABLE),
    Case("heat tournament missing", "heat", _remove("tournament.toml"),
         ("tournament.toml", "cannot read")),
    Case("demo database URL invalid", "demo", lambda _: None,
         ("service.database", "nosuchdb")),
    # issue 34: what still ended as "internal error" or named no file or key
    Case("desk key not base64", "table", _edit(TB, "[keys.desk]\n",
                                               '[keys.desk]\ndesk = "not base64!"\n'),
         (TB, "keys.desk.desk", "not base64")),
    Case("console port in use", "table", _port_taken(TB, "port = 0", "port = {port}"),
         (TB, "console.port", "127.0.0.1:", "already in use")),
    Case("bench port in use", "table", _port_taken(
        TB, "[log]", "[bench]\nenabled = true\nport = {port}\n[log]"),
         (TB, "bench.port", "127.0.0.1:", "already in use")),
    Case("embedded broker port in use", "table", _port_taken(
        TB, 'broker = "embedded"', 'broker = "embedded"\nembedded_port = {port}'),
         (TB, "mqtt.embedded_port", "127.0.0.1:", "in use")),
    Case("central page port in use", "serve", _port_taken(
        LB, "port = 0", 'port = {port}\nhost = "127.0.0.1"'),
         (LB, "http.port", "127.0.0.1:", "already in use")),
    Case("api socket folder cannot be made", "table", _edit(
        TB, 'socket = "console.sock"', 'socket = "t01.key/console.sock"'),
         (TB, "api.socket", "t01.key")),
    Case("table key of another table", "table", _other_tables_key,
         (TB, "keys.table_key", "t01.key", "'t02'", "'t01'")),
    Case("database not a database file", "serve", _new("lb.sqlite3", "a text file\n"),
         (LB, "service.database", "not an SQLite database")),
    Case("standings database not a database file", "standings",
         _new("lb.sqlite3", "a text file\n"), ("--db", "lb.sqlite3", "not an SQLite database")),
    Case("broker credentials file bad", "serve", _also(
        _edit(LB, "[mqtt]\n", '[mqtt]\ncredentials_file = "mqtt.toml"\n'),
        _new("mqtt.toml", '[mqtt]\nport = "x"\n')),
         (LB, "mqtt.credentials_file", "mqtt.toml")),
]


@pytest.fixture
def config_dir(tmp_path: Path) -> Iterator[Path]:
    """A valid configuration of each command."""
    _lb(tmp_path)
    yield tmp_path
    while _HELD:
        _HELD.pop().close()


def _argv(case: Case, tmp: Path) -> list[str]:
    if case.command == "serve":
        return ["leaderboard", "serve", "--config", str(tmp / LB)]
    if case.command == "table":
        return ["table", "run", "--config", str(tmp / TB)]
    if case.command == "check":
        return ["check-config", "--tournament", str(tmp / "tournament.toml")]
    if case.command == "heat":
        return ["heat", "--tournament", str(tmp / "tournament.toml")]
    if case.command == "demo":
        return ["demo", "--tables", "1", "--heats", "1", "--qualifying-only", "--db",
                "nosuchdb+x://a"]
    if case.command == "standings":
        return ["leaderboard", "standings", "--db", f"sqlite:///{tmp / 'lb.sqlite3'}"]
    if case.command == "table-status":
        return ["table", "status", "--config", str(tmp / TB)]
    if case.command == "desk-config":
        return ["desk", "audit", "--config", str(tmp / "desk.toml")]
    if case.command == "desk-down":
        (tmp / "pass").write_text("a desk passphrase")
        return ["desk", "login", "--staff-id", "M1", "--passphrase-file", str(tmp / "pass"),
                "--config", str(tmp / "desk.toml")]
    raise AssertionError(case.command)


def _tiered(cases: list[Case]) -> list[Any]:
    """The first case of each command in `make test`, every other in `make test-soak`: each
    case is a process start of the real command line (about a second of CPU), and the fast
    lane keeps one of each command's (docs/testing.md)."""
    seen: set[str] = set()
    params = []
    for case in cases:
        marks = [pytest.mark.soak] if case.command in seen else []
        seen.add(case.command)
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


@pytest.mark.parametrize("case", _tiered(CASES))
def test_a_bad_configuration_is_one_line_naming_the_file_and_key(case: Case,
                                                                 config_dir: Path) -> None:
    case.breaks(config_dir)
    prefix: list[str] = []
    if case.as_nobody and os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root reads any file; setpriv is needed to drop that")
        no_override = "-dac_override,-dac_read_search"
        prefix = ["setpriv", f"--bounding-set={no_override}", f"--inh-caps={no_override}",
                  "--"]
    env = {k: v for k, v in os.environ.items() if k != "SHOWDOWN_DEBUG"}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([*prefix, sys.executable, "-m", "cli",
                          *_argv(case, config_dir)], capture_output=True, text=True,
                         timeout=60, check=False, cwd=ROOT, env=env)
    err = run.stderr
    if case.command == "check":  # check-config lists every problem, then counts them
        err = err.removesuffix("1 problem found\n")
    assert run.returncode == case.code, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "internal error" not in err and "Traceback" not in err, err
    for needle in case.names:
        assert needle in err, (needle, err)


def test_the_number_of_cases() -> None:
    """The note of issue 13 reports this count (41; 4 broker-list cases since issue 16; 9
    since issue 34); each case is a different kind of mistake."""
    assert len(CASES) == len({c.name for c in CASES}) == 54
