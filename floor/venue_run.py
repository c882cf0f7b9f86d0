"""A rehearsal venue's processes (`showdown venue rehearse`): the broker, the central service
and each table as a process of its own, each started as its machine's service would start
it, supervised as systemd's `Restart=on-failure` does (a child that dies of a signal or
exits with an error is started again after RESTART_S and the restart is said), and stopped in
order at the end (tables first, then the central service, then the broker; SIGTERM, then
SIGKILL after STOP_WAIT_S). Each child's output goes to DIR/logs/<name>.log.

The children run in sessions of their own, so a Ctrl-C at the terminal reaches only the
supervisor, which stops them in order; were the supervisor itself killed, each child is
sent SIGTERM by the kernel (PR_SET_PDEATHSIG) and nothing is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["Child", "ChildSpec", "VenueProcesses", "http_ready", "port_ready",
           "python_command", "table_ready"]

RESTART_S: Final = 2.0  # systemd's RestartSec: how long after a failure a child starts again
STOP_WAIT_S: Final = 20.0  # a real timeout: a child told to stop is killed after this
READY_WAIT_S: Final = 60.0  # a real timeout: a child that is not ready by then is a problem
_PR_SET_PDEATHSIG: Final = 1

Say = Callable[[str], None]
Ready = Callable[[], Awaitable[bool]]


def python_command(*args: str) -> list[str]:
    """`showdown ARGS` in this interpreter."""
    return [sys.executable, "-m", "cli", *args]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


async def port_ready(port: int) -> bool:
    """True when something accepts a TCP connection on 127.0.0.1:`port`."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def http_ready(port: int, path: str = "/healthz") -> bool:
    """True when GET `path` on 127.0.0.1:`port` answers 200."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2.0)
    except (OSError, TimeoutError):
        return False
    try:
        writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode("ascii"))
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 5.0)
    except (OSError, TimeoutError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return line.split()[1:2] == [b"200"]


async def table_ready(socket_path: Path) -> bool:
    """True when the table daemon answers on its local API and is connected to the broker."""
    from controller.local_api import call  # noqa: PLC0415

    try:
        answer = await call(socket_path, {"action": "status"}, timeout=3.0)
    except (OSError, TimeoutError, ValueError):
        return False
    return bool(answer.get("detail", {}).get("mqtt", {}).get("connected"))


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One supervised process: its name, command, environment, log file, and how to tell it
    is ready (None: started is ready)."""

    name: str
    argv: Sequence[str]
    log: Path
    ready: Ready | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


class Child:
    """One supervised process: started, restarted on failure, stopped on request."""

    def __init__(self, spec: ChildSpec, say: Say) -> None:
        self.spec, self._say = spec, say
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._stopping = False
        self._watch: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The running process's id (None when not running)."""
        p = self.process
        return p.pid if p is not None and p.returncode is None else None

    async def _spawn(self) -> None:
        self.spec.log.parent.mkdir(parents=True, exist_ok=True)
        with self.spec.log.open("ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} venue: starting"
                      f" {self.spec.name}\n".encode())
            log.flush()
            self.process = await asyncio.create_subprocess_exec(
                *self.spec.argv, env={**self.spec.env, "PYTHONUNBUFFERED": "1"},
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, preexec_fn=_die_with_parent)

    async def start(self) -> str | None:
        """Start it and wait until it is ready; a problem (with its log's last lines) if it
        exits or is not ready in READY_WAIT_S."""
        await self._spawn()
        problem = await self._until_ready()
        if problem is None:
            self._watch = asyncio.get_running_loop().create_task(self._supervise())
        return problem

    async def _until_ready(self) -> str | None:
        assert self.process is not None
        deadline = time.monotonic() + READY_WAIT_S
        while True:
            if self.process.returncode is not None:
                return (f"{self.spec.name} exited (code {self.process.returncode}) as it"
                        f" started: {self._tail()}")
            if self.spec.ready is None or await self.spec.ready():
                return None
            if time.monotonic() > deadline:
                return f"{self.spec.name} was not ready in {READY_WAIT_S:.0f} s: {self._tail()}"
            await asyncio.sleep(0.2)

    def _tail(self) -> str:
        try:
            lines = self.spec.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return f"see {self.spec.log}"
        last = [line for line in lines[-3:] if line.strip()]
        return " | ".join(last) + f" (log: {self.spec.log})"

    async def _supervise(self) -> None:
        while True:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            how = (f"was killed by {signal.Signals(-code).name}" if code < 0
                   else f"exited with code {code}")
            if code == 0:  # Restart=on-failure: a clean exit is not restarted
                self._say(f"venue: {self.spec.name} {how}; not restarted"
                          " (it stopped by itself)")
                return
            self._say(f"venue: {self.spec.name} {how}; restarting in {RESTART_S:g} s")
            await asyncio.sleep(RESTART_S)
            if self.stopping():
                return
            await self._spawn()
            self.restarts += 1
            problem = await self._until_ready()
            if self.stopping():
                return
            pid = self.process.pid
            self._say(f"venue: {self.spec.name} restarted (pid {pid})" if problem is None
                      else f"venue: {self.spec.name} restarted (pid {pid}) but {problem}")

    def stopping(self) -> bool:
        """True once told to stop."""
        return self._stopping

    async def stop(self) -> str | None:
        """SIGTERM, then SIGKILL after STOP_WAIT_S; a problem if it had to be killed or
        exited with an error."""
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        p = self.process
        if p is None or p.returncode is not None:
            return None
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(p.wait(), STOP_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            await p.wait()
            return f"{self.spec.name} did not stop in {STOP_WAIT_S:.0f} s; it was killed"
        if code not in (0, -signal.SIGTERM):
            return f"{self.spec.name} exited with code {code} as it stopped (log: {self.spec.log})"
        return None


class VenueProcesses:
    """The venue's children, started in order, supervised, stopped in reverse order."""

    def __init__(self, say: Say) -> None:
        self._say = say
        self.children: list[Child] = []

    def child(self, name: str) -> Child:
        """The child called `name`."""
        return next(c for c in self.children if c.spec.name == name)

    async def start(self, specs: Sequence[ChildSpec]) -> str | None:
        """Start each in turn (each ready before the next); the first problem, if any (what
        started keeps running: `stop` stops it)."""
        for spec in specs:
            child = Child(spec, self._say)
            self.children.append(child)
            problem = await child.start()
            if problem is not None:
                return problem
        return None

    async def stop(self) -> list[str]:
        """Stop every child, the last started first; the problems."""
        problems = []
        for child in reversed(self.children):
            problem = await child.stop()
            if problem is not None:
                problems.append(problem)
            else:
                self._say(f"venue: {child.spec.name} stopped")
        return problems
