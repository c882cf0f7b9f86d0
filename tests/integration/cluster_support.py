"""The processes of the broker cluster test: the real central service (`showdown leaderboard
serve`, SQLite) and a real simulated table daemon (`showdown table run`), each given the
cluster's MQTT addresses in its own order, with their JSON logs read back."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from simulators.table_toml import desk_key_file, simulated_table_toml
from tests.integration.daemon_support import PAYTABLES, REPO, TOURNAMENT
from wire.signing import Signer, save_private_key

__all__ = ["Service", "ServiceLog", "central_config", "table_config", "tournament_now",
           "wait_until"]

GUARD_S = 180.0  # against hangs only


_SHIPPED_FIRST_DAY = date(2026, 7, 3)  # config/tournament.toml [qualifying] first_day (a Friday)
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def tournament_now(directory: Path) -> Path:
    """The shipped tournament settings with every date moved by whole weeks so that today is
    a qualifying day (the standings count only scores of the tournament's weeks)."""
    today = datetime.now(UTC).date()
    shift = timedelta(days=(today - _SHIPPED_FIRST_DAY).days // 7 * 7)

    def moved(match: re.Match[str]) -> str:
        day = date(int(match[1]), int(match[2]), int(match[3])) + shift
        return day.isoformat()

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tournament.toml"
    path.write_text(_DATE.sub(moved, TOURNAMENT.read_text(encoding="utf-8")))
    return path


def _brokers(addresses: list[str]) -> str:
    return "brokers = [" + ", ".join(json.dumps(a) for a in addresses) + "]"


def table_config(directory: Path, *, venue: str, table: str, brokers: list[str],
                 hand_pause: float, tournament: Path, heats: int = 1) -> tuple[Path, Signer]:
    """A simulated table (virtual desk and dealer, `heats` heats) on the cluster; its key."""
    directory.mkdir(parents=True, exist_ok=True)
    signer = Signer.generate(table)
    save_private_key(signer, directory / "table.key")
    desk_key, desk_keys = desk_key_file(directory)  # the virtual desk, named and enrolled
    text = simulated_table_toml(
        venue=venue, table=table, broker="embedded", tournament=tournament, paytables=PAYTABLES,
        socket=directory / "console.sock", seed=2026, heats=heats, hand_pause=hand_pause,
        desk_keys=desk_keys, desk_key=desk_key.name, virtual_dealer=True, log_format="json",
        log_level="info")
    text = text.replace('broker = "embedded"', _brokers(brokers))
    path = directory / "table.toml"
    path.write_text(text)
    return path, signer


def central_config(directory: Path, *, venue: str, brokers: list[str],
                   tables: dict[str, Signer], tournament: Path) -> tuple[Path, str]:
    """The central service's config (SQLite, HTTP on a free port); its database URL."""
    directory.mkdir(parents=True, exist_ok=True)
    save_private_key(Signer.generate("leaderboard"), directory / "leaderboard.key")
    database = f"sqlite:///{directory / 'leaderboard.sqlite3'}"
    enrolled = "".join(f'{t} = "{s.public_key.base64}"\n' for t, s in tables.items())
    path = directory / "leaderboard.toml"
    path.write_text(
        f'[service]\nvenue = "{venue}"\ndatabase = "{database}"\n'
        f'tournament = "{tournament}"\n'
        f"[mqtt]\n{_brokers(brokers)}\n"
        f'[keys]\nsigning_key = "leaderboard.key"\n[keys.tables]\n{enrolled}'
        '[http]\nport = 0\n[log]\nformat = "json"\nlevel = "info"\n')
    return path, database


class ServiceLog:
    """A service's JSON-lines log file, read again from the start on every look."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def events(self, name: str | None = None) -> Iterator[dict[str, Any]]:
        """Every JSON line (with this ``event`` name, if given), oldest first."""
        if not self.path.exists():
            return
        for line in self.path.read_text(errors="replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and (name is None or item.get("event") == name):
                yield item

    def last(self, name: str) -> dict[str, Any] | None:
        """The last event of this name, or None."""
        found = None
        for found in self.events(name):  # noqa: B007 - keeps the last
            pass
        return found


@dataclass
class Service:
    """One process of ours: `python -m cli ARGS`, its log in ``log``."""

    args: list[str]
    log: ServiceLog
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Spawn it (stdout and stderr to its log)."""
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("NOTIFY_SOCKET", None)
        with self.log.path.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli", *self.args], stdout=out,
                stderr=subprocess.STDOUT, env=env, cwd=REPO)

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM and wait (SIGKILL after a while); its exit code (None if never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def wait_until(what: str, check: Callable[[], bool], *services: Service) -> None:
    """Poll ``check`` until it holds; AssertionError naming ``what`` if a service exits or
    the guard passes (the guard is against hangs; nothing is timed by it)."""
    deadline = time.monotonic() + GUARD_S
    while not check():
        for service in services:
            if not service.alive():
                tail = service.log.path.read_text(errors="replace")[-3000:]
                raise AssertionError(f"{what}: {service.args[:2]} exited: {tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"never saw {what}")
        time.sleep(0.1)
