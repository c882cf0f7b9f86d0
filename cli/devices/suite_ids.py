"""The conformance suite of an ID reader (role ``id_reader``), run on its simulator
(`drivers.adapter.SimulatedIds`): each check a `Row`.

A conforming ID reader driver reports each tap once, with the number and form tapped, and
never turns noise into a number (docs/protocols/writing-an-adapter.md). The checks:

- connect: a "connected" alert;
- tap: a card of each form the simulator can tap (track 2, a chip's UID, a plain number),
  each read once as tapped;
- repeated tap: the same card tapped twice, half a second apart: two readings;
- garbage: noise on the line is at most a "bad_read" / "bad_frame" alert; a tap the noise
  spoiled is alerted, never read as another number; the taps after it are read;
- unplug and reconnect: "disconnected" (or "lost"), "reconnected", then taps are read;
- timing: a tap's time to its reading.
"""

from __future__ import annotations

import time
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
from cli.devices.report import Row, fail, ok, skip
from drivers.readings import DeviceAlert, IdForm, IdTap, masked

__all__ = ["CARDS", "run_ids"]

# A card of each form (made-up numbers): what the kit taps.
CARDS: Final[tuple[tuple[str, IdForm], ...]] = (
    ("6280001234567890", "track2"), ("04A1B2C3D4E5F6", "uid"), ("7012345678", "plain"))
_REPEAT_GAP: Final = 0.5


def _taps(bench: Bench, mark: int) -> list[tuple[float, IdTap]]:
    return [(s.at, s.item) for s in bench.seen.since(mark, IdTap)]


class _Tapper:
    """Taps cards through the simulator, keeping the forms it can tap and the timings."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.forms: list[tuple[str, IdForm]] = []
        self.latencies: list[float] = []

    async def tap(self, number: str, form: IdForm) -> tuple[float, IdTap] | None:
        """Tap once; the first reading after it, or None."""
        mark = self.bench.seen.mark()
        tapped = time.monotonic()
        await self.bench.do("tap", number, form)
        await self.bench.seen.until(lambda: bool(_taps(self.bench, mark)), self.bench.timeout)
        got = _taps(self.bench, mark)
        if got:
            self.latencies.append(got[0][0] - tapped)
        return got[0] if got else None


def _same(tap: IdTap, number: str, form: IdForm) -> bool:
    return tap.number == number and tap.form == form


async def run_ids(bench: Bench) -> list[Row]:
    """Every check of an ID reader, in order."""
    rows = [await guard("connect", connected(bench))]
    missing = control("tap", bench.simulator, "tap")
    if missing is not None:
        return [*rows, *(skip(n, missing.detail) for n in (
            "tap", "repeated tap", "garbage", "unplug and reconnect", "tap to reading"))]
    tapper = _Tapper(bench)
    rows.append(await guard("tap", _tap(bench, tapper)))
    if not tapper.forms:
        return [*rows, *(fail(n, "no tap was read") for n in (
            "repeated tap", "garbage", "unplug and reconnect", "tap to reading"))]
    rows.append(await guard("repeated tap", _repeated(bench, tapper)))
    rows.append(await guard("garbage", _garbage(bench, tapper)))
    rows.append(await guard("unplug and reconnect", _unplug(bench, tapper)))
    rows.append(_timing(tapper))
    return rows


async def _tap(bench: Bench, tapper: _Tapper) -> Row:
    name = "tap"
    mark = bench.seen.mark()
    refused: list[str] = []
    for number, form in CARDS:
        try:
            got = await tapper.tap(number, form)
        except (ValueError, NotImplementedError, LookupError):
            refused.append(form)  # this reader's simulator cannot tap such a card
            continue
        if got is None:
            return fail(name, f"a {form} card tapped ({masked(number)}) was not read in"
                              f" {seconds(bench.timeout)}")
        if not _same(got[1], number, form):
            return fail(name, f"a {form} card {masked(number)} was read as {got[1].form}"
                              f" {masked(got[1].number)}")
        tapper.forms.append((number, form))
    await bench.seen.pause(0.1)
    if not tapper.forms:
        return fail(name, f"the simulator tapped no card (it refused {', '.join(refused)})")
    taps = _taps(bench, mark)
    if len(taps) != len(tapper.forms):
        return fail(name, f"{len(tapper.forms)} cards tapped, {len(taps)} readings")
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    forms = ", ".join(f for _, f in tapper.forms)
    more = f"; the simulator taps no {', '.join(refused)} card" if refused else ""
    return ok(name, f"{forms}: each read once, as tapped{more}")


async def _repeated(bench: Bench, tapper: _Tapper) -> Row:
    name = "repeated tap"
    number, form = tapper.forms[0]
    mark = bench.seen.mark()
    await bench.do("tap", number, form)
    await bench.seen.pause(_REPEAT_GAP)
    await bench.do("tap", number, form)
    await bench.seen.until(lambda: len(_taps(bench, mark)) >= 2, bench.timeout)
    await bench.seen.pause(0.1)
    taps = [t for _, t in _taps(bench, mark)]
    if len(taps) != 2 or not all(_same(t, number, form) for t in taps):
        return fail(name, f"the same card tapped twice {seconds(_REPEAT_GAP)} apart gave"
                          f" {len(taps)} reading(s)")
    bad = unexpected(kinds_since(bench, mark), frozenset())
    if bad:
        return fail(name, bad)
    return ok(name, f"tapped twice {seconds(_REPEAT_GAP)} apart: two readings")


async def _garbage(bench: Bench, tapper: _Tapper) -> Row:
    name = "garbage"
    missing = control(name, bench.simulator, "inject")
    if missing is not None:
        return missing
    number, form = tapper.forms[0]
    other, other_form = tapper.forms[-1]
    mark = bench.seen.mark()
    await bench.attempt("inject", "garbage")  # noise on the line before the next tap
    await bench.do("tap", number, form)
    await bench.seen.until(lambda: bool(_taps(bench, mark)) or any(
        k in NOISE for k in kinds_since(bench, mark)), bench.timeout)
    await bench.seen.pause(0.6)  # a reader gives up a half line after a moment
    after = bench.seen.mark()
    await bench.do("tap", other, other_form)
    await bench.seen.until(lambda: bool(_taps(bench, after)), bench.timeout)
    await bench.seen.pause(0.1)
    spoiled = _taps(bench, mark)[: len(_taps(bench, mark)) - len(_taps(bench, after))]
    kinds = kinds_since(bench, mark)
    wrong = [t for _, t in spoiled if not _same(t, number, form)]
    if wrong:
        return fail(name, f"noise was read as a card: {masked(wrong[0].number)}"
                          f" ({wrong[0].form})")
    if len(spoiled) > 1:
        return fail(name, f"one tap after the noise gave {len(spoiled)} readings")
    noise = sum(k in NOISE for k in kinds)
    if not spoiled and not noise:
        return fail(name, "the tap behind the noise was lost without an alert")
    clean = _taps(bench, after)
    if len(clean) != 1 or not _same(clean[0][1], other, other_form):
        return fail(name, f"the next tap after the noise gave {len(clean)} reading(s)")
    bad = unexpected(kinds, NOISE)
    if bad:
        return fail(name, bad)
    first = "read right" if spoiled else "lost, with a bad-read alert"
    return ok(name, f"the tap behind the noise {first}; the next read right; {noise} noise"
                    " alert(s)")


async def _unplug(bench: Bench, tapper: _Tapper) -> Row:
    name = "unplug and reconnect"
    missing = control(name, bench.simulator, "unplug", "plug")
    if missing is not None:
        return missing
    mark = bench.seen.mark()
    pulled = time.monotonic()
    await bench.attempt("unplug")
    try:
        down = await bench.seen.until(lambda: any(k in DOWN for k in kinds_since(bench, mark)),
                                      bench.timeout)
    finally:
        await bench.do("plug")
    if not down:
        return fail(name, f"no disconnected alert in {seconds(bench.timeout)} after the unplug")
    t_down = next(s.at for s in bench.seen.since(mark, DeviceAlert) if s.item.kind in DOWN)
    back = bench.seen.mark()
    plugged = time.monotonic()
    if not await bench.seen.until(lambda: any(k in UP for k in kinds_since(bench, back)),
                                  bench.timeout):
        return fail(name, f"no reconnected alert in {seconds(bench.timeout)} after the plug")
    t_up = next(s.at for s in bench.seen.since(back, DeviceAlert) if s.item.kind in UP)
    number, form = tapper.forms[0]
    got = await tapper.tap(number, form)
    if got is None or not _same(got[1], number, form):
        return fail(name, "reconnected, but a tap was not read")
    bad = unexpected(kinds_since(bench, mark), UP | DOWN | OUTAGE)
    if bad:
        return fail(name, bad)
    return ok(name, f"disconnected alert {seconds(t_down - pulled)} after the unplug,"
                    f" reconnected {seconds(t_up - plugged)} after the plug, then read a tap")


def _timing(tapper: _Tapper) -> Row:
    name = "tap to reading"
    lat = tapper.latencies
    if not lat:
        return fail(name, "no tap was timed")
    return ok(name, f"{seconds(median(lat))} (worst {seconds(max(lat))}) over {len(lat)} taps")


