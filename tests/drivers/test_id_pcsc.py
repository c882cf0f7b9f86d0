"""The PC/SC ID reader end to end on real middleware: `PcscIdReader` (pyscard) talks to a
real pcscd whose reader is vsmartcard's virtual reader, with a software contactless card
(`simulators.vpcd_card`) laid on it and taken away. A tap is the card's UID as an IdTap; a
card without GET DATA, a card giving garbage and a card taken away mid-read are bad_read
alerts and the next card still reads; pcscd stopped is "lost" and started again
"reconnected"; a reader name matching nothing is "not_found" naming the readers there.

The pure part (`uid_from_response`) is checked on its own first. Skips without pcscd and
vsmartcard-vpcd locally; fails under CI (tests/drivers/id_support.py).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from drivers.id_pcsc import PcscIdReader, uid_from_response
from drivers.protocols import IdReader
from runtime.backoff import Backoff
from simulators.pcsc_reader import PcscReaderSimulator
from simulators.vpcd_card import answer, contactless_atr
from tests.drivers import id_support
from tests.drivers.id_support import Seen, numbers, ready_pcsc

UID = "04A1B2C3D4E5F6"


@pytest.fixture
def pcsc() -> PcscReaderSimulator:
    return ready_pcsc()


def fast(reader: str = "", **options: object) -> PcscIdReader:
    return PcscIdReader(reader, device_name="table-ids", poll=0.1,
                        backoff=Backoff(initial=0.05, maximum=0.2, rng=random.Random(3)),
                        **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(("response", "expected"), [
    (bytes.fromhex("04A1B2C3D4E5F69000"), ("04A1B2C3D4E5F6", "")),
    (bytes.fromhex("DEADBEEF9000"), ("DEADBEEF", "")),
    (bytes.fromhex("6A81"), (None, "the card does not give its UID: GET DATA answered 6A 81"
                                   " (function not supported)")),
    (bytes.fromhex("6F00"), (None, "the card does not give its UID: GET DATA answered 6F 00"
                                   " (an error)")),
    (b"\x5a", (None, "GET DATA answered 1 bytes, no status word")),
    (b"", (None, "the card gave no answer to GET DATA (taken off the reader too soon?)")),
    (bytes.fromhex("0102039000"), (None, "GET DATA answered a UID of 3 bytes: a UID has 8, 14"
                                         " or 20 hex digits, this one 6")),
])
def test_the_uid_is_taken_from_a_get_data_response_with_90_00_only(
        response: bytes, expected: tuple[str | None, str]) -> None:
    assert uid_from_response(list(response)) == expected


def test_the_simulated_card_answers_get_data_as_pc_sc_part_3_says() -> None:
    uid = bytes.fromhex(UID)
    assert answer(bytes.fromhex("FFCA000000"), uid) == uid + b"\x90\x00"
    assert answer(bytes.fromhex("FFCA000004"), uid) == b"\x6c\x07"  # Le too short: the length
    assert answer(bytes.fromhex("FFCA010000"), uid) == b"\x6a\x81"  # no ATS on a storage card
    assert answer(bytes.fromhex("00A4040000"), uid) == b"\x6e\x00"
    # the standard ATR of an ISO 14443 A storage card (Ultralight), its TCK included
    assert contactless_atr(7).hex().upper() == "3B8F8001804F0CA0000003060300030000000068"


async def test_a_card_laid_on_the_reader_is_its_uid(pcsc: PcscReaderSimulator) -> None:
    reader: IdReader = fast()
    async with reader:
        seen = Seen(reader)
        (connected,) = await seen.alert("connected")
        pcsc.tap(UID)
        pcsc.tap("deadbeef")
        taps = await seen.taps_n(2)
        await asyncio.to_thread(pcsc.wait_idle)  # both cards taken away again
        await asyncio.sleep(0.3)  # more than a poll: a card held is not read twice
        health = reader.health()
    assert connected.detail == f"reading on {pcsc.reader_name}"
    assert numbers(taps) == [(UID, "uid"), ("DEADBEEF", "uid")]
    assert {t.device for t in taps} == {"table-ids"}
    assert health.counters["taps"] == 2
    assert health.connected


async def test_cards_that_give_no_uid_are_bad_reads_and_the_next_card_reads(
        pcsc: PcscReaderSimulator) -> None:
    async with fast() as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        pcsc.inject("unsupported")
        pcsc.tap(UID)
        pcsc.inject("garbage")
        pcsc.tap(UID)
        pcsc.inject("drop")
        pcsc.tap(UID)
        pcsc.tap("11223344")
        taps = await seen.taps_n(1)
        bad = seen.alerts("bad_read")
        health = reader.health()
    assert [a.detail for a in bad[:2]] == [
        "the card does not give its UID: GET DATA answered 6A 81 (function not supported)",
        "GET DATA answered 1 bytes, no status word",
    ]
    # a card leaving mid-command: vpcd answers nothing, a USB reader a removed card's error
    assert len(bad) == 3
    assert bad[2].detail in ("the card gave no answer to GET DATA (taken off the reader too"
                             " soon?)",
                             "the card left the reader before its UID was read"
                             " (SCARD_W_REMOVED_CARD)")
    assert numbers(taps) == [("11223344", "uid")]
    assert health.counters["bad_reads"] == 3


async def test_a_card_the_reader_never_sees_is_no_reading_and_the_next_card_reads(
        pcsc: PcscReaderSimulator) -> None:
    async with fast() as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        pcsc.set_fault("silent", True)  # no ATR: vpcd takes the card for absent
        pcsc.tap(UID)
        await asyncio.to_thread(pcsc.wait_idle)
        pcsc.set_fault("silent", False)
        pcsc.tap("11223344")
        taps = await seen.taps_n(1)
    assert numbers(taps) == [("11223344", "uid")]
    assert seen.alerts("bad_read") == []


async def test_pcscd_stopped_is_lost_and_started_again_is_reconnected(
        pcsc: PcscReaderSimulator) -> None:
    async with fast() as reader:
        seen = Seen(reader)
        await seen.alert("connected")
        pcsc.unplug()
        (lost,) = await seen.alert("lost")
        assert not reader.health().connected
        pcsc.plug()
        (back,) = await seen.alert("reconnected")
        pcsc.tap(UID)
        taps = await seen.taps_n(1)
        health = reader.health()
    # as pcscd stops, its last answer is "not running" or, racing its shutdown, "refused"
    assert lost.detail.startswith(("pcscd is not running", "pcscd refused access"))
    assert back.detail == f"reading on {pcsc.reader_name}"
    assert numbers(taps) == [(UID, "uid")]
    assert health.counters["reconnects"] == 1
    assert health.counters["disconnects"] == 1


async def test_a_reader_name_nobody_has_is_not_found_naming_the_readers_there(
        pcsc: PcscReaderSimulator) -> None:
    async with fast("ACR122") as reader:
        seen = Seen(reader)
        (alert,) = await seen.alert("not_found")
    assert alert.detail == ("no PC/SC reader's name contains 'ACR122'; readers: "
                            "Virtual PCD 00 00, Virtual PCD 00 01")
    assert not reader.health().connected


async def test_pcscd_not_running_at_start_is_not_found_then_found(
        pcsc: PcscReaderSimulator) -> None:
    pcsc.unplug()
    async with fast("Virtual PCD 00 00") as reader:
        seen = Seen(reader)
        (alert,) = await seen.alert("not_found")
        pcsc.plug()
        await seen.alert("connected")
    assert alert.detail == ("pcscd is not running (opening a PC/SC context: Service not"
                            " available (SCARD_E_NO_SERVICE)); start it: systemctl enable"
                            " --now pcscd.socket")


def test_without_pcscd_the_pc_sc_tests_skip_locally_and_fail_under_ci(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(id_support, "missing", lambda: "pcscd is not installed (apt-get"
                                                       " install pcscd)")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PC/SC lab here: pcscd is not"
                                                    " installed"):
        id_support.need_pcsc()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the PC/SC tests: pcscd is"
                                                    " not installed"):
        id_support.need_pcsc()
