"""The shoe simulator on its real pty, driven by a bare-bones host written here (os.open on the
slave, the codec, select): decks, the protocol's shoe side (§5.1 of card-shoe.md), every
fault, unplug/replug/power cycle; plus the Faults switches and the `simulate shoe` command.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import select
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.main import main
from cli.simulate.command import _serve, shoe_command
from drivers.readings import ShoeState
from drivers.shoe_codec import (
    DETAIL_QUEUE_FULL,
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Identify,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    ShoeMessage,
    StatusReport,
    encode,
)
from game.poker.cards import DECK, parse_cards
from simulators.faults import Faults
from simulators.shoe import ShoeSimulator, ShoeSimulatorError

Event = ShoeMessage | BadFrame
WAIT = 10.0  # a safety net against hangs, not a measurement


class RawHost:
    """The least a host can be: the slave side of the pty, the codec, and select()."""

    def __init__(self, path: str) -> None:
        # The simulator keeps its pty raw; setting modes here (tty.setraw) would flush input.
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        self.decoder = ShoeDecoder("device")
        self.events: list[Event] = []
        self.raw = bytearray()
        self._seq = 0

    def close(self) -> None:
        os.close(self.fd)

    def send(self, message: Identify | Ack | Nak) -> None:
        os.write(self.fd, encode(message))

    def pump(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            data = os.read(self.fd, 4096)
            self.raw += data
            self.decoder.feed(data)
            while (event := self.decoder.next_event()) is not None:
                self.events.append(event)

    def until(self, done: Callable[[], bool]) -> list[Event]:
        deadline = time.monotonic() + WAIT
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; got {self.events}")
            self.pump(0.05)
        return self.events

    def of(self, kind: type) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]

    def cards(self) -> list[CardReport]:
        return [e for e in self.events if isinstance(e, CardReport)]


@pytest.fixture
def sim() -> Iterator[ShoeSimulator]:
    with ShoeSimulator(seed=21, heartbeat_interval=0.05, rto=0.05, rto_max=0.1) as shoe:
        yield shoe


@pytest.fixture
def host(sim: ShoeSimulator) -> Iterator[RawHost]:
    assert sim.path is not None
    h = RawHost(sim.path)
    yield h
    h.close()


# ------------------------------------------------------------------------------ decks


def test_a_seeded_shoe_deals_the_seeded_shuffle_then_goes_empty() -> None:
    expected = list(DECK)
    random.Random(42).shuffle(expected)  # the documented shuffle: random.Random(seed)
    sim = ShoeSimulator(seed=42)
    dealt = sim.deal(60)  # not started: runs in the caller's thread
    assert dealt == expected
    assert sorted(dealt) == sorted(DECK)
    assert sim.state is ShoeState.EMPTY
    assert sim.deal(1) == []
    assert ShoeSimulator(seed=43).deal(52) != expected
    assert [i for i, _ in sim.dealt] == list(range(52))


def test_two_decks_and_scripted_cards() -> None:
    two = ShoeSimulator(seed=1, decks=2, queue_capacity=200)  # no host acknowledges
    assert sorted(two.deal(104)) == sorted(list(DECK) * 2)
    scripted = ShoeSimulator(cards="Ah Kd Ah")  # scripted lists may repeat a card
    assert scripted.deal(5) == list(parse_cards("Ah Kd Ah", distinct=False))
    assert scripted.state.value == "empty"
    scripted.load("2c 3c")
    assert scripted.state.value == "ready"
    assert scripted.deal(2) == list(parse_cards("2c 3c"))


def test_a_jammed_shoe_deals_nothing_and_an_unreadable_card_uses_no_read_index() -> None:
    sim = ShoeSimulator(cards="Ah Kd Qs")
    sim.set_state("jam")
    with pytest.raises(ShoeSimulatorError, match="jam"):
        sim.deal(1)
    sim.set_state(ShoeState.READY)
    assert str(sim.unreadable()) == "Ah"
    assert sim.state.value == "unreadable_card"
    assert sim.deal(1)[0] == parse_cards("Kd")[0]
    assert sim.dealt == [(0, parse_cards("Kd")[0])]
    assert sim.state.value == "ready"


# ------------------------------------------------------------------------------ protocol, shoe side


def test_power_on_announces_identity_and_ready(sim: ShoeSimulator, host: RawHost) -> None:
    host.until(lambda: any(isinstance(e, StatusReport) for e in host.events))
    ident = host.of(ShoeIdentity)[0]
    assert isinstance(ident, ShoeIdentity)
    assert (ident.serial, ident.model, ident.heartbeat_ms) == ("SIM-000001", "HUPS-SIM", 50)
    assert ident.session_id == sim.session_id
    assert (ident.reads, ident.unacked_from) == (0, 0)
    status = host.of(StatusReport)[0]
    assert isinstance(status, StatusReport)
    assert status == StatusReport(evn=0, state=ShoeState.READY, detail=0, reads=0,
                                  seq=status.seq)


def test_identify_is_answered_and_unacked_events_resent(sim: ShoeSimulator,
                                                        host: RawHost) -> None:
    sim.deal(2)
    host.events.clear()
    host.send(Identify())
    host.until(lambda: len([e for e in host.events if isinstance(e, CardReport)]) >= 2
               and any(isinstance(e, ShoeIdentity) and e.reads == 2 for e in host.events))
    ident = host.of(ShoeIdentity)[-1]
    assert isinstance(ident, ShoeIdentity)
    assert (ident.reads, ident.unacked_from) == (2, 0)


def test_events_are_resent_until_acknowledged(sim: ShoeSimulator, host: RawHost) -> None:
    card = sim.deal(1)[0]
    host.until(lambda: sum(1 for e in host.cards() if e.retransmit) >= 2)
    copies = [e for e in host.cards() if e.card == card]
    assert {(e.evn, e.read_index) for e in copies} == {(1, 0)}
    assert len({e.seq for e in copies}) == len(copies)  # each transmission has its own SEQ
    host.send(Ack(next_evn=2))
    deadline = time.monotonic() + WAIT
    while sim.unacked() and time.monotonic() < deadline:
        host.pump(0.01)
    assert sim.unacked() == 0
    host.events.clear()
    host.until(lambda: len([e for e in host.events if isinstance(e, Heartbeat)]) >= 5)
    assert host.cards() == []  # acknowledged: never sent again


def test_nak_resends_everything_from_its_number_at_once(sim: ShoeSimulator,
                                                        host: RawHost) -> None:
    sim.deal(3)
    host.send(Ack(next_evn=2))  # status and first card received
    host.until(lambda: sim.unacked() == 2)
    host.events.clear()
    host.send(Nak(next_evn=2))
    host.until(lambda: {e.evn for e in host.cards() if e.retransmit} >= {2, 3})
    assert sim.stats["naks_in"] == 1


def test_heartbeats_report_state_and_stream_position(sim: ShoeSimulator,
                                                     host: RawHost) -> None:
    sim.deal(4)
    sim.set_state("cover_open")
    host.until(lambda: any(isinstance(e, Heartbeat) and e.reads == 4
                              and e.state is ShoeState.COVER_OPEN for e in host.events))
    beat = [e for e in host.of(Heartbeat) if isinstance(e, Heartbeat) and e.reads == 4][-1]
    assert isinstance(beat, Heartbeat)
    assert beat.next_evn == 6  # READY status, 4 cards, COVER_OPEN status


def test_a_full_queue_jams_the_shoe_until_acknowledged() -> None:
    with ShoeSimulator(seed=2, heartbeat_interval=0.05, rto=0.05, queue_capacity=3) as sim:
        assert sim.path is not None
        host = RawHost(sim.path)
        try:
            sim.deal(2)  # with the READY status: 3 unacknowledged events
            with pytest.raises(ShoeSimulatorError, match="queue is full"):
                sim.deal(1)
            assert sim.state is ShoeState.JAM
            host.until(lambda: any(isinstance(e, StatusReport) and e.state is ShoeState.JAM
                                      and e.detail == DETAIL_QUEUE_FULL for e in host.events))
            host.send(Ack(next_evn=4))
            host.until(lambda: sim.state is ShoeState.READY)
            assert len(sim.deal(1)) == 1
        finally:
            host.close()


# ------------------------------------------------------------------------------ faults


def test_corrupt_frames_fail_their_crc(sim: ShoeSimulator, host: RawHost) -> None:
    sim.faults.inject("corrupt")
    sim.deal(1)
    host.until(lambda: any(isinstance(e, BadFrame) for e in host.events) and bool(host.cards()))
    assert host.decoder.stats.bad_frames >= 1


def test_dropped_frames_leave_a_gap_in_seq(sim: ShoeSimulator, host: RawHost) -> None:
    host.until(lambda: bool(host.of(StatusReport)))
    sim.faults.inject("drop")
    sim.deal(1)
    host.until(lambda: any(isinstance(e, CardReport) for e in host.events))
    first = host.cards()[0]
    assert first.retransmit  # the first transmission was lost
    assert sim.faults.pending() == 0


def test_duplicated_frames_repeat_byte_for_byte(sim: ShoeSimulator, host: RawHost) -> None:
    sim.faults.inject("duplicate")
    sim.deal(1)
    host.until(lambda: len(host.cards()) >= 2)
    a, b = host.cards()[:2]
    assert a == b  # same SEQ, same flags: the very same frame twice


def test_garbage_goes_out_between_frames(sim: ShoeSimulator, host: RawHost) -> None:
    sim.faults.inject("garbage", 3)
    sim.deal(3)
    host.until(lambda: {e.read_index for e in host.cards()} >= {0, 1, 2})
    assert host.decoder.stats.skipped_bytes + host.decoder.stats.bad_frames > 0


def test_a_repeated_read_is_a_new_frame_with_the_same_event(sim: ShoeSimulator,
                                                             host: RawHost) -> None:
    sim.faults.inject("repeat")
    sim.deal(1)
    sim.resend_read(0)
    host.until(lambda: len([e for e in host.cards() if not e.retransmit]) >= 3)
    fresh = [e for e in host.cards() if not e.retransmit]
    assert {(e.evn, e.read_index) for e in fresh} == {(1, 0)}
    assert len({e.seq for e in fresh}) == 3
    with pytest.raises(ShoeSimulatorError, match="read index 9"):
        sim.resend_read(9)


def test_silence_stops_every_frame_and_the_shoe_ignores_the_host(sim: ShoeSimulator,
                                                                 host: RawHost) -> None:
    host.until(lambda: bool(host.of(Heartbeat)))
    sim.faults.silent = True
    host.pump(0.1)  # let anything already on the line through
    host.events.clear()
    host.send(Ack(next_evn=1))
    beats = sim.stats["heartbeats"]
    while sim.stats["heartbeats"] < beats + 4:
        host.pump(0.02)
    assert host.events == []
    assert sim.stats["lost_incoming"] >= 1
    sim.faults.silent = False
    host.until(lambda: bool(host.of(Heartbeat)))


def test_lost_incoming_frames_leave_events_unacknowledged(sim: ShoeSimulator,
                                                          host: RawHost) -> None:
    sim.faults.drop_incoming = 1.0
    host.send(Ack(next_evn=1))
    host.until(lambda: sim.stats["lost_incoming"] >= 1)
    assert sim.unacked() == 1
    sim.faults.drop_incoming = 0.0
    host.send(Ack(next_evn=1))
    host.until(lambda: sim.unacked() == 0)


def test_delay_holds_every_frame_back(sim: ShoeSimulator, host: RawHost) -> None:
    host.until(lambda: bool(host.of(StatusReport)))
    host.send(Ack(next_evn=1))
    host.until(lambda: sim.unacked() == 0)
    sim.faults.delay = 0.3
    time.sleep(0.06)  # let frames sent before the switch drain
    host.pump(0.0)
    start = time.monotonic()
    sim.deal(1)
    host.until(lambda: bool(host.cards()))
    assert time.monotonic() - start >= 0.29  # it cannot come before it is due


# ------------------------------------------------------------------------------ the port


def test_unplug_and_replug_change_the_path(sim: ShoeSimulator, host: RawHost) -> None:
    sim.disconnect()
    assert sim.path is None
    ready, _, _ = select.select([host.fd], [], [], WAIT)
    assert ready  # the host's handle is dead: EOF or EIO, as pyserial reports it
    with contextlib.suppress(OSError):
        assert os.read(host.fd, 64) == b""
    sim.deal(1)  # read while unplugged: kept
    path = sim.reconnect()
    fresh = RawHost(path)
    try:
        fresh.send(Identify())
        fresh.until(lambda: any(isinstance(e, CardReport) for e in fresh.events))
        assert sim.replug() != path  # the old pty is still open when the new one appears
    finally:
        fresh.close()


def test_the_stable_symlink_follows_the_shoe(tmp_path: Path) -> None:
    link = tmp_path / "by-id" / "usb-HUPS_shoe-if00"
    link.parent.mkdir()
    with ShoeSimulator(seed=4, link_path=link) as sim:
        assert os.readlink(link) == sim.path
        sim.disconnect()
        assert not os.path.lexists(link)
        path = sim.reconnect()
        assert os.readlink(link) == path
        path = sim.replug()
        assert os.readlink(link) == path
    assert not os.path.lexists(link)


def test_a_power_cycle_starts_a_new_session_and_loses_the_queue(sim: ShoeSimulator) -> None:
    sim.deal(3)
    old_session = sim.session_id
    path = sim.power_cycle()
    assert sim.session_id != old_session
    assert sim.reads == 0
    assert sim.dealt == []
    host = RawHost(path)
    try:
        host.until(lambda: bool(host.of(StatusReport)))
        ident = host.of(ShoeIdentity)[0]
        assert isinstance(ident, ShoeIdentity)
        assert (ident.session_id, ident.reads, ident.unacked_from) == (sim.session_id, 0, 0)
        assert sim.remaining() == 49  # the cards stay in the shoe
    finally:
        host.close()


# ------------------------------------------------------------------------------ Faults


def test_faults_parse_and_switch() -> None:
    faults = Faults.parse("corrupt=0.05, drop=0.1 delay=0.2 silent", seed=1)
    assert (faults.corrupt, faults.drop, faults.delay, faults.silent) == (0.05, 0.1, 0.2, True)
    faults.set("silent", "off")
    assert faults.silent is False
    faults.clear()
    assert (faults.corrupt, faults.drop, faults.delay) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("bogus=1", "unknown fault 'bogus'"), ("drop=2", "probability"), ("drop=x", "number"),
     ("delay=-1", "seconds"), ("silent=maybe", "on or off")],
)
def test_bad_fault_specs_are_named(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Faults.parse(spec)


def test_faults_with_a_seed_are_reproducible() -> None:
    frame = encode(Heartbeat(state=ShoeState.READY, reads=1, next_evn=2))

    def run() -> list[list[bytes]]:
        f = Faults(corrupt=0.3, drop=0.3, duplicate=0.3, garbage=0.3, seed=9)
        return [f.outgoing(frame, reading=True) for _ in range(50)]

    assert run() == run()
    assert any(chunks == [] for chunks in run())


def test_one_shot_faults_skip_frames_without_readings() -> None:
    f = Faults()
    frame = b"\x7e\x00\x01\x04\x00\x00\xaa\xbb"
    f.inject("drop")
    assert f.outgoing(frame, reading=False) == [frame]
    assert f.outgoing(frame, reading=True) == []
    f.inject("drop_incoming", readings_only=False)
    assert f.lose_incoming()
    assert not f.lose_incoming()
    with pytest.raises(ValueError, match="one-shot"):
        f.inject("silent")


# ------------------------------------------------------------------------------ the command


def test_console_commands() -> None:
    sim = ShoeSimulator(cards="Ah Kd Qs Jc")
    assert shoe_command(sim, "") == "read 0: Ah"
    assert shoe_command(sim, "deal 2") == "read 1: Kd\nread 2: Qs"
    assert shoe_command(sim, "card Ah") == "read 3: Ah"
    assert shoe_command(sim, "status jam") == "state jam"
    assert shoe_command(sim, "deal").startswith("! the shoe reports jam")
    assert shoe_command(sim, "status bogus").startswith("! ")
    assert shoe_command(sim, "faults drop=0.5").startswith("faults: corrupt=0.0, drop=0.5")
    assert shoe_command(sim, "faults drop=5").startswith("! fault drop is a probability")
    assert shoe_command(sim, "clear") == "every fault off"
    assert shoe_command(sim, "frobnicate").startswith("! unknown command")
    assert "deal [N]" in shoe_command(sim, "help")


def test_serve_deals_on_the_timer_and_on_enter() -> None:
    sim = ShoeSimulator(cards="Ah Kd Qs")
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as stdin:
        os.write(write_fd, b"\nquit\n")
        out = io.StringIO()
        _serve(sim, None, 5.0, stdin, out)
        assert out.getvalue() == "read 0: Ah\n"
        os.close(write_fd)
        out = io.StringIO()
        _serve(sim, 0.01, 0.2, stdin, out)  # stdin at its end: the timer keeps dealing
        assert out.getvalue().startswith("read 1: Kd\nread 2: Qs\n")


def test_command_line_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "shoe", "--faults", "nope=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("showdown simulate: error: --faults: unknown fault 'nope'")
    assert main(["simulate", "shoe", "--cards", "Ah Zz"]) == 2
    assert "invalid card" in capsys.readouterr().err
    assert main(["simulate", "shoe", "--decks", "0"]) == 2
