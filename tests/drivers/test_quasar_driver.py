"""The QuasarMX driver against simulated readers (pty and TCP): connect, full sweeps of every
mapped spot, chips moved, a stack of 20, unplug and reconnect, a stall, garbage, corrupt and
duplicated answers, antenna faults, a wrong model or an old firmware."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from drivers.protocols import ChipReader, ChipReading
from drivers.quasar import QuasarChipReader
from drivers.quasar_settings import QuasarLink, QuasarSettings, port_of
from drivers.readings import SPOTS, ChipInventory, DeviceAlert, SpotId
from simulators.felt import ChipTable
from simulators.payout import pay_spots
from simulators.quasar_table import QuasarTable, ReaderPlan

SPEED = 20.0  # the simulators' time model, 20 times faster than a real reader
WAIT = 10.0  # seconds a test waits for what it expects before failing


def plans(*transports: str, spots_each: int = 4, seats: range = range(1, 7)) -> list[ReaderPlan]:
    """Readers covering consecutive spots of the table, ``spots_each`` ports each."""
    every = [SpotId(seat, spot) for seat in seats for spot in SPOTS]
    out = []
    for i, transport in enumerate(transports):
        mine = every[i * spots_each:(i + 1) * spots_each]
        ports = {port_of(n % 4 + 1, n // 4 + 1): s for n, s in enumerate(mine)}
        out.append(ReaderPlan(ports=ports, transport=transport))  # type: ignore[arg-type]
    return out


@pytest.fixture
def table() -> Iterator[QuasarTable]:
    with QuasarTable(plans("pty", "tcp"), speed=SPEED) as t:
        yield t


def driver(table: QuasarTable, stall: float = 0.5) -> QuasarChipReader:
    settings = QuasarSettings(readers=table.links(), stall_seconds=stall,
                              backoff_initial=0.02, backoff_max=0.1, alert_interval=0.001)
    return QuasarChipReader(settings, rng=random.Random(1))


async def until(
    reader: AsyncIterator[ChipReading], done: Callable[[list[ChipReading]], bool],
) -> list[ChipReading]:
    seen: list[ChipReading] = []
    async with asyncio.timeout(WAIT):
        async for item in reader:
            seen.append(item)
            if done(seen):
                return seen
    raise AssertionError("the reader ended")


def sweeps(seen: list[ChipReading]) -> dict[int, dict[SpotId, frozenset[bytes]]]:
    out: dict[int, dict[SpotId, frozenset[bytes]]] = {}
    for item in seen:
        if isinstance(item, ChipInventory):
            out.setdefault(item.report_seq, {})[item.spot] = item.uids
    return out


def alerts(seen: list[ChipReading], kind: str) -> list[DeviceAlert]:
    return [a for a in seen if isinstance(a, DeviceAlert) and a.kind == kind]


def full_sweeps(table: QuasarTable, n: int) -> Callable[[list[ChipReading]], bool]:
    spots = set(table.spots())
    return lambda seen: sum(set(s) == spots for s in sweeps(seen).values()) >= n


async def test_it_is_a_chip_reader_and_says_who_each_reader_is(table: QuasarTable) -> None:
    reader: ChipReader = driver(table)  # the protocol the daemon takes (checked by mypy)
    async with reader:
        seen = await until(aiter(reader), lambda s: len(alerts(s, "connected")) == 2)
        health = reader.health()
    details = sorted(a.detail for a in alerts(seen, "connected"))
    assert all("QUASAR_MX serial QMX-SIM-000" in d and "firmware 3.07" in d for d in details)
    assert health.connected and health.counters["readers_up"] == 2
    assert health.identity is not None and health.identity.model == "QUASAR_MX"


async def test_every_mapped_spot_every_sweep_with_the_chips_on_it(table: QuasarTable) -> None:
    laid = {SpotId(1, "ante"): table.place(1, "ante", 2500),
            SpotId(2, "play"): table.place(2, "play", 12500)}
    async with driver(table) as reader:
        seen = await until(aiter(reader), full_sweeps(table, 3))
    complete = [s for s in sweeps(seen).values() if set(s) == set(table.spots())]
    assert len(complete) >= 3
    for sweep in complete:
        for spot, uids in sweep.items():  # a full inventory: empty spots too
            assert uids == frozenset(laid.get(spot, ()))
    serials = {i.reader for i in seen if isinstance(i, ChipInventory)}
    assert serials == {"QMX-SIM-0001", "QMX-SIM-0002"}


async def test_a_chip_moved_between_sweeps_shows_on_its_new_spot(table: QuasarTable) -> None:
    [chip] = table.place(1, "ante", 2500)
    async with driver(table) as reader:
        it = aiter(reader)
        seen = await until(it, full_sweeps(table, 1))
        table.remove(1, "ante")
        table.place(2, "ante", uids=[chip])
        moved_at = max(sweeps(seen))
        later = await until(it, lambda s: any(
            n > moved_at + 1 and set(v) == set(table.spots()) for n, v in sweeps(s).items()))
    last = sweeps(later)[max(n for n, v in sweeps(later).items() if len(v) == 8)]
    assert last[SpotId(1, "ante")] == frozenset()
    assert last[SpotId(2, "ante")] == {chip}


async def test_a_stack_of_twenty_chips_is_read_whole() -> None:
    with QuasarTable(plans("pty", spots_each=1), speed=SPEED) as table:
        chips = [c.uid for c in table.registry if c.chip_set == table.registry.chip_set]
        stack = table.place(1, "ante", uids=chips[:20])
        assert len(set(stack)) == 20
        async with driver(table) as reader:
            seen = await until(aiter(reader), full_sweeps(table, 2))
    reads = [i for i in seen if isinstance(i, ChipInventory)]
    assert reads and all(i.uids == frozenset(stack) for i in reads)


@pytest.mark.parametrize(("index", "other"), [(0, 1), (1, 0)], ids=["pty", "tcp"])
async def test_unplug_is_alerted_once_and_the_reader_comes_back(
    table: QuasarTable, index: int, other: int,
) -> None:
    async with driver(table) as reader:
        it = aiter(reader)
        await until(it, full_sweeps(table, 1))
        table.unplug(reader=index)
        down = await until(it, lambda s: bool(alerts(s, "disconnected")))
        await asyncio.sleep(0.3)  # several reconnect attempts fail meanwhile
        table.plug(reader=index)
        back = await until(it, lambda s: bool(alerts(s, "reconnected")))
        after = await until(it, full_sweeps(table, 1))
        counters = reader.health().counters
    gone = [*down, *back]
    assert len(alerts(gone, "disconnected")) == 1  # once per outage
    assert alerts(gone, "disconnected")[0].device == f"QMX-SIM-000{index + 1}"
    # the other reader kept sweeping through the outage
    assert any(i.reader == f"QMX-SIM-000{other + 1}" for i in back
               if isinstance(i, ChipInventory))
    assert sweeps(after)
    assert counters["reconnects"] == 1 and counters["connect_failures"] >= 1


async def test_a_lost_answer_is_asked_again_without_a_stall(table: QuasarTable) -> None:
    async with driver(table) as reader:
        it = aiter(reader)
        await until(it, full_sweeps(table, 1))
        table.inject("drop", reader=0)
        seen = await until(it, full_sweeps(table, 2))
        counters = reader.health().counters
    assert counters["resends"] == 1
    assert not alerts(seen, "stalled") and not alerts(seen, "disconnected")


async def test_a_silent_reader_is_stalled_and_recovers_when_it_talks(table: QuasarTable) -> None:
    async with driver(table, stall=0.3) as reader:
        it = aiter(reader)
        await until(it, full_sweeps(table, 1))
        table.set_fault("silent", True, reader=1)
        stalled = await until(it, lambda s: bool(alerts(s, "stalled")))
        table.set_fault("silent", False, reader=1)
        await until(it, lambda s: bool(alerts(s, "reconnected")))
    [alert] = alerts(stalled, "stalled")
    assert alert.device == "QMX-SIM-0002" and "no answer" in alert.detail


async def test_garbage_on_the_line_is_alerted_and_never_read_as_chips(
    table: QuasarTable,
) -> None:
    laid = table.place(3, "ante", 2500)
    table.set_fault("garbage", 0.3)
    async with driver(table) as reader:
        seen = await until(aiter(reader), lambda s: len(alerts(s, "bad_frame")) >= 3
                           and full_sweeps(table, 3)(s))
    for item in seen:
        if isinstance(item, ChipInventory):
            assert item.uids == (frozenset(laid) if item.spot == SpotId(3, "ante")
                                 else frozenset())


async def test_a_corrupt_answer_is_asked_again_and_no_chip_goes_missing(
    table: QuasarTable,
) -> None:
    laid = table.place(3, "ante", 5 * 2500)
    table.set_fault("corrupt", 0.1)
    async with driver(table) as reader:
        seen = await until(aiter(reader), full_sweeps(table, 2))
        counters = reader.health().counters
    assert counters["bad_answers"] + counters["bad_frames"] > 0
    for item in seen:
        if isinstance(item, ChipInventory):
            # The protocol has no checksum: a flipped hex digit can make another UID (an
            # unknown chip to the registry, D292), but never a lost or an extra chip.
            expected = frozenset(laid) if item.spot == SpotId(3, "ante") else frozenset()
            assert len(item.uids) == len(expected)


async def test_duplicated_and_late_answers_never_put_chips_on_another_spot(
    table: QuasarTable,
) -> None:
    laid = table.place(1, "ante", 2500)
    table.set_fault("duplicate", 0.5)
    async with driver(table) as reader:
        seen = await until(aiter(reader), full_sweeps(table, 4))
        counters = reader.health().counters
    for item in seen:
        if isinstance(item, ChipInventory):
            assert item.uids == (frozenset(laid) if item.spot == SpotId(1, "ante")
                                 else frozenset())
    assert counters["stale_answers"] + counters["antenna_mismatches"] > 0


async def test_a_broken_antenna_is_alerted_its_spot_skipped_then_cleared(
    table: QuasarTable,
) -> None:
    async with driver(table) as reader:
        it = aiter(reader)
        await until(it, full_sweeps(table, 1))
        table.antenna_fault(1, "odds")
        broken = await until(it, lambda s: bool(alerts(s, "antenna_fault"))
                             and len(sweeps(s)) >= 3)
        table.antenna_fault(1, "odds", broken=False)
        mended = await until(it, lambda s: bool(alerts(s, "antenna_fault_cleared")))
    [alert] = alerts(broken, "antenna_fault")
    assert "seat 1 odds" in alert.detail and "ARH" in alert.detail
    during = [v for n, v in sweeps(broken).items() if n > min(sweeps(broken)) + 1]
    assert during and all(SpotId(1, "odds") not in v for v in during)
    assert alerts(mended, "antenna_fault_cleared")


@pytest.mark.parametrize(("change", "kind", "words"), [
    ({"model": "DESKID_ISO"}, "wrong_model", "not a QUASAR_MX"),
    ({"firmware": "0217"}, "old_firmware", "2.17, 2.18 or newer"),
])
async def test_a_wrong_model_or_an_old_firmware_is_alerted_and_not_read(
    change: dict[str, str], kind: str, words: str,
) -> None:
    with QuasarTable(plans("tcp"), speed=SPEED) as table:
        for key, value in change.items():
            setattr(table.readers[0], key, value)
        async with driver(table) as reader:
            it = aiter(reader)
            seen = await until(it, lambda s: bool(alerts(s, kind)))
            await asyncio.sleep(0.3)  # it keeps trying, silently
            counters = reader.health().counters
    [alert] = alerts(seen, kind)
    assert words in alert.detail
    assert not any(isinstance(i, ChipInventory) for i in seen)
    assert counters["refused"] >= 2 and counters["inventories"] == 0


async def test_multiplexer_channels_are_ports_beyond_four() -> None:
    with QuasarTable(plans("pty", spots_each=7), speed=SPEED) as table:
        assert max(table.readers[0].ports) == port_of(3, 2) == 7
        laid = table.place(1, "marker", 2500)  # the 7th spot: antenna 3, channel 2
        async with driver(table) as reader:
            seen = await until(aiter(reader), full_sweeps(table, 1))
    read = {i.spot: (i.antenna, i.uids) for i in seen if isinstance(i, ChipInventory)}
    assert read[SpotId(1, "marker")] == (7, frozenset(laid))


def test_settings_refuse_a_spot_under_two_ports() -> None:
    spot = SpotId(1, "ante")
    with pytest.raises(Exception, match="one spot under two"):
        QuasarSettings(readers=(QuasarLink(url="/dev/a", antennas={1: spot}),
                                QuasarLink(host="h", antennas={1: spot})))


async def test_a_payout_the_virtual_dealer_makes_is_read_whole(table: QuasarTable) -> None:
    dealer_table: ChipTable = table  # the virtual dealer's table API, on QuasarMX readers
    dealer_table.place(1, "ante", 2500)
    pay_spots(dealer_table, [{"seat": 1, "spot": "ante", "expected": 7500, "result": "win"},
                             {"seat": 1, "spot": "odds", "expected": 0, "result": "lose"}])
    paid = table.chips_on(1, "ante")
    async with driver(table) as reader:
        it = aiter(reader)
        seen = await until(it, full_sweeps(table, 1))
    last = sweeps(seen)[max(sweeps(seen))]
    assert last[SpotId(1, "ante")] == paid
    assert sum(c.value_cents for u in paid if (c := table.registry.lookup(u))) == 7500


@pytest.mark.parametrize(("uid", "kind"), [
    ("0403020150954FE0", "uid_order"),  # printed least significant byte first
    ("04E0015095400201", "unreliable_read"),  # not an ISO 15693 UID at all: a damaged answer
])
async def test_a_uid_not_beginning_with_e0_is_never_reported(
    table: QuasarTable, uid: str, kind: str,
) -> None:
    table.place(1, "play", uids=[bytes.fromhex(uid)])
    async with driver(table) as reader:
        seen = await until(aiter(reader), lambda s: bool(alerts(s, kind)) and len(sweeps(s)) >= 3)
    assert uid in alerts(seen, kind)[0].detail
    reported = {spot for sweep in sweeps(seen).values() for spot in sweep}
    assert SpotId(1, "play") not in reported
    assert SpotId(1, "ante") in reported


async def test_a_stray_line_end_never_leaves_the_answers_one_behind() -> None:
    # Noise ending in a CR reads as an answer of its own; taken for the answer to the
    # command asked, while that command's real answer is still on its way, it could leave
    # every later answer one behind ("the answer names port 9", "an inventory ends with IVF,
    # this one 'OK!'": seen in the kit under load, 1 run in 6). After an unusable answer the
    # driver lines the answers up again (REV, D292): here stray line ends come in the middle
    # of the sweeps, and once they stop every spot is reported, right. (This run does not
    # reproduce the loaded machine's timing: bench/devices_kit.py and the kit's soak test
    # do, at the reader's own speed.)
    # At the reader's own timing an inventory's answer takes long enough for noise to come
    # first.
    with QuasarTable(plans("pty"), speed=1.0) as table:
        await _one_behind(table)


async def _one_behind(table: QuasarTable) -> None:
    laid = table.place(2, "ante", 2500)
    async with driver(table) as reader:
        items = aiter(reader)
        await until(items, full_sweeps(table, 1))
        for _ in range(20):
            for sim in table.readers:
                sim.send_raw(b"\x07\r")
            await asyncio.sleep(0.01)
        after = await until(items, lambda s: len(sweeps(s)) >= 4 and full_sweeps(table, 3)(s))
        counters = reader.health().counters
    assert counters["resyncs"] > 0
    full = {n: got for n, got in sweeps(after).items() if set(got) == set(table.spots())}
    assert full[max(full)] == {spot: frozenset(laid) if spot == SpotId(2, "ante")
                               else frozenset() for spot in table.spots()}
