"""The table <-> central message contract: every message type, its class and its topic.

The table's own messages and the desk's commands are defined in `game.messages.table` and
`game.messages.desk` (the pure table core builds and reads them); the link's notices and the
service's standings are defined here. This module is the registry: type name <-> class, the
topic suffix each table message goes on, and `decode_table_message` for a received body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.desk import (
    COMMANDS,
    AckScore,
    CloseHeat,
    CorrectHand,
    DeskOrder,
    OpenHeat,
    Resend,
    Seat,
    StaffRoster,
    TableCommand,
    Unseat,
    VoidHand,
)
from game.messages.fields import BodyReader, MessageError
from game.messages.table import (
    Alert,
    ChipsCounted,
    ChipsReconciled,
    CommandResult,
    DecksEvent,
    DeviceState,
    EntrySeated,
    EntryUnseated,
    HandSettled,
    HandVoided,
    HeatClosed,
    HeatOpened,
    PayoutChecked,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
    StaffEvent,
    TableMessage,
)
from wire.topics import TopicSuffix

__all__ = [
    "COMMANDS",
    "TABLE_MESSAGES",
    "TOPIC_OF",
    "AckScore",
    "Alert",
    "Availability",
    "ChipsCounted",
    "ChipsReconciled",
    "CloseHeat",
    "CommandRejected",
    "CommandResult",
    "CorrectHand",
    "DecksEvent",
    "DeskOrder",
    "DeviceState",
    "EntrySeated",
    "EntryUnseated",
    "HandCorrected",
    "HandDisputed",
    "HandSettled",
    "HandVoided",
    "HeatClosed",
    "HeatOpened",
    "Message",
    "MessageError",
    "OpenHeat",
    "PayoutChecked",
    "Resend",
    "ScoreAcknowledged",
    "ScoreDisputed",
    "ScoreRecorded",
    "ScoreVoided",
    "Seat",
    "StaffEvent",
    "StaffRoster",
    "Standings",
    "TableCommand",
    "TableMessage",
    "Unseat",
    "VoidHand",
    "decode_table_message",
    "topic_of",
]


class Message(Protocol):
    """What every message definition offers: its type name and its JSON body."""

    TYPE: ClassVar[str]

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """The link's retained birth/will on the status topic: online or offline, with counters."""

    TYPE: ClassVar[str] = "availability"
    # The ``status`` key of an ``online`` one naming the lowest seq the table can still resend
    # (its current journal file's first; absent from older tables) (D414).
    FIRST_RESENDABLE: ClassVar[str] = "first_resendable_seq"
    state: str
    link: Mapping[str, Any]
    clean: bool | None = None
    status: Mapping[str, Any] | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body (``clean`` and ``status`` only when there are some)."""
        body: dict[str, Any] = {"state": self.state, "link": dict(self.link)}
        if self.clean is not None:
            body["clean"] = self.clean
        if self.status is not None:
            body["status"] = dict(self.status)
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> Availability:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        link, status = r.raw("link", {}), r.raw("status")
        return cls(state=r.choice("state", ("online", "offline")),
                   link=link if isinstance(link, Mapping) else {}, clean=r.raw("clean"),
                   status=status if isinstance(status, Mapping) else None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandRejected:
    """The link refused a command before the table saw it (bad signature, wrong table...)."""

    TYPE: ClassVar[str] = "command_rejected"
    reason: str
    detail: str
    payload_sha256: str
    payload_bytes: int
    claimed_sender: str | None = None
    claimed_type: str | None = None
    claimed_seq: int | None = None

    def encode(self) -> dict[str, Any]:
        """The JSON body (what the command claimed to be, where it could be read)."""
        body: dict[str, Any] = {"reason": self.reason, "detail": self.detail,
                                "payload_sha256": self.payload_sha256,
                                "payload_bytes": self.payload_bytes}
        if self.claimed_sender is not None:
            body["claimed_sender"] = self.claimed_sender
        if self.claimed_type is not None:
            body["claimed_type"] = self.claimed_type
        if self.claimed_seq is not None:
            body["claimed_seq"] = self.claimed_seq
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> CommandRejected:
        """Read a body (MessageError if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        return cls(reason=r.text("reason", 64), detail=r.raw("detail", ""),
                   payload_sha256=r.raw("payload_sha256", ""),
                   payload_bytes=r.raw("payload_bytes", 0),
                   claimed_sender=r.opt_text("claimed_sender", 64),
                   claimed_type=r.opt_text("claimed_type", 64),
                   claimed_seq=r.raw("claimed_seq"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Standings:
    """The central service's retained standings document (names removed)."""

    TYPE: ClassVar[str] = "standings"
    document: Mapping[str, Any]

    def encode(self) -> dict[str, Any]:
        """The JSON body: the document."""
        return dict(self.document)

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> Standings:
        """Read a body (any JSON object)."""
        del sender
        BodyReader(cls.TYPE, body)
        return cls(document=dict(body))


_EVENTS: Final = (DeviceState, Alert, HeatOpened, HeatClosed, EntrySeated, EntryUnseated,
                  HandSettled, HandVoided, CommandResult, CommandRejected, PayoutChecked,
                  StaffEvent, HandDisputed, HandCorrected, ChipsReconciled, ChipsCounted,
                  DecksEvent)
_SCORES: Final = (ScoreRecorded, ScoreAcknowledged, ScoreVoided, ScoreDisputed)
_STATUS: Final = (Availability,)

TOPIC_OF: Final[Mapping[str, TopicSuffix]] = {
    **{c.TYPE: "events" for c in _EVENTS},
    **{c.TYPE: "scores" for c in _SCORES},
    **{c.TYPE: "status" for c in _STATUS},
}
TABLE_MESSAGES: Final[Mapping[str, Any]] = {c.TYPE: c for c in (*_EVENTS, *_SCORES, *_STATUS)}


def topic_of(message: Message) -> TopicSuffix:
    """The topic suffix a table message goes on (KeyError for one a table does not send)."""
    return TOPIC_OF[message.TYPE]


def decode_table_message(type_: str, body: Mapping[str, Any], *, sender: str | None = None
                         ) -> TableMessage | Availability | CommandRejected:
    """Decode a table's message of type ``type_`` (``sender``: the table's id, checked where a
    body names its table); MessageError for a bad body or a type no table sends."""
    kind = TABLE_MESSAGES.get(type_)
    if kind is None:
        raise MessageError(type_, "type", "must be a table message type", type_)
    decoded: TableMessage | Availability | CommandRejected = kind.decode(body, sender=sender)
    return decoded
