"""simulators.id_reader on its own: the bytes it writes on its pty (read back through the slave
path as any program would), its line ends, its refusals, unplug and replug, and a pty nobody
reads filling up without blocking the caller."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator

import pytest

from simulators.id_reader import IdReaderSimulator, IdReaderSimulatorError


def read_back(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        ready, _, _ = select.select([fd], [], [], 5.0)  # a guard against hangs only
        assert ready, f"only {out!r} arrived"
        out += os.read(fd, n - len(out))
    return out


@pytest.fixture
def opened() -> Iterator[tuple[IdReaderSimulator, int]]:
    with IdReaderSimulator() as sim:
        assert sim.path is not None
        fd = os.open(sim.path, os.O_RDWR | os.O_NOCTTY)
        try:
            yield sim, fd
        finally:
            os.close(fd)


def test_taps_and_raw_bytes_come_out_of_the_slave_as_sent(
        opened: tuple[IdReaderSimulator, int]) -> None:
    sim, fd = opened
    sim.tap("6012345678901234")
    sim.tap("04a1b2c3", "uid")
    sim.tap("12345678", "plain")
    sim.send_raw(b"\x00junk")
    expected = (b";6012345678901234=3012101?\r\n" b"UID:04A1B2C3\r\n" b"12345678\r\n"
                b"\x00junk")
    assert read_back(fd, len(expected)) == expected
    assert (sim.stats["taps"], sim.stats["raw_writes"]) == (3, 1)


def test_the_line_end_is_configurable_and_checked() -> None:
    with IdReaderSimulator(ending=b"\r") as sim:
        assert sim.path is not None
        fd = os.open(sim.path, os.O_RDWR | os.O_NOCTTY)
        try:
            sim.tap("12345678", "plain")
            assert read_back(fd, 9) == b"12345678\r"
        finally:
            os.close(fd)
    with pytest.raises(ValueError, match="ending"):
        IdReaderSimulator(ending=b"\r\n\r\n")


def test_a_number_that_does_not_fit_its_form_is_refused(
        opened: tuple[IdReaderSimulator, int]) -> None:
    sim, _ = opened
    with pytest.raises(ValueError, match=r"8\.\.19 digits"):
        sim.tap("1234")
    with pytest.raises(ValueError, match="hex"):
        sim.tap("0000000G", "uid")
    assert sim.stats["taps"] == 0


def test_unplugged_it_has_no_path_and_refuses_taps_and_replug_gives_a_new_pty() -> None:
    with IdReaderSimulator() as sim:
        sim.unplug()
        assert (sim.path, sim.plugged) == (None, False)
        with pytest.raises(IdReaderSimulatorError, match="unplugged"):
            sim.tap("12345678", "plain")
        path = sim.replug()
        assert path == sim.path
        assert sim.plugged
        assert sim.stats["unplugs"] == 1
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        try:
            sim.tap("12345678", "plain")
            assert read_back(fd, 10) == b"12345678\r\n"
        finally:
            os.close(fd)


def test_a_stopped_simulator_refuses_and_cannot_start_twice() -> None:
    sim = IdReaderSimulator()
    with pytest.raises(IdReaderSimulatorError, match="not running"):
        sim.tap("12345678", "plain")
    with sim, pytest.raises(IdReaderSimulatorError, match="already running"):
        sim.start()
    assert sim.path is None
    with pytest.raises(IdReaderSimulatorError, match="not running"):
        sim.unplug()


def test_a_pty_nobody_reads_loses_bytes_instead_of_blocking() -> None:
    with IdReaderSimulator() as sim:
        chunk = b"9" * 4096
        for _ in range(64):  # far more than a pty buffers
            sim.send_raw(chunk)
        assert 0 < sim.stats["lost_bytes"] < 64 * len(chunk)
