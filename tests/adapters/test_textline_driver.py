"""The example text-line shoe end to end, in process: its real driver (`TextLineShoe`, pyserial)
on its simulator's real pty. Cards arrive in order with the driver's read index; a line that
is no card is an unreadable card and a bad_frame alert, and the next card still arrives; an
unplugged shoe loses the cards dealt meanwhile, and its return says so (reconnected, then
reads_lost); a silent shoe that sends idle lines is stalled, and its return says so too.

`asyncio.timeout` around each wait is a safety net against hangs, never a measurement.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from showdown_textline_shoe.driver import COUNTERS, TextLineShoe
from showdown_textline_shoe.simulator import TextLineShoeSimulator

from drivers.adapter import SimulatedShoe
from drivers.protocols import CardReader, ShoeReading
from drivers.readings import CardReading, DeviceAlert, ShoeState, ShoeStatus
from game.poker.cards import parse_cards
from runtime.backoff import Backoff

WAIT = 15.0  # seconds before a wait is declared hung (a safety net, not a measurement)


def fast_shoe(url: str | Callable[[], str], **options: object) -> TextLineShoe:
    return TextLineShoe(url, name="shoe-t01",
                        backoff=Backoff(initial=0.01, maximum=0.05, rng=random.Random(7)),
                        line_timeout=0.2, read_timeout=0.02, **options)  # type: ignore[arg-type]


@pytest.fixture
def sim() -> Iterator[TextLineShoeSimulator]:
    with TextLineShoeSimulator(seed=11) as shoe:
        yield shoe


class Seen:
    """Reads a CardReader in the background of a test and keeps everything it yielded."""

    def __init__(self, reader: CardReader) -> None:
        self._it: AsyncIterator[ShoeReading] = aiter(reader)
        self.seen: list[ShoeReading] = []

    async def until(self, done: Callable[[Seen], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not done(self):
                self.seen.append(await anext(self._it))

    async def cards_n(self, n: int) -> list[CardReading]:
        await self.until(lambda s: len(s.cards()) >= n)
        return self.cards()

    async def alert(self, kind: str, count: int = 1) -> list[DeviceAlert]:
        await self.until(lambda s: len(s.alerts(kind)) >= count)
        return self.alerts(kind)

    def cards(self) -> list[CardReading]:
        return [r for r in self.seen if isinstance(r, CardReading)]

    def alerts(self, kind: str | None = None) -> list[DeviceAlert]:
        return [r for r in self.seen
                if isinstance(r, DeviceAlert) and (kind is None or r.kind == kind)]

    def kinds(self) -> list[str]:
        return [r.kind if isinstance(r, DeviceAlert) else type(r).__name__ for r in self.seen]


def test_the_simulator_gives_the_conformance_kit_its_controls(
        sim: TextLineShoeSimulator) -> None:
    assert isinstance(sim, SimulatedShoe)
    with pytest.raises(ValueError, match="no fault 'drop_incoming'"):
        sim.set_fault("drop_incoming", 0.5)
    with pytest.raises(ValueError, match=r"fault drop must be within 0\.\.1"):
        sim.set_fault("drop", 2)
    with pytest.raises(ValueError, match="fault silent is on or off"):
        sim.set_fault("silent", 0.5)
    with pytest.raises(ValueError, match="unknown one-shot fault 'delay'"):
        sim.inject("delay")


async def test_cards_arrive_in_order_with_the_drivers_read_index(
        sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        (connected,) = await seen.alert("connected")
        assert sim.path is not None
        assert sim.path in connected.detail
        dealt = [*sim.deal(5), sim.deal_card("10h")]
        cards = await seen.cards_n(6)
        health = shoe.health()
    assert [c.card for c in cards] == dealt
    assert dealt[-1] == parse_cards("Th")[0]
    assert [c.read_index for c in cards] == list(range(6))
    assert {(c.device, c.session, c.quality, c.source) for c in cards} == {
        ("shoe-t01", None, 100, "device")}
    assert health.connected
    assert health.device == "shoe-t01"
    assert set(health.counters) == set(COUNTERS)
    assert health.counters["cards"] == 6
    assert health.counters["bad_lines"] == health.counters["link_gaps"] == 0
    assert health.last_seen_mono == cards[-1].at_mono


async def test_a_whole_deck_in_every_style_a_reader_writes() -> None:
    with TextLineShoeSimulator(seed=5, style="mixed", ending=b"\r") as sim:
        async with fast_shoe(lambda: sim.path or "") as shoe:
            seen = Seen(shoe)
            await seen.alert("connected")
            dealt = sim.deal(52)
            cards = await seen.cards_n(52)
    assert [c.card for c in cards] == dealt
    assert sorted(dealt) == sorted(parse_cards("2c 2d 2h 2s 3c 3d 3h 3s 4c 4d 4h 4s 5c 5d 5h 5s"
                                               " 6c 6d 6h 6s 7c 7d 7h 7s 8c 8d 8h 8s 9c 9d 9h 9s"
                                               " Tc Td Th Ts Jc Jd Jh Js Qc Qd Qh Qs Kc Kd Kh Ks"
                                               " Ac Ad Ah As"))
    assert seen.alerts("bad_frame") == []


async def test_a_line_that_is_no_card_is_an_unreadable_card_and_the_next_still_arrives(
        sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        await seen.alert("connected")
        sim.inject("garbage")  # a line of noise before the card: the card still reads
        first = sim.deal_card("As")
        sim.inject("corrupt")  # the card's own line garbled: that card is not read
        sim.deal_card("Kd")
        last = sim.deal_card("7c")
        await seen.cards_n(2)
        await seen.alert("bad_frame", 2)
        health = shoe.health()
    assert [c.card for c in seen.cards()] == [first, last]
    assert [c.read_index for c in seen.cards()] == [0, 1]  # the lost card took no index
    statuses = [r for r in seen.seen if isinstance(r, ShoeStatus)]
    assert [s.state for s in statuses] == [ShoeState.UNREADABLE_CARD] * 2
    assert all("if a card just left the shoe, key it" in s.detail for s in statuses)
    assert seen.kinds() == ["connected", "ShoeStatus", "bad_frame", "CardReading",
                            "ShoeStatus", "bad_frame", "CardReading"]
    assert "1 bad lines so far" in seen.alerts("bad_frame")[0].detail
    assert health.counters["bad_lines"] == 2
    assert health.connected


async def test_a_half_line_is_given_up_and_swallows_no_card(
        sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        await seen.alert("connected")
        sim.send_raw(b"Q")  # and no line end ever comes
        (given_up,) = await seen.alert("bad_frame")
        card = sim.deal_card("Qs")
        (read,) = await seen.cards_n(1)
    assert given_up.detail.startswith("a line left unfinished (no line end): 'Q' is not a card")
    assert read.card == card


async def test_a_repeated_line_is_delivered_as_read_for_the_table_to_judge(
        sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        await seen.alert("connected")
        sim.inject("repeat")
        card = sim.deal_card("9d")
        cards = await seen.cards_n(2)
    assert [(c.card, c.read_index) for c in cards] == [(card, 0), (card, 1)]


async def test_an_unplugged_shoe_loses_its_cards_and_its_return_says_so(
        sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        await seen.alert("connected")
        before = sim.deal_card("2c")
        await seen.cards_n(1)
        sim.unplug()
        await seen.alert("disconnected")
        assert not shoe.health().connected
        sim.deal_card("3c")  # dealt while the cable is out: lost
        sim.plug()
        (back,) = await seen.alert("reconnected")
        (lost,) = await seen.alert("reads_lost")
        after = sim.deal_card("4c")
        cards = await seen.cards_n(2)
        health = shoe.health()
    assert [(c.card, c.read_index) for c in cards] == [(before, 0), (after, 1)]
    assert sim.stats["lost_unplugged"] == 1
    assert seen.kinds() == ["connected", "CardReading", "disconnected", "reconnected",
                            "reads_lost", "CardReading"]
    assert sim.path is not None
    assert sim.path in back.detail
    assert lost.detail.startswith("the link was down ")
    assert "key any that is missing, then clear the fault" in lost.detail
    assert health.counters["disconnects"] == health.counters["reconnects"] == 1
    assert health.counters["link_gaps"] == 1
    assert health.connected


async def test_an_absent_shoe_is_reported_once_and_found_when_it_appears() -> None:
    sim = TextLineShoeSimulator(seed=3)
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        (absent,) = await seen.alert("disconnected")
        await asyncio.sleep(0.2)  # several attempts: still one alert
        with sim:
            await seen.alert("connected")
            card = sim.deal_card("Jh")
            (read,) = await seen.cards_n(1)
    assert "found no device" in absent.detail
    assert seen.kinds() == ["disconnected", "connected", "CardReading"]
    assert read.card == card


async def test_a_silent_shoe_with_idle_lines_is_stalled_and_its_return_says_so() -> None:
    with TextLineShoeSimulator(seed=4, idle_interval=0.1) as sim:
        async with fast_shoe(lambda: sim.path or "", stall_seconds=0.8) as shoe:
            seen = Seen(shoe)
            await seen.alert("connected")
            await asyncio.sleep(1.0)  # idle lines keep it alive: no stall
            sim.set_fault("silent", True)
            (stalled,) = await seen.alert("stalled")
            sim.deal_card("5s")  # read by a hung shoe: lost
            sim.set_fault("silent", False)
            await seen.alert("reads_lost")
            card = sim.deal_card("6s")
            (read,) = await seen.cards_n(1)
            health = shoe.health()
    assert seen.kinds() == ["connected", "stalled", "reconnected", "reads_lost", "CardReading"]
    assert stalled.detail.endswith("(the shoe's idle line is missing)")
    assert (read.card, read.read_index) == (card, 0)
    assert health.counters["stalls"] == health.counters["link_gaps"] == 1
    assert health.counters["idle_lines"] >= 3
    assert sim.stats["lost_silent"] == 1


async def test_without_stall_seconds_silence_is_no_fault(sim: TextLineShoeSimulator) -> None:
    async with fast_shoe(lambda: sim.path or "") as shoe:
        seen = Seen(shoe)
        await seen.alert("connected")
        await asyncio.sleep(0.3)
        card = sim.deal_card("8h")
        await seen.cards_n(1)
    assert seen.kinds() == ["connected", "CardReading"]
    assert seen.cards()[0].card == card
