"""The messages a table sends about what people did at its console: a participant's dispute
of a score, the check of a hand's payout by the chip readers, and staff signing in and out.

Same form as `game.messages.table` (``TYPE``, ``encode``, a checking ``decode``); the topic
each goes on is `wire.messages`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from game.messages.fields import BodyReader, MessageError

__all__ = ["PAYOUT_OUTCOMES", "STAFF_EVENTS", "PayoutChecked", "PayoutLine", "ScoreDisputed",
           "StaffEvent"]

PAYOUT_OUTCOMES: Final = ("verified", "overridden")
STAFF_EVENTS: Final = ("signed_in", "signed_out", "sign_in_failed", "locked", "unlocked")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreDisputed:
    """A participant disputed their recorded score at the table, with a note."""

    TYPE: ClassVar[str] = "score.disputed"
    entry_id: str
    score: int
    note: str
    stage: str | None = None
    heat_id: str | None = None
    at: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"entry_id": self.entry_id, "score": self.score, "note": self.note,
                "stage": self.stage, "heat_id": self.heat_id, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ScoreDisputed:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(entry_id=r.text("entry_id", 40), score=r.cents("score"),
                   note=r.text("note", 1000), stage=r.opt_text("stage", 16),
                   heat_id=r.opt_text("heat_id", 64), at=r.opt_text("at", 40))


@dataclass(frozen=True, slots=True, kw_only=True)
class PayoutLine:
    """One spot of a payout check: what it had to hold once paid and taken, what it held."""

    seat: int
    spot: str
    expected: int
    held: int

    def encode(self) -> dict[str, Any]:
        """The line's JSON."""
        return {"seat": self.seat, "spot": self.spot, "expected": self.expected,
                "held": self.held}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> PayoutLine:
        """Read a line (MessageError naming the field)."""
        r = BodyReader("payout line", body)
        return cls(seat=r.count("seat"), spot=r.text("spot", 20), expected=r.cents("expected"),
                   held=r.cents("held"))


@dataclass(frozen=True, slots=True, kw_only=True)
class PayoutChecked:
    """A settled hand's payout, checked against the chip readers: verified (every spot held
    what it must), or overridden by a supervisor with the mismatches and the reason."""

    TYPE: ClassVar[str] = "payout.checked"
    hand_id: str
    outcome: str
    heat_id: str | None = None
    mismatches: tuple[PayoutLine, ...] = ()
    unverifiable: tuple[PayoutLine, ...] = field(default=())  # keyed by hand, not read
    by: str | None = None
    reason: str | None = None
    at: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"hand_id": self.hand_id, "heat_id": self.heat_id, "outcome": self.outcome,
                "mismatches": [m.encode() for m in self.mismatches],
                "unverifiable": [m.encode() for m in self.unverifiable],
                "by": self.by, "reason": self.reason, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> PayoutChecked:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        lines = {}
        for name in ("mismatches", "unverifiable"):
            raw = r.raw(name, [])
            if not isinstance(raw, list):
                raise MessageError(cls.TYPE, name, "must be a list", raw)
            lines[name] = tuple(PayoutLine.decode(x) for x in raw)
        return cls(hand_id=r.text("hand_id", 64), outcome=r.choice("outcome", PAYOUT_OUTCOMES),
                   heat_id=r.opt_text("heat_id", 64), mismatches=lines["mismatches"],
                   unverifiable=lines["unverifiable"], by=r.opt_text("by", 40),
                   reason=r.opt_text("reason", 1000), at=r.opt_text("at", 40))


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffEvent:
    """Staff signed in or out at the table, failed to, had to wait (``locked``: a sign-in
    back-off, D344), or a manager lifted a wait (``unlocked``, D345)."""

    TYPE: ClassVar[str] = "staff.session"
    event: str
    method: str
    staff_id: str | None = None
    role: str | None = None
    detail: str = ""
    at: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"event": self.event, "method": self.method, "staff_id": self.staff_id,
                "role": self.role, "detail": self.detail, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> StaffEvent:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        detail = r.raw("detail", "")
        return cls(event=r.choice("event", STAFF_EVENTS), method=r.text("method", 16),
                   staff_id=r.opt_text("staff_id", 40), role=r.opt_text("role", 16),
                   detail=detail if isinstance(detail, str) else str(detail),
                   at=r.opt_text("at", 40))
