"""What the bench's tests share: a real table daemon with simulated devices, its console and
its technician's bench (``[bench] enabled``, a free port), started by the same task
`showdown table run` starts (`controller.wiring.bench_task`); a heat opened and entries seated
by signed desk commands from the test acting as the desk (its key enrolled in the config), as
the console's tests do; and the bench's HTTP API called as a client would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.config import read_table_config
from controller.wiring import bench_task, wire_table
from simulators.table_toml import simulated_table_toml
from tests.controller.console.support import (
    DESK,
    GUARD_S,
    REPO,
    ConsoleTable,
    short_tournament,
)
from tests.integration.daemon_support import RecordingNotify, running
from wire.signing import Signer, save_private_key


@dataclass(slots=True)
class BenchTable:
    """A running daemon with its console and bench."""

    table: ConsoleTable
    config: Path

    @property
    def url(self) -> str:
        """The bench's base URL."""
        port = self.table.daemon.bench_port
        assert port is not None
        return f"http://127.0.0.1:{port}"

    async def get(self, path: str) -> tuple[int, Any]:
        """GET a bench path: status and JSON body."""
        return await asyncio.to_thread(_request, self.url + path, None)

    async def post(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """POST JSON to a bench path: status and JSON body."""
        return await asyncio.to_thread(_request, self.url + path, body or {})


def _request(url: str, body: dict[str, Any] | None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 (the test's own http URL)
        url, data=data, method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=GUARD_S) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def bench_config(tmp_path: Path, *, hands: int = 2, id_reader: bool = True,
                 bench: str = "enabled = true\nport = 0\n", shoe: str = "sim") -> Path:
    """A simulated table's config with its bench (and the test's desk key enrolled)."""
    table = f"t-{secrets.token_hex(3)}"
    if not (tmp_path / "table.key").exists():
        save_private_key(Signer.generate(table), tmp_path / "table.key")
    text = simulated_table_toml(
        venue="test-bench", table=table, broker="embedded",
        tournament=short_tournament(tmp_path, hands),
        paytables=REPO / "config" / "paytables.toml",
        desk_keys={DESK: Signer.generate(DESK).public_key.base64},
        socket=tmp_path / "api.sock", id_reader=id_reader, acknowledge_with=["pin"])
    if shoe != "sim":
        text = text.replace('[shoe]\nkind = "sim"\n', f'[shoe]\nkind = "{shoe}"\n')
    path = tmp_path / "table.toml"
    path.write_text(text + f"\n[bench]\n{bench}", encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def bench_table(tmp_path: Path, **options: Any) -> AsyncIterator[BenchTable]:
    """A running daemon with its console and its bench listening on 127.0.0.1."""
    path = bench_config(tmp_path, **options)
    notify = RecordingNotify()
    wired = wire_table(read_table_config(path), notify=notify)
    notify.daemon = wired.daemon
    async with running(wired.daemon, extra=bench_task(wired)):
        deadline = time.monotonic() + GUARD_S
        while wired.daemon.console_port is None or wired.daemon.bench_port is None:
            assert time.monotonic() < deadline, "the console or the bench never listened"
            await asyncio.sleep(0.01)
        yield BenchTable(table=ConsoleTable(daemon=wired.daemon, devices=wired.devices,
                                            tmp_path=tmp_path), config=path)


def spots(status: Any, seat: int) -> dict[str, int]:
    """What the table reads on a seat's spots."""
    return dict((status.get("spots") or {}).get(str(seat)) or {})
