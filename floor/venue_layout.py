"""The files of a rehearsal venue (`showdown venue rehearse`, docs/operations/rehearsal.md): one
directory holding what a venue's machines hold, for a whole venue on one machine.

    DIR/venue.json                what was laid out: ports, tables, database (the command's own)
    DIR/tournament.toml           the shipped settings with a calendar that starts today
    DIR/leaderboard.toml          the central service (`showdown leaderboard serve --config`)
    DIR/desk.toml                 the desk (`showdown desk ... --config` / SHOWDOWN_DESK_CONFIG)
    DIR/tNN/table.toml            each table (`showdown table run --config`), simulated devices,
                                  the bench and the console on ports of their own
    DIR/keys/                     the Ed25519 keys: tNN.key, desk.key, leaderboard.key (0600)
                                  and tables.pub (the tables enrolled at the centre)
    DIR/broker/, DIR/tls/         the broker's files (written by the command line with
                                  deploy.broker_config and deploy.certs, not here)

Everything a second run finds is kept (keys, the database, the journals, the broker's
passwords); the configs are written again (ports may change). Nothing here starts a process.
"""

from __future__ import annotations

import json
import os
import socket
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

from runtime.settings_files import default_tournament_path
from wire.signing import Signer, load_private_key, save_private_key

__all__ = ["BrokerFiles", "VenueLayout", "VenuePorts", "choose_ports", "lay_out",
           "rehearsal_tournament", "table_ids"]

VENUE: Final = "rehearsal"
_SOCKET_ROOM: Final = 100  # a Unix socket path has ~107 bytes
_STATE: Final = "venue.json"


def table_ids(count: int) -> tuple[str, ...]:
    """The tables' ids: t01, t02, ..."""
    return tuple(f"t{n:02d}" for n in range(1, count + 1))


@dataclass(frozen=True, slots=True)
class VenuePorts:
    """The venue's ports on 127.0.0.1: the broker, the central page and desk API, and each
    table's console and bench (in table order)."""

    broker: int
    http: int
    consoles: tuple[int, ...]
    benches: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BrokerFiles:
    """What the broker's set-up (the command line's) made: its config for `mosquitto -c`
    (None for the embedded broker), whether it speaks TLS, the venue CA, and each client's
    credentials file (username, password) by client name."""

    config: Path | None
    tls: bool
    ca_file: Path | None
    credentials: Mapping[str, Path]


@dataclass(frozen=True, slots=True)
class VenueLayout:
    """Where everything of a laid-out venue is."""

    directory: Path
    venue: str
    tables: tuple[str, ...]
    ports: VenuePorts
    database: str
    broker: BrokerFiles
    tournament: Path
    leaderboard_config: Path
    desk_config: Path
    table_configs: Mapping[str, Path] = field(default_factory=dict)

    def table_sockets(self) -> dict[str, Path]:
        """Each table's local API socket (the console's technicians' API)."""
        return {t: self.directory / t / "console.sock" for t in self.tables}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _state(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / _STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def choose_ports(directory: Path, tables: int, *, broker: int | None = None,
                 http: int | None = None, console_base: int | None = None,
                 bench_base: int | None = None) -> VenuePorts:
    """The venue's ports: those given (a base gives table N base+N-1), else the ones of the
    last run in `directory` while they are free, else free ones."""
    last = _state(directory).get("ports", {})
    taken: set[int] = set()

    def pick(given: int | None, previous: object) -> int:
        if given is not None:
            port = given
        elif isinstance(previous, int) and previous not in taken and _is_free(previous):
            port = previous
        else:
            port = _free_port()
            while port in taken:
                port = _free_port()
        taken.add(port)
        return port

    def listed(name: str, n: int) -> object:
        values = last.get(name)
        return values[n] if isinstance(values, list) and n < len(values) else None

    b = pick(broker, last.get("broker"))
    h = pick(http, last.get("http"))
    consoles = tuple(pick(None if console_base is None else console_base + n,
                          listed("consoles", n)) for n in range(tables))
    benches = tuple(pick(None if bench_base is None else bench_base + n,
                         listed("benches", n)) for n in range(tables))
    return VenuePorts(broker=b, http=h, consoles=consoles, benches=benches)


def _key(path: Path, name: str) -> Signer:
    """The key at `path`, made (mode 0600) on the first run."""
    if path.exists():
        return load_private_key(path)
    signer = Signer.generate(name)
    save_private_key(signer, path)
    path.with_name(path.name + ".pub").write_text(
        signer.public_key.enrolment_line() + "\n", encoding="ascii")
    return signer


def _q(value: str) -> str:
    """A TOML basic string."""
    return json.dumps(value)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _q(value)
    if isinstance(value, (date, time)):  # datetime is a date: written as TOML reads it
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _toml(document: Mapping[str, Mapping[str, Any]]) -> str:
    lines: list[str] = []
    for name, table in document.items():
        lines += ["", f"[{name}]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def rehearsal_tournament(today: date | None = None, *, days: int = 2,
                         shipped: Path | None = None) -> tuple[str, ZoneInfo]:
    """The shipped tournament settings with a calendar for a rehearsal: qualifying heats
    every day from `today` for `days` days, each open 00:00:00 to 23:59:59 in the venue's
    time zone (decision D320; None: today there), the semi-final and Final the day after.
    The text and the zone."""
    source = default_tournament_path() if shipped is None else shipped
    data: dict[str, dict[str, Any]] = tomllib.loads(source.read_text(encoding="utf-8"))
    zone = ZoneInfo(str(data["venue"]["timezone"]))
    today = datetime.now(zone).date() if today is None else today
    last = today + timedelta(days=days - 1)
    after = last + timedelta(days=1)
    data["qualifying"].update(first_day=today, last_day=last, ends=last,
                              heat_opens=time(0, 0, 0), heat_closes=time(23, 59, 59),
                              last_buy_in=time(23, 59, 59))
    data["semi_final"]["starts"] = datetime.combine(after, time(16, 0))
    data["final"]["starts"] = datetime.combine(after, time(17, 0))
    data["weekly_prizes"]["weeks"] = 1
    header = (f"# A rehearsal's tournament: {source}'s settings with heats every day from"
              f" {today} to {last},\n# 00:00:00-23:59:59 venue time; written by `showdown"
              " venue rehearse` (docs/operations/rehearsal.md).\n\n")
    return header + _toml(data), zone


def _table_toml(layout_dir: Path, venue: str, table: str, n: int, ports: VenuePorts, *,
                broker: BrokerFiles, desk_keys: Mapping[str, str]) -> str:
    tdir = layout_dir / table
    mqtt = _mqtt_section(ports, broker, table)
    document: dict[str, dict[str, Any]] = {
        "table": {"venue": venue, "id": table, "journal": str(tdir / "journal.sqlite")},
        "files": {"tournament": str(layout_dir / "tournament.toml")},
        "keys": {"table_key": str(layout_dir / "keys" / f"{table}.key")},
        "keys.desk": dict(desk_keys),
        "shoe": {"kind": "sim"},
        "rfid": {"kind": "sim"},
        "id_reader": {"kind": "sim"},
        "console": {"bind": "127.0.0.1", "port": ports.consoles[n],
                    "acknowledge_with": ["card"]},
        "bench": {"enabled": True, "bind": "127.0.0.1", "port": ports.benches[n],
                  "allowed_clients": ["127.0.0.1", "::1"]},
        "journal": {"checkpoints": True, "checkpoint_every": 500, "rotate": "never"},
        "mqtt": mqtt,
        "api": {"socket": str(tdir / "console.sock")},
        "log": {"format": "console", "level": "info"},
    }
    header = (f"# Table {table} of the rehearsal venue: simulated shoe, chip reader and ID"
              " reader driven from\n# the bench; no virtual desk or dealer. Written by"
              " `showdown venue rehearse` (docs/table-config.md).\n\n")
    return header + _toml(document)


def _mqtt_section(ports: VenuePorts, broker: BrokerFiles, user: str) -> dict[str, Any]:
    """The ``[mqtt]`` section of a venue service's config: the broker, its own credentials
    and, on Mosquitto, TLS with the venue CA."""
    mqtt: dict[str, Any] = {"broker": f"127.0.0.1:{ports.broker}",
                            "credentials_file": str(broker.credentials[user])}
    if broker.tls and broker.ca_file is not None:
        mqtt |= {"tls": True, "ca_file": str(broker.ca_file)}
    return mqtt


def _leaderboard_toml(layout_dir: Path, venue: str, ports: VenuePorts, database: str,
                      broker: BrokerFiles) -> str:
    mqtt = _mqtt_section(ports, broker, "leaderboard")
    keys = layout_dir / "keys"
    document: dict[str, dict[str, Any]] = {
        "service": {"venue": venue, "database": database,
                    "tournament": str(layout_dir / "tournament.toml")},
        "mqtt": mqtt,
        "keys": {"signing_key": str(keys / "leaderboard.key"),
                 "tables_file": str(keys / "tables.pub")},
        "http": {"host": "127.0.0.1", "port": ports.http, "desk_api": True,
                 "desk_answer_wait_s": 3},
        "page": {"rows": 20, "names": "first_name_initial", "stale_after_s": 300},
        "log": {"format": "console", "level": "info"},
    }
    header = ("# The rehearsal venue's central service: page, desk API, ingest. Written by"
              " `showdown venue rehearse` (docs/leaderboard.md).\n\n")
    return header + _toml(document)


def _desk_toml(layout_dir: Path, venue: str, ports: VenuePorts, database: str,  # noqa: ARG001
               broker: BrokerFiles) -> str:  # noqa: ARG001
    # The desk is a client of the central service's desk API (issue 33): no database, no
    # signing key, no broker account; the service signs and sends the tables' commands.
    document: dict[str, dict[str, Any]] = {
        "desk": {"api_url": f"http://127.0.0.1:{ports.http}/", "terminal": "rehearsal-desk",
                 "tournament": str(layout_dir / "tournament.toml")},
    }
    header = ("# The rehearsal venue's registration desk: `showdown desk --config THIS ...`."
              " People sign in\n# with their own accounts (DIR/staff/). Written by"
              " `showdown venue rehearse` (docs/desk-config.md).\n\n")
    return header + _toml(document)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, mode)
    tmp.replace(path)


def lay_out(directory: Path, *, tables: Sequence[str], ports: VenuePorts, database: str | None,
            broker: BrokerFiles, today: date | None = None) -> VenueLayout:
    """Write (or write again) the venue's configs into `directory`, making the keys it does
    not have yet. `database` None: SQLite in the directory (or the last run's database)."""
    directory = directory.resolve()
    last = _state(directory)
    db = database or last.get("database") or f"sqlite:///{directory / 'leaderboard.sqlite3'}"
    keys = directory / "keys"
    keys.mkdir(mode=0o700, exist_ok=True)
    desk = _key(keys / "desk.key", "desk")
    leaderboard = _key(keys / "leaderboard.key", "leaderboard")
    desk_keys = {s.key_id: s.public_key.base64 for s in (desk, leaderboard)}
    enrolled = [_key(keys / f"{t}.key", t).public_key.enrolment_line() for t in tables]
    _write(keys / "tables.pub", "\n".join(enrolled) + "\n")

    text, _zone = rehearsal_tournament(today)
    tournament = directory / "tournament.toml"
    _write(tournament, text)
    configs: dict[str, Path] = {}
    for n, table in enumerate(tables):
        tdir = directory / table
        tdir.mkdir(mode=0o700, exist_ok=True)
        sock = tdir / "console.sock"
        if len(str(sock)) > _SOCKET_ROOM:
            raise ValueError(f"{directory} is too long a path for the tables' sockets"
                             f" ({sock}): choose a shorter --dir")
        configs[table] = tdir / "table.toml"
        _write(configs[table], _table_toml(directory, VENUE, table, n, ports, broker=broker,
                                                 desk_keys=desk_keys))
    leaderboard_config = directory / "leaderboard.toml"
    _write(leaderboard_config, _leaderboard_toml(directory, VENUE, ports, db, broker))
    desk_config = directory / "desk.toml"
    _write(desk_config, _desk_toml(directory, VENUE, ports, db, broker))
    _write(directory / _STATE, json.dumps({
        "venue": VENUE, "tables": list(tables), "database": db,
        "ports": {"broker": ports.broker, "http": ports.http, "consoles": list(ports.consoles),
                  "benches": list(ports.benches)}}, indent=2) + "\n")
    return VenueLayout(directory=directory, venue=VENUE, tables=tuple(tables), ports=ports,
                       database=db, broker=broker, tournament=tournament,
                       leaderboard_config=leaderboard_config, desk_config=desk_config,
                       table_configs=configs)
