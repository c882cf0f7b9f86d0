"""The example text-line shoe (examples/textline-shoe, D303): what a damaged line becomes, and a
card's time from the shoe to the table, beside our own shoe protocol's.

1. **Damaged lines.** Every card's line, in every style a reader writes (`codec.STYLES`), is
   damaged once by each kind of line fault (one bit flipped, one byte replaced, one byte
   dropped, one byte doubled, the line cut in two by noise) at every position, and decoded. Each
   outcome is counted: the same card (harmless, such as a case change), **another card** (a
   misread no reader of plain text can catch: there is no checksum), a bad line (an unreadable
   card for the dealer), or a crash (must be 0). Our protocol's frames carry a CRC-16 and
   cannot be misread this way short of a collision (bench/fuzz_codecs.py).
2. **Card to reading.** The real drivers on their simulators' pseudo-terminals: a card dealt
   one at a time, the time until its `CardReading` is yielded; the text-line shoe and, as the
   baseline, our shoe (`showdown-shoe`: framed, acknowledged).

Run: ``.venv/bin/python bench/textline_shoe.py [--cards N] [--quick]``. Exit 1 if the codec
crashed or a card was read wrong in the timing run.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from showdown_textline_shoe.codec import STYLES, BadLine, CardLine, IdleLine, LineDecoder
from showdown_textline_shoe.codec import encode_card as encode_line

from drivers.adapter import ConfigPlace, DriverContext
from drivers.readings import CardReading, DeviceAlert
from drivers.registry import find_adapter
from game.poker.cards import DECK, Card
from runtime.logs import configure_logging

OUTCOMES = ("same card", "another card", "bad line", "idle line", "crash")


def _mutations(body: bytes) -> dict[str, list[bytes]]:
    """Every single damage of one kind to a line's bytes (its line end left intact)."""
    flips = [bytes(b ^ (1 << bit) if i == at else b for i, b in enumerate(body))
             for at in range(len(body)) for bit in range(8)]
    replaced = [body[:at] + bytes([value]) + body[at + 1:]
                for at in range(len(body)) for value in range(256) if value != body[at]]
    dropped = [body[:at] + body[at + 1:] for at in range(len(body))]
    doubled = [body[:at + 1] + body[at:] for at in range(len(body))]
    cut = [body[:at] + b"\r\n" + body[at:] for at in range(1, len(body))]
    return {"1 bit flipped": flips, "1 byte replaced": replaced, "1 byte dropped": dropped,
            "1 byte doubled": doubled, "cut by a line end": cut}


def _outcome(line: bytes, card: Card) -> str:
    try:
        events = LineDecoder().feed(line + b"\r\n")
    except Exception:  # the codec must never raise: counted, and the run fails
        return "crash"
    cards = [e.card for e in events if isinstance(e, CardLine)]
    if any(c != card for c in cards):
        return "another card"
    if cards and not any(isinstance(e, BadLine) for e in events):
        return "same card"
    if any(isinstance(e, BadLine) for e in events):
        return "bad line"
    return "idle line" if all(isinstance(e, IdleLine) for e in events) else "bad line"


def damaged_lines() -> dict[str, Counter[str]]:
    """Each mutation kind: how many damaged lines ended as each outcome."""
    table: dict[str, Counter[str]] = {}
    for card in DECK:
        for style in STYLES:
            body = encode_line(card, style=style, ending=b"\r\n")[:-2]
            for kind, lines in _mutations(body).items():
                counts = table.setdefault(kind, Counter())
                for line in lines:
                    counts[_outcome(line, card)] += 1
    return table


async def _latency(driver: str, cards: int) -> tuple[list[float], bool]:
    """Seconds from each card dealt to its reading, and whether every card read right."""
    adapter = find_adapter("shoe", driver)
    settings = adapter.configure({}, _sim_place())
    async with AsyncExitStack() as stack:
        simulation = adapter.simulate(settings, DriverContext(name="shoe", seed=7), stack)
        assert simulation is not None
        sim, shoe = simulation.simulator, simulation.device
        async with shoe:
            # our shoe acknowledges what the table confirms (ack="on_confirm"): confirm all
            confirm: Callable[[Any], Any] | None = getattr(shoe, "confirm", None)
            it = aiter(shoe)

            async def next_card() -> CardReading:
                while True:
                    reading = await anext(it)
                    if confirm is not None and not isinstance(reading, DeviceAlert):
                        await confirm(reading)
                    if isinstance(reading, CardReading):
                        return reading

            async with asyncio.timeout(10):  # a card dealt before the port opens is lost
                while getattr(await anext(it), "kind", None) != "connected":
                    pass
            times: list[float] = []
            right = True
            for card in [DECK[(i * 7) % 52] for i in range(cards)]:
                start = time.perf_counter()
                sim.deal_card(card)
                async with asyncio.timeout(10):
                    reading = await next_card()
                times.append(time.perf_counter() - start)
                right = right and reading.card == card
    return times, right


def _sim_place() -> ConfigPlace:
    return ConfigPlace(source="(bench)", section="shoe", kind="sim")


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    """Print both tables; 1 if the codec crashed or a card was read wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=300, help="cards timed per driver")
    parser.add_argument("--quick", action="store_true", help="30 cards (a smoke run)")
    args = parser.parse_args(argv)
    cards = 30 if args.quick else args.cards
    configure_logging(fmt="console", level="error")  # the drivers' connected lines: not here
    print(f"machine: {platform.machine()} {platform.system()}, Python"
          f" {platform.python_version()}")
    print("\n1. a text line damaged once: what it is read as (every card, every style,"
          " every position)")
    header = f"{'damage':<18} | {'lines':>7} | " + " | ".join(f"{o:>12}" for o in OUTCOMES)
    print(header)
    print("-" * len(header))
    crashes = 0
    for kind, counts in damaged_lines().items():
        total = sum(counts.values())
        crashes += counts["crash"]
        cells = " | ".join(f"{100 * counts[o] / total:>11.2f}%" for o in OUTCOMES)
        print(f"{kind:<18} | {total:>7} | {cells}")
    print("another card: a misread the shoe's line cannot reveal (no checksum); our shoe's"
          " frames carry a CRC-16 (bench/fuzz_codecs.py)")
    print(f"\n2. card dealt -> CardReading, {cards} cards, one at a time, on a pseudo-terminal")
    print(f"{'driver':<26} | {'median ms':>9} | {'p90 ms':>7} | {'max ms':>7} | read right")
    wrong = False
    for driver, label in (("text-line", "text-line (this example)"),
                          ("showdown-shoe", "showdown-shoe (baseline)")):
        times, right = asyncio.run(_latency(driver, cards))
        wrong = wrong or not right
        print(f"{label:<26} | {1000 * statistics.median(times):>9.2f} | {_ms(times, 0.9):>7.2f}"
              f" | {1000 * max(times):>7.2f} | {'yes' if right else 'NO'}")
    ok = crashes == 0 and not wrong
    print(f"\nresult: {'OK' if ok else 'WRONG'} (codec crashes {crashes}; every timed card"
          f" {'read right' if not wrong else 'NOT read right'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
