"""The keyboard-wedge ID reader end to end through its event-source seam: `WedgeIdReader`
(worker thread, decoder, reconnection, alerts) on recorded captures (evtest's text and our
JSON lines, replayed at their recorded pace) and on the simulated wedge that types cards.

Shown: a capture of a 2-track magstripe swipe, an NFC wedge's UID and a keypad wedge's digits
each give one IdTap; a capture that ends unplugged is "lost"; a simulated wedge's taps of each
form arrive; garbage keys, a half line and an unplug are alerts and the next card still reads;
a refused grab is a "grab_refused" alert (once) and reading starts when the grab is free.

The real device (`EvdevSource`) cannot be opened here (no /dev/input, no uinput), so its
mapping of the kernel's errors (EBUSY on EVIOCGRAB, ENODEV on read, a missing node, a device
with no keys) is shown with python-evdev's InputDevice replaced by pytest-mock: faults that
cannot be produced on this machine.
"""

from __future__ import annotations

import asyncio
import errno
import io
import random
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from drivers.errors import DeviceLost, DeviceNotFound
from drivers.id_wedge import EvdevSource, GrabRefused, WedgeIdReader
from drivers.protocols import IdReader
from drivers.wedge_capture import (
    CaptureError,
    format_event,
    load_capture,
    read_capture,
    record_events,
)
from drivers.wedge_codec import EV_KEY, Typed, keystrokes
from runtime.backoff import Backoff
from simulators.wedge import CaptureReplay, SimulatedWedge, replay_capture
from tests.drivers.id_support import WAIT, Seen, numbers

CAPTURES = Path(__file__).parents[1] / "fixtures" / "wedge"
PAN = "6012345678901234"


def reader(source: Any, typed: Typed = "card", **options: Any) -> WedgeIdReader:
    return WedgeIdReader(source, device_name="table-ids", typed=typed, line_timeout=0.1,
                         poll=0.05, backoff=Backoff(initial=0.01, maximum=0.05,
                                                    rng=random.Random(5)), **options)


@pytest.mark.parametrize(("capture", "typed", "expected"), [
    ("magstripe-swipe.evtest", "card", (PAN, "track2")),
    ("nfc-uid.evtest", "uid", ("04A1B2C3D4E5F6", "uid")),
    ("keypad-plain.jsonl", "card", ("60123456", "plain")),
])
async def test_a_recorded_capture_replays_to_its_one_reading(
        capture: str, typed: Typed, expected: tuple[str, str]) -> None:
    source = replay_capture(CAPTURES / capture, speed=4.0, then="unplug")
    ids: IdReader = reader(source, typed)
    async with ids:
        seen = Seen(ids)
        (connected,) = await seen.alert("connected")
        taps = await seen.taps_n(1)
        (lost,) = await seen.alert("lost")
        health = ids.health()
    assert connected.detail == f"replaying {capture} ({len(source.capture.events)} events)"
    assert numbers(taps) == [expected]
    assert lost.detail == f"the capture {capture} ended (unplugged)"
    assert seen.alerts("bad_read") == []
    assert health.counters == {"taps": 1, "bad_reads": 0, "connects": 1, "reconnects": 0,
                               "disconnects": 1}


async def test_a_simulated_wedge_types_each_form_and_garbage_is_a_bad_read() -> None:
    wedge = SimulatedWedge(typed="uid")
    async with reader(wedge, "uid") as ids:
        seen = Seen(ids)
        (connected,) = await seen.alert("connected")
        wedge.tap(PAN)  # track 2
        wedge.tap("04a1b2c3d4e5f6", "uid")
        wedge.inject("garbage")  # noise keys before the next card's line
        wedge.tap("11111111", "uid")
        wedge.tap("DEADBEEF", "uid")
        await seen.until(lambda s: ("DEADBEEF", "uid") in numbers(s.taps()))
        bad = seen.alerts("bad_read")
    assert connected.detail == "reading Simulated Wedge (simulated, grabbed)"
    read = numbers(seen.taps())
    assert read[:2] == [(PAN, "track2"), ("04A1B2C3D4E5F6", "uid")]
    assert read[-1] == ("DEADBEEF", "uid")
    # the noise is a bad line of its own when it holds a line end, else it spoils the card's
    assert len(bad) == 1
    assert len(read) == (4 if ("11111111", "uid") in read else 3)


async def test_a_half_line_is_given_up_and_an_unplug_is_lost_then_reconnected() -> None:
    wedge = SimulatedWedge()
    async with reader(wedge) as ids:
        seen = Seen(ids)
        await seen.alert("connected")
        wedge.type_text(";60123", enter=False)
        (given_up,) = await seen.alert("bad_read")
        wedge.unplug()
        (lost,) = await seen.alert("lost")
        assert not ids.health().connected
        wedge.tap("12345678", "plain")  # typed into nothing: unplugged
        wedge.plug()
        await seen.alert("reconnected")
        wedge.tap(PAN, "plain")
        taps = await seen.taps_n(1)
        health = ids.health()
    assert given_up.detail == "6 characters typed and no Enter"
    assert lost.detail == "Simulated Wedge was unplugged (ENODEV)"
    assert numbers(taps) == [(PAN, "plain")]
    assert health.counters["reconnects"] == 1


async def test_a_refused_grab_is_alerted_once_and_reading_starts_when_it_is_free() -> None:
    wedge = SimulatedWedge()
    wedge.set_fault("grab_busy", True)
    async with reader(wedge) as ids:
        seen = Seen(ids)
        (refused,) = await seen.alert("grab_refused")
        async with asyncio.timeout(WAIT):  # it keeps trying, and says so once
            while wedge.stats["grab_refused"] < 3:
                await asyncio.sleep(0.01)
        wedge.set_fault("grab_busy", False)
        await seen.alert("connected")
        wedge.tap(PAN)
        taps = await seen.taps_n(1)
    assert refused.detail == "another process holds an exclusive grab on Simulated Wedge"
    assert len(seen.alerts("grab_refused")) == 1
    assert numbers(taps) == [(PAN, "track2")]


# ---------------------------------------------------------------------- the capture format

def test_a_capture_recorded_from_a_source_replays_to_the_same_events() -> None:
    wedge = SimulatedWedge()
    wedge.tap(PAN)
    wedge.tap("12345678", "plain")
    out = io.StringIO()
    written = record_events(wedge, out, lines=2, seconds=10.0, device="sim", path="mem")
    capture = read_capture(out.getvalue())
    assert capture.header["device"] == "sim"
    assert len(capture.events) == written
    enters = [e for e in capture.events if e.type == EV_KEY and e.code == 28 and e.value == 1]
    assert len(enters) == 2
    replay = CaptureReplay(capture, speed=0)
    replay.open()
    assert replay.read(0.01) == list(capture.events)


def test_evtest_text_reads_with_its_hex_scan_codes_and_bad_lines_name_their_number() -> None:
    capture = load_capture(CAPTURES / "nfc-uid.evtest")
    first = capture.events[0]
    assert (first.type, first.code, first.value) == (4, 4, 0x70027)  # MSC_SCAN, in hex
    assert capture.events[1].code == 11  # KEY_0
    with pytest.raises(CaptureError, match="line 2: an event without 'code'"):
        read_capture('{"t": 1.0, "type": 1, "code": 2, "value": 1}\n'
                     '{"t": 1.0, "type": 1, "value": 1}\n')
    with pytest.raises(CaptureError, match="line 1: 'value' must be an integer"):
        read_capture('{"t": 1.0, "type": 1, "code": 2, "value": "1"}')
    with pytest.raises(CaptureError, match="line 1: an evtest event line that does not parse"):
        read_capture("Event: time 12.000001, type 1 (EV_KEY), code x (KEY_1), value 1")
    with pytest.raises(CaptureError, match="line 1: not a hid-wedge capture"):
        read_capture('{"capture": "rfid", "version": 1}')
    assert format_event(keystrokes("1")[1]).startswith('{"t": 0.0, "type": 1, "code": 2')


# ---------------------------------------------------------------------- the real device

class FakeDevice:
    """python-evdev's InputDevice as the kernel's faults leave it (mocked: see the module)."""

    name = "ACME Wedge"
    fd = -1

    def __init__(self, grab_error: OSError | None = None, keys: bool = True) -> None:
        self._grab_error, self._keys = grab_error, keys
        self.closed = False

    def capabilities(self) -> dict[int, list[int]]:
        return {EV_KEY: [2, 3]} if self._keys else {3: [0, 1]}

    def grab(self) -> None:
        if self._grab_error is not None:
            raise self._grab_error

    def close(self) -> None:
        self.closed = True


def evdev_with(mocker: MockerFixture, device: FakeDevice | Exception) -> Any:
    evdev = mocker.Mock()
    evdev.InputDevice.side_effect = (device if isinstance(device, Exception)
                                     else lambda _path: device)
    return evdev


def test_a_grab_held_by_another_process_is_grab_refused_and_the_device_closed(
        mocker: MockerFixture) -> None:
    # EBUSY from EVIOCGRAB needs a second process grabbing a real input device: none here.
    device = FakeDevice(grab_error=OSError(errno.EBUSY, "Device or resource busy"))
    source = EvdevSource("/dev/input/by-id/usb-acme-event-kbd", evdev=evdev_with(mocker, device))
    with pytest.raises(GrabRefused, match="another process holds an exclusive grab on "
                                          "/dev/input/by-id/usb-acme-event-kbd"):
        source.open()
    assert device.closed


def test_a_missing_node_a_denied_one_and_a_device_without_keys_are_not_found(
        mocker: MockerFixture) -> None:
    path = "/dev/input/by-id/usb-acme-event-kbd"
    with pytest.raises(DeviceNotFound, match="no input device at"):
        EvdevSource(path, evdev=evdev_with(mocker, FileNotFoundError(2, "x"))).open()
    with pytest.raises(DeviceNotFound, match="permission denied on"):
        EvdevSource(path, evdev=evdev_with(mocker, PermissionError(13, "x"))).open()
    no_keys = FakeDevice(keys=False)
    with pytest.raises(DeviceNotFound, match=r"\(ACME Wedge\) types no keys"):
        EvdevSource(path, evdev=evdev_with(mocker, no_keys)).open()
    assert no_keys.closed
    opened = EvdevSource(path, grab=False, evdev=evdev_with(mocker, FakeDevice()))
    assert opened.open() == (f"reading ACME Wedge on {path} (NOT grabbed: keystrokes reach"
                             " the session too)")


def test_enodev_on_read_is_device_lost(mocker: MockerFixture) -> None:
    # ENODEV comes from reading a device node whose USB device was unplugged: none here.
    device = FakeDevice()
    source = EvdevSource("/dev/input/event7", evdev=evdev_with(mocker, device))
    source.open()
    mocker.patch("drivers.id_wedge.select.select", side_effect=OSError(errno.ENODEV,
                                                                        "No such device"))
    with pytest.raises(DeviceLost, match="/dev/input/event7 went away: No such device"):
        source.read(0.1)
