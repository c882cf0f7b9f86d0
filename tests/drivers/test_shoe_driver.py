"""The shoe driver end to end: the real SerialCardReader (pyserial) on the simulator's real pty,
one test per injected fault, each asserting that no card is lost, doubled or reordered and that
the alerts and counters show what happened. Plus manual entry (the sans-I/O ShoeLink has its
own file, test_shoe_link.py).

Timeouts are short (stall 0.4 s, heartbeat 0.05 s) to keep the file fast; `asyncio.timeout`
around each wait is a safety net against hangs, never an assertion about speed.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drivers.manual import ManualCardReader
from drivers.protocols import CardReader, ShoeReading
from drivers.readings import CardReading, DeviceAlert, ShoeState, ShoeStatus
from drivers.shoe import SerialCardReader
from game.errors import InvalidCard
from game.poker.cards import Card, parse_card
from runtime.backoff import Backoff
from simulators.shoe import ShoeSimulator

FAST: dict[str, Any] = {"stall_timeout": 0.4, "identify_timeout": 0.2, "identify_attempts": 2,
                        "idle_resync": 0.05, "nak_holdoff": 0.05}
WAIT = 15.0  # seconds before a wait is declared hung (a safety net, not a measurement)


def fast_reader(url: str | Callable[[], str], **options: Any) -> SerialCardReader:
    return SerialCardReader(url, backoff=Backoff(initial=0.01, maximum=0.05,
                                                 rng=random.Random(7)), **(FAST | options))


@pytest.fixture
def sim() -> Iterator[ShoeSimulator]:
    with ShoeSimulator(seed=11, heartbeat_interval=0.05, rto=0.05, rto_max=0.2) as shoe:
        yield shoe


class Tap:
    """Reads a CardReader in the background of a test and keeps everything it yielded."""

    def __init__(self, reader: CardReader) -> None:
        self._it: AsyncIterator[ShoeReading] = aiter(reader)
        self.seen: list[ShoeReading] = []

    async def until(self, done: Callable[[Tap], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not done(self):
                self.seen.append(await anext(self._it))

    async def cards_n(self, n: int) -> list[CardReading]:
        await self.until(lambda t: len(t.cards()) >= n)
        return self.cards()

    async def alert(self, kind: str, count: int = 1) -> None:
        await self.until(lambda t: len(t.alerts(kind)) >= count)

    def cards(self) -> list[CardReading]:
        return [r for r in self.seen if isinstance(r, CardReading)]

    def alerts(self, kind: str | None = None) -> list[DeviceAlert]:
        return [r for r in self.seen
                if isinstance(r, DeviceAlert) and (kind is None or r.kind == kind)]

    def statuses(self) -> list[ShoeStatus]:
        return [r for r in self.seen if isinstance(r, ShoeStatus)]


def read_list(cards: list[CardReading]) -> list[tuple[int, Card]]:
    return [(c.read_index, c.card) for c in cards]


async def wait_for(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.01)


async def connected(tap: Tap, sim: ShoeSimulator) -> None:
    """Wait until the reader is connected and the shoe's first event is acknowledged."""
    await tap.until(lambda t: bool(t.statuses()))
    await wait_for(lambda: sim.unacked() == 0)


async def settle_with_sentinel(sim: ShoeSimulator, tap: Tap) -> list[tuple[int, Card]]:
    """Clear the faults, deal one more card and read up to it: every earlier card, exactly."""
    sim.faults.clear()
    sentinel = sim.deal(1)[0]
    total = len(sim.dealt)
    cards = await tap.cards_n(total)
    assert cards[-1].card == sentinel
    return read_list(cards)


# ------------------------------------------------------------------------------ clean operation


async def test_reads_a_seeded_shoe_in_order(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        dealt = sim.deal(10)
        cards = await tap.cards_n(10)
        assert [c.card for c in cards] == dealt
        assert [c.read_index for c in cards] == list(range(10))
        assert all(c.device == "SIM-000001" and c.source == "device" for c in cards)
        assert all(90 <= c.quality <= 100 for c in cards)
        assert tap.alerts()[0].kind == "connected"
        assert tap.statuses()[0].state is ShoeState.READY
        await wait_for(lambda: sim.unacked() == 0)
        health = shoe.health()
        assert health.connected
        assert health.identity is not None
        assert (health.identity.kind, health.identity.serial) == ("shoe", "SIM-000001")
        assert health.counters["cards"] == 10
        assert health.counters["bad_frames"] == 0
        assert health.counters["reconnects"] == 0


async def test_status_changes_arrive_in_order_among_the_cards(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(1)
        sim.set_state("cover_open")
        sim.set_state("ready")
        lost = sim.unreadable()
        sim.deal(1)
        sim.set_state(ShoeState.JAM)
        await tap.until(lambda t: len(t.statuses()) >= 6)
        kinds = [r.state.value if isinstance(r, ShoeStatus) else "card"
                 for r in tap.seen if not isinstance(r, DeviceAlert)]
        assert kinds == ["ready", "card", "cover_open", "ready", "unreadable_card", "ready",
                         "card", "jam"]
        assert lost is not None
        assert lost not in [c.card for c in tap.cards()]  # the unreadable card is not invented
        assert [c.read_index for c in tap.cards()] == [0, 1]


async def test_the_shoe_may_be_plugged_in_after_the_reader_starts() -> None:
    sim = ShoeSimulator(seed=3, heartbeat_interval=0.05, rto=0.05)
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await tap.alert("disconnected")
        assert not shoe.health().connected
        with sim:
            sim.deal(2)
            cards = await tap.cards_n(2)
            assert read_list(cards) == sim.dealt
            assert [a.kind for a in tap.alerts()] == ["disconnected", "connected"]


async def test_any_pyserial_url_works_here_a_tcp_serial_server(sim: ShoeSimulator) -> None:
    """`socket://` as a terminal server (RFC 2217-less ser2net) would give it; the bridge here
    copies bytes between a TCP connection and the simulator's pty."""
    loop = asyncio.get_running_loop()

    async def bridge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert sim.path is not None
        fd = os.open(sim.path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        loop.add_reader(fd, lambda: writer.write(os.read(fd, 4096)))
        try:
            while data := await reader.read(4096):
                os.write(fd, data)
        finally:
            loop.remove_reader(fd)
            os.close(fd)
            writer.close()

    server = await asyncio.start_server(bridge, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, fast_reader(f"socket://127.0.0.1:{port}") as shoe:
        tap = Tap(shoe)
        sim.deal(3)
        cards = await tap.cards_n(3)
        assert read_list(cards) == sim.dealt
        assert shoe.health().connected


# ------------------------------------------------------------------------------ line faults


async def test_corrupt_frames_are_counted_and_their_cards_resent(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.inject("corrupt", 3)
        sim.deal(6)
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        counters = shoe.health().counters
        assert counters["bad_frames"] >= 3
        assert counters["retransmits"] >= 1
        assert tap.alerts("bad_frame")  # the first one is reported; the counters hold the rest


async def test_dropped_frames_are_detected_and_resent(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.inject("drop", 2)
        sim.deal(5)
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        counters = shoe.health().counters
        assert counters["frames_lost"] >= 2
        assert counters["retransmits"] >= 1


async def test_a_dropped_last_card_is_still_delivered(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(2)
        await tap.cards_n(2)
        sim.faults.inject("drop", 1)
        sim.deal(1)  # nothing follows it but heartbeats
        cards = await tap.cards_n(3)
        assert read_list(cards) == sim.dealt
        assert shoe.health().counters["retransmits"] >= 1


async def test_duplicated_frames_are_delivered_once(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.inject("duplicate", 3)
        sim.deal(4)
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        assert shoe.health().counters["duplicates_dropped"] >= 3


async def test_lost_acks_make_the_shoe_resend_and_the_driver_dedupe(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.drop_incoming = 1.0
        sim.deal(3)
        await tap.cards_n(3)
        await wait_for(lambda: shoe.health().counters["duplicates_dropped"] >= 3)
        assert sim.unacked() == 3
        sim.faults.drop_incoming = 0.0
        await wait_for(lambda: sim.unacked() == 0)
        assert await settle_with_sentinel(sim, tap) == sim.dealt


async def test_noise_between_frames_is_skipped(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.inject("garbage", 4)
        sim.deal(4)
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        counters = shoe.health().counters
        assert counters["skipped_bytes"] + counters["bad_frames"] >= 4


async def test_every_fault_at_once(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        for name in ("corrupt", "drop", "duplicate", "garbage", "drop_incoming", "repeat"):
            sim.faults.set(name, 0.15)
        for _ in range(6):
            sim.deal(5)
            await asyncio.sleep(0.02)  # pacing: bursts apart, so faults fall between them too
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        assert len(sim.dealt) == 31


# ------------------------------------------------------------------------------ device faults


async def test_silence_is_reported_stalled_and_recovered(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(1)
        await tap.cards_n(1)
        sim.faults.silent = True
        sim.deal(2)  # read while the firmware is hung: queued in the shoe
        await tap.alert("stalled")
        assert not shoe.health().connected
        sim.faults.silent = False
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        counters = shoe.health().counters
        assert counters["stalls"] >= 1
        assert counters["reconnects"] >= 1
        assert shoe.health().connected


async def test_slow_responses_within_the_timeouts_are_tolerated() -> None:
    with ShoeSimulator(seed=5, heartbeat_interval=0.05, rto=0.3, rto_max=0.6) as sim:
        sim.faults.delay = 0.1  # every frame, the IDENTITY answer included, comes 100 ms late
        async with fast_reader(lambda: sim.path or "") as shoe:
            tap = Tap(shoe)
            sim.deal(5)
            assert await settle_with_sentinel(sim, tap) == sim.dealt
            assert [a.kind for a in tap.alerts()] == ["connected"]


async def test_a_too_slow_shoe_is_reported_stalled_and_recovers(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.delay = 0.8  # longer than the stall timeout
        sim.deal(1)
        await tap.alert("stalled")
        sim.faults.delay = 0.0
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt


async def test_reconnects_after_an_unplug_through_the_resolver(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(2)
        await tap.cards_n(2)
        sim.disconnect()
        await tap.alert("disconnected")
        assert not shoe.health().connected
        sim.deal(2)  # dealt while unplugged: the shoe keeps them
        assert sim.path is None
        sim.reconnect()
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        counters = shoe.health().counters
        assert (counters["disconnects"], counters["reconnects"]) == (1, 1)


async def test_follows_a_re_enumeration_to_a_new_pty_path(sim: ShoeSimulator) -> None:
    """The shoe comes back under a new name while the driver still holds the old one."""
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(2)
        await tap.cards_n(2)
        old = sim.path
        sim.faults.drop = 1.0
        sim.deal(1)  # not received before the re-enumeration
        new = sim.replug()
        sim.faults.drop = 0.0
        assert new != old
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        assert shoe.health().counters["reconnects"] == 1


async def test_reconnects_through_a_stable_symlink(tmp_path: Path) -> None:
    link = tmp_path / "cardshoe"
    with ShoeSimulator(seed=8, heartbeat_interval=0.05, rto=0.05, link_path=link) as sim:
        assert os.readlink(link) == sim.path
        async with fast_reader(str(link)) as shoe:
            tap = Tap(shoe)
            sim.deal(1)
            await tap.cards_n(1)
            sim.disconnect()
            assert not link.exists()
            await tap.alert("disconnected")
            new = sim.reconnect()
            assert os.readlink(link) == new
            await tap.alert("reconnected")
            assert await settle_with_sentinel(sim, tap) == sim.dealt


async def test_unplugged_while_a_delivered_card_is_unacked(sim: ShoeSimulator) -> None:
    """The ACK is lost, the line drops, the shoe resends after reconnecting: delivered once."""
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await connected(tap, sim)
        sim.faults.drop_incoming = 1.0
        sim.deal(1)
        await tap.cards_n(1)
        assert sim.unacked() == 1
        sim.disconnect()
        await tap.alert("disconnected")
        sim.faults.drop_incoming = 0.0
        sim.reconnect()
        await tap.alert("reconnected")
        await wait_for(lambda: sim.unacked() == 0)
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        assert shoe.health().counters["duplicates_dropped"] >= 1


async def test_unplugged_before_a_card_reached_the_host(sim: ShoeSimulator) -> None:
    """The card frame never arrives, the line drops: the card comes after reconnecting."""
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(1)
        await tap.cards_n(1)
        sim.faults.drop = 1.0
        sim.deal(1)
        sim.disconnect()
        await tap.alert("disconnected")
        assert len(tap.cards()) == 1
        sim.faults.drop = 0.0
        sim.reconnect()
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt


async def test_a_card_acked_before_the_drop_is_not_repeated(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        sim.deal(2)
        await tap.cards_n(2)
        await wait_for(lambda: sim.unacked() == 0)
        sim.disconnect()
        await tap.alert("disconnected")
        sim.reconnect()
        await tap.alert("reconnected")
        assert await settle_with_sentinel(sim, tap) == sim.dealt
        assert shoe.health().counters["duplicates_dropped"] == 0


async def test_a_card_read_twice_is_dropped_but_a_genuine_duplicate_is_passed_on(
    sim: ShoeSimulator,
) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        first = sim.deal(3)
        await tap.cards_n(3)
        sim.resend_read(1)  # the same read (same read index) reported again
        sim.faults.inject("repeat")  # the next read is reported twice by the firmware
        sim.deal(1)
        sim.deal_card(first[0])  # the same card value drawn again: a new read
        cards = await settle_with_sentinel(sim, tap)
        assert cards == sim.dealt
        assert [i for i, _ in cards] == [0, 1, 2, 3, 4, 5]
        assert cards[4][1] == first[0] == cards[0][1]  # passed on; the game refuses it
        assert shoe.health().counters["duplicates_dropped"] >= 2


async def test_a_power_cycle_starts_a_new_session(sim: ShoeSimulator) -> None:
    async with fast_reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        before = sim.deal(2)
        await tap.cards_n(2)
        old_session = sim.session_id
        sim.power_cycle()
        await tap.alert("session_changed")
        assert sim.session_id != old_session
        after = sim.deal(2)
        cards = await tap.cards_n(4)
        assert [(c.read_index, c.card) for c in cards] == [
            (0, before[0]), (1, before[1]), (0, after[0]), (1, after[1])]
        assert shoe.health().counters["sessions"] == 1


# ------------------------------------------------------------------------------ manual entry


async def test_manual_entry_yields_manual_readings_in_order() -> None:
    reader: CardReader = ManualCardReader(clock=lambda: 42.0)
    async with reader as manual:
        assert isinstance(manual, ManualCardReader)
        tap = Tap(manual)
        first = await manual.key_card("Ah", operator="dealer 7")
        await manual.key_card(parse_card("10d"), operator="dealer 7")
        await manual.key_card("Ah", operator="supervisor 2")  # passed on; the game refuses it
        await manual.key_status("empty", operator="dealer 7")
        cards = await tap.cards_n(3)
        await tap.until(lambda t: len(t.statuses()) == 1)
        assert first == cards[0]
        assert [(c.read_index, str(c.card), c.source, c.device) for c in cards] == [
            (0, "Ah", "manual", "manual:dealer 7"),
            (1, "Td", "manual", "manual:dealer 7"),
            (2, "Ah", "manual", "manual:supervisor 2"),
        ]
        assert all(c.quality == 100 and c.at_mono == 42.0 for c in cards)
        assert tap.statuses()[0].state is ShoeState.EMPTY
        health = manual.health()
        assert health.connected
        assert health.counters == {"cards": 3, "operators": 2}
    assert not manual.health().connected


async def test_manual_entry_refuses_bad_input() -> None:
    async with ManualCardReader() as manual:
        with pytest.raises(InvalidCard):
            await manual.key_card("1x", operator="dealer 7")
        with pytest.raises(ValueError, match="operator"):
            await manual.key_card("Ah", operator="  ")
        assert manual.health().counters["cards"] == 0
    with pytest.raises(RuntimeError, match="not open"):
        await manual.key_card("Ah", operator="dealer 7")
