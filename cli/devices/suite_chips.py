"""The conformance suite of a chip reader (role ``rfid``), run on its simulator
(`drivers.adapter.SimulatedChips`): each check a `Row`.

What it holds a driver to (docs/protocols/writing-an-adapter.md): every sweep reports every
spot the readers cover, an empty spot as empty, so that payout checks and clone detection
can trust that a chip not reported is not there. The checks, in order:

- connect: a "connected" alert and the first inventories;
- full sweep: chips on every other one of N spots; three sweeps, each spot reported in each
  with exactly its chips (the longest gap between two reports of one spot is the sweep);
- chip moved: a chip taken from one spot to another is reported on the new spot and no
  longer on the old one within one sweep, never on both;
- stack of 20: twenty chips on one spot, every UID reported in every report;
- garbage: noise on the line is at most a "bad_frame" alert; every report stays right;
- stall: a silent reader is "stalled"; when it speaks again the driver recovers;
- unplug: "disconnected", then "reconnected", then full sweeps again;
- timing: the sweep for N spots with stacks of 1..20 chips, and a chip's time from placed
  to reported.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import pairwise
from typing import Final

from cli.devices.bench import (
    DOWN,
    NOISE,
    OUTAGE,
    UP,
    Bench,
    control,
    guard,
    kinds_since,
    median,
    seconds,
    unexpected,
)
from cli.devices.report import Row, fail, ok, skip
from drivers.readings import ChipInventory, DeviceAlert, SpotId
from game.chips.registry import Chip, ChipRegistry, format_uid

__all__ = ["KIT_CHIP_SET", "STACK", "kit_registry", "run_chips"]

STACK: Final = 20  # chips in the stack check
KIT_CHIP_SET: Final = "conformance-kit"
_KIT_CHIPS: Final = 1200  # enough for 42 spots with stacks of 1..20 chips, and the rest
_SWEEPS: Final = 3

Layout = Mapping[SpotId, frozenset[bytes]]


def kit_registry() -> ChipRegistry:
    """The chips the kit lays on the simulated table: UIDs ``E0 4B 49 54 00 nn nn nn``."""
    return ChipRegistry(
        (Chip(uid=_uid(n), value_cents=2500, chip_set=KIT_CHIP_SET) for n in range(_KIT_CHIPS)),
        chip_set=KIT_CHIP_SET, source="showdown devices check")


def _uid(n: int) -> bytes:
    return bytes([0xE0, 0x4B, 0x49, 0x54, 0x00]) + n.to_bytes(3, "big")


class _Chips:
    """Fresh kit UIDs, never one twice in a run."""

    def __init__(self) -> None:
        self._next = 0

    def take(self, count: int) -> list[bytes]:
        if self._next + count > _KIT_CHIPS:
            self._next = 0  # the table is cleared between checks: old UIDs are free again
        out = [_uid(n) for n in range(self._next, self._next + count)]
        self._next += count
        return out


def _where(spot: SpotId) -> str:
    return f"seat {spot.seat} {spot.spot}"


def _reports(bench: Bench, mark: int) -> list[tuple[float, ChipInventory]]:
    return [(s.at, s.item) for s in bench.seen.since(mark, ChipInventory)]


def _latest(bench: Bench, mark: int) -> dict[SpotId, frozenset[bytes]]:
    out: dict[SpotId, frozenset[bytes]] = {}
    for _, inv in _reports(bench, mark):
        out[inv.spot] = inv.uids
    return out


async def _lay(bench: Bench, layout: Layout) -> None:
    await bench.do("clear")
    for spot, uids in layout.items():
        if uids:
            await bench.do("place", spot.seat, spot.spot, uids=tuple(sorted(uids)))


async def _settle(bench: Bench, layout: Layout, mark: int) -> int | None:
    """Wait until every spot of ``layout`` was last reported as laid out; the mark just
    after that moment, or None if it never was."""
    def settled() -> bool:
        latest = _latest(bench, mark)
        return all(latest.get(spot) == uids for spot, uids in layout.items())

    if not await bench.seen.until(settled, bench.timeout):
        return None
    return bench.seen.mark()


def _unsettled(bench: Bench, layout: Layout, mark: int) -> str:
    latest = _latest(bench, mark)
    for spot, uids in layout.items():
        got = latest.get(spot)
        if got is None:
            return f"{_where(spot)} was never reported"
        if got != uids:
            return f"{_where(spot)} was last reported {_diff(got, uids)}"
    return "the reports never matched the table"


def _diff(got: frozenset[bytes], want: frozenset[bytes]) -> str:
    missing, extra = want - got, got - want
    words = [f"with {len(got)} chips, {len(want)} lie there"]
    if missing:
        words.append("missing " + ", ".join(format_uid(u) for u in sorted(missing)[:3]))
    if extra:
        words.append("extra " + ", ".join(format_uid(u) for u in sorted(extra)[:3]))
    return "; ".join(words)


async def _sweeps(bench: Bench, layout: Layout, mark: int, count: int = _SWEEPS, *,
                  every: bool = True) -> tuple[str | None, float]:
    """Watch ``count`` sweeps from ``mark`` (each may take the kit's timeout): every spot
    reported ``count`` times, each time exactly as laid out, and (``every``) in every sweep.
    (what went wrong or None, the sweep period)."""
    spots = list(layout)

    def enough() -> bool:
        counts = dict.fromkeys(spots, 0)
        for _, inv in _reports(bench, mark):
            if inv.spot in counts:
                counts[inv.spot] += 1
        return min(counts.values(), default=count) >= count

    start = time.monotonic()
    done = await bench.seen.until(enough, bench.timeout * count)
    times: dict[SpotId, list[float]] = {s: [] for s in spots}
    for at, inv in _reports(bench, mark):
        if inv.spot not in times:
            continue
        times[inv.spot].append(at)
        want = layout[inv.spot]
        if inv.uids != want:
            return f"{_where(inv.spot)} reported {_diff(inv.uids, want)}", 0.0
    gaps = [b - a for ts in times.values() for a, b in pairwise(ts)]
    period = median(gaps)
    if not done:
        fewest = min(spots, key=lambda s: len(times[s]))
        return (f"{_where(fewest)} was reported {len(times[fewest])} times in"
                f" {seconds(time.monotonic() - start)} while others were reported up to"
                f" {max(len(t) for t in times.values())} times: a sweep must report every"
                " spot, an empty one as empty"), period
    # A spot left out of one sweep shows as a gap of two sweeps between its reports.
    worst = max(spots, key=lambda s: max(
        (b - a for a, b in pairwise(times[s])), default=0.0))
    longest = max((b - a for a, b in pairwise(times[worst])),
                  default=0.0)
    if every and period and longest > 1.75 * period + 0.05:
        return (f"{_where(worst)} went {seconds(longest)} between reports, the sweep takes"
                f" {seconds(period)}: it was left out of a sweep"), period
    return None, period


def _half_layout(spots: Sequence[SpotId], chips: _Chips) -> dict[SpotId, frozenset[bytes]]:
    return {spot: frozenset(chips.take(1)) if i % 2 == 0 else frozenset()
            for i, spot in enumerate(spots)}


async def run_chips(bench: Bench) -> list[Row]:
    """Every check of a chip reader, in order."""
    sim = bench.simulator
    rows = [await _connect(bench)]
    missing = control("spots", sim, "spots", "place", "remove", "clear")
    if missing is not None:
        return [*rows, *(skip(name, missing.detail) for name in (
            "full sweep", "chip moved", f"stack of {STACK}", "garbage", "stall",
            "unplug and reconnect", "sweep time", "chip to report"))]
    covered = list(await bench.do("spots"))
    spots = covered[: bench.spots] if bench.spots else covered
    if not spots:
        return [*rows, fail("full sweep", "the simulator covers no spot")]
    chips = _Chips()
    rows.append(await guard("full sweep", _full_sweep(bench, spots, chips)))
    rows.append(await guard("chip moved", _moved(bench, spots, chips)))
    rows.append(await guard(f"stack of {STACK}", _stack(bench, spots, chips)))
    rows.append(await guard("garbage", _garbage(bench, spots, chips)))
    rows.append(await guard("stall", _stall(bench, spots, chips)))
    rows.append(await guard("unplug and reconnect", _unplug(bench, spots, chips)))
    rows.append(await guard("sweep time", _sweep_time(bench, spots, chips)))
    rows.append(await guard("chip to report", _to_report(bench, spots, chips)))
    await bench.do("clear")
    return rows


async def _connect(bench: Bench) -> Row:
    seen = bench.seen

    def up() -> bool:
        kinds = kinds_since(bench, 0)
        return any(k in UP for k in kinds) and bool(seen.since(0, ChipInventory))

    if not await seen.until(up, bench.timeout):
        kinds = kinds_since(bench, 0)
        if not any(k in UP for k in kinds):
            return fail("connect", f"no connected alert in {seconds(bench.timeout)}"
                        + (f" (alerts: {', '.join(kinds)})" if kinds else "")
                        + (f"; {seen.ended}" if seen.ended else ""))
        return fail("connect", f"connected, but no inventory in {seconds(bench.timeout)}")
    first_up = next(s.at for s in seen.since(0, DeviceAlert) if s.item.kind in UP)
    first_inv = seen.since(0, ChipInventory)[0].at
    bad = unexpected(kinds_since(bench, 0), UP)
    if bad:
        return fail("connect", bad)
    return ok("connect", f"connected after {seconds(first_up - seen.started)}, first"
                         f" inventory after {seconds(first_inv - seen.started)}")


async def _full_sweep(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "full sweep"
    layout = _half_layout(spots, chips)
    mark = bench.seen.mark()
    await _lay(bench, layout)
    settled = await _settle(bench, layout, mark)
    if settled is None:
        return fail(name, _unsettled(bench, layout, mark))
    wrong, period = await _sweeps(bench, layout, settled)
    if wrong:
        return fail(name, wrong)
    bench.figures.sweep_periods.append(period)
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    filled = sum(1 for u in layout.values() if u)
    return ok(name, f"{len(spots)} spots ({filled} with a chip, {len(spots) - filled} empty):"
                    f" each reported exactly in each of {_SWEEPS} sweeps; a sweep takes"
                    f" {seconds(period)}")


async def _moved(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "chip moved"
    if len(spots) < 2:
        return skip(name, "needs two spots")
    old, new = spots[0], spots[1]
    uid = chips.take(1)[0]
    layout = {old: frozenset({uid}), new: frozenset()}
    mark = bench.seen.mark()
    await _lay(bench, layout)
    if await _settle(bench, layout, mark) is None:
        return fail(name, _unsettled(bench, layout, mark))
    mark = bench.seen.mark()
    moved_at = time.monotonic()
    await bench.do("remove", old.seat, old.spot, uids=(uid,))
    await bench.do("place", new.seat, new.spot, uids=(uid,))

    def arrived() -> float | None:
        return next((at for at, inv in _reports(bench, mark)
                     if inv.spot == new and uid in inv.uids), None)

    def old_after(t: float) -> list[tuple[float, ChipInventory]]:
        return [(at, inv) for at, inv in _reports(bench, mark) if inv.spot == old and at >= t]

    def seen_both() -> bool:
        t = arrived()
        return t is not None and bool(old_after(t))

    if not await bench.seen.until(seen_both, bench.timeout):
        if arrived() is None:
            return fail(name, f"the chip never appeared on {_where(new)}")
        return fail(name, f"{_where(old)} was not reported again after the move")
    t_new = arrived()
    assert t_new is not None
    t_gone = next((at for at, inv in _reports(bench, mark)
                   if inv.spot == old and uid not in inv.uids), None)
    both = [at for at, inv in old_after(t_new) if uid in inv.uids]
    if both:
        return fail(name, f"the chip was reported on {_where(new)} and still on {_where(old)}"
                          f" {seconds(both[-1] - t_new)} later: it looks like a clone")
    bench.figures.latencies.append(t_new - moved_at)
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    gone = "" if t_gone is None else f", gone from {_where(old)} after {seconds(t_gone - moved_at)}"
    return ok(name, f"{_where(old)} -> {_where(new)}: on the new spot after"
                    f" {seconds(t_new - moved_at)}{gone}, never on both")


async def _stack(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = f"stack of {STACK}"
    spot = spots[-1]
    stack = frozenset(chips.take(STACK))
    layout = {spot: stack}
    mark = bench.seen.mark()
    placed_at = time.monotonic()
    await _lay(bench, layout)
    settled = await _settle(bench, layout, mark)
    if settled is None:
        best = max((inv.uids for _, inv in _reports(bench, mark) if inv.spot == spot),
                   key=len, default=frozenset())
        lost = ", ".join(format_uid(u) for u in sorted(stack - best)[:3])
        return fail(name, f"never reported all {STACK} chips on {_where(spot)}: at most"
                          f" {len(best & stack)}" + (f" (missing {lost})" if best else ""))
    first = next(at for at, inv in _reports(bench, mark) if inv.spot == spot and inv.uids == stack)
    wrong, _ = await _sweeps(bench, layout, settled, count=2)
    if wrong:
        return fail(name, wrong)
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    return ok(name, f"all {STACK} UIDs on {_where(spot)} in every report, the first"
                    f" {seconds(first - placed_at)} after the stack was laid")


async def _garbage(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "garbage"
    missing = control(name, bench.simulator, "set_fault", "inject")
    if missing is not None:
        return missing
    few = spots[: min(len(spots), 6)]
    layout = _half_layout(few, chips)
    mark = bench.seen.mark()
    await _lay(bench, layout)
    if await _settle(bench, layout, mark) is None:
        return fail(name, "before the noise: " + _unsettled(bench, layout, mark))
    mark = bench.seen.mark()
    await bench.attempt("inject", "garbage")
    await bench.attempt("set_fault", "garbage", 0.5)
    try:  # a report the noise spoiled may be read again later: right, if late (D311)
        wrong, _ = await _sweeps(bench, layout, mark, every=False)
    finally:
        await bench.do("set_fault", "garbage", 0.0)
    kinds = kinds_since(bench, mark)
    if wrong:
        return fail(name, f"with noise on the line, {wrong}")
    bad = unexpected(kinds, NOISE)
    if bad:
        return fail(name, bad)
    noise = sum(k in NOISE for k in kinds)
    return ok(name, f"noise before half the frames for {_SWEEPS} sweeps: every report right,"
                    f" {noise} noise alert(s)")


async def _stall(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "stall"
    missing = control(name, bench.simulator, "set_fault")
    if missing is not None:
        return missing
    layout = _half_layout(spots[:2], chips)
    mark = bench.seen.mark()
    await _lay(bench, layout)
    if await _settle(bench, layout, mark) is None:
        return fail(name, "before the stall: " + _unsettled(bench, layout, mark))
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
    t_stall = next(at for at, a in _alerts(bench, mark) if a.kind == "stalled")
    back = bench.seen.mark()
    spoke_at = time.monotonic()
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, back)),
                                  bench.timeout):
        return fail(name, f"stalled alerted, but not back in {seconds(bench.timeout)} after"
                          " the reader spoke again")
    if await _settle(bench, layout, back) is None:
        return fail(name, "back, but " + _unsettled(bench, layout, back))
    bad = unexpected(kinds_since(bench, mark), UP | DOWN | NOISE | OUTAGE)
    if bad:
        return fail(name, bad)
    t_up = next(at for at, a in _alerts(bench, back) if a.kind in UP)
    return ok(name, f"stalled alert {seconds(t_stall - silent_at)} after the reader went"
                    f" silent; back {seconds(t_up - spoke_at)} after it spoke again")


def _alerts(bench: Bench, mark: int) -> list[tuple[float, DeviceAlert]]:
    return [(s.at, s.item) for s in bench.seen.since(mark, DeviceAlert)]


async def _unplug(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "unplug and reconnect"
    missing = control(name, bench.simulator, "unplug", "plug")
    if missing is not None:
        return missing
    layout = _half_layout(spots, chips)
    mark = bench.seen.mark()
    await _lay(bench, layout)
    if await _settle(bench, layout, mark) is None:
        return fail(name, "before the unplug: " + _unsettled(bench, layout, mark))
    mark = bench.seen.mark()
    pulled_at = time.monotonic()
    await bench.attempt("unplug")
    try:
        down = await bench.seen.until(lambda: any(k in DOWN for k in kinds_since(bench, mark)),
                                      bench.timeout)
    finally:
        await bench.do("plug")
    if not down:
        return fail(name, f"no disconnected alert in {seconds(bench.timeout)} after the unplug")
    t_down = next(at for at, a in _alerts(bench, mark) if a.kind in DOWN)
    back = bench.seen.mark()
    plugged_at = time.monotonic()
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, back)),
                                  bench.timeout):
        return fail(name, f"no reconnected alert in {seconds(bench.timeout)} after the plug")
    t_up = next(at for at, a in _alerts(bench, back) if a.kind in UP)
    settled = await _settle(bench, layout, back)
    if settled is None:
        return fail(name, "reconnected, but " + _unsettled(bench, layout, back))
    wrong, _ = await _sweeps(bench, layout, settled, count=2)
    if wrong:
        return fail(name, f"after reconnecting, {wrong}")
    bad = unexpected(kinds_since(bench, mark), UP | DOWN | OUTAGE)
    if bad:
        return fail(name, bad)
    return ok(name, f"disconnected alert {seconds(t_down - pulled_at)} after the unplug,"
                    f" reconnected {seconds(t_up - plugged_at)} after the plug, then full"
                    " sweeps")


async def _sweep_time(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    name = "sweep time"
    # Stacks from 1 to 20 chips, spread evenly over the spots (one spot: a stack of 20).
    last = len(spots) - 1
    layout = {spot: frozenset(chips.take(1 + (STACK - 1) * i // last if last else STACK))
              for i, spot in enumerate(spots)}
    total = sum(len(u) for u in layout.values())
    mark = bench.seen.mark()
    await _lay(bench, layout)
    settled = await _settle(bench, layout, mark)
    if settled is None:
        return fail(name, _unsettled(bench, layout, mark))
    wrong, period = await _sweeps(bench, layout, settled)
    if wrong:
        return fail(name, wrong)
    sizes = sorted(len(u) for u in layout.values())
    return ok(name, f"{seconds(period)} a sweep of {len(spots)} spots holding {total} chips"
                    f" (stacks of {sizes[0]}..{sizes[-1]})")


def _holds(bench: Bench, mark: int, spot: SpotId, uid: bytes) -> bool:
    return any(inv.spot == spot and uid in inv.uids for _, inv in _reports(bench, mark))


async def _to_report(bench: Bench, spots: Sequence[SpotId], chips: _Chips) -> Row:
    """Chips laid at three points of the sweep cycle: each one's time to its first report."""
    name = "chip to report"
    period = median(bench.figures.sweep_periods)
    spot = spots[0]
    await _lay(bench, {})
    for step in range(3):
        await bench.seen.pause(period * (step + 1) / 3)
        uid = chips.take(1)[0]
        mark = bench.seen.mark()
        placed_at = time.monotonic()
        await bench.do("place", spot.seat, spot.spot, uids=(uid,))
        if not await bench.seen.until(partial(_holds, bench, mark, spot, uid), bench.timeout):
            return fail(name, f"a chip laid on {_where(spot)} was not reported in"
                              f" {seconds(bench.timeout)}")
        first = next(at for at, inv in _reports(bench, mark)
                     if inv.spot == spot and uid in inv.uids)
        bench.figures.latencies.append(first - placed_at)
        await bench.do("remove", spot.seat, spot.spot, uids=(uid,))
    lat = bench.figures.latencies
    worst = max(lat)
    figure = f"{seconds(median(lat))} (worst {seconds(worst)}) over {len(lat)} chips laid"
    if period and worst > 2 * period + 0.25:
        return fail(name, f"{figure}: a chip took longer than two sweeps"
                          f" ({seconds(period)} each) to be reported")
    return ok(name, figure)
