"""UsbChipReader driven through the simulator's pyusb backend (no mocks of pyusb): every fault
of the simulator is detected, alerted and recovered, and what the driver reports for each spot
is exactly what lies on it. Also ManualChipReader, the other ChipReader (rule 58)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from drivers.manual_chips import ManualChipReader, ManualWager
from drivers.protocols import ChipReader
from drivers.readings import SPOTS, ChipInventory, DeviceAlert, SpotId
from drivers.rfid import UsbChipReader
from drivers.rfid_messages import DEFAULT_ANTENNA_MAP, AntennaFaultCode
from drivers.rfid_settings import UsbReaderSettings
from game.errors import ConfigError, InvalidWager
from simulators.faults import Faults
from simulators.rfid import RfidReaderSimulator

# Short timings keep the suite fast; detection still follows the same code paths.
FAST = UsbReaderSettings(
    report_interval_ms=20,
    heartbeat_interval_ms=25,
    watchdog_ms=0,
    stall_timeout=0.4,
    command_timeout=0.15,
    keepalive_interval=0.1,
    read_timeout_ms=20,
    alert_interval=0.2,
    backoff_initial=0.02,
    backoff_max=0.1,
)
ALL_SPOTS = [SpotId(seat, spot) for seat in range(1, 7) for spot in SPOTS]
WAIT = 5.0  # an upper bound for something that takes tens of milliseconds


class Rig:
    """A reader on a simulator, a consumer task, and what the consumer saw."""

    def __init__(self, sim: RfidReaderSimulator, reader: UsbChipReader) -> None:
        self.sim = sim
        self.reader = reader
        self.events: list[ChipInventory | DeviceAlert] = []
        self.view: dict[SpotId, frozenset[bytes]] = {}
        self.history: dict[SpotId, list[frozenset[bytes]]] = {}
        self.held: dict[SpotId, list[frozenset[bytes]]] = {s: [frozenset()] for s in ALL_SPOTS}

    async def consume(self) -> None:
        async for item in self.reader:
            self.events.append(item)
            if isinstance(item, ChipInventory):
                self.view[item.spot] = item.uids
                self.history.setdefault(item.spot, []).append(item.uids)

    def alerts(self, kind: str | None = None) -> list[DeviceAlert]:
        return [e for e in self.events
                if isinstance(e, DeviceAlert) and (kind is None or e.kind == kind)]

    def place(self, seat: int, spot: str, cents: int) -> tuple[bytes, ...]:
        uids = self.sim.place(seat, spot, cents)
        self._note(SpotId(seat, spot))
        return uids

    def remove(self, seat: int, spot: str) -> None:
        self.sim.remove(seat, spot)
        self._note(SpotId(seat, spot))

    def _note(self, where: SpotId) -> None:
        self.held[where].append(self.sim.chips_on(where.seat, where.spot))

    async def until(self, what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
        end = time.monotonic() + timeout
        while not check():
            if time.monotonic() > end:
                raise AssertionError(f"not within {timeout} s: {what}; alerts {self.alerts()}")
            await asyncio.sleep(0.01)

    def matches(self) -> bool:
        """The driver's view of every spot is exactly the chips on it."""
        return all(self.view.get(s) == self.sim.chips_on(s.seat, s.spot) for s in ALL_SPOTS)

    async def settled(self) -> None:
        await self.until("every spot as the simulator holds it", self.matches)

    def never_wrong(self) -> None:
        """Every inventory the driver passed on is a state the spot really had."""
        for spot, seen in self.history.items():
            for uids in seen:
                assert uids in self.held[spot], (spot, uids)


@contextlib.asynccontextmanager
async def run_rig(
    sim: RfidReaderSimulator, settings: UsbReaderSettings = FAST
) -> AsyncIterator[Rig]:
    reader = UsbChipReader(settings, backend=sim.backend, rng=random.Random(5))
    rig = Rig(sim, reader)
    async with reader:
        task = asyncio.create_task(rig.consume())
        yield rig
    await asyncio.wait_for(task, WAIT)


@pytest.fixture
def sim() -> RfidReaderSimulator:
    return RfidReaderSimulator(seed=11)


@pytest.fixture
async def rig(sim: RfidReaderSimulator) -> AsyncIterator[Rig]:
    async with run_rig(sim) as r:
        await r.until("connected", lambda: bool(r.alerts("connected")))
        yield r


def setting(**changes: Any) -> UsbReaderSettings:
    return dataclasses.replace(FAST, **changes)


async def place_some(rig: Rig) -> None:
    rig.place(1, "ante", 12_500)
    rig.place(1, "odds", 12_500)
    rig.place(4, "trips_plus", 2500)
    rig.place(6, "marker", 50_000)


# ----------------------------------------------------------------------------- normal operation


def test_the_usb_reader_is_a_chip_reader() -> None:
    reader: ChipReader = UsbChipReader(FAST)
    assert reader.health().connected is False


async def test_connects_and_reports_every_spot(rig: Rig) -> None:
    connected = rig.alerts("connected")[0]
    assert "SIM-SR48-0001" in connected.detail
    health = rig.reader.health()
    assert health.connected
    assert health.identity is not None
    assert (health.identity.kind, health.identity.serial) == ("rfid", "SIM-SR48-0001")
    assert rig.sim.antenna_map == dict(DEFAULT_ANTENNA_MAP)
    await rig.settled()  # the first report of every antenna is passed on, empty or not
    await place_some(rig)
    await rig.settled()
    rig.remove(1, "odds")
    await rig.settled()
    inventories = [e for e in rig.events if isinstance(e, ChipInventory)]
    assert {i.reader for i in inventories} == {"SIM-SR48-0001"}
    assert all(i.source == "device" for i in inventories)
    assert all(DEFAULT_ANTENNA_MAP[i.antenna] == i.spot for i in inventories)
    rig.never_wrong()
    counters = rig.reader.health().counters
    assert counters["bad_frames"] == counters["gaps"] == counters["duplicates"] == 0


async def test_only_changes_are_passed_on_when_asked(sim: RfidReaderSimulator) -> None:
    # Off by default: the seam promises every spot every sweep (the daemon skips repeats).
    assert not FAST.changes_only
    async with run_rig(sim, setting(changes_only=True)) as rig:
        await rig.until("connected", lambda: bool(rig.alerts("connected")))
        await rig.settled()
        count = len(rig.events)
        # Five sweeps of an unchanged table (20 ms reports, 25 ms heartbeats): frames
        # counted, not time waited.
        frames = rig.reader.health().counters["frames"]
        await rig.until("five sweeps of an unchanged table",
                        lambda: rig.reader.health().counters["frames"] >= frames + 9)
        assert len(rig.events) == count
        rig.place(2, "play", 2500)
        await rig.settled()
        assert [e.spot for e in rig.events[count:] if isinstance(e, ChipInventory)] == [
            SpotId(2, "play")
        ]


async def test_every_report_when_asked(sim: RfidReaderSimulator) -> None:
    async with run_rig(sim, setting(changes_only=False)) as rig:
        await rig.until("two sweeps", lambda: len(rig.history.get(SpotId(6, "marker"), [])) >= 2)


# ----------------------------------------------------------------------------- line faults


async def test_corrupt_bytes(rig: Rig) -> None:
    rig.sim.faults.set("corrupt", 0.3)
    await place_some(rig)
    await rig.settled()
    rig.remove(1, "ante")
    await rig.settled()
    assert rig.reader.health().counters["bad_frames"] > 0
    assert rig.alerts("bad_frame")
    rig.never_wrong()
    assert rig.reader.health().connected


async def test_garbage_between_frames(rig: Rig) -> None:
    rig.sim.faults.set("garbage", 0.5)
    await place_some(rig)
    await rig.settled()
    assert rig.reader.health().counters["garbage_bytes"] > 0
    rig.never_wrong()


async def test_dropped_reports(rig: Rig) -> None:
    rig.sim.faults.set("drop", 0.3)
    await place_some(rig)
    await rig.settled()
    counters = rig.reader.health().counters
    assert counters["gaps"] > 0
    assert counters["gap_events"] > 0
    assert rig.alerts("sequence_gap")
    rig.never_wrong()


async def test_duplicated_reports_are_passed_on_once(sim: RfidReaderSimulator) -> None:
    sim.faults = Faults(duplicate=0.5, repeat=0.2, seed=4)
    async with run_rig(sim, setting(changes_only=False)) as rig:
        await rig.until("connected", lambda: bool(rig.alerts("connected")))
        await place_some(rig)
        await rig.settled()
        seqs = [e.report_seq for e in rig.events if isinstance(e, ChipInventory)]
        assert len(seqs) == len(set(seqs))  # one session: a sequence number is passed on once
        assert rig.reader.health().counters["duplicates"] > 0
        rig.never_wrong()


async def test_lost_commands_are_retried(sim: RfidReaderSimulator) -> None:
    sim.faults = Faults(drop_incoming=0.5, seed=2)
    async with run_rig(sim) as rig:
        await rig.until("connected", lambda: bool(rig.alerts("connected")))
        await place_some(rig)
        await rig.settled()


async def test_silence_is_a_stall_and_recovers(rig: Rig) -> None:
    await rig.settled()
    rig.sim.faults.silent = True
    await rig.until("stalled", lambda: bool(rig.alerts("stalled")))
    assert not rig.reader.health().connected
    rig.place(3, "ante", 10_000)  # the table changes while the reader is deaf
    await rig.until("two retries while deaf",  # each try that meets silence counts here
                    lambda: rig.reader.health().counters["connect_failures"] >= 2)
    assert len(rig.alerts("stalled")) == 1  # one alert per outage, however many retries
    rig.sim.faults.silent = False
    await rig.until("reconnected", lambda: bool(rig.alerts("reconnected")))
    await rig.settled()
    counters = rig.reader.health().counters
    assert (counters["stalls"], counters["reconnects"]) == (1, 1)
    rig.never_wrong()


async def test_slow_responses_within_the_stall_timeout(rig: Rig) -> None:
    rig.sim.faults.set("delay", 0.1)
    await place_some(rig)
    await rig.settled()
    assert not rig.alerts("stalled")
    assert not rig.alerts("disconnected")


async def test_slow_responses_beyond_the_stall_timeout(rig: Rig) -> None:
    await rig.settled()
    rig.sim.faults.set("delay", 0.8)
    await rig.until("stalled", lambda: bool(rig.alerts("stalled")))
    rig.sim.faults.set("delay", 0)
    rig.place(5, "sweet16", 2500)
    await rig.until("reconnected", lambda: bool(rig.alerts("reconnected")))
    await rig.settled()


# ----------------------------------------------------------------------------- USB faults


async def test_unplug_and_replug(rig: Rig) -> None:
    await place_some(rig)
    await rig.settled()
    address = rig.sim.address
    rig.sim.unplug()
    await rig.until("disconnected", lambda: bool(rig.alerts("disconnected")))
    assert "errno 19" in rig.alerts("disconnected")[0].detail
    assert not rig.reader.health().connected
    rig.remove(1, "ante")
    rig.place(2, "ante", 5000)
    await rig.until("find() attempts that find nothing",
                    lambda: rig.reader.health().counters["connect_failures"] >= 2)
    rig.sim.plug()
    await rig.until("reconnected", lambda: bool(rig.alerts("reconnected")))
    assert rig.sim.address != address  # it came back at a new address: re-found, not reused
    await rig.settled()
    counters = rig.reader.health().counters
    assert (counters["disconnects"], counters["reconnects"]) == (1, 1)
    assert len(rig.alerts("disconnected")) == 1
    rig.never_wrong()


async def test_reenumeration(rig: Rig) -> None:
    await place_some(rig)
    await rig.settled()
    rig.sim.reenumerate()
    await rig.until("reconnected", lambda: bool(rig.alerts("reconnected")))
    assert rig.alerts("disconnected")
    assert rig.sim.inventory_running  # the driver configured the fresh device again
    rig.place(2, "odds", 2500)
    await rig.settled()


async def test_absent_at_start_then_plugged(sim: RfidReaderSimulator) -> None:
    sim.unplug()
    async with run_rig(sim) as rig:
        await rig.until("not found", lambda: bool(rig.alerts("not_found")))
        await rig.until("retries", lambda: rig.reader.health().counters["connect_failures"] >= 3)
        assert len(rig.alerts("not_found")) == 1
        assert "1209:0001" in rig.alerts("not_found")[0].detail
        sim.plug()
        await rig.until("connected", lambda: bool(rig.alerts("connected")))
        await rig.settled()


async def test_a_replaced_reader_is_alerted(rig: Rig) -> None:
    rig.sim.unplug()
    await rig.until("disconnected", lambda: bool(rig.alerts("disconnected")))
    rig.sim.serial = "SIM-SR48-0002"
    rig.sim.plug()
    await rig.until("identity changed", lambda: bool(rig.alerts("identity_changed")))
    assert "SIM-SR48-0001" in rig.alerts("identity_changed")[0].detail
    await rig.settled()
    assert rig.reader.health().device == "SIM-SR48-0002"


# ----------------------------------------------------------------------------- chips


async def test_unknown_chip_is_reported_and_never_valued(rig: Rig) -> None:
    good = rig.place(2, "ante", 2500)
    unknown = rig.sim.place_unknown(2, "ante")
    rig._note(SpotId(2, "ante"))
    await rig.settled()
    assert rig.view[SpotId(2, "ante")] == frozenset(good + unknown)
    total, problems = rig.sim.registry.resolve(rig.view[SpotId(2, "ante")], entry="SIM-E2",
                                               spot=SpotId(2, "ante"))
    assert total == 2500
    assert [(p.kind, p.uid) for p in problems] == [("unknown_chip", unknown[0])]


async def test_chip_of_another_set_is_reported_and_never_valued(rig: Rig) -> None:
    foreign = rig.sim.place_foreign(5, "odds")
    rig._note(SpotId(5, "odds"))
    await rig.settled()
    total, problems = rig.sim.registry.resolve(rig.view[SpotId(5, "odds")], entry="SIM-E5")
    assert total == 0
    assert [(p.kind, p.uid) for p in problems] == [("other_chip_set", foreign[0])]


async def test_chips_of_another_entry_are_reported_and_never_valued(rig: Rig) -> None:
    mine = rig.place(1, "ante", 10_000)
    theirs = rig.sim.place(1, "ante", uids=[rig.sim.registry.issued_to("SIM-E2")[0].uid])
    rig._note(SpotId(1, "ante"))
    await rig.settled()
    total, problems = rig.sim.registry.resolve(rig.view[SpotId(1, "ante")], entry="SIM-E1")
    assert total == 10_000
    assert set(rig.view[SpotId(1, "ante")]) == set(mine + theirs)
    assert [p.kind for p in problems] == ["issued_to_other_entry"]


# ----------------------------------------------------------------------------- reader state


async def test_antenna_fault_is_alerted(rig: Rig) -> None:
    rig.sim.antenna_fault(9, AntennaFaultCode.OPEN_CIRCUIT)
    await rig.until("antenna fault", lambda: bool(rig.alerts("antenna_fault")))
    assert "seat 2 odds" in rig.alerts("antenna_fault")[0].detail
    rig.sim.antenna_fault(9, AntennaFaultCode.CLEARED)
    await rig.until("cleared", lambda: bool(rig.alerts("antenna_fault_cleared")))


async def test_a_reader_that_stopped_scanning_is_restarted(sim: RfidReaderSimulator) -> None:
    # no PINGs within the watchdog: the reader stops; the driver sees "idle" and starts it again
    async with run_rig(sim, setting(watchdog_ms=60, keepalive_interval=5.0)) as rig:
        await rig.until("restart", lambda: rig.reader.health().counters["inventory_restarts"] > 0)
        rig.place(3, "play", 2500)
        await rig.settled()


async def test_a_map_the_reader_cannot_hold_is_a_protocol_error() -> None:
    small = RfidReaderSimulator(antenna_count=40)
    async with run_rig(small) as rig:
        await rig.until("protocol error", lambda: bool(rig.alerts("protocol_error")))
        assert "antenna 42" in rig.alerts("protocol_error")[0].detail
        assert not rig.reader.health().connected


async def test_a_custom_antenna_map(sim: RfidReaderSimulator) -> None:
    wiring = {3: SpotId(1, "ante"), 4: SpotId(1, "odds"), 10: SpotId(2, "ante")}
    async with run_rig(sim, setting(antenna_map=wiring)) as rig:
        await rig.until("reports", lambda: len(rig.view) == 3)
        assert sim.antenna_map == wiring
        rig.place(2, "ante", 2500)
        await rig.until("seat 2 ante", lambda: rig.view[SpotId(2, "ante")] ==
                        sim.chips_on(2, "ante"))
        inventories = [e for e in rig.events if isinstance(e, ChipInventory)]
        assert {(i.antenna, i.spot) for i in inventories} == set(wiring.items())


async def test_reader_chosen_by_serial_number(sim: RfidReaderSimulator) -> None:
    async with run_rig(sim, setting(serial="SOMEONE-ELSE")) as rig:
        await rig.until("not found", lambda: bool(rig.alerts("not_found")))
    async with run_rig(sim, setting(serial="SIM-SR48-0001")) as rig:
        await rig.until("connected", lambda: bool(rig.alerts("connected")))


async def test_bulk_in_endpoint() -> None:
    bulk = RfidReaderSimulator(in_transfer="bulk")
    async with run_rig(bulk) as rig:
        rig.place(1, "ante", 2500)
        await rig.settled()


async def test_close_ends_iteration_and_the_reader_is_not_reentrant(
    sim: RfidReaderSimulator,
) -> None:
    reader = UsbChipReader(FAST, backend=sim.backend)
    with pytest.raises(RuntimeError, match="use `async with"):
        async for _ in reader:
            pass
    async with reader:
        with pytest.raises(RuntimeError, match="not reentrant"):
            await reader.__aenter__()
    items = [item async for item in reader]  # closed: ends at once
    assert items == [] or all(isinstance(i, ChipInventory | DeviceAlert) for i in items)
    assert not reader.health().connected
    async with reader:  # reusable
        pass


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="two antennas under one spot"):
        UsbReaderSettings(antenna_map={1: SpotId(1, "ante"), 2: SpotId(1, "ante")})
    with pytest.raises(ConfigError, match="antenna 65"):
        UsbReaderSettings(antenna_map={65: SpotId(1, "ante")})
    with pytest.raises(ConfigError, match="report_interval_ms"):
        UsbReaderSettings(report_interval_ms=5)
    with pytest.raises(ConfigError, match="vendor_id"):
        UsbReaderSettings(vendor_id=0x10000)


# ----------------------------------------------------------------------------- manual entry


async def test_manual_entry_is_a_chip_reader_marked_manual() -> None:
    manual = ManualChipReader(clock=lambda: 42.0)
    reader: ChipReader = manual
    seen: list[ChipInventory | DeviceAlert] = []
    async with manual:
        first = await manual.key_wager(2, "ante", 5000, operator="dealer7")
        await manual.key_wager(2, "odds", 5000, operator="dealer7")
        await manual.key_wager(2, "ante", 0, operator="dealer7")
        assert manual.wagers() == {SpotId(2, "odds"): 5000}
        cleared = await manual.clear_table(operator="pit1")

        async def drain() -> None:
            async for item in reader:
                seen.append(item)

        task = asyncio.create_task(drain())
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 1.0)
    assert isinstance(seen[0], DeviceAlert)
    assert seen[0].kind == "manual_entry"
    wagers = [w for w in seen[1:] if isinstance(w, ManualWager)]
    assert len(wagers) == len(seen) - 1
    assert [(w.spot, w.amount_cents) for w in wagers] == [
        (SpotId(2, "ante"), 5000), (SpotId(2, "odds"), 5000), (SpotId(2, "ante"), 0),
        (SpotId(2, "odds"), 0),
    ]
    assert first == wagers[0]
    assert first.source == "manual"
    assert first.reader == "manual:dealer7"
    assert first.uids == frozenset()  # no chips: an unaware consumer counts no value
    assert [w.report_seq for w in wagers] == [0, 1, 2, 3]
    assert cleared[0].operator == "pit1"
    assert manual.health().counters["wagers_keyed"] == 4


@pytest.mark.parametrize(
    ("seat", "spot", "cents", "message"),
    [
        (7, "ante", 2500, "seat must be 1..6"),
        (1, "insurance", 2500, "not a betting spot"),
        (1, "ante", -2500, "whole cents"),
        (1, "ante", 25.0, "whole cents"),
        (1, "ante", 1000, "not a multiple of 2500"),
    ],
)
async def test_manual_entry_refuses_impossible_wagers(
    seat: int, spot: str, cents: Any, message: str
) -> None:
    async with ManualChipReader() as manual:
        with pytest.raises(InvalidWager, match=message):
            await manual.key_wager(seat, spot, cents, operator="dealer7")
        with pytest.raises(ValueError, match="operator"):
            await manual.key_wager(1, "ante", 2500, operator="bad name")
