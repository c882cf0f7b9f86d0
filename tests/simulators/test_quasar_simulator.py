"""The QuasarMX simulator's protocol as a raw client sees it (answers, errors, end of frame,
unplug and plug on TCP and on the pty), and the QuasarMX table: the SR-48 simulator's table
API and the kit's controls, on one felt that an SR-48 simulator can share."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import pytest

from drivers.adapter import SimulatedChips
from drivers.readings import SpotId
from simulators.felt import Felt
from simulators.quasar import QuasarSimulator, QuasarTiming
from simulators.quasar_table import QuasarTable, ReaderPlan
from simulators.rfid import RfidReaderSimulator

PORTS = {1: SpotId(1, "ante"), 2: SpotId(1, "play")}


class Client:
    """A raw TCP client: send a line, read until an LF (or, before EOF, a quiet moment)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)

    def ask(self, line: str, *, lf: bool = True, wait: float = 2.0) -> str:
        self.sock.sendall(line.encode() + b"\r")
        data = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            self.sock.settimeout(0.2 if not lf else min(wait, 2.0))
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                if not lf and data:
                    break
                continue
            data += chunk
            if lf and data.endswith(b"\n"):
                break
        return data.decode()


@pytest.fixture
def felt() -> Felt:
    return Felt()


@pytest.fixture
def sim(felt: Felt) -> Iterator[QuasarSimulator]:
    with QuasarSimulator(felt=felt, ports=PORTS, transport="tcp", speed=50.0) as s:
        yield s


def test_it_answers_the_protocol_as_a_quasarmx(felt: Felt, sim: QuasarSimulator) -> None:
    chip = felt.place(1, "ante", 2500)[0]
    c = Client(sim.tcp_port)
    assert c.ask("BRK", lf=False) == "NCM\r"  # before EOF: no LF after an answer
    assert c.ask("EOF") == "OK!\r\n"
    assert c.ask("REV") == "QUASAR_MX      02000307\r\n"
    assert c.ask("RSN") == "QMX-SIM-0001\r\n"
    assert c.ask("HWR") == "UCO\r\n"
    assert c.ask("INV") == "NRF\r\n"  # the RF interface is off until SRI
    assert c.ask("SRI SS 100") == "OK!\r\n"
    assert c.ask("SAP 5") == "NOR\r\n"  # no multiplexer: ports 1..4
    assert c.ask("SAP X") == "EDX\r\n"
    assert c.ask("SAP 1") == "OK!\r\n"
    assert c.ask("INV") == f"{chip.hex().upper()}\rIVF 01\r\n"
    assert c.ask("SAP ARP ON") == "OK!\r\n"
    assert c.ask("SAP MAN 2") == "OK!\r\n"
    assert c.ask("INV") == "ARP 02\rIVF 00\r\n"
    sim.antenna_fault(2)
    assert c.ask("INV") == "ARH\r\n"


def test_multiplexer_ports_and_automatic_switching(felt: Felt) -> None:
    ports = {1: SpotId(1, "ante"), 5: SpotId(1, "odds")}
    odds = felt.place(1, "odds", 2500)[0]
    with QuasarSimulator(felt=felt, ports=ports, transport="tcp", multiplexers=True,
                         speed=50.0) as sim:
        c = Client(sim.tcp_port)
        for line in ("EOF", "SRI SS 100", "SAP ARP ON", "SAP AUT 5"):
            assert c.ask(line).endswith("OK!\r\n")
        answers = [c.ask("INV") for _ in range(6)]
    assert answers[0] == "ARP 01\rIVF 00\r\n"
    assert answers[4] == f"{odds.hex().upper()}\rARP 05\rIVF 01\r\n"
    assert answers[5] == "ARP 01\rIVF 00\r\n"  # round again


def test_unplugged_tcp_refuses_and_plugged_it_answers_from_a_fresh_state(
    sim: QuasarSimulator,
) -> None:
    c = Client(sim.tcp_port)
    assert c.ask("EOF") == "OK!\r\n"
    c.sock.close()  # the reader's end of it closes with the unplug; ours need not linger
    sim.unplug()
    with pytest.raises(ConnectionRefusedError):
        Client(sim.tcp_port)
    sim.plug()
    again = Client(sim.tcp_port)
    assert again.ask("BRK", lf=False) == "NCM\r"  # end-of-frame is off again


def test_an_unplugged_pty_vanishes_and_comes_back_behind_its_link(felt: Felt,
                                                                    tmp_path: object) -> None:
    link = f"{tmp_path}/reader"
    with QuasarSimulator(felt=felt, ports=PORTS, link_path=link, speed=50.0) as sim:
        first = os.path.realpath(link)
        sim.unplug()
        assert not os.path.exists(link)
        sim.plug()
        assert os.path.exists(link)
        assert sim.path is not None and os.path.realpath(link) == sim.path
        assert first.startswith("/dev/pts/")


def test_silence_and_lost_commands(sim: QuasarSimulator) -> None:
    c = Client(sim.tcp_port)
    assert c.ask("EOF") == "OK!\r\n"
    sim.set_fault("silent", True)
    assert c.ask("REV", wait=0.3) == ""
    sim.set_fault("silent", False)
    sim.faults.inject("drop_incoming")
    assert c.ask("REV", wait=0.3) == ""
    assert c.ask("REV") == "QUASAR_MX      02000307\r\n"
    assert sim.stats["lost_incoming"] == 2


def test_the_timing_model() -> None:
    t = QuasarTiming()
    assert t.inventory_time(0) == pytest.approx(0.012)
    assert t.inventory_time(20) == pytest.approx(0.212)  # 100 tags a second, Metratec's figure
    assert t.line_time(18) == pytest.approx(18 * 10 / 115200)


def test_a_quasarmx_table_is_simulated_chips_with_the_sr48_table_api() -> None:
    plans = [ReaderPlan(ports={1: SpotId(1, "ante"), 2: SpotId(1, "play")}),
             ReaderPlan(ports={1: SpotId(2, "ante")}, transport="tcp")]
    with QuasarTable(plans, speed=50.0) as table:
        assert isinstance(table, SimulatedChips)
        assert table.spots() == (SpotId(1, "ante"), SpotId(1, "play"), SpotId(2, "ante"))
        [link1, link2] = table.links()
        assert link1.url is not None and os.path.exists(link1.url)
        assert link2.host == "127.0.0.1" and link2.port == table.readers[1].tcp_port
        with table.moving():
            laid = table.place(1, "ante", 12500)
            table.place(2, "ante", 2500)
        assert table.chips_on(1, "ante") == frozenset(laid)
        assert set(table.table()) == {SpotId(1, "ante"), SpotId(2, "ante")}
        assert table.owner_of(laid[0]) == "SIM-E1"
        table.owners[laid[0]] = "SIM-E2"
        assert laid[0] in table.chips_of("SIM-E2")
        table.clear_seat(1)
        assert table.chips_on(1, "ante") == frozenset()
        table.clear()
        assert table.table() == {}
        with pytest.raises(ValueError, match="no reader's port"):
            table.antenna_fault(3, "ante")
    with pytest.raises(ValueError, match="one spot under two ports"):
        QuasarTable([plans[0], plans[0]])


def test_an_sr48_simulator_and_a_quasarmx_read_one_felt() -> None:
    felt = Felt()
    sr48 = RfidReaderSimulator(felt=felt)
    with QuasarSimulator(felt=felt, ports=PORTS, transport="tcp", speed=50.0) as qmx:
        laid = sr48.place(1, "ante", 2500)
        c = Client(qmx.tcp_port)
        for line in ("EOF", "SRI SS 100", "SAP 1"):
            c.ask(line)
        assert c.ask("INV") == f"{laid[0].hex().upper()}\rIVF 01\r\n"
        felt.remove(1, "ante")
        assert sr48.chips_on(1, "ante") == frozenset()
        assert c.ask("INV") == "IVF 00\r\n"
