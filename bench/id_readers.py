"""The ID readers' figures (issue 30): how long from a card tapped to its `IdTap` on each
reader, and the keyboard wedge's decoder's cost a swipe.

- serial-lines: `SerialIdReader` on the simulator's pty (`IdReaderSimulator.tap`);
- hid-wedge: `WedgeIdReader` on a simulated wedge typing about 8 ms a character (a track 2
  line is 26 characters and Enter: about 0.2 s of typing, as a real wedge takes);
- pcsc: `PcscIdReader` on a private pcscd with vsmartcard's virtual reader, from the card
  laid on the reader (pcscd polls a virtual reader about every 0.4 s; a USB CCID reader
  reports a card by interrupt instead), skipped without pcscd/vpcd/root;
- the decoder alone: `WedgeDecoder.feed` over a 2-track swipe's events, per swipe.

The goal is a tap read within 1 s (the patron waits for the console to show it); PASS/MISS
never fails the run (machines vary). Exit 1 when a reading is wrong.

Run: ``.venv/bin/python bench/id_readers.py [--taps 20] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections.abc import Callable

from support.latency_figures import Series
from support.latency_machine import machine_lines

from drivers.id_pcsc import PcscIdReader
from drivers.id_reader import SerialIdReader
from drivers.id_wedge import WedgeIdReader
from drivers.protocols import IdReader
from drivers.readings import IdTap
from drivers.wedge_codec import WedgeDecoder, keystrokes
from runtime.backoff import Backoff
from runtime.logs import configure_logging
from simulators.id_reader import IdReaderSimulator
from simulators.pcsc_reader import PcscReaderSimulator
from simulators.pcscd_lab import missing
from simulators.wedge import SimulatedWedge

GOAL_MS = 1000.0
PAN = "6012345678901234"
GUARD_S = 30.0  # against hangs only


class Wrong(RuntimeError):
    """A reading that is not the card tapped."""


def _backoff() -> Backoff:
    return Backoff(initial=0.05, maximum=0.2, rng=random.Random(1))


async def tap_to_reading(reader: IdReader, tap: Callable[[str], None], numbers: list[str],
                         series: Series, *, between: float = 0.0) -> None:
    """Tap each number once the reader is connected; time each to its IdTap."""
    async with reader:
        it = aiter(reader)
        async with asyncio.timeout(GUARD_S):
            while getattr(await anext(it), "kind", None) != "connected":
                pass
        for number in numbers:
            started = time.monotonic()
            tap(number)
            async with asyncio.timeout(GUARD_S):
                while not isinstance(reading := await anext(it), IdTap):
                    pass
            if reading.number != number.upper():
                raise Wrong(f"tapped {number}, read {reading.number}")
            series.values.append(round((reading.at_mono - started) * 1e9))
            if between:
                await asyncio.sleep(between)


async def serial(taps: int) -> Series:
    series = Series("serial-lines")
    with IdReaderSimulator() as sim:
        assert sim.path is not None
        reader = SerialIdReader(sim.path, device_name="bench", backoff=_backoff())
        await tap_to_reading(reader, lambda n: sim.tap(n, "plain"),
                             [f"{60000000 + i:08d}" for i in range(taps)], series)
    return series


async def wedge(taps: int) -> Series:
    series = Series("hid-wedge")
    sim = SimulatedWedge()
    reader = WedgeIdReader(sim, device_name="bench", backoff=_backoff())
    await tap_to_reading(reader, sim.tap, [f"6012{i:012d}" for i in range(taps)], series)
    return series


async def pcsc(taps: int) -> Series | str:
    if (why := missing()) is not None:
        return why
    series = Series("pcsc")
    with PcscReaderSimulator(gap=0.5) as sim:
        reader = PcscIdReader(sim.reader_name, device_name="bench", poll=0.25,
                              backoff=_backoff())
        await tap_to_reading(reader, sim.tap, [f"04A1B2C3D4{i:04X}" for i in range(taps)],
                             series, between=0.8)
    return series


def decoder(swipes: int) -> Series:
    line = f"%B{PAN}^GUEST/PLAYER^2912101000000000?;{PAN}=29121010000000000?"
    events = keystrokes(line)
    series = Series("decode a 2-track swipe")
    for _ in range(swipes):
        dec = WedgeDecoder("bench")
        started = time.perf_counter_ns()
        out = [r for e in events if (r := dec.feed(e, at_mono=0.0)) is not None]
        series.values.append(time.perf_counter_ns() - started)
        if not (len(out) == 1 and isinstance(out[0], IdTap) and out[0].number == PAN):
            raise Wrong(f"the swipe decoded to {out!r}")
    return series


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="5 taps a reader")
    args = parser.parse_args(argv)
    taps = 5 if args.quick else args.taps
    configure_logging(fmt="console", level="error")
    for line in machine_lines():
        print(line)
    try:
        results: list[Series | str] = [await serial(taps), await wedge(taps), await pcsc(taps),
                                       decoder(200 if args.quick else 2000)]
    except Wrong as exc:
        print(f"WRONG: {exc}")
        return 1
    print(f"\n{'tap to IdTap (ms)':<24} {'n':>5} {'p50':>7} {'p99':>7} {'max':>7}  goal"
          f" p99 < {GOAL_MS:.0f} ms")
    for item in results:
        if isinstance(item, str):
            print(f"{'pcsc':<24} skipped: {item}")
            continue
        verdict = "" if item.name.startswith("decode") else (
            "PASS" if (item.p99_ms or 0) < GOAL_MS else "MISS")
        print(f"{item.name:<24} {item.cells()}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
