"""The message a table sends when an entry's chips are reconciled against the table's float at
the end of its heat (promotion rule 19): ``chips.reconciled``, one per entry.

Same form as `game.messages.table` (``TYPE``, ``encode``, a checking ``decode``); the topic
it goes on is `wire.messages`' business. UIDs travel as 16 upper-case hex digits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from game.chips.float import Reconciliation
from game.chips.registry import format_uid
from game.messages.fields import BodyReader, MessageError

__all__ = ["UID_LISTS", "ChipsReconciled"]

UID_LISTS: Final = ("issued", "held", "returned", "missing", "foreign")
MAX_UIDS: Final = 5_000  # one entry's chips: far more than any stack a seat can hold
_UID: Final = re.compile(r"[0-9A-F]{16}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipsReconciled:
    """One entry's chips at the end of its heat: issued at seating, held at the end, returned
    to the float, missing (value in cents for each), and chips of other entries returned."""

    TYPE: ClassVar[str] = "chips.reconciled"
    entry_id: str
    seat: int
    chip_set: str
    issued: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    returned: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    foreign: tuple[str, ...] = ()
    issued_cents: int = 0
    held_cents: int = 0
    returned_cents: int = 0
    missing_cents: int = 0
    heat_id: str | None = None
    at: str | None = None

    @classmethod
    def of(cls, done: Reconciliation, *, chip_set: str, heat_id: str | None,
           at: str | None) -> ChipsReconciled:
        """The message for a reconciliation."""
        def hexes(uids: tuple[bytes, ...]) -> tuple[str, ...]:
            return tuple(format_uid(u) for u in uids)
        return cls(entry_id=done.entry_id, seat=done.seat, chip_set=chip_set,
                   issued=hexes(done.issued), held=hexes(done.held),
                   returned=hexes(done.returned), missing=hexes(done.missing),
                   foreign=hexes(done.foreign), issued_cents=done.issued_cents,
                   held_cents=done.held_cents, returned_cents=done.returned_cents,
                   missing_cents=done.missing_cents, heat_id=heat_id, at=at)

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"entry_id": self.entry_id, "seat": self.seat, "chip_set": self.chip_set,
                "heat_id": self.heat_id, "issued": list(self.issued), "held": list(self.held),
                "returned": list(self.returned), "missing": list(self.missing),
                "foreign": list(self.foreign), "issued_cents": self.issued_cents,
                "held_cents": self.held_cents, "returned_cents": self.returned_cents,
                "missing_cents": self.missing_cents, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ChipsReconciled:
        """Read a body (MessageError naming the field if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        lists = {name: _uids(name, r.raw(name, [])) for name in UID_LISTS}
        held, returned, missing = set(lists["held"]), set(lists["returned"]), lists["missing"]
        if not returned <= held or set(missing) != held - returned:
            raise MessageError(cls.TYPE, "missing", "must be the held chips not returned",
                               missing)
        return cls(entry_id=r.text("entry_id", 40), seat=r.count("seat"),
                   chip_set=r.text("chip_set", 64), heat_id=r.opt_text("heat_id", 64),
                   issued=lists["issued"], held=lists["held"], returned=lists["returned"],
                   missing=missing, foreign=lists["foreign"],
                   issued_cents=r.cents("issued_cents"), held_cents=r.cents("held_cents"),
                   returned_cents=r.cents("returned_cents"),
                   missing_cents=r.cents("missing_cents"), at=r.opt_text("at", 40))


def _uids(name: str, raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_UIDS:
        raise MessageError(ChipsReconciled.TYPE, name,
                           f"must be a list of at most {MAX_UIDS} UIDs", raw)
    for uid in raw:
        if not isinstance(uid, str) or not _UID.fullmatch(uid):
            raise MessageError(ChipsReconciled.TYPE, name,
                               "each UID is 16 upper-case hex digits", uid)
    if len(set(raw)) != len(raw):
        raise MessageError(ChipsReconciled.TYPE, name, "a UID is listed twice", raw)
    return tuple(raw)
