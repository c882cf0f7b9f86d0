"""Which earlier records a bundle's replay needs (pure: plain dicts, no journal)."""

from __future__ import annotations

from typing import Any

from wire.dispute_bundle import select
from wire.dispute_context import context_records, named_uids, seated_entries


def rec(seq: int, record_kind: str, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "kind": record_kind, "payload": payload}


RECORDS = [
    rec(1, "journal.created"),
    rec(2, "staff", event="signed_in", method="pin", staff_id="D1"),
    rec(3, "desk", command="open_heat", heat_id="Q0", stage="qualifying"),
    rec(4, "dealer", action="settle"),                     # hand 1 of heat Q0 closes
    rec(5, "device_alert", kind="disconnected", role="rfid"),
    rec(6, "desk", command="open_heat", heat_id="Q1", stage="qualifying"),
    rec(7, "desk", command="seat", entry_id="E1", seat=1),
    rec(8, "chips", seat=1, spot="ante", uids=["e004000000000001"]),
    rec(9, "dealer", action="settle"),                     # hand 2 (Q1) closes
    rec(10, "chips", seat=1, spot="ante", uids=["E004000000000002"]),
    rec(11, "dealer", action="settle"),                    # hand 3 (Q1) closes
]
MESSAGES = [
    {"seq": 1, "record_seq": 4, "type": "hand.settled",
     "body": {"hand_id": "t-1", "heat_id": "Q0", "seats": []}},
    {"seq": 2, "record_seq": 9, "type": "hand.settled",
     "body": {"hand_id": "t-2", "heat_id": "Q1", "seats": [{"seat": 1, "entry_id": "E1"}]}},
    {"seq": 3, "record_seq": 11, "type": "hand.settled",
     "body": {"hand_id": "t-3", "heat_id": "Q1", "seats": [{"seat": 1, "entry_id": "E1"}]}},
]


def test_a_later_hand_gets_its_heat_from_the_opening_and_the_state_before_it() -> None:
    selection = select("hand", "t-3", RECORDS, MESSAGES)
    assert [r["seq"] for r in selection.records] == [10, 11]
    extra, before = context_records(selection, RECORDS, MESSAGES)
    # the heat's opening to the bundle's first record, and the staff and device records
    # before the heat; the other heat's hand is not replayed, only counted
    assert [r["seq"] for r in extra] == [2, 5, 6, 7, 8, 9]
    assert before == 1


def test_uids_and_entries_named() -> None:
    assert named_uids(RECORDS) == {"E004000000000001", "E004000000000002"}
    assert seated_entries(RECORDS) == {"E1"}
