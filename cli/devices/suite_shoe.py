"""The conformance suite of a card shoe (role ``shoe``), run on its simulator
(`drivers.adapter.SimulatedShoe`): each check a `Row`.

A conforming shoe driver reports every card that leaves the shoe exactly once, in the order
dealt, whatever happens to the line (docs/protocols/writing-an-adapter.md). The checks:

- connect: a "connected" alert;
- deal: a deck dealt card after card, each reported once, in order, none lost or doubled;
- unplug mid-deal: the cable pulled after some cards, cards dealt while it is out, plugged
  back: "disconnected", "reconnected", and still every card once, in order;
- stall: a silent shoe is "stalled"; when it speaks again the driver is back and reads;
- garbage: noise on the line is at most a "bad_frame" alert; every card still right;
- timing: a card's time from leaving the shoe to its reading.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from itertools import pairwise
from typing import Final

from cli.devices.bench import (
    DOWN,
    NOISE,
    OUTAGE,
    UP,
    Bench,
    connected,
    control,
    guard,
    kinds_since,
    median,
    seconds,
    unexpected,
)
from cli.devices.report import Row, fail, limited, ok, skip
from drivers.readings import CardReading, DeviceAlert
from game.poker.cards import DECK

__all__ = ["DEAL", "run_shoe"]

DEAL: Final = 52  # cards in the deal check: a whole deck


class _Dealer:
    """Deals cards through the simulator and remembers when each left the shoe."""

    def __init__(self, bench: Bench, seed: int) -> None:
        self.bench = bench
        self._rng = random.Random(seed)
        self._deck: list[str] = []
        self.dealt: list[tuple[float, str]] = []

    def next_card(self) -> str:
        if not self._deck:
            self._deck = [str(c) for c in DECK]
            self._rng.shuffle(self._deck)
        return self._deck.pop()

    async def deal(self, count: int) -> list[str]:
        cards = [self.next_card() for _ in range(count)]
        for card in cards:
            self.dealt.append((time.monotonic(), card))
            await self.bench.do("deal_card", card)
        return cards


def _cards(bench: Bench, mark: int) -> list[tuple[float, CardReading]]:
    return [(s.at, s.item) for s in bench.seen.since(mark, CardReading)]


async def _read(bench: Bench, mark: int, count: int) -> list[tuple[float, CardReading]]:
    await bench.seen.until(lambda: len(_cards(bench, mark)) >= count, bench.timeout)
    await bench.seen.pause(0.05)  # a doubled card would arrive right behind the last one
    return _cards(bench, mark)


def _compare(dealt: Sequence[str], read: Sequence[CardReading]) -> str | None:
    """What is wrong with the readings of ``dealt`` (None: each once, in order)."""
    got = [str(r.card) for r in read]
    if got == list(dealt):
        indices = [r.read_index for r in read]
        gaps = [b - a for a, b in pairwise(indices) if b - a != 1]
        if gaps:
            return f"cards right, but read indices skip or repeat ({indices[:8]}...)"
        return None
    for i, (want, card) in enumerate(zip(dealt, got, strict=False)):
        if want != card:
            what = ("doubled" if card in got[:i] else "lost" if want not in got
                    else "out of order")
            return (f"card {i + 1} of {len(dealt)} dealt was {want}, read {card}"
                    f" ({want if what == 'lost' else card} {what}); {len(got)} read")
    if len(got) < len(dealt):
        return f"{len(dealt) - len(got)} of {len(dealt)} cards never read (first lost:" \
               f" {dealt[len(got)]})"
    return f"{len(got) - len(dealt)} readings more than cards dealt ({', '.join(got[len(dealt):])})"


async def run_shoe(bench: Bench) -> list[Row]:
    """Every check of a card shoe, in order."""
    rows = [await guard("connect", connected(bench))]
    missing = control("deal", bench.simulator, "deal_card")
    if missing is not None:
        return [*rows, *(skip(n, missing.detail) for n in (
            f"deal {DEAL} cards", "unplug mid-deal", "stall", "garbage", "card to reading"))]
    dealer = _Dealer(bench, seed=20261206)
    latencies: list[float] = []
    rows.append(await guard(f"deal {DEAL} cards", _deal(bench, dealer, latencies)))
    rows.append(await guard("unplug mid-deal", _unplug(bench, dealer)))
    rows.append(await guard("stall", _stall(bench, dealer)))
    rows.append(await guard("garbage", _garbage(bench, dealer)))
    rows.append(_timing(latencies))
    return rows


async def _deal(bench: Bench, dealer: _Dealer, latencies: list[float]) -> Row:
    name = f"deal {DEAL} cards"
    mark = bench.seen.mark()
    first = len(dealer.dealt)
    cards = await dealer.deal(DEAL)
    read = await _read(bench, mark, DEAL)
    wrong = _compare(cards, [r for _, r in read])
    if wrong:
        return fail(name, wrong)
    latencies += [at - left for (left, _), (at, _) in zip(dealer.dealt[first:], read,
                                                          strict=False)]
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    took = read[-1][0] - dealer.dealt[first][0]
    return ok(name, f"{DEAL} of {DEAL} read once each, in order, in {seconds(took)}")


async def _unplug(bench: Bench, dealer: _Dealer) -> Row:
    name = "unplug mid-deal"
    missing = control(name, bench.simulator, "unplug", "plug")
    if missing is not None:
        return missing
    mark = bench.seen.mark()
    cards = await dealer.deal(5)
    await bench.attempt("unplug")
    note = ""
    try:
        if not await bench.seen.until(lambda: any(k in DOWN for k in kinds_since(bench, mark)),
                                      bench.timeout):
            return fail(name, f"no disconnected alert in {seconds(bench.timeout)} after the"
                              " unplug")
        try:
            away = await dealer.deal(3)  # the shoe keeps reading while its cable is out
            cards += away
        except Exception as exc:
            away = []
            note = f" (the simulator dealt nothing unplugged: {type(exc).__name__})"
    finally:
        await bench.do("plug")
    back = bench.seen.mark()
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, back)),
                                  bench.timeout):
        return fail(name, f"no reconnected alert in {seconds(bench.timeout)} after the plug")
    cards += await dealer.deal(4)
    read = await _read(bench, mark, len(cards))
    got = [r for _, r in read]
    wrong = _compare(cards, got)
    lost = [c for c in cards if c not in {str(r.card) for r in got}]
    if wrong and lost and _compare([c for c in cards if c not in lost], got) is None:
        # Nothing doubled or reordered: the cards of the outage never reached the driver.
        before = [c for c in lost if c not in away]
        words = [f"{len(lost)} of {len(cards)} cards never read"]
        if away:
            gone = [c for c in away if c in lost]
            words.append(f"{len(gone)} of the {len(away)} dealt while the shoe was unplugged"
                         + (f" ({', '.join(gone)})" if gone else ""))
        if before:
            words.append(f"{len(before)} dealt just before its cable was pulled"
                         f" ({', '.join(before)})")
        said = "; ".join(words) + ": the shoe kept nothing for the host while it was away;" \
                                  " the others were read once, in order"
        if "reads_lost" in kinds_since(bench, back):
            return limited(name, said + ", and the driver declared the gap (reads_lost)")
        return fail(name, said + ", and the driver never said so (no reads_lost alert)")
    if wrong:
        return fail(name, wrong)
    bad = unexpected(kinds_since(bench, mark), UP | DOWN | OUTAGE)
    if bad:
        return fail(name, bad)
    return ok(name, f"{len(cards)} cards dealt around the unplug, each read once, in"
                    f" order{note}")


async def _stall(bench: Bench, dealer: _Dealer) -> Row:
    name = "stall"
    missing = control(name, bench.simulator, "set_fault")
    if missing is not None:
        return missing
    mark = bench.seen.mark()
    silent_at = time.monotonic()
    await bench.attempt("set_fault", "silent", value=True)
    try:
        stalled = await bench.seen.until(lambda: "stalled" in kinds_since(bench, mark),
                                         bench.timeout)
    finally:
        await bench.do("set_fault", "silent", value=False)
    if not stalled:
        kinds = kinds_since(bench, mark)
        return fail(name, f"no stalled alert in {seconds(bench.timeout)} of silence"
                    + (f" (alerts: {', '.join(kinds)})" if kinds else ""))
    t_stall = next(s.at for s in bench.seen.since(mark, DeviceAlert)
                   if s.item.kind == "stalled")
    back = bench.seen.mark()
    spoke_at = time.monotonic()
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, back)),
                                  bench.timeout):
        return fail(name, f"stalled alerted, but not back in {seconds(bench.timeout)} after"
                          " the shoe spoke again")
    t_up = next(s.at for s in bench.seen.since(back, DeviceAlert) if s.item.kind in UP)
    after = bench.seen.mark()
    cards = await dealer.deal(2)
    wrong = _compare(cards, [r for _, r in await _read(bench, after, len(cards))])
    if wrong:
        return fail(name, f"back, but {wrong}")
    bad = unexpected(kinds_since(bench, mark), UP | DOWN | NOISE | OUTAGE)
    if bad:
        return fail(name, bad)
    return ok(name, f"stalled alert {seconds(t_stall - silent_at)} after the shoe went silent;"
                    f" back {seconds(t_up - spoke_at)} after it spoke again, and reading")


async def _garbage(bench: Bench, dealer: _Dealer) -> Row:
    name = "garbage"
    missing = control(name, bench.simulator, "set_fault", "inject")
    if missing is not None:
        return missing
    mark = bench.seen.mark()
    await bench.attempt("inject", "garbage")
    await bench.attempt("set_fault", "garbage", 0.5)
    try:
        cards = await dealer.deal(12)
        read = await _read(bench, mark, len(cards))
    finally:
        await bench.do("set_fault", "garbage", 0.0)
    wrong = _compare(cards, [r for _, r in read])
    if wrong:
        return fail(name, f"with noise on the line, {wrong}")
    kinds = kinds_since(bench, mark)
    bad = unexpected(kinds, NOISE)
    if bad:
        return fail(name, bad)
    return ok(name, f"noise before half the frames: {len(cards)} cards right,"
                    f" {sum(k in NOISE for k in kinds)} noise alert(s)")


def _timing(latencies: list[float]) -> Row:
    name = "card to reading"
    if not latencies:
        return fail(name, "no card was timed (the deal check failed)")
    return ok(name, f"{seconds(median(latencies))} (worst {seconds(max(latencies))}) over"
                    f" {len(latencies)} cards")


