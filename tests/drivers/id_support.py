"""What the ID reader tests share: `Seen` (what a reader yielded, awaited with a safety
timeout), and the process's one simulated PC/SC reader (a private pcscd with vsmartcard's
virtual reader): pcscd's client library reads its socket's path once per process, so one
pcscd serves every test of a process.

Without pcscd, vsmartcard-vpcd or root the PC/SC tests skip saying why, except under CI
(``CI`` set), where they fail: CI installs both (.ci/run).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
from collections.abc import AsyncIterator, Callable

import pytest

from drivers.protocols import IdReader, IdReading
from drivers.readings import DeviceAlert, IdTap
from simulators.pcsc_reader import PcscReaderSimulator
from simulators.pcscd_lab import missing

WAIT = 20.0  # seconds before a wait is declared hung (a safety net, not a measurement)


class Seen:
    """Reads an IdReader in the background of a test and keeps everything it yielded."""

    def __init__(self, reader: IdReader) -> None:
        self._it: AsyncIterator[IdReading] = aiter(reader)
        self.seen: list[IdReading] = []

    async def until(self, done: Callable[[Seen], bool], wait: float = WAIT) -> None:
        async with asyncio.timeout(wait):
            while not done(self):
                self.seen.append(await anext(self._it))

    async def taps_n(self, n: int) -> list[IdTap]:
        await self.until(lambda s: len(s.taps()) >= n)
        return self.taps()

    async def alert(self, kind: str, count: int = 1) -> list[DeviceAlert]:
        await self.until(lambda s: len(s.alerts(kind)) >= count)
        return self.alerts(kind)

    def taps(self) -> list[IdTap]:
        return [r for r in self.seen if isinstance(r, IdTap)]

    def alerts(self, kind: str | None = None) -> list[DeviceAlert]:
        return [r for r in self.seen
                if isinstance(r, DeviceAlert) and (kind is None or r.kind == kind)]


def numbers(taps: list[IdTap]) -> list[tuple[str, str]]:
    """(number, form) of each tap."""
    return [(t.number, t.form) for t in taps]


def need_pcsc() -> None:
    """Skip (locally) or fail (under CI) when a private pcscd with vpcd cannot run here."""
    why = missing()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PC/SC tests: {why} (.ci/run installs pcscd and"
                    " vsmartcard-vpcd)")
    pytest.skip(f"no PC/SC lab here: {why}")


@functools.cache
def pcsc_reader() -> PcscReaderSimulator:
    """The process's simulated PC/SC reader, started at the first call (stopped at exit)."""
    need_pcsc()
    simulator = PcscReaderSimulator(gap=0.5).start()
    atexit.register(simulator.stop)
    return simulator


def ready_pcsc() -> PcscReaderSimulator:
    """The simulated PC/SC reader, running and fault-free, with no card on it (a test's
    fixture returns it)."""
    simulator = pcsc_reader()
    if not simulator.lab.running:
        simulator.plug()
    assert simulator.card is not None
    simulator.card.faults.update(dict.fromkeys(simulator.card.faults, False))
    simulator.wait_idle()
    return simulator
