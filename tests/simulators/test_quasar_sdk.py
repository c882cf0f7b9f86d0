"""Metratec's own SDK (metratec-rfid 1.4.5, a test dependency) takes our QuasarMX simulator for
a reader: its `QuasarMX` class connects (its model and firmware check passes, and fails on an
old firmware) and reads inventories on several antennas, over TCP (hostname/port) and over
the pseudo-terminal (serial_port=). Independent of our driver: only the simulator and the
vendor's code run here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from metratec_rfid.quasar_mx import QuasarMX
from metratec_rfid.reader_exception import RfidReaderException

from drivers.readings import SpotId
from simulators.felt import Felt
from simulators.quasar import QuasarSimulator, Transport

SPOTS = {1: SpotId(1, "ante"), 2: SpotId(1, "play"), 3: SpotId(2, "ante")}


@pytest.fixture
def felt() -> Felt:
    return Felt()


def simulator(felt: Felt, transport: Transport, *, model: str = "QUASAR_MX",
              firmware: str = "0307") -> QuasarSimulator:
    return QuasarSimulator(felt=felt, ports=SPOTS, transport=transport, speed=20.0,
                           model=model, firmware=firmware)


@pytest.fixture
def tcp(felt: Felt) -> Iterator[QuasarSimulator]:
    with simulator(felt, "tcp") as sim:
        yield sim


@pytest.fixture
def pty(felt: Felt) -> Iterator[QuasarSimulator]:
    with simulator(felt, "pty") as sim:
        yield sim


def tids(tags: list) -> set[str]:  # type: ignore[type-arg]
    return {tag.get_tid() for tag in tags}


async def test_the_sdk_connects_over_tcp_and_reads_each_antenna(
    felt: Felt, tcp: QuasarSimulator,
) -> None:
    ante = felt.place(1, "ante", 2500)
    other = felt.place(2, "ante", 12500)
    reader = QuasarMX("table", hostname="127.0.0.1", port=tcp.tcp_port)
    await reader.connect(timeout=5.0)
    try:
        assert reader.is_running()
        info = await reader.get_reader_info()  # the SDK's model and firmware check again
        assert info["hardware"] == "QUASAR_MX" and info["firmware_version"] == "0307"
        seen = {}
        for antenna in (1, 2, 3):
            await reader.set_antenna(antenna)
            seen[antenna] = tids(await reader.get_inventory())
    finally:
        await reader.disconnect()
    assert seen == {1: {u.hex().upper() for u in ante}, 2: set(),
                    3: {u.hex().upper() for u in other}}


async def test_the_sdk_multiplexes_the_antennas_with_the_antenna_report(
    felt: Felt, tcp: QuasarSimulator,
) -> None:
    ante = felt.place(1, "ante", 2500)
    other = felt.place(2, "ante", 12500)
    reader = QuasarMX("table", hostname="127.0.0.1", port=tcp.tcp_port)
    await reader.connect(timeout=5.0)
    try:
        await reader.enable_antenna_report(True)
        await reader.set_antenna_multiplex(3)
        tags = await reader.get_inventory_multi()
    finally:
        await reader.disconnect()
    by_antenna = {(t.get_tid(), t.get_antenna()) for t in tags}
    assert by_antenna == {(u.hex().upper(), 1) for u in ante} | {
        (u.hex().upper(), 3) for u in other}


@pytest.mark.parametrize(("change", "words"), [
    ({"firmware": "0217"}, "firmware version too low"),
    ({"model": "DESKID_ISO"}, "Wrong reader type"),
])
async def test_the_sdk_refuses_a_simulator_with_an_old_firmware_or_another_model(
    felt: Felt, change: dict[str, str], words: str,
) -> None:
    with simulator(felt, "tcp", **change) as sim:
        reader = QuasarMX("table", hostname="127.0.0.1", port=sim.tcp_port)
        try:
            with pytest.raises(RfidReaderException, match=words):
                await reader.connect(timeout=2.0)
        finally:
            await reader.disconnect()


async def test_the_sdk_connects_over_the_pty_and_inventories_several_antennas(
    pty: QuasarSimulator,
) -> None:
    assert pty.path is not None
    reader = QuasarMX("table", serial_port=pty.path)
    await reader.connect(timeout=5.0)
    try:
        assert reader.is_running()
        info = await reader.get_reader_info()
        assert info["hardware"] == "QUASAR_MX"
        for antenna in (1, 2, 3):
            await reader.set_antenna(antenna)
            assert await reader.get_inventory() == []
        assert pty.stats["inventories"] == 3
    finally:
        await reader.disconnect()


@pytest.mark.xfail(strict=True, raises=(RfidReaderException, AssertionError), reason=(
    "metratec-rfid 1.4.5's SerialConnection ends a message at every CR, so HfReaderAscii gets "
    "the UID lines of an INV answer one by one, parses the IVF line alone as an empty "
    "inventory and reads the UID lines as the answers to its next commands (D288)"))
async def test_the_sdk_reads_tags_over_the_pty(felt: Felt, pty: QuasarSimulator) -> None:
    ante = felt.place(1, "ante", 2500)
    assert pty.path is not None
    reader = QuasarMX("table", serial_port=pty.path)
    await reader.connect(timeout=5.0)
    try:
        found = []
        for antenna in (1, 2):
            await reader.set_antenna(antenna)
            found.append(tids(await reader.get_inventory()))
    finally:
        await reader.disconnect()
    assert found == [{u.hex().upper() for u in ante}, set()]
