"""One card, three readers, one reading: the same card tapped through the serial-lines
reader (`SerialIdReader` on the simulated reader's pty), the keyboard wedge (`WedgeIdReader`
on a capture of a wedge's key events) and PC/SC (`PcscIdReader` on a real pcscd with a
virtual card) gives the identical (number, form): an NFC card's UID through all three, a
magstripe card's track 2 through serial and wedge (PC/SC reads no magstripe).

The PC/SC leg skips without pcscd and vsmartcard-vpcd locally, and fails under CI.
"""

from __future__ import annotations

import random
from pathlib import Path

from drivers.id_pcsc import PcscIdReader
from drivers.id_reader import SerialIdReader
from drivers.id_wedge import WedgeIdReader
from drivers.protocols import IdReader
from drivers.wedge_codec import Typed
from runtime.backoff import Backoff
from simulators.id_reader import IdReaderSimulator
from simulators.wedge import SimulatedWedge, replay_capture
from tests.drivers.id_support import Seen, ready_pcsc

CAPTURES = Path(__file__).parents[1] / "fixtures" / "wedge"
UID = "04A1B2C3D4E5F6"  # the card in nfc-uid.evtest
PAN = "6012345678901234"  # the card in magstripe-swipe.evtest


def _backoff() -> Backoff:
    return Backoff(initial=0.02, maximum=0.1, rng=random.Random(11))


async def one_reading(reader: IdReader, tap: object = None) -> tuple[str, str]:
    """Open the reader, tap (a callable, once connected), and give the first reading."""
    async with reader:
        seen = Seen(reader)
        await seen.until(lambda s: bool(s.alerts("connected")))
        if callable(tap):
            tap()
        (read,) = await seen.taps_n(1)
        assert seen.alerts("bad_read") == []
    return read.number, read.form


async def through_serial(number: str, form: str) -> tuple[str, str]:
    with IdReaderSimulator() as sim:
        assert sim.path is not None
        reader = SerialIdReader(sim.path, device_name="ids", backoff=_backoff())
        return await one_reading(reader, lambda: sim.tap(number, form))  # type: ignore[arg-type]


async def through_wedge_capture(capture: str, typed: Typed) -> tuple[str, str]:
    source = replay_capture(CAPTURES / capture, speed=4.0)
    reader = WedgeIdReader(source, device_name="ids", typed=typed, backoff=_backoff(),
                           line_timeout=0.2)
    return await one_reading(reader)


async def through_simulated_wedge(number: str, form: str, typed: Typed) -> tuple[str, str]:
    wedge = SimulatedWedge(typed=typed)
    reader = WedgeIdReader(wedge, device_name="ids", typed=typed, backoff=_backoff())
    return await one_reading(reader, lambda: wedge.tap(number, form))  # type: ignore[arg-type]


async def through_pcsc(uid: str) -> tuple[str, str]:
    pcsc = ready_pcsc()
    reader = PcscIdReader(pcsc.reader_name, device_name="ids", poll=0.1, backoff=_backoff())
    return await one_reading(reader, lambda: pcsc.tap(uid))


async def test_an_nfc_card_reads_the_same_on_serial_wedge_and_pc_sc() -> None:
    serial = await through_serial(UID.lower(), "uid")
    wedge = await through_wedge_capture("nfc-uid.evtest", "uid")
    typed = await through_simulated_wedge(UID, "uid", "uid")
    pcsc = await through_pcsc(UID)
    assert serial == wedge == typed == pcsc == (UID, "uid")


async def test_a_magstripe_card_reads_the_same_on_serial_and_wedge() -> None:
    serial = await through_serial(PAN, "track2")
    wedge = await through_wedge_capture("magstripe-swipe.evtest", "card")
    typed = await through_simulated_wedge(PAN, "track2", "card")
    assert serial == wedge == typed == (PAN, "track2")
