"""What a dispute bundle needs besides its hands' own records to be replayed on its own.

Pure: journal records and outbox messages (plain dicts) in, the bundle's ``context`` part out.
A hand's records (`wire.dispute_bundle.select`) start after the previous hand closed, but the
table's state then (who sits where with how many chips, what lies on the spots, who is signed
in, which device is down) was built by everything before. The context carries the records that
rebuild it: every input from the opening of the earliest hand's heat up to the bundle's last
record that the bundle does not already hold, the staff, roster and device records before the
heat, the count of hands the table had opened before the heat (hand ids are numbered by it),
the registry rows of every chip the records name or the entries were issued, and the rules
the table ran with (supplied by the caller). docs/disputes.md, "Replaying a bundle".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from game.staff import StaffRoster
from wire.dispute_bundle import HAND_TYPES, Selection

__all__ = ["context_records", "named_uids", "seated_entries"]

_OWN_PREFIX: Final = "journal."
# Records before the heat that still shape the table's state during it.
_STATE_KINDS: Final = frozenset({"staff", "device_alert", "shoe_status"})


def _keeps_state(record: Mapping[str, Any]) -> bool:
    kind, payload = record["kind"], record.get("payload") or {}
    if kind in _STATE_KINDS:
        return True
    if kind == "desk":
        return payload.get("command") == StaffRoster.NAME
    return kind == "dealer" and payload.get("action") == "clear_fault"


def _heat_opening(records: Sequence[Mapping[str, Any]], heat_id: object,
                  before: int) -> int | None:
    """The seq of the last ``open_heat`` for ``heat_id`` at or before record ``before``."""
    found = None
    for r in records:
        if int(r["seq"]) > before:
            break
        payload = r.get("payload") or {}
        if (r["kind"] == "desk" and payload.get("command") == "open_heat"
                and payload.get("heat_id") == heat_id):
            found = int(r["seq"])
    return found


def context_records(selection: Selection, records: Sequence[Mapping[str, Any]],
                    messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The records to replay before and between the bundle's own, and the hands opened
    before them; ``records`` is the whole journal in seq order, ``messages`` its outbox."""
    hands = [m for m in selection.messages if m["type"] in HAND_TYPES]
    if not hands or not selection.records:
        return [], 0
    first_hand = min(hands, key=lambda m: int(m["record_seq"]))
    own = {int(r["seq"]) for r in selection.records}
    first_own, last_own = min(own), max(own)
    start = _heat_opening(records, first_hand["body"].get("heat_id"),
                          int(first_hand["record_seq"]))
    start = first_own if start is None else min(start, first_own)
    picked = [dict(r) for r in records
              if not str(r["kind"]).startswith(_OWN_PREFIX) and int(r["seq"]) not in own
              and ((start <= int(r["seq"]) <= last_own)
                   or (int(r["seq"]) < start and _keeps_state(r)))]
    hands_before = sum(1 for m in messages
                       if m["type"] in HAND_TYPES and int(m["record_seq"]) < start)
    return picked, hands_before


def named_uids(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every chip UID (hex) a record's payload names: chip reads and chip actions."""
    found: set[str] = set()
    for r in records:
        payload = r.get("payload") or {}
        for key in ("uids", "uid"):
            value = payload.get(key)
            if isinstance(value, str):
                found.add(value.upper())
            elif isinstance(value, list):
                found.update(str(u).upper() for u in value if isinstance(u, str))
    return found


def seated_entries(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """The entries the desk seats in these records (their issued chips belong in the context)."""
    return {str(p["entry_id"]) for r in records if r["kind"] == "desk"
            for p in [r.get("payload") or {}]
            if p.get("command") == "seat" and isinstance(p.get("entry_id"), str)}
