"""The messages a table sends about its chips: an entry's chips reconciled against the table's
float at the end of its heat (promotion rule 19): ``chips.reconciled``, one per entry; and a
heat's opening or closing count of the tray, by the dealer and confirmed by a supervisor
(``chips.counted``, `game.chips.counts`).

Same form as `game.messages.table` (``TYPE``, ``encode``, a checking ``decode``); the topic
it goes on is `wire.messages`' business. UIDs travel as 16 upper-case hex digits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Final

from game.chips.counts import STAGES, ChipCount, read_counted, total_of
from game.chips.float import Reconciliation
from game.chips.registry import format_uid
from game.messages.fields import BodyReader, MessageError

__all__ = ["UID_LISTS", "ChipsCounted", "ChipsReconciled", "read_time"]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipsCounted:
    """A heat's opening or closing count of the tray, confirmed: what the dealer counted per
    chip value, what the table expected (None: nothing known, D375), the difference, the
    house's tolerance and whether the difference is over it, who counted and who confirmed."""

    TYPE: ClassVar[str] = "chips.counted"
    heat_id: str
    stage: str
    counted: tuple[tuple[int, int], ...]
    expected: tuple[tuple[int, int], ...] | None
    total_cents: int
    expected_cents: int | None
    difference_cents: int | None
    tolerance_cents: int
    over_tolerance: bool
    dealer_id: str
    supervisor_id: str
    counted_at: str
    confirmed_at: str

    @classmethod
    def of(cls, count: ChipCount) -> ChipsCounted:
        """The message for a confirmed count."""
        assert count.supervisor_id is not None
        assert count.confirmed_at is not None
        return cls(heat_id=count.heat_id, stage=count.stage, counted=count.counted,
                   expected=count.expected, total_cents=count.total_cents,
                   expected_cents=count.expected_cents,
                   difference_cents=count.difference_cents,
                   tolerance_cents=count.tolerance_cents, over_tolerance=count.over,
                   dealer_id=count.dealer_id, supervisor_id=count.supervisor_id,
                   counted_at=count.counted_at, confirmed_at=count.confirmed_at)

    def encode(self) -> dict[str, Any]:
        """The JSON body (counts as value in cents -> how many, keys as text)."""
        return {"heat_id": self.heat_id, "stage": self.stage,
                "counted": {str(v): n for v, n in self.counted},
                "expected": None if self.expected is None
                else {str(v): n for v, n in self.expected},
                "total_cents": self.total_cents, "expected_cents": self.expected_cents,
                "difference_cents": self.difference_cents,
                "tolerance_cents": self.tolerance_cents, "over_tolerance": self.over_tolerance,
                "dealer_id": self.dealer_id, "supervisor_id": self.supervisor_id,
                "counted_at": self.counted_at, "confirmed_at": self.confirmed_at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ChipsCounted:
        """Read a body (MessageError naming the field if it breaks a rule: the totals and the
        difference must be those of the counts)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        counted = _count(r, "counted")
        raw_expected = r.raw("expected")
        expected = None if raw_expected is None else _count(r, "expected")
        total = r.cents("total_cents")
        if total != total_of(counted):
            raise MessageError(cls.TYPE, "total_cents", "must be the value of the count", total)
        expected_cents = None if r.raw("expected_cents") is None else r.cents("expected_cents")
        if expected_cents != (None if expected is None else total_of(expected)):
            raise MessageError(cls.TYPE, "expected_cents",
                               "must be the value of the expected count", expected_cents)
        difference = r.raw("difference_cents")
        if difference != (None if expected_cents is None else total - expected_cents):
            raise MessageError(cls.TYPE, "difference_cents",
                               "must be the total less the expected", difference)
        tolerance = r.cents("tolerance_cents")
        over = r.flag("over_tolerance")
        if over != (difference is not None and abs(difference) > tolerance):
            raise MessageError(cls.TYPE, "over_tolerance",
                               "must say whether the difference is over the tolerance", over)
        dealer, supervisor = r.text("dealer_id", 40), r.text("supervisor_id", 40)
        if dealer == supervisor:
            raise MessageError(cls.TYPE, "supervisor_id",
                               "must be a second person, not the dealer who counted",
                               supervisor)
        return cls(heat_id=r.text("heat_id", 64), stage=r.choice("stage", STAGES),
                   counted=counted, expected=expected, total_cents=total,
                   expected_cents=expected_cents, difference_cents=difference,
                   tolerance_cents=tolerance, over_tolerance=over, dealer_id=dealer,
                   supervisor_id=supervisor, counted_at=_time(r, "counted_at"),
                   confirmed_at=_time(r, "confirmed_at"))


def read_time(text: str) -> datetime:
    """A body's time (`format_ts`'s form) as an aware datetime; ValueError if it is not."""
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if found.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return found


def _time(r: BodyReader, name: str) -> str:
    text = r.text(name, 40)
    try:
        read_time(text)
    except ValueError:
        raise MessageError(ChipsCounted.TYPE, name, "must be an RFC 3339 time in UTC",
                           text) from None
    return text


def _count(r: BodyReader, name: str) -> tuple[tuple[int, int], ...]:
    try:
        return read_counted(r.raw(name))
    except ValueError as exc:
        raise MessageError(ChipsCounted.TYPE, name, str(exc).partition(": ")[2],
                           r.raw(name)) from None
