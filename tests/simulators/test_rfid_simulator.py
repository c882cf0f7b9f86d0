"""The RFID reader simulator seen through plain pyusb, the way any USB host sees a device."""

from __future__ import annotations

import errno
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import usb.core  # type: ignore[import-untyped]
import usb.util  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from cli.main import main
from cli.simulate.command import rfid_command
from drivers.readings import SpotId
from drivers.rfid_codec import FrameDecoder, encode_frame
from drivers.rfid_messages import (
    DEFAULT_ANTENNA_MAP,
    Ack,
    AckStatus,
    AntennaFault,
    AntennaFaultCode,
    Frame,
    Heartbeat,
    Identify,
    Identity,
    Inventory,
    Message,
    Ping,
    Pong,
    SetAntennaMap,
    SetTiming,
    StartInventory,
    StopInventory,
    crc8_smbus,
    crc32_iso_hdlc,
)
from simulators.faults import Faults
from simulators.rfid import RfidReaderSimulator
from simulators.rfid_usb import EP_IN, EP_OUT
from simulators.sim_chips import build_sim_registry, make_change


class Host:
    """A bare-bones USB host for the tests: commands out, frames in."""

    def __init__(self, sim: RfidReaderSimulator) -> None:
        self.sim = sim
        self.dev = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=sim.backend)
        assert self.dev is not None
        self.dev.set_configuration()
        self.decoder = FrameDecoder()
        self.seq = itertools.count()

    def send(self, message: Message, seq: int | None = None) -> int:
        seq = next(self.seq) if seq is None else seq
        self.dev.write(EP_OUT, encode_frame(seq, message), 200)
        return seq

    def frames(self, seconds: float) -> list[Frame]:
        out: list[Frame] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data = bytes(self.dev.read(EP_IN, 1088, 20))
            except usb.core.USBTimeoutError:
                continue
            out += [f for f in self.decoder.feed(data) if isinstance(f, Frame)]
        return out

    def until(self, want: type, seconds: float = 1.0) -> Message:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for frame in self.frames(0.02):
                if isinstance(frame.message, want):
                    return frame.message
        raise AssertionError(f"no {want.__name__} within {seconds} s")

    def start(self, interval_ms: int = 20) -> None:
        self.send(SetTiming(report_interval_ms=interval_ms, heartbeat_interval_ms=50,
                            watchdog_ms=0))
        self.send(StartInventory())


@pytest.fixture
def sim() -> RfidReaderSimulator:
    return RfidReaderSimulator(seed=3)


@pytest.fixture
def host(sim: RfidReaderSimulator) -> Iterator[Host]:
    h = Host(sim)
    yield h
    usb.util.dispose_resources(h.dev)


# ----------------------------------------------------------------------------- USB presence


def test_found_by_vid_pid_with_the_documented_descriptors(host: Host) -> None:
    dev = host.dev
    assert (dev.idVendor, dev.idProduct, dev.bcdUSB) == (0x1209, 0x0001, 0x0200)
    assert dev.serial_number == "SIM-SR48-0001"
    assert dev.product == "SR-48 chip spot reader"
    assert dev.manufacturer == "Showdown Table Systems"
    intf = dev.get_active_configuration()[(0, 0)]
    assert (intf.bInterfaceClass, intf.bInterfaceSubClass, intf.bInterfaceProtocol) == (
        0xFF, 0x52, 0x01,
    )
    eps = {e.bEndpointAddress: (usb.util.endpoint_type(e.bmAttributes), e.wMaxPacketSize)
           for e in intf}
    assert eps == {
        0x01: (usb.util.ENDPOINT_TYPE_BULK, 64),
        0x81: (usb.util.ENDPOINT_TYPE_INTR, 64),
    }


def test_not_found_under_another_vid_pid(sim: RfidReaderSimulator) -> None:
    assert usb.core.find(idVendor=0x1209, idProduct=0x0002, backend=sim.backend) is None
    other = RfidReaderSimulator(vendor_id=0x1234, product_id=0x5678)
    assert usb.core.find(idVendor=0x1234, idProduct=0x5678, backend=other.backend) is not None


def test_bulk_in_variant(sim: RfidReaderSimulator) -> None:
    bulk = RfidReaderSimulator(in_transfer="bulk")
    h = Host(bulk)
    ep = usb.util.find_descriptor(h.dev.get_active_configuration()[(0, 0)],
                                  bEndpointAddress=0x81)
    assert usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
    h.send(Identify())
    assert isinstance(h.until(Identity), Identity)


def test_a_read_times_out_like_libusb(host: Host) -> None:
    host.frames(0.06)  # drain the first heartbeat
    host.sim.faults.silent = True
    with pytest.raises(usb.core.USBTimeoutError) as err:
        host.dev.read(EP_IN, 64, 10)
    assert err.value.errno == errno.ETIMEDOUT


# ----------------------------------------------------------------------------- firmware


def test_identify_and_ping(host: Host) -> None:
    host.send(Identify())
    identity = host.until(Identity)
    assert identity == Identity(model="SR-48-SIM", serial="SIM-SR48-0001",
                                firmware="1.0.0-sim", antenna_count=48)
    host.send(Ping(0xDEADBEEF))
    assert host.until(Pong) == Pong(0xDEADBEEF)


def test_heartbeats_come_without_being_asked(host: Host) -> None:
    beat = host.until(Heartbeat)
    assert isinstance(beat, Heartbeat)
    assert beat.inventory_running is False
    assert beat.mapped_antennas == 42


def test_a_sweep_reports_every_mapped_antenna_in_order_with_full_lists(
    sim: RfidReaderSimulator, host: Host
) -> None:
    placed = sim.place(2, "odds", 12_500)
    host.start()
    reports = [f.message for f in host.frames(0.15) if isinstance(f.message, Inventory)]
    first_cycle = [r for r in reports if r.cycle == reports[0].cycle]
    assert [r.antenna for r in first_cycle] == sorted(DEFAULT_ANTENNA_MAP)
    assert {r.cycle for r in reports} >= {0, 1}  # a new sweep every report interval
    for r in first_cycle:
        assert r.spot == DEFAULT_ANTENNA_MAP[r.antenna]
        assert set(r.uids) == (set(placed) if r.spot == SpotId(2, "odds") else set())


def test_moves_made_in_one_go_are_reported_together_when_they_end(
    sim: RfidReaderSimulator, host: Host
) -> None:
    """With sweep_on_change, a move is reported at once; moves in a `moving()` block are
    reported only when it ends, in one sweep."""
    sim.sweep_on_change = True
    host.start(interval_ms=5_000)  # the reader's own sweeps are far apart
    host.until(Inventory)  # the first full sweep
    host.frames(0.1)
    sim.place(1, "ante", 2_500)
    alone = [f.message for f in host.frames(0.2) if isinstance(f.message, Inventory)]
    assert [r.spot for r in alone] == [SpotId(1, "ante")]
    with sim.moving():
        sim.place(2, "ante", 2_500)
        sim.place(3, "odds", 2_500)
        held_back = [f for f in host.frames(0.2) if isinstance(f.message, Inventory)]
    assert held_back == []
    together = [f.message for f in host.frames(0.2) if isinstance(f.message, Inventory)]
    assert [r.spot for r in together] == [SpotId(2, "ante"), SpotId(3, "odds")]
    assert len({r.cycle for r in together}) == 1


def test_place_by_amount_uses_the_seats_entry_chips(sim: RfidReaderSimulator) -> None:
    registry = sim.registry
    uids = sim.place(3, "trips_plus", 62_500)  # R625 = R500 + R100 + R25
    assert sim.chips_on(3, "trips_plus") == frozenset(uids)
    assert registry.resolve(uids, entry="SIM-E3") == (62_500, ())
    assert sorted(registry.lookup(u).value_cents for u in uids) == [  # type: ignore[union-attr]
        2500, 10_000, 50_000,
    ]
    with pytest.raises(ValueError, match="cannot make 1234 cents"):
        sim.place(3, "ante", 1234)
    with pytest.raises(ValueError, match="already on"):
        sim.place(4, "ante", uids=[uids[0]])
    assert set(sim.remove(3, "trips_plus", [uids[0]])) == {uids[0]}
    assert sim.chips_on(3, "trips_plus") == frozenset(uids[1:])
    sim.clear()
    assert sim.table() == {}


def test_a_seat_cannot_spend_more_than_its_entry_holds(sim: RfidReaderSimulator) -> None:
    sim.place(1, "ante", 200_000)  # the whole R2,000
    with pytest.raises(ValueError, match="entry SIM-E1"):
        sim.place(1, "odds", 2500)


@given(st.dictionaries(st.sampled_from([2500, 10_000, 50_000]), st.integers(0, 6)),
       st.integers(1, 400_000))
def test_make_change_is_exact_or_provably_impossible(
    available: dict[int, int], cents: int
) -> None:
    found = make_change(cents, available)
    combos = itertools.product(*(range(n + 1) for n in available.values()))
    possible = any(
        sum(c * v for c, v in zip(counts, available, strict=True)) == cents for counts in combos
    )
    assert (found is not None) == possible
    if found is not None:
        assert sum(v * n for v, n in found.items()) == cents
        assert all(n <= available[v] for v, n in found.items())


def test_unknown_and_foreign_chips(sim: RfidReaderSimulator) -> None:
    unknown = sim.place_unknown(1, "ante", 2)
    assert all(u not in sim.registry for u in unknown)
    foreign = sim.place_foreign(1, "odds")
    chip = sim.registry.lookup(foreign[0])
    assert chip is not None
    assert chip.chip_set == "cash-2019"


def test_antenna_map_rules(host: Host) -> None:
    ok = host.send(SetAntennaMap(((5, SpotId(1, "ante")),)))
    dup = host.send(SetAntennaMap(((5, SpotId(1, "ante")), (6, SpotId(1, "ante")))))
    far = host.send(SetAntennaMap(((49, SpotId(1, "ante")),)))
    host.send(StartInventory())
    busy = host.send(SetAntennaMap(((7, SpotId(1, "ante")),)))
    acks = {f.message.cmd_seq: f.message.status for f in host.frames(0.1)
            if isinstance(f.message, Ack)}
    assert acks[ok] is AckStatus.OK
    assert acks[dup] is AckStatus.BAD_VALUE
    assert acks[far] is AckStatus.BAD_VALUE
    assert acks[busy] is AckStatus.BUSY
    assert host.sim.antenna_map == {5: SpotId(1, "ante")}


def test_malformed_and_unknown_commands_get_negative_acks(host: Host) -> None:
    def checked(kind: int, payload: bytes, seq: int) -> bytes:
        header = b"\xa5\x5a\x01" + bytes([kind]) + seq.to_bytes(2, "little") + len(
            payload).to_bytes(2, "little")
        body = header + bytes([crc8_smbus(header)]) + payload
        return body + crc32_iso_hdlc(body).to_bytes(4, "little")

    host.dev.write(EP_OUT, checked(0x02, b"\x00", 40), 100)  # START with a stray byte
    host.dev.write(EP_OUT, checked(0x3C, b"", 41), 100)  # no such command
    host.send(Heartbeat(uptime_ms=0, inventory_running=False, mapped_antennas=0), 42)
    acks = {f.message.cmd_seq: f.message.status for f in host.frames(0.1)
            if isinstance(f.message, Ack)}
    assert acks == {40: AckStatus.BAD_VALUE, 41: AckStatus.UNKNOWN_COMMAND,
                    42: AckStatus.UNKNOWN_COMMAND}


def test_watchdog_stops_inventory_without_host_frames(host: Host) -> None:
    host.send(SetTiming(report_interval_ms=20, heartbeat_interval_ms=20, watchdog_ms=60))
    host.send(StartInventory())
    assert host.sim.inventory_running
    beats = [f.message for f in host.frames(0.2) if isinstance(f.message, Heartbeat)]
    assert isinstance(beats[-1], Heartbeat)
    assert beats[-1].inventory_running is False
    assert not host.sim.inventory_running


def test_antenna_fault_is_reported_and_silences_the_antenna(
    sim: RfidReaderSimulator, host: Host
) -> None:
    host.start()
    sim.antenna_fault(9, AntennaFaultCode.OPEN_CIRCUIT)
    frames = host.frames(0.1)
    assert AntennaFault(antenna=9, code=AntennaFaultCode.OPEN_CIRCUIT) in [
        f.message for f in frames
    ]
    seen = {f.message.antenna for f in frames[-60:] if isinstance(f.message, Inventory)}
    assert 9 not in seen
    assert 8 in seen


# ----------------------------------------------------------------------------- unplug


def test_unplug_kills_handles_and_replug_enumerates_afresh(
    sim: RfidReaderSimulator, host: Host
) -> None:
    host.start()
    before = [f.seq for f in host.frames(0.05)]
    old_address = host.dev.address
    sim.unplug()
    assert list(sim.backend.enumerate_devices()) == []
    assert usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=sim.backend) is None
    for op in (lambda: host.dev.read(EP_IN, 64, 10), lambda: host.send(Identify())):
        with pytest.raises(usb.core.USBError) as err:
            op()
        assert err.value.errno == errno.ENODEV
    sim.plug()
    with pytest.raises(usb.core.USBError) as err:  # an old handle stays dead
        host.dev.read(EP_IN, 64, 10)
    assert err.value.errno == errno.ENODEV
    again = Host(sim)
    assert again.dev.address != old_address
    after = again.frames(0.08)
    assert after[0].seq == 0  # a fresh power-up
    assert not sim.inventory_running
    assert max(before) > 0


def test_reenumeration_gives_a_new_address(sim: RfidReaderSimulator, host: Host) -> None:
    address = host.dev.address
    sim.reenumerate()
    assert Host(sim).dev.address == address + 1


def test_usb_reset_reenumerates(sim: RfidReaderSimulator, host: Host) -> None:
    host.dev.reset()
    with pytest.raises(usb.core.USBError):
        host.dev.read(EP_IN, 64, 10)
    assert Host(sim).dev is not None


# ----------------------------------------------------------------------------- line faults


def test_dropped_frames_still_consume_sequence_numbers(sim: RfidReaderSimulator) -> None:
    sim.faults = Faults(drop=0.5, seed=1)
    host = Host(sim)
    host.start()
    seqs = [f.seq for f in host.frames(0.15)]
    assert seqs == sorted(seqs)
    assert any(b - a > 1 for a, b in itertools.pairwise(seqs))


def test_duplicated_frames_repeat_the_sequence_number(sim: RfidReaderSimulator) -> None:
    sim.faults = Faults(duplicate=1.0, seed=1)
    host = Host(sim)
    host.start()
    seqs = [f.seq for f in host.frames(0.08)]
    assert seqs[0::2] == seqs[1::2]


def test_corrupt_frames_are_refused_by_the_codec(sim: RfidReaderSimulator) -> None:
    sim.faults = Faults(corrupt=1.0, seed=1)
    host = Host(sim)
    host.start()
    assert host.frames(0.1) == []
    assert host.decoder.bad_frames > 0


def test_silence_drops_commands_and_answers(sim: RfidReaderSimulator, host: Host) -> None:
    sim.faults.silent = True
    host.send(StartInventory())
    assert host.frames(0.1) == []
    assert not sim.inventory_running
    sim.faults.silent = False
    host.send(StopInventory())
    assert isinstance(host.until(Ack), Ack)


def test_delay_holds_frames_back(sim: RfidReaderSimulator, host: Host) -> None:
    host.frames(0.06)
    sim.faults.delay = 0.15
    sent = time.monotonic()
    host.send(Ping(5))
    assert host.until(Pong, 1.0) == Pong(5)
    assert time.monotonic() - sent >= 0.15


def test_a_buffer_smaller_than_a_packet(host: Host) -> None:
    host.sim.faults.silent = True
    host.frames(0.03)  # nothing more comes out
    host.sim.faults.silent = False
    host.send(Identify())  # a 39-byte IDENTITY packet
    with pytest.raises(usb.core.USBError) as err:
        host.dev.read(EP_IN, 8, 200)
    assert err.value.errno == errno.EOVERFLOW


def test_the_built_registry_is_deterministic() -> None:
    assert list(build_sim_registry()) == list(build_sim_registry())


# ----------------------------------------------------------------------------- the console


def test_simulate_rfid_runs_the_real_driver_on_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "bench.txt"
    script.write_text("place 1 ante 125\nunknown 2 odds\nforeign 3 play  # a cash chip\n"
                      "place 9 ante R25\nfault garbage 0\nbogus\n")
    assert main(["simulate", "rfid", "--script", str(script), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "placed 2 chip(s), R125.00, on seat 1 ante" in out  # R100 + R25
    assert "! seat must be 1..6, got 9" in out
    assert "! unknown command 'bogus'" in out
    assert "! connected: SR-48-SIM serial SIM-SR48-0001" in out
    assert "seat 1 ante: 2 chip(s), R125.00 counts" in out
    assert "! unknown_chip: chip E004" in out
    assert "! other_chip_set: chip E05D02" in out
    assert "seat 1 ante: 2 chip(s) R125.00  (driver agrees)" in out
    assert "reader SIM-SR48-0001: connected" in out


def test_console_commands_reply_in_one_line(sim: RfidReaderSimulator) -> None:
    assert rfid_command(sim, "place 2 sweet16 R25.00") == (
        "placed 1 chip(s), R25.00, on seat 2 sweet16"
    )
    assert rfid_command(sim, "remove 2 sweet16") == "took 1 chip(s) off seat 2 sweet16"
    assert rfid_command(sim, "place 2 sweet16 25.005") == (
        "! '25.005' is not an amount: a fraction of a cent (at most two decimals)")
    assert rfid_command(sim, "place 2 sweet16 -25") == (
        "! '-25' is not an amount: an amount cannot be negative")
    assert rfid_command(sim, "fault silent on").startswith("faults: ")
    assert sim.faults.silent
    assert rfid_command(sim, "fault clear") == "every fault off"
    assert rfid_command(sim, "fault unplug") == "unplugged: the reader left the bus"
    assert not sim.plugged
    assert rfid_command(sim, "fault plug").startswith("plugged in at address")
    assert rfid_command(sim, "fault nonsense 1").startswith("! unknown fault 'nonsense'")
