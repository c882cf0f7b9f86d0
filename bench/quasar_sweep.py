"""How long one full sweep of a table's chip spots takes with Metratec QuasarMX readers (issue
30): 16 and 42 spots, stacks of 0..20 chips, read by the real driver (drivers.quasar) from the
simulated readers at their faithful timing (simulators.quasar, speed 1.0: the timing model of
docs/protocols/metratec-quasarmx.md), beside the SR-48 simulator's sweep read by its own
driver (drivers.rfid) in the same run as the baseline.

Two ways to wire the QuasarMX: 4 antennas per reader (16 spots: 4 readers, 42: 11 readers,
side by side) and multiplexers, 16 ports per reader (16 spots: 1 reader, 42: 3 readers). A
sweep is the time from one completed full inventory of every spot to the next; the model's
own figure is printed beside the measure. Figures only: nothing is asserted on time.

Run: ``.venv/bin/python bench/quasar_sweep.py [--sweeps 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence

from support.latency_machine import machine_lines

from drivers.quasar import QuasarChipReader
from drivers.quasar_settings import QuasarSettings, port_of
from drivers.readings import SPOTS, ChipInventory, SpotId
from drivers.rfid import UsbChipReader
from drivers.rfid_settings import UsbReaderSettings
from game.chips.registry import Chip, ChipRegistry
from simulators.quasar import QuasarTiming
from simulators.quasar_table import QuasarTable, ReaderPlan
from simulators.rfid import RfidReaderSimulator

R25 = 2_500
SR48_INTERVAL_MS = 200  # the SR-48 driver's default report interval (drivers.rfid_settings)


def spots(count: int) -> list[SpotId]:
    """The first ``count`` spots of a 6-seat table, seat by seat."""
    return [SpotId(seat, spot) for seat in range(1, 7) for spot in SPOTS][:count]


def registry(count: int) -> ChipRegistry:
    return ChipRegistry([Chip(uid=bytes.fromhex(f"E0040000{i:08X}"), value_cents=R25,
                              chip_set="house") for i in range(count)], chip_set="house")


def stacks(where: Sequence[SpotId], most: int, rng: random.Random) -> dict[SpotId, int]:
    """Chips per spot: ``most`` on every spot, or (most < 0) 0..20 at random."""
    return {s: (most if most >= 0 else rng.randint(0, 20)) for s in where}


def plans(where: Sequence[SpotId], per_reader: int) -> list[ReaderPlan]:
    out = []
    for first in range(0, len(where), per_reader):
        mine = where[first:first + per_reader]
        out.append(ReaderPlan(ports={port_of(n % 4 + 1, n // 4 + 1): s
                                     for n, s in enumerate(mine)}))
    return out


async def sweep_times(readings: AsyncIterator[object], where: set[SpotId], sweeps: int,
                      timeout: float) -> list[float]:
    """Seconds between successive completed inventories of every spot."""
    times: list[float] = []
    pending = set(where)
    last: float | None = None
    async with asyncio.timeout(timeout):
        async for item in readings:
            if not isinstance(item, ChipInventory):
                continue
            pending.discard(item.spot)
            if not pending:
                now = time.monotonic()
                if last is not None:
                    times.append(now - last)
                    if len(times) >= sweeps:
                        return times
                last, pending = now, set(where)
    return times


async def quasar(count: int, per_reader: int, most: int, sweeps: int,
                 rng: random.Random) -> tuple[int, list[float], float]:
    """(readers, measured sweeps, the model's sweep) for one QuasarMX wiring."""
    where = spots(count)
    chips = registry(count * 20)
    table = QuasarTable(plans(where, per_reader), registry=chips, speed=1.0)
    free = iter(c.uid for c in chips)
    laid = stacks(where, most, rng)
    for spot, n in laid.items():
        if n:
            table.place(spot.seat, spot.spot, uids=[next(free) for _ in range(n)])
    timing = QuasarTiming()
    model = max(sum(_port_time(timing, laid[s]) for s in r.ports.values())
                for r in table.readers)
    with table:
        settings = QuasarSettings(readers=table.links(), stall_seconds=5.0)
        async with QuasarChipReader(settings) as reader:
            measured = await sweep_times(aiter(reader), set(where), sweeps,
                                         timeout=30 + sweeps * 3 * model)
    return len(table.readers), measured, model


def _port_time(t: QuasarTiming, tags: int) -> float:
    """One port: SAP and its OK!, then INV and its answer (tags lines, ARP, IVF)."""
    sap = t.command_s + t.line_time(len("SAP 16\r") + len("OK!\r\n")) + t.switch_s
    answer = tags * 17 + len("ARP 01\r") + len("IVF 20\r\n")
    inv = t.command_s + t.line_time(len("INV\r") + answer) + t.inventory_time(tags)
    return sap + inv


async def sr48(count: int, most: int, sweeps: int, rng: random.Random) -> list[float]:
    """The SR-48 simulator's full sweeps as its driver yields them (every report passed)."""
    where = spots(count)
    chips = registry(count * 20)
    sim = RfidReaderSimulator(registry=chips, seat_entries={})
    free = iter(c.uid for c in chips)
    for spot, n in stacks(where, most, rng).items():
        if n:
            sim.place(spot.seat, spot.spot, uids=[next(free) for _ in range(n)])
    settings = UsbReaderSettings(antenna_map={i + 1: s for i, s in enumerate(where)},
                                 report_interval_ms=SR48_INTERVAL_MS, changes_only=False)
    async with UsbChipReader(settings, backend=sim.backend) as reader:
        return await sweep_times(aiter(reader), set(where), sweeps, timeout=30)


def cells(values: list[float]) -> str:
    if not values:
        return f"{'-':>8} {'-':>8}"
    return f"{statistics.median(values) * 1000:8.0f} {max(values) * 1000:8.0f}"


async def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    loads = [20] if args.quick else [20, -1]
    print(f"{'reader':<44} {'spots':>5} {'stacks':>7} {'readers':>7} {'median':>8}"
          f" {'max':>8} {'model':>8}  (ms a full sweep)")
    for count in (16, 42):
        for most in loads:
            label = "20" if most == 20 else "0..20"
            base = await sr48(count, most, args.sweeps, rng)
            print(f"{'SR-48 sim (baseline, 200 ms)':<44} {count:>5} {label:>7} {1:>7}"
                  f" {cells(base)} {SR48_INTERVAL_MS:>8}")
            for per_reader, wiring in ((4, "4 antennas a reader"),
                                       (16, "multiplexers, 16 ports a reader")):
                readers, measured, model = await quasar(count, per_reader, most, args.sweeps,
                                                        rng)
                print(f"{'QuasarMX sim, ' + wiring:<44} {count:>5} {label:>7} {readers:>7}"
                      f" {cells(measured)} {model * 1000:8.0f}")
    return 0


def main() -> int:
    """Print the sweep times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=3, help="full sweeps measured per row")
    parser.add_argument("--quick", action="store_true", help="1 sweep, stacks of 20 only")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    if args.quick:
        args.sweeps = 1
    for line in machine_lines():
        print(line)
    print(f"load    : {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
