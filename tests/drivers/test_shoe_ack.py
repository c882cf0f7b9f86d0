"""Acknowledging after the host has stored the card (``ack="on_confirm"``,
docs/protocols/card-shoe.md §5.5): the shoe keeps every event the consumer has not confirmed,
and delivers it to the next reader when the first one dies, whether it was closed or its process
was SIGKILLed; a confirmed event is never delivered again; the table daemon confirms only what it
journaled and does not apply twice a read it journaled before a crash.

The pty tests use the real driver on the simulator's real pty with short timeouts;
`asyncio.timeout` around each wait is a safety net against hangs, never an assertion about speed.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from controller.app import TableDaemon
from controller.config import read_table_config
from controller.device_pumps import pump_shoe
from controller.journal import Journal
from controller.wiring import ConfiguredDevices, wire_table
from drivers.protocols import ShoeReading
from drivers.readings import CardReading, DeviceAlert, ShoeState, ShoeStatus
from drivers.shoe import SerialCardReader
from drivers.shoe_codec import (
    Ack,
    CardReport,
    Heartbeat,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    StatusReport,
)
from drivers.shoe_link import ShoeLink
from game.poker.cards import Card, parse_card, parse_cards
from runtime.backoff import Backoff
from runtime.logs import get_logger
from simulators.shoe import ShoeSimulator
from wire.signing import Signer, save_private_key

REPO = Path(__file__).resolve().parents[2]
FAST: dict[str, Any] = {"stall_timeout": 0.4, "identify_timeout": 0.2, "identify_attempts": 2,
                        "idle_resync": 0.05, "nak_holdoff": 0.05}
WAIT = 15.0  # seconds before a wait is declared hung (a safety net, not a measurement)
SCRIPT = "Ah Kd 5s 9c Td 2h"


def reader(url: str | Callable[[], str], **options: Any) -> SerialCardReader:
    return SerialCardReader(url, backoff=Backoff(initial=0.01, maximum=0.05,
                                                 rng=random.Random(7)),
                            **(FAST | {"ack": "on_confirm"} | options))


@pytest.fixture
def sim() -> Iterator[ShoeSimulator]:
    with ShoeSimulator(seed=5, cards=SCRIPT, heartbeat_interval=0.05, rto=0.05,
                       rto_max=0.2) as shoe:
        yield shoe


class Tap:
    """Reads a CardReader in the background of a test and keeps everything it yielded."""

    def __init__(self, source: SerialCardReader) -> None:
        self._it: AsyncIterator[ShoeReading] = aiter(source)
        self.seen: list[ShoeReading] = []

    async def until(self, done: Callable[[Tap], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not done(self):
                self.seen.append(await anext(self._it))

    async def cards_n(self, n: int) -> list[CardReading]:
        await self.until(lambda t: len(t.cards()) >= n)
        return self.cards()

    def cards(self) -> list[CardReading]:
        return [r for r in self.seen if isinstance(r, CardReading)]

    def statuses(self) -> list[ShoeStatus]:
        return [r for r in self.seen if isinstance(r, ShoeStatus)]

    def alerts(self, kind: str) -> list[DeviceAlert]:
        return [r for r in self.seen if isinstance(r, DeviceAlert) and r.kind == kind]


async def wait_for(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.01)


def reads(cards: list[CardReading]) -> list[tuple[int, Card]]:
    return [(c.read_index, c.card) for c in cards]


# ------------------------------------------------------------------------------ ShoeLink (pure)


IDENT = ShoeIdentity(session_id=0xAB, proto_minor=0, heartbeat_ms=1000, reads=0,
                     unacked_from=0, model="M", serial="S-1", firmware="F")


def card(evn: int, read_index: int, text: str = "Ah", *, seq: int = 0,
         retransmit: bool = False) -> CardReport:
    return CardReport(evn=evn, read_index=read_index, card=parse_card(text), quality=99,
                      seq=seq, retransmit=retransmit)


def host_frames(frames: list[bytes]) -> list[object]:
    decoder = ShoeDecoder("host")
    for frame in frames:
        decoder.feed(frame)
    out: list[object] = []
    while (event := decoder.next_event()) is not None:
        out.append(event)
    return out


def acks(frames: list[bytes]) -> list[int]:
    return [m.next_evn for m in host_frames(frames) if isinstance(m, Ack)]


def naks(frames: list[bytes]) -> list[int]:
    return [m.next_evn for m in host_frames(frames) if isinstance(m, Nak)]


def confirming_link() -> ShoeLink:
    link = ShoeLink("shoe", nak_holdoff=0.0, ack_on_confirm=True)
    link.accept_identity(IDENT, 0.0)
    return link


def test_link_holds_the_ack_until_the_reading_is_confirmed() -> None:
    link = confirming_link()
    out, replies = link.handle(StatusReport(evn=0, state=ShoeState.READY, detail=0, reads=0,
                                            seq=0), 1.0)
    [status] = out
    assert isinstance(status, ShoeStatus)
    assert replies == []
    out, replies = link.handle(card(1, 0, seq=1), 1.1)
    [read] = out
    assert isinstance(read, CardReading)
    assert (read.read_index, read.session) == (0, 0xAB)
    assert replies == []
    assert (link.ack_point, link.unconfirmed) == (0, 2)
    # The shoe resends both (its RTO): repeats, neither yielded nor answered; no NAK.
    out, replies = link.handle(StatusReport(evn=0, state=ShoeState.READY, detail=0, reads=0,
                                            seq=2, retransmit=True), 1.3)
    assert (out, replies) == ([], [])
    out, replies = link.handle(card(1, 0, seq=3, retransmit=True), 1.3)
    assert (out, replies) == ([], [])
    # A heartbeat announcing exactly the events delivered is no gap, though none is acked.
    out, replies = link.handle(Heartbeat(state=ShoeState.READY, reads=1, next_evn=2, seq=4), 1.4)
    assert (out, replies) == ([], [])
    assert link.counters["duplicates_dropped"] == 2
    assert link.counters["naks_sent"] == link.counters["acks_sent"] == 0
    assert link.confirm(status)
    assert acks([link.ack_frame()]) == [1]
    assert link.confirm(read)
    assert acks([link.ack_frame()]) == [2]
    assert not link.confirm(read)  # once only
    # A repeat of an acknowledged event (the ACK was lost): acknowledged again.
    out, replies = link.handle(card(1, 0, seq=5, retransmit=True), 1.5)
    assert (out, acks(replies)) == ([], [2])
    assert link.counters["confirms"] == 2


def test_link_acknowledges_only_up_to_the_first_unconfirmed_event() -> None:
    link = confirming_link()
    delivered = [link.handle(card(e, e, text, seq=e), 1.0)[0][0]
                 for e, text in enumerate(("Ah", "Kd", "5s"))]
    assert not link.confirm(delivered[2])  # event 0 and 1 are not stored yet
    assert link.ack_point == 0
    assert link.confirm(delivered[0])
    assert link.ack_point == 1
    assert link.confirm(delivered[1])
    assert link.ack_point == 3  # event 2 was confirmed earlier
    assert acks([link.ack_frame()]) == [3]


def test_link_confirms_an_equal_copy_of_a_reading() -> None:
    link = confirming_link()
    [read] = link.handle(card(0, 0), 1.0)[0]
    assert isinstance(read, CardReading)
    copy = CardReading(card=read.card, read_index=read.read_index, quality=read.quality,
                    device=read.device, at_mono=read.at_mono, session=read.session)
    assert copy is not read
    assert link.confirm(copy)
    assert link.ack_point == 1


def test_link_naks_a_gap_without_acknowledging_unconfirmed_events() -> None:
    link = confirming_link()
    link.handle(card(0, 0, seq=0), 1.0)
    out, replies = link.handle(card(2, 2, "Kd", seq=1), 1.1)  # event 1 lost
    assert out == []
    assert naks(replies) == [0]  # a NAK acknowledges too: never past what is confirmed
    assert acks(replies) == []


def test_link_acks_past_an_event_that_yields_nothing_to_confirm() -> None:
    link = confirming_link()
    [first] = link.handle(card(0, 0, seq=0), 1.0)[0]
    out, replies = link.handle(card(1, 0, seq=1), 1.1)  # read 0 again: a firmware fault
    assert [getattr(r, "kind", None) for r in out] == ["duplicate_read"]
    assert all(n == 0 for n in acks(replies))  # event 0 is still not stored
    assert link.confirm(first)
    assert link.ack_point == 2  # event 1 had nothing to store


def test_link_forgets_unconfirmed_readings_of_a_session_lost_with_the_power() -> None:
    link = confirming_link()
    [old] = link.handle(card(0, 0, seq=0), 1.0)[0]
    link.accept_identity(ShoeIdentity(session_id=0xCD, proto_minor=0, heartbeat_ms=1000,
                                      reads=0, unacked_from=0, model="M", serial="S-1",
                                      firmware="F"), 2.0)
    assert not link.confirm(old)  # nothing to acknowledge: the shoe lost that event
    assert (link.ack_point, link.unconfirmed) == (0, 0)
    [new] = link.handle(card(0, 0, "2c", seq=0), 2.1)[0]
    assert isinstance(new, CardReading)
    assert new.session == 0xCD


def test_on_receipt_is_the_default_and_acks_at_once() -> None:
    assert SerialCardReader("/dev/null").ack == "on_receipt"
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    out, replies = link.handle(card(0, 0), 1.0)
    assert acks(replies) == [1]
    assert not link.confirm(out[0])  # a no-op in this mode
    with pytest.raises(ValueError, match="on_confirm"):
        SerialCardReader("/dev/null", ack="later")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ on the pty


async def test_a_card_not_confirmed_before_the_reader_closed_goes_to_the_next_reader(
    sim: ShoeSimulator,
) -> None:
    path = lambda: sim.path or ""  # noqa: E731
    async with reader(path) as shoe:
        tap = Tap(shoe)
        await tap.until(lambda t: bool(t.statuses()))
        await shoe.confirm(tap.statuses()[0])
        dealt = sim.deal(2)
        first, second = await tap.cards_n(2)
        await shoe.confirm(first)
        await wait_for(lambda: sim.unacked() == 1)  # the status and the first card
        # The shoe keeps resending the second card: dropped as a repeat, never yielded twice.
        await wait_for(lambda: shoe.health().counters["duplicates_dropped"] >= 2)
        counters = shoe.health().counters
        assert (counters["naks_sent"], counters["out_of_order"]) == (0, 0)
        assert (counters["unconfirmed"], counters["confirms"]) == (1, 2)
        assert len(tap.cards()) == 2
        assert sim.unacked() == 1
    # Closed without confirming the second card, as a daemon that died before journaling it.
    async with reader(path) as shoe:
        tap = Tap(shoe)
        [again] = await tap.cards_n(1)
        assert (again.read_index, again.card, again.session) == (1, dealt[1], sim.session_id)
        assert second.session == sim.session_id
        assert tap.statuses() == []  # the confirmed status is not delivered again
        await shoe.confirm(again)
        await wait_for(lambda: sim.unacked() == 0)
    async with reader(path) as shoe:  # everything confirmed: only what is new
        tap = Tap(shoe)
        new = sim.deal(1)
        assert reads(await tap.cards_n(1)) == [(2, new[0])]
        assert tap.statuses() == []


async def test_a_confirmation_made_while_unplugged_is_sent_after_reconnecting(
    sim: ShoeSimulator,
) -> None:
    async with reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        await tap.until(lambda t: bool(t.statuses()))
        await shoe.confirm(tap.statuses()[0])
        sim.deal(1)
        [first] = await tap.cards_n(1)
        sim.disconnect()
        await tap.until(lambda t: bool(t.alerts("disconnected")))
        await shoe.confirm(first)  # no port: recorded, and no error
        sim.reconnect()
        await tap.until(lambda t: bool(t.alerts("reconnected")))
        await wait_for(lambda: sim.unacked() == 0)  # acked when the shoe resent it
        sentinel = sim.deal(1)
        cards = await tap.cards_n(2)
        assert reads(cards) == [(0, parse_card("Ah")), (1, sentinel[0])]


CHILD = """
import asyncio, sys
from drivers.readings import CardReading, ShoeStatus
from drivers.shoe import SerialCardReader

async def main(path: str, confirm_below: int) -> None:
    async with SerialCardReader(path, ack="on_confirm", stall_timeout=0.4,
                                identify_timeout=0.2) as shoe:
        async for r in shoe:
            if isinstance(r, ShoeStatus):
                await shoe.confirm(r)
            elif isinstance(r, CardReading):
                held = r.read_index >= confirm_below
                if not held:
                    await shoe.confirm(r)
                print("READ", "held" if held else "confirmed", r.read_index, r.card, flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_a_reader_process_killed_before_confirming_loses_no_card(
    sim: ShoeSimulator,
) -> None:
    assert sim.path is not None
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, sim.path, "1", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    lines: list[str] = []
    try:
        dealt = sim.deal(2)
        assert child.stdout is not None
        async with asyncio.timeout(WAIT):
            while len([x for x in lines if x.startswith("READ")]) < 2:
                line = await child.stdout.readline()
                assert line, f"the reader process ended: {lines}"
                lines.append(line.decode().strip())
        assert [x for x in lines if x.startswith("READ")] == [
            f"READ confirmed 0 {dealt[0]}", f"READ held 1 {dealt[1]}"]
        await wait_for(lambda: sim.unacked() == 1)  # the status and card 0 are acknowledged
    finally:
        if child.returncode is None:
            os.kill(child.pid, signal.SIGKILL)  # the daemon's process dies: no clean-up at all
        await child.wait()
    assert child.returncode == -signal.SIGKILL
    assert sim.unacked() == 1
    async with reader(lambda: sim.path or "") as shoe:
        tap = Tap(shoe)
        [again] = await tap.cards_n(1)
        await shoe.confirm(again)
        new = sim.deal(1)
        cards = await tap.cards_n(2)
        await shoe.confirm(cards[1])
        assert reads(cards) == [(1, dealt[1]), (2, new[0])]  # card 0 is not delivered again
        assert tap.statuses() == []
        await wait_for(lambda: sim.unacked() == 0)


# ------------------------------------------------------------------------------ the table daemon


def daemon_config(tmp_path: Path) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(f"""
[table]
venue = "test"
id = "t-ack"
journal = "journal.sqlite"

[files]
tournament = "{REPO / 'config' / 'tournament.toml'}"
paytables = "{REPO / 'config' / 'paytables.toml'}"

[keys]
table_key = "table.key"

[shoe]
kind = "sim"

[rfid]
kind = "sim"

[mqtt]
broker = "embedded"

[api]
socket = "{tmp_path / 'console.sock'}"

[console]
port = 0

[sim]
seed = 7
players = 3
stage = "qualifying"
""")
    return path


class WithoutConfirm:
    """The shoe reader of a daemon that dies after journaling a reading, before the ACK."""

    def __init__(self, shoe: SerialCardReader) -> None:
        self.shoe = shoe

    def __aiter__(self) -> AsyncIterator[ShoeReading]:
        return aiter(self.shoe)


class Recording:
    """The real reader, recording what the daemon pulled from it and what it confirmed."""

    def __init__(self, shoe: SerialCardReader) -> None:
        self.shoe = shoe
        self.pulled: list[ShoeReading] = []
        self.confirmed: list[ShoeReading] = []

    async def _iterate(self) -> AsyncIterator[ShoeReading]:
        async for reading in self.shoe:
            self.pulled.append(reading)
            yield reading

    def __aiter__(self) -> AsyncIterator[ShoeReading]:
        return self._iterate()

    async def confirm(self, reading: ShoeReading) -> None:
        self.confirmed.append(reading)
        await self.shoe.confirm(reading)


def card_records(journal_path: Path) -> list[dict[str, Any]]:
    with Journal.open(journal_path, read_only=True) as journal:
        return [dict(r.payload) for r in journal.records() if r.kind == "card"]


async def run_pump(tmp_path: Path, shoe: object, until: Callable[[TableDaemon], bool], *,
                   faults: tuple[str, ...] = ()) -> None:
    """One life of the daemon's shoe pump on the table's journal, until ``until`` holds."""
    config = read_table_config(daemon_config(tmp_path))
    if not config.table_key.exists():  # start-up checks the journal's signed heads with it
        save_private_key(Signer.generate(config.table), config.table_key)
    daemon = wire_table(config).daemon
    service, _ = daemon._load()
    daemon.journal = daemon._open_journal(service)
    daemon.service = service
    daemon.faults.extend(faults)
    try:
        pump = asyncio.create_task(pump_shoe(
            shoe, submit=daemon.submit, last_reads=daemon.shoe_reads,  # type: ignore[arg-type]
            halted=daemon.halted, log=get_logger("test.shoe_pump")))
        await wait_for(lambda: until(daemon) or pump.done())
        pump.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pump
    finally:
        daemon.journal.close()


async def test_the_daemon_confirms_what_it_journaled_and_skips_a_read_journaled_before(
    sim: ShoeSimulator, tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.sqlite"
    path = lambda: sim.path or ""  # noqa: E731
    dealt = sim.deal(2)

    def journaled(n: int) -> Callable[[TableDaemon], bool]:
        return lambda _d: len(card_records(journal)) >= n

    # First life: both cards journaled, then the process dies before any ACK leaves.
    async with reader(path) as shoe:
        await run_pump(tmp_path, WithoutConfirm(shoe), journaled(2))
    assert sim.unacked() == 3  # the status and both cards: nothing was acknowledged
    # Second life: the shoe delivers all three again; the cards are confirmed, not re-applied.
    async with reader(path) as shoe:
        await run_pump(tmp_path, shoe, lambda _d: sim.unacked() == 0)
        more = sim.deal(1)
        await run_pump(tmp_path, shoe, lambda d: journaled(3)(d) and sim.unacked() == 0)
    records = card_records(journal)
    assert [(r["read_index"], r["card"], r["session"], r["device"]) for r in records] == [
        (i, str(c), sim.session_id, "SIM-000001") for i, c in enumerate([*dealt, *more])]
    assert [str(c) for c in parse_cards(SCRIPT)[:3]] == [r["card"] for r in records]


async def test_a_new_simulated_shoe_is_a_new_session_and_its_reads_are_journaled(
    tmp_path: Path,
) -> None:
    """The simulated table's daemon restarts with a new simulator of the same seed: a new
    power-on, so read 0 again is a new card, not one journaled before."""
    journal = tmp_path / "journal.sqlite"

    async def life(total: int) -> int:
        with ShoeSimulator(seed=5, cards=SCRIPT, heartbeat_interval=0.05, rto=0.05,
                           rto_max=0.2) as sim:
            sim.deal(2)
            async with reader(lambda: sim.path or "") as shoe:
                await run_pump(tmp_path, shoe, lambda _d: (
                    len(card_records(journal)) >= total and sim.unacked() == 0))
            return sim.session_id

    sessions = [await life(2), await life(4)]
    assert sessions[0] != sessions[1]
    assert [(r["read_index"], r["card"], r["session"]) for r in card_records(journal)] == [
        (0, "Ah", sessions[0]), (1, "Kd", sessions[0]),
        (0, "Ah", sessions[1]), (1, "Kd", sessions[1])]


async def test_the_daemon_does_not_confirm_what_it_could_not_journal(
    sim: ShoeSimulator, tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.sqlite"
    path = lambda: sim.path or ""  # noqa: E731
    first = sim.deal(1)
    async with reader(path) as shoe:
        recording = Recording(shoe)

        def pulled(n: int) -> Callable[[TableDaemon], bool]:
            return lambda _d: len([r for r in recording.pulled if isinstance(r, CardReading)]) >= n

        # In the error state (journal write failed) nothing is journaled, so nothing is acked.
        faulted = ("journal write failed: disk full",)
        await run_pump(tmp_path, recording, pulled(1), faults=faulted)
        second = sim.deal(1)  # pulled only once the pump is done with the first card
        await run_pump(tmp_path, recording, pulled(2), faults=faulted)
        assert recording.confirmed == []
        assert card_records(journal) == []
        assert sim.unacked() == 3
    async with reader(path) as shoe:  # repaired: the shoe still has everything
        await run_pump(tmp_path, shoe, lambda _d: sim.unacked() == 0)
    assert [(r["read_index"], r["card"]) for r in card_records(journal)] == [
        (0, str(first[0])), (1, str(second[0]))]


async def test_the_daemon_opens_its_shoes_with_ack_on_confirm(tmp_path: Path) -> None:
    config = read_table_config(daemon_config(tmp_path))
    source = ConfiguredDevices(config)
    registry = source.chip_registry()
    async with AsyncExitStack() as stack:
        devices = source.open(stack, registry)
        assert isinstance(devices.shoe, SerialCardReader)
        assert devices.shoe.ack == "on_confirm"
