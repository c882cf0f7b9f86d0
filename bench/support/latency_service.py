"""The table daemon as systemd runs it: READY=1, memory, watchdog pings, SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.latency_figures import GUARD_S, REPO, BenchError, proc_status
from support.latency_tables import forget_on_broker, make_table


@dataclass(slots=True)
class ServiceResult:
    """Start-up, memory and shutdown of `showdown table run` as systemd runs it."""

    broker: str
    ready_fresh_ms: float = 0.0
    ready_restart_ms: float = 0.0
    restart_journal_records: int = 0
    hands: int = 0
    rss_ready_kib: int | None = None
    rss_after_kib: int | None = None
    hwm_kib: int | None = None
    watchdog_pings: int = 0
    stopping: bool = False
    exit_codes: list[int] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)


class NotifySocket:
    """A real AF_UNIX datagram socket standing in for systemd's notification socket.

    A task reads it all the time, as systemd does: a queue left full would block the service's
    next notification (its socket is blocking; see docs/performance.md).
    """

    def __init__(self, directory: Path) -> None:
        self.path = directory / "notify.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.setblocking(False)
        self.datagrams: list[tuple[int, str]] = []
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reading."""
        self._task = asyncio.create_task(self._read(), name="notify socket")

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            data = await loop.sock_recv(self.sock, 4096)
            self.datagrams.append((time.monotonic_ns(), data.decode("utf-8", "replace")))
            self._arrived.set()

    async def close(self) -> None:
        """Stop reading, remove the socket."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def count(self, line: str) -> int:
        """How many datagrams received so far hold `line`."""
        return sum(line in text.splitlines() for _, text in self.datagrams)

    async def wait_for(self, line: str, after: int = 0, timeout: float = 60.0) -> int:
        """Arrival (monotonic ns) of the first datagram from index `after` holding `line`."""
        async with asyncio.timeout(timeout):
            while True:
                for t, text in self.datagrams[after:]:
                    if line in text.splitlines():
                        return t
                self._arrived.clear()
                await self._arrived.wait()


async def spawn_table(config: Path, notify: NotifySocket, log: Path, *,
                      watchdog_usec: str | None = "2000000", timeout: float = 60.0,
                      ) -> tuple[subprocess.Popen[bytes], int]:
    """`showdown table run --config` as systemd starts it (NOTIFY_SOCKET, and WATCHDOG_USEC
    unless None); returns the process and the ns from spawn to READY=1 (BenchError, the
    process killed, when none comes within `timeout` s)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WATCHDOG_PID", "LISTEN_FDS")}
    env.update(NOTIFY_SOCKET=str(notify.path), PYTHONPATH=str(REPO))
    if watchdog_usec is not None:
        env["WATCHDOG_USEC"] = watchdog_usec
    after = len(notify.datagrams)
    started = time.monotonic_ns()
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and files)
            [sys.executable, "-m", "cli", "table", "run", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    try:
        ready = await notify.wait_for("READY=1", after, timeout=timeout)
    except TimeoutError:
        process.kill()
        process.wait()
        raise BenchError(f"no READY=1 from the service; its log: {log}") from None
    return process, ready - started


async def _sigterm(process: subprocess.Popen[bytes], notify: NotifySocket,
                   result: ServiceResult) -> None:
    stopping = notify.count("STOPPING=1")
    process.send_signal(signal.SIGTERM)
    try:
        code = await asyncio.to_thread(process.wait, 30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        code = -int(signal.SIGKILL)
    await asyncio.sleep(0.1)  # the last datagrams, already queued, are read
    result.exit_codes.append(code)
    result.stopping = notify.count("STOPPING=1") > stopping


async def _until_settled(socket_path: Path, hands: int, log: Path) -> tuple[int, str | None]:
    """Poll the service's local API until `hands` hands are settled: (settled, None), or
    (settled so far, why) when its virtual dealer has stopped (it logs why)."""
    from controller.local_api import call  # noqa: PLC0415

    settled = 0
    async with asyncio.timeout(GUARD_S + hands * 10):
        while settled < hands:
            with contextlib.suppress(OSError):
                status = (await call(socket_path, {"action": "status"}))["detail"]
                settled = int(status.get("hands_opened", 0)) - (1 if status.get("hand") else 0)
            for line in log.read_text(errors="replace").splitlines():
                if "virtual dealer stopped" in line:
                    with contextlib.suppress(ValueError):
                        return settled, str(json.loads(line).get("reason"))[:300]
                    return settled, line[:300]
            await asyncio.sleep(0.2)
    return settled, None


async def service_run(label: str, broker: str, hands: int, scratch: Path) -> ServiceResult:
    """Spawn the service twice (fresh journal, then restart), with its own virtual dealer."""
    table = make_table(scratch, broker, virtual_dealer=True, heats=1000)
    notify = NotifySocket(table.dir)
    notify.start()
    log = table.dir / "service.log"
    result = ServiceResult(broker=label)
    socket_path = table.dir / "console.sock"
    try:
        process, took = await spawn_table(table.config_path, notify, log)
        try:
            result.ready_fresh_ms = took / 1e6
            result.rss_ready_kib = proc_status(process.pid, "VmRSS")["VmRSS"]
            result.hands, stopped = await _until_settled(socket_path, hands, log)
            if stopped is not None:
                result.anomalies.append(f"its virtual dealer stopped after {result.hands} "
                                        f"hands: {stopped}")
            memory = proc_status(process.pid, "VmRSS", "VmHWM")
            result.rss_after_kib, result.hwm_kib = memory["VmRSS"], memory["VmHWM"]
            result.watchdog_pings = notify.count("WATCHDOG=1")
        finally:
            if process.poll() is None:
                await _sigterm(process, notify, result)
        from controller.journal import Journal  # noqa: PLC0415

        with Journal.open(table.dir / "journal.sqlite", read_only=True) as journal:
            result.restart_journal_records = journal.last_record_seq()
        # The restart: the same table and journal, its virtual dealer off (only the start-up
        # and the replay are measured).
        restart = table.config_path.with_name("restart.toml")
        restart.write_text(table.config_path.read_text().replace("virtual_dealer = true",
                                                                 "virtual_dealer = false"))
        process, took = await spawn_table(restart, notify, log)
        try:
            result.ready_restart_ms = took / 1e6
            # SIGTERM at once, while the shoe's driver is still reconnecting: the moment a
            # cancellation swallowed by asyncio.wait_for used to hang the shutdown (fixed in
            # 17e7207, drivers/shoe.py `_Port.read`).
        finally:
            await _sigterm(process, notify, result)
    finally:
        await notify.close()
        if broker != "embedded":
            host, _, p = broker.rpartition(":")
            await forget_on_broker(host, int(p), table)
    if result.exit_codes != [0, 0] or not result.stopping:
        raise BenchError(f"{label}: the service did not stop cleanly on SIGTERM "
                         f"(exit {result.exit_codes}, STOPPING=1 {result.stopping}); log {log}")
    return result
