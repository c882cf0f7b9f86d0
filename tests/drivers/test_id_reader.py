"""The ID reader driver end to end: the real SerialIdReader (pyserial) on the simulator's real
pty. A tap arrives as an IdTap; garbage, a half line and an overlong line are bad_read alerts
and the next tap still arrives; unplugging is a "lost" alert, replugging "reconnected", and
taps flow again; an absent reader is "not_found" once, then found.

`asyncio.timeout` around each wait is a safety net against hangs, never a measurement.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from drivers.id_reader import SerialIdReader
from drivers.protocols import IdReader, IdReading
from drivers.readings import DeviceAlert, IdTap
from runtime.backoff import Backoff
from simulators.id_reader import IdReaderSimulator

WAIT = 15.0  # seconds before a wait is declared hung (a safety net, not a measurement)
PAN = "6012345678901234"


def fast_reader(url: str | Callable[[], str], **options: object) -> SerialIdReader:
    return SerialIdReader(url, device_name="table-ids",
                          backoff=Backoff(initial=0.01, maximum=0.05, rng=random.Random(7)),
                          line_timeout=0.1, **options)  # type: ignore[arg-type]


@pytest.fixture
def sim() -> Iterator[IdReaderSimulator]:
    with IdReaderSimulator() as reader:
        yield reader


class Seen:
    """Reads an IdReader in the background of a test and keeps everything it yielded."""

    def __init__(self, reader: IdReader) -> None:
        self._it: AsyncIterator[IdReading] = aiter(reader)
        self.seen: list[IdReading] = []

    async def until(self, done: Callable[[Seen], bool]) -> None:
        async with asyncio.timeout(WAIT):
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
    return [(t.number, t.form) for t in taps]


async def test_each_form_tapped_arrives_as_an_id_tap(sim: IdReaderSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as reader:
        seen = Seen(reader)
        (connected,) = await seen.alert("connected")
        assert sim.path is not None
        assert sim.path in connected.detail
        sim.tap(PAN)
        sim.tap("04a1b2c3d4e5f6", "uid")
        sim.tap("12345678", "plain")
        taps = await seen.taps_n(3)
        health = reader.health()
    assert numbers(taps) == [(PAN, "track2"), ("04A1B2C3D4E5F6", "uid"), ("12345678", "plain")]
    assert {t.device for t in taps} == {"table-ids"}
    assert health.connected
    assert health.last_seen_mono is not None
    assert health.counters["taps"] == 3
    assert health.counters["bad_reads"] == 0


async def test_garbage_is_a_bad_read_alert_and_the_next_tap_still_arrives(
        sim: IdReaderSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        sim.send_raw(b"\x00\xffnot a card\r\n")
        sim.send_raw(b";E?\r\n")  # the reader's own "swipe failed"
        sim.send_raw(b"9" * 400 + b"\n")  # past the 128-byte cap
        sim.tap(PAN)
        await seen.taps_n(1)
        bad = seen.alerts("bad_read")
        health = reader.health()
    assert [a.detail for a in bad] == [
        "byte 0x00 at position 0 is not printable ASCII",
        "the reader reports a failed swipe (;E?)",
        "a line longer than 128 bytes (dropped up to its line end)",
    ]
    assert numbers(seen.taps()) == [(PAN, "track2")]
    assert health.counters["bad_reads"] == 3
    assert health.connected


async def test_a_half_line_left_unfinished_is_given_up_and_swallows_no_card(
        sim: IdReaderSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        sim.send_raw(b";60123")  # noise, and no line end ever comes
        (given_up,) = await seen.alert("bad_read")
        sim.tap(PAN)
        taps = await seen.taps_n(1)
    assert given_up.detail == "a line of 6 bytes never ended"
    assert numbers(taps) == [(PAN, "track2")]


async def test_unplug_is_lost_replug_is_reconnected_and_taps_flow_again(
        sim: IdReaderSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        sim.tap("11111111", "plain")
        await seen.taps_n(1)
        sim.unplug()
        await seen.alert("lost")
        assert not reader.health().connected
        new_path = sim.replug()
        (back,) = await seen.alert("reconnected")
        sim.tap("22222222", "plain")
        taps = await seen.taps_n(2)
        health = reader.health()
    assert new_path in back.detail
    assert numbers(taps) == [("11111111", "plain"), ("22222222", "plain")]
    assert [a.kind for a in seen.alerts()] == ["connected", "lost", "reconnected"]
    assert health.connected
    assert (health.counters["reconnects"], health.counters["disconnects"]) == (1, 1)


async def test_a_reader_absent_at_start_is_not_found_once_then_found() -> None:
    with IdReaderSimulator() as sim:
        sim.unplug()  # nothing at the path when the daemon starts
        async with fast_reader(lambda: sim.path or "") as reader:
            seen = Seen(reader)
            await seen.alert("not_found")
            await asyncio.sleep(0.2)  # several attempts under backoff: still one alert
            sim.replug()
            await seen.alert("connected")
            sim.tap(PAN)
            await seen.taps_n(1)
    assert [a.kind for a in seen.alerts()] == ["not_found", "connected"]
    assert "no device" in seen.alerts("not_found")[0].detail


async def test_a_fixed_path_that_does_not_open_is_not_found() -> None:
    async with fast_reader("/dev/nonexistent-id-reader") as reader:
        seen = Seen(reader)
        (alert,) = await seen.alert("not_found")
        assert not reader.health().connected
    assert "cannot open /dev/nonexistent-id-reader" in alert.detail


async def test_the_reader_is_not_reentrant_and_iterates_only_inside_its_block(
        sim: IdReaderSimulator) -> None:
    reader = fast_reader(lambda: sim.path or "")
    with pytest.raises(RuntimeError, match="async with"):
        await anext(aiter(reader))
    async with reader:
        with pytest.raises(RuntimeError, match="not reentrant"):
            await reader.__aenter__()


async def test_the_iteration_ends_when_the_block_ends(sim: IdReaderSimulator) -> None:
    reader = fast_reader(lambda: sim.path or "")
    async with reader:
        seen = Seen(reader)
        await seen.alert("connected")
    rest = [r async for r in reader]
    assert rest == []


async def test_logs_show_card_numbers_masked(sim: IdReaderSimulator,
                                             log_events: list[dict[str, object]]) -> None:
    async with fast_reader(lambda: sim.path or "") as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        sim.tap(PAN)
        await seen.taps_n(1)
    reads = [e for e in log_events if e["event"] == "id card read"]
    assert [e["number"] for e in reads] == ["****1234"]
    assert all(PAN not in str(e) for e in log_events)
