"""Journals made before the card path went straight through still verify and replay.

Until 7bccf3e the device pumps wrote each reading's journal payload as a hand-written dict
(`_hand_written` below, copied from that commit's controller/device_pumps.py); now a reading
becomes its typed input (controller.device_inputs) and `game.table.inputs.encode_input` is
that input's one encoding. The property that keeps old journals good: for every reading,
the stored text (what the checksums hash) is byte for byte the old one, so is each record's
checksum, and the stored payload decodes back to the very input the daemon decided on, so
replay decides the same.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.clock import FakeClockSource
from controller.device_inputs import (
    DeviceRole,
    card_seen,
    chips_seen,
    device_trouble,
    shoe_reported,
    wager_keyed,
)
from controller.journal import Journal
from controller.journal.checksums import stored_json
from drivers.manual import MANUAL_QUALITY
from drivers.manual_chips import ManualWager
from drivers.readings import (
    SPOTS,
    CardReading,
    ChipInventory,
    DeviceAlert,
    ShoeState,
    ShoeStatus,
    SpotId,
)
from game.chips.registry import format_uid
from game.poker.cards import DECK, parse_card
from game.table.inputs import DeviceInput, decode_input, encode_input

T0 = datetime(2026, 3, 1, 18, 30, tzinfo=UTC)
Reading = CardReading | ShoeStatus | ChipInventory | DeviceAlert


def _hand_written(reading: Reading, role: DeviceRole) -> tuple[str, dict[str, Any]]:
    """The (kind, payload) controller/device_pumps.py built by hand at 7bccf3e."""
    if isinstance(reading, CardReading):
        payload: dict[str, Any] = {
            "card": str(reading.card), "read_index": reading.read_index,
            "quality": reading.quality, "device": reading.device,
            "source": reading.source}
        if reading.session is not None:
            payload["session"] = reading.session
        return "card", payload
    if isinstance(reading, ShoeStatus):
        return "shoe_status", {"state": str(reading.state), "device": reading.device,
                               "detail": reading.detail}
    if isinstance(reading, ManualWager):
        return "manual_wager", {"seat": reading.spot.seat, "spot": reading.spot.spot,
                                "amount": reading.amount_cents, "by": reading.operator}
    if isinstance(reading, ChipInventory):
        return "chips", {"seat": reading.spot.seat, "spot": reading.spot.spot,
                         "uids": sorted(format_uid(u) for u in reading.uids),
                         "reader": reading.reader, "antenna": reading.antenna,
                         "report_seq": reading.report_seq}
    return "device_alert", {"device": reading.device, "kind": reading.kind,
                            "detail": reading.detail, "role": role}


def _typed(reading: Reading, role: DeviceRole) -> DeviceInput:
    """The typed input each pump makes of a reading now."""
    if isinstance(reading, CardReading):
        return card_seen(reading)
    if isinstance(reading, ShoeStatus):
        return shoe_reported(reading)
    if isinstance(reading, ManualWager):
        return wager_keyed(reading)
    if isinstance(reading, ChipInventory):
        return chips_seen(reading)
    return device_trouble(reading, role)


def _uid(n: int) -> bytes:
    return (0xE004_0000_0000_0000 + n).to_bytes(8, "big")


_DEVICES: tuple[tuple[str, DeviceRole], ...] = (
    ("SR48-0042", "shoe"), ("RF-77", "rfid"), ("ids", "id_reader"))
READINGS: list[tuple[Reading, DeviceRole]] = [
    (CardReading(card=parse_card("Ah"), read_index=0, quality=97, device="SIM-000001",
                 session=41, at_mono=1.5), "shoe"),
    (CardReading(card=parse_card("10d"), read_index=51, quality=0, device="SR48-0042",
                 session=0), "shoe"),
    (CardReading(card=parse_card("2c"), read_index=7, quality=100, device="SR48-0042"),
     "shoe"),  # a shoe without sessions: no "session" key
    (CardReading(card=parse_card("Ks"), read_index=3, quality=MANUAL_QUALITY,
                 device="manual:D12", source="manual"), "shoe"),  # the manual shoe
    *((ShoeStatus(state=state, device="SR48-0042", detail=detail), "shoe")
      for state in ShoeState for detail in ("", "cover open 3 s", "carte illisible é")),
    (ChipInventory(reader="RF-77", antenna=3, spot=SpotId(2, "ante"), uids=frozenset(),
                   report_seq=0), "rfid"),
    (ChipInventory(reader="RF-77", antenna=12, spot=SpotId(6, "pocket_bonus"),
                   uids=frozenset({_uid(9), _uid(1), _uid(0xFF_FFFF)}), report_seq=123_456),
     "rfid"),
    (ChipInventory(reader="RF-77", antenna=42, spot=SpotId(1, "marker"),
                   uids=frozenset({_uid(5)}), report_seq=7, source="device"), "rfid"),
    (ManualWager(reader="manual:S3", antenna=0, spot=SpotId(1, "ante"), uids=frozenset(),
                 report_seq=0, source="manual", amount_cents=2_500, operator="S3"), "rfid"),
    (ManualWager(reader="manual:S3", antenna=0, spot=SpotId(4, "play"), uids=frozenset(),
                 report_seq=9, source="manual", amount_cents=0, operator="S3"), "rfid"),
    *((DeviceAlert(device=device, kind=kind, detail=detail), role)
      for device, role in _DEVICES
      for kind, detail in (("disconnected", "USB gone"), ("reconnected", "back"),
                           ("bad_frame", "CRC mismatch \"x\""), ("unknown_chip", "")))]


@pytest.mark.parametrize(("reading", "role"), READINGS)
def test_a_readings_input_is_stored_byte_for_byte_as_the_hand_written_payload(
        reading: Reading, role: DeviceRole) -> None:
    old_kind, old_payload = _hand_written(reading, role)
    given = _typed(reading, role)
    kind, payload = encode_input(given)
    assert kind == old_kind
    assert stored_json(payload)[0] == stored_json(old_payload)[0]
    # Replay decodes the stored payload to the very input the daemon decided on.
    assert decode_input(kind, stored_json(payload)[1]) == given


def test_the_records_and_their_checksums_are_the_old_ones(tmp_path: Path) -> None:
    """A journal of every reading written the old way and one written the new way: the
    same rows, checksum for checksum, and both verify."""

    def write(path: Path, encode: Any) -> list[tuple[int, str, str]]:
        with Journal.open(path, clock=FakeClockSource(start=T0, boot_id="b")) as journal:
            clock = FakeClockSource(start=T0, boot_id="boot-a", step_ns=1_000_000)
            for reading, role in READINGS:
                kind, payload = encode(reading, role)
                journal.append(kind=kind, payload=payload, clock=clock(),
                               outgoing=lambda _r: ())
            assert journal.verify() == []
            return [(r.seq, r.kind, r.checksum) for r in journal.records()]

    old = write(tmp_path / "old.journal", _hand_written)
    new = write(tmp_path / "new.journal", lambda r, role: encode_input(_typed(r, role)))
    assert new == old


_text = st.text(st.characters(codec="utf-8"), max_size=40)  # no lone surrogates
_name = st.text(st.characters(codec="utf-8"), max_size=20)
_name1 = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)
_cards = st.builds(
    CardReading, card=st.sampled_from(DECK), read_index=st.integers(0, 2**31),
    quality=st.integers(0, 100), device=_name1,
    source=st.sampled_from(["device", "manual"]),
    session=st.none() | st.integers(0, 2**32), at_mono=st.floats(0, 1e6))
_manual_cards = st.builds(
    CardReading, card=st.sampled_from(DECK), read_index=st.integers(0, 500),
    quality=st.just(MANUAL_QUALITY),
    device=st.from_regex(r"manual:[A-Za-z0-9._-]{1,12}", fullmatch=True),
    source=st.just("manual"))
_inventories = st.builds(
    ChipInventory, reader=_name1, antenna=st.integers(0, 64),
    spot=st.builds(SpotId, st.integers(1, 6), st.sampled_from(SPOTS)),
    uids=st.frozensets(st.binary(min_size=8, max_size=8), max_size=20),
    report_seq=st.integers(0, 2**40))
_statuses = st.builds(ShoeStatus, state=st.sampled_from(list(ShoeState)),
                      device=_name, detail=_text)
_alerts = st.builds(DeviceAlert, device=_name, kind=_name,
                    detail=_text)
_roles = st.sampled_from(["shoe", "rfid", "id_reader"])


@given(reading=_cards | _manual_cards | _inventories | _statuses | _alerts, role=_roles)
def test_any_reading_encodes_as_before_and_decodes_to_its_input(reading: Reading,
                                                                  role: DeviceRole) -> None:
    old_kind, old_payload = _hand_written(reading, role)
    given_ = _typed(reading, role)
    kind, payload = encode_input(given_)
    old_text, _ = stored_json(old_payload)
    text, read_back = stored_json(payload)
    assert (kind, text) == (old_kind, old_text)
    assert decode_input(kind, read_back) == given_
