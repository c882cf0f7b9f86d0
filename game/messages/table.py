"""Every message a table sends the central service, as one typed definition each.

Each is a frozen value with its type name (``TYPE``), ``encode()`` (the JSON body, exactly as
stored and signed) and ``decode(body, sender=...)`` that checks the fields the central service
relies on and raises a `MessageError` naming the field. Fields the central service does not
read are kept as sent. Which topic each goes on is `wire.messages`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Self

from game.messages.chips import ChipsCounted, ChipsReconciled
from game.messages.console import PayoutChecked, ScoreDisputed, StaffEvent
from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.decks import DecksEvent
from game.messages.fields import BodyReader
from game.tournament.entries import Stage
from game.tournament.standings import ScoreStatus

__all__ = [
    "STAGES",
    "Alert",
    "ChipsCounted",
    "ChipsReconciled",
    "CommandResult",
    "DecksEvent",
    "DeviceState",
    "EntrySeated",
    "EntryUnseated",
    "HandSettled",
    "HandVoided",
    "HeatClosed",
    "HeatOpened",
    "PayoutChecked",
    "ScoreAcknowledged",
    "ScoreDisputed",
    "ScoreRecorded",
    "ScoreVoided",
    "StaffEvent",
    "TableMessage",
]

STAGES: Final = frozenset(stage.value for stage in Stage)
_SCORE_STATUSES: Final = frozenset(status.value for status in ScoreStatus)


def _sender(sender: str | None) -> str:
    return f"the sender {sender!r}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceState:
    """A device's state changed for the better or is reported (connected, shoe status)."""

    TYPE: ClassVar[str] = "device"
    device: str | None
    state: str
    detail: str
    at: str

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"device": self.device, "state": self.state, "detail": self.detail, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> DeviceState:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(device=r.raw("device"), state=r.text("state", 64), detail=r.raw("detail", ""),
                   at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """Something the pit must look at: a device fault, a bad chip, a hand's alert."""

    TYPE: ClassVar[str] = "alert"
    kind: str
    message: str
    source: str
    at: str
    seat: int | None = None
    hand_id: str | None = None
    alert_id: int | None = None
    evidence: Mapping[str, Any] | None = None  # what a check found (a deck_suspect's tests)

    def encode(self) -> dict[str, Any]:
        """The JSON body (seat, hand, alert id and evidence only where there are some)."""
        body: dict[str, Any] = {"kind": self.kind, "message": self.message,
                                "source": self.source, "at": self.at}
        if self.seat is not None:
            body["seat"] = self.seat
        if self.hand_id is not None:
            body["hand_id"], body["alert_id"] = self.hand_id, self.alert_id
        if self.evidence is not None:
            body["evidence"] = dict(self.evidence)
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> Alert:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(kind=r.text("kind", 64), message=r.raw("message", ""),
                   source=r.raw("source", ""), at=r.raw("at"), seat=r.opt_count("seat"),
                   hand_id=r.opt_text("hand_id", 64), alert_id=r.opt_count("alert_id"),
                   evidence=r.raw("evidence"))


@dataclass(frozen=True, slots=True, kw_only=True)
class HeatOpened:
    """The table opened a heat of a stage."""

    TYPE: ClassVar[str] = "heat.opened"
    heat_id: str
    stage: str
    at: str

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"heat_id": self.heat_id, "stage": self.stage, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> HeatOpened:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(heat_id=r.text("heat_id", 64), stage=r.choice("stage", STAGES), at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class HeatClosed:
    """The table closed its heat."""

    TYPE: ClassVar[str] = "heat.closed"
    heat_id: str
    at: str

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"heat_id": self.heat_id, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> HeatClosed:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(heat_id=r.text("heat_id", 64), at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class EntrySeated:
    """An entry took a seat at the table."""

    TYPE: ClassVar[str] = "entry.seated"
    entry_id: str
    seat: int
    heat_id: str | None
    at: str

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"entry_id": self.entry_id, "seat": self.seat, "heat_id": self.heat_id,
                "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> EntrySeated:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(entry_id=r.text("entry_id", 40), seat=r.count("seat"),
                   heat_id=r.raw("heat_id"), at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryUnseated:
    """An entry left its seat before its stage ended (it records no score, rule 14)."""

    TYPE: ClassVar[str] = "entry.unseated"
    entry_id: str
    seat: int
    hands_played: int | None
    reason: str
    at: str

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"entry_id": self.entry_id, "seat": self.seat, "hands_played": self.hands_played,
                "reason": self.reason, "at": self.at}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> EntryUnseated:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(entry_id=r.text("entry_id", 40), seat=r.count("seat"),
                   hands_played=r.opt_count("hands_played"), reason=r.raw("reason", ""),
                   at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class _HandMessage:
    """A hand's full record (`game.hand.record.hand_record` plus heat, stage and end time)."""

    STATUS: ClassVar[str]
    TYPE: ClassVar[str]
    hand_id: str
    heat_id: str | None
    record: Mapping[str, Any]

    def encode(self) -> dict[str, Any]:
        """The JSON body: the record itself."""
        return dict(self.record)

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> Self:
        """Read a body (MessageError if it breaks a rule); ``sender`` is the table's id."""
        r = BodyReader(cls.TYPE, body)
        hand_id = r.text("hand_id", 64)
        heat_id = r.opt_text("heat_id", 64)
        r.opt_equal("table", sender, _sender(sender))
        r.opt_equal("status", cls.STATUS, f"{cls.STATUS!r} for {cls.TYPE}")
        return cls(hand_id=hand_id, heat_id=heat_id, record=dict(body))


@dataclass(frozen=True, slots=True, kw_only=True)
class HandSettled(_HandMessage):
    """A hand settled: every seat's wagers, results and nets."""

    TYPE: ClassVar[str] = "hand.settled"
    STATUS: ClassVar[str] = "settled"


@dataclass(frozen=True, slots=True, kw_only=True)
class HandVoided(_HandMessage):
    """A hand was voided: it counts for nobody."""

    TYPE: ClassVar[str] = "hand.voided"
    STATUS: ClassVar[str] = "void"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreRecorded:
    """An entry's stage ended at the table: its score, once."""

    TYPE: ClassVar[str] = "score.recorded"
    entry_id: str
    stage: str
    heat_id: str
    table: str | None
    seat: int | None
    score: int
    hands: int
    status: str
    markers_forfeited: int | None = None
    last_hand_id: str | None = None
    at: str | None = None
    # What the seat command said people see (D331, D332): the entry's short code and the
    # player's name in the page's style; for the slip (absent when the desk sent none).
    entry_code: str | None = None
    name: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body (the code and name only when known)."""
        out = {"entry_id": self.entry_id, "stage": self.stage, "heat_id": self.heat_id,
               "table": self.table, "seat": self.seat, "score": self.score,
               "hands": self.hands, "status": self.status,
               "markers_forfeited": self.markers_forfeited, "last_hand_id": self.last_hand_id,
               "at": self.at}
        if self.entry_code is not None:
            out["entry_code"] = self.entry_code
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ScoreRecorded:
        """Read a body (MessageError if it breaks a rule); ``sender`` is the table's id."""
        r = BodyReader(cls.TYPE, body)
        entry_id, stage = r.text("entry_id", 40), r.choice("stage", STAGES)
        heat_id, score, hands = r.text("heat_id", 64), r.cents("score"), r.count("hands")
        status = r.choice("status", _SCORE_STATUSES)
        table = r.opt_equal("table", sender, _sender(sender))
        return cls(entry_id=entry_id, stage=stage, heat_id=heat_id, table=table,
                   seat=r.opt_count("seat"), score=score, hands=hands, status=status,
                   markers_forfeited=r.raw("markers_forfeited"),
                   last_hand_id=r.raw("last_hand_id"), at=r.raw("at"),
                   entry_code=r.opt_text("entry_code", 16), name=r.opt_text("name", 120))


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreAcknowledged:
    """The entry's player (or the desk) acknowledged the recorded score."""

    TYPE: ClassVar[str] = "score.acknowledged"
    entry_id: str
    score: int
    method: str
    stage: str | None = None
    by: str | None = None
    at: str | None = None
    evidence: str | None = None  # the SHA-256 of a signature drawn on the screen

    def encode(self) -> dict[str, Any]:
        """The JSON body (``evidence`` only when there is some)."""
        body = {"entry_id": self.entry_id, "score": self.score, "stage": self.stage,
                "method": self.method, "by": self.by, "at": self.at}
        if self.evidence is not None:
            body["evidence"] = self.evidence
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ScoreAcknowledged:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(entry_id=r.text("entry_id", 40), score=r.cents("score"),
                   method=r.text("method", 32), stage=r.raw("stage"), by=r.raw("by"),
                   at=r.raw("at"), evidence=r.opt_text("evidence", 64))


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreVoided:
    """The table voided a recorded score (it counts nothing)."""

    TYPE: ClassVar[str] = "score.voided"
    entry_id: str
    reason: str
    at: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body (``at`` only when there is one)."""
        body: dict[str, Any] = {"entry_id": self.entry_id, "reason": self.reason}
        if self.at is not None:
            body["at"] = self.at
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> ScoreVoided:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(entry_id=r.text("entry_id", 40), reason=r.text("reason"), at=r.raw("at"))


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """The table's answer to a desk command: accepted or refused (and why), or held."""

    TYPE: ClassVar[str] = "command.result"
    command_id: str | None
    command: str | None
    accepted: bool
    reason: str | None
    held_until_hand_ends: str | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body (``held_until_hand_ends`` only for a held command)."""
        body: dict[str, Any] = {"command_id": self.command_id, "command": self.command,
                                "accepted": self.accepted, "reason": self.reason}
        if self.held_until_hand_ends is not None:  # a second result follows when the hand ends
            body["held_until_hand_ends"] = self.held_until_hand_ends
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> CommandResult:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(command_id=r.raw("command_id"), command=r.raw("command"),
                   accepted=r.flag("accepted"), reason=r.raw("reason"),
                   held_until_hand_ends=r.opt_text("held_until_hand_ends", 64))


TableMessage = (DeviceState | Alert | HeatOpened | HeatClosed | EntrySeated | EntryUnseated
                | HandSettled | HandVoided | ScoreRecorded | ScoreAcknowledged | ScoreVoided
                | CommandResult | ScoreDisputed | PayoutChecked | StaffEvent | HandDisputed
                | HandCorrected | ChipsReconciled | ChipsCounted | DecksEvent)
