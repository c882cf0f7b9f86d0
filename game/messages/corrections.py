"""The table's messages about a settled hand disputed and ruled on (rules 22, 23, 37, 53):
``hand.disputed`` (a dealer or supervisor raised a dispute on a hand at the console) and
``hand.corrected`` (the correcting record of a supervisor's ruling: the hand's record stays as
it was, the entry's chips move by this one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from game.messages.fields import BodyReader, MessageError

__all__ = ["HAND_RULINGS", "MADE_AT", "HandCorrected", "HandDisputed", "signed_cents"]

# What a ruling on a settled hand does: the hand counts for nobody, or the seat's net changes.
HAND_RULINGS: Final = ("hand_voided", "hand_corrected")
MADE_AT: Final = ("table",)  # where a ruling was made, when not by the desk's command
_STAFF_ROLES: Final = ("dealer", "supervisor", "manager")  # game.staff.ROLES
_MAX_CENTS: Final = 2**63 - 1


def signed_cents(reader: BodyReader, name: str) -> int:
    """A required whole number of cents that may be negative (a hand's net)."""
    value = reader.raw(name)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > _MAX_CENTS:
        raise MessageError(reader.type, name, "must be a whole number of cents", value)
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class HandDisputed:
    """A dealer or supervisor disputed one entry's result in a settled hand at the console."""

    TYPE: ClassVar[str] = "hand.disputed"
    hand_id: str
    entry_id: str
    seat: int
    claim: str
    by: str | None = None
    role: str | None = None  # dealer | supervisor (None: a table without a staff roster)
    heat_id: str | None = None
    stage: str | None = None
    at: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"hand_id": self.hand_id, "entry_id": self.entry_id, "seat": self.seat,
                "claim": self.claim, "by": self.by, "role": self.role,
                "heat_id": self.heat_id, "stage": self.stage, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> HandDisputed:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        role = r.raw("role")
        if role is not None and role not in _STAFF_ROLES:
            raise MessageError(cls.TYPE, "role", f"must be one of {list(_STAFF_ROLES)}", role)
        return cls(hand_id=r.text("hand_id", 64), entry_id=r.text("entry_id", 40),
                   seat=r.count("seat"), claim=r.text("claim", 1000),
                   by=r.opt_text("by", 40), role=role, heat_id=r.opt_text("heat_id", 64),
                   stage=r.opt_text("stage", 16), at=r.opt_text("at", 40))


@dataclass(frozen=True, slots=True, kw_only=True)
class HandCorrected:
    """A supervisor's ruling on a settled hand, applied at the table: the entry's chips moved
    from ``balance_before`` to ``balance_after`` (the hand's own record is unchanged)."""

    TYPE: ClassVar[str] = "hand.corrected"
    hand_id: str
    entry_id: str
    seat: int
    ruling: str  # one of HAND_RULINGS
    recorded_net: int  # the hand's net for the seat, as settled
    counted_net: int  # what the hand counts for the entry now (0 for a voided hand)
    balance_before: int
    balance_after: int
    hands_played: int  # the entry's hands after the ruling (a voided hand no longer counts)
    markers_returned: tuple[str, ...] = ()
    dispute_id: int | None = None
    by: str | None = None  # who signed the desk's command, or the supervisor at the table
    reason: str = ""
    heat_id: str | None = None
    at: str | None = None
    made_at: str | None = None  # "table": a supervisor ruled at the table's console (D342)

    @property
    def moved_cents(self) -> int:
        """The chips the ruling moved to the entry (negative: taken back from it)."""
        return self.balance_after - self.balance_before

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"hand_id": self.hand_id, "entry_id": self.entry_id, "seat": self.seat,
                "ruling": self.ruling, "recorded_net": self.recorded_net,
                "counted_net": self.counted_net, "balance_before": self.balance_before,
                "balance_after": self.balance_after, "hands_played": self.hands_played,
                "markers_returned": list(self.markers_returned),
                "dispute_id": self.dispute_id, "by": self.by, "reason": self.reason,
                "heat_id": self.heat_id, "at": self.at,
                **({} if self.made_at is None else {"made_at": self.made_at})}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> HandCorrected:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        markers = r.raw("markers_returned", [])
        if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
            raise MessageError(cls.TYPE, "markers_returned", "must be a list of wager names",
                               markers)
        return cls(hand_id=r.text("hand_id", 64), entry_id=r.text("entry_id", 40),
                   seat=r.count("seat"), ruling=r.choice("ruling", HAND_RULINGS),
                   recorded_net=signed_cents(r, "recorded_net"),
                   counted_net=signed_cents(r, "counted_net"),
                   balance_before=r.cents("balance_before"),
                   balance_after=r.cents("balance_after"),
                   hands_played=r.count("hands_played"), markers_returned=tuple(markers),
                   dispute_id=r.opt_seq("dispute_id"), by=r.opt_text("by", 200),
                   reason=r.opt_text("reason", 1000) or "", heat_id=r.opt_text("heat_id", 64),
                   at=r.opt_text("at", 40), made_at=_made_at(r))


def _made_at(r: BodyReader) -> str | None:
    where = r.raw("made_at")
    if where is not None and where not in MADE_AT:
        raise MessageError(r.type, "made_at", f"must be one of {list(MADE_AT)}", where)
    return where if isinstance(where, str) else None
