"""Every command the tournament desk sends a table, as one typed definition each.

A command's body is ``{"table": ..., "command": NAME, "command_id": ..., **args}``; the table
adds who signed it and its envelope seq before journaling it. `DeskOrder` is that whole body;
each command class holds its own arguments, with ``args()`` and a checking ``decode``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from game.messages.corrections import signed_cents
from game.messages.fields import BodyReader, MessageError
from game.messages.table import STAGES
from game.staff import StaffRoster, check_hash

__all__ = [
    "COMMANDS",
    "AckScore",
    "CloseHeat",
    "CorrectHand",
    "DeskOrder",
    "OpenHeat",
    "ParticipantProofs",
    "Resend",
    "Seat",
    "StaffRoster",
    "TableCommand",
    "Unseat",
    "VoidHand",
    "command_body",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenHeat:
    """Open a heat of a stage at the table."""

    NAME: ClassVar[str] = "open_heat"
    stage: str
    heat_id: str

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"stage": self.stage, "heat_id": self.heat_id}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> OpenHeat:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        return cls(stage=r.choice("stage", STAGES), heat_id=r.text("heat_id", 64))


@dataclass(frozen=True, slots=True, kw_only=True)
class Seat:
    """Seat an entry (between hands)."""

    NAME: ClassVar[str] = "seat"
    entry_id: str
    seat: int
    # How the participant proves it is them when acknowledging the score (game.staff hashes
    # of the patron's rewards card number and PIN); never a name or an ID number.
    card_hash: str | None = None
    pin_hash: str | None = None
    # What people see of the entry (D331, D332): its short display code ("K7-42F", the
    # page's) and the player's name as the page shows it (first name and initial, a screen
    # name, or none); the table shows these on the console, the player view and the slip.
    entry_code: str | None = None
    name: str | None = None

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body (each optional one only when the desk has it)."""
        out: dict[str, Any] = {"entry_id": self.entry_id, "seat": self.seat}
        for name in ("card_hash", "pin_hash", "entry_code", "name"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> Seat:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        return cls(entry_id=r.text("entry_id", 40), seat=r.count("seat"),
                   **_proof_hashes(cls.NAME, r), entry_code=r.opt_text("entry_code", 16),
                   name=r.opt_text("name", 120))


def _proof_hashes(name: str, r: BodyReader) -> dict[str, str | None]:
    """The participant's proof hashes of a command, each checked (MessageError naming it)."""
    hashes = {}
    for field in ("card_hash", "pin_hash"):
        value = r.opt_text(field, 200)
        problem = None if value is None else check_hash(value)
        if problem is not None:
            raise MessageError(name, field, problem, value)
        hashes[field] = value
    return hashes


@dataclass(frozen=True, slots=True, kw_only=True)
class ParticipantProofs:
    """The participant's proofs changed at the desk after seating (D330): they replace the
    ones the ``seat`` command carried, for an entry seated at the table or with a score
    waiting for acknowledgement there. Both hashes are the patron's current ones (None: none
    on record)."""

    NAME: ClassVar[str] = "participant_proofs"
    entry_id: str
    card_hash: str | None = None
    pin_hash: str | None = None

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"entry_id": self.entry_id, "card_hash": self.card_hash,
                "pin_hash": self.pin_hash}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> ParticipantProofs:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        return cls(entry_id=r.text("entry_id", 40), **_proof_hashes(cls.NAME, r))


@dataclass(frozen=True, slots=True, kw_only=True)
class Unseat:
    """Take an entry out of its seat; held until the hand in progress ends."""

    NAME: ClassVar[str] = "unseat"
    seat: int
    entry_id: str | None = None
    reason: str | None = None

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"seat": self.seat, "entry_id": self.entry_id, "reason": self.reason}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> Unseat:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        reason = r.raw("reason")
        return cls(seat=r.count("seat"), entry_id=r.opt_text("entry_id", 40),
                   reason=None if reason is None else str(reason))


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidHand:
    """Void the hand in progress (a supervisor's ruling)."""

    NAME: ClassVar[str] = "void_hand"
    hand_id: str
    reason: str

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"hand_id": self.hand_id, "reason": self.reason}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> VoidHand:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        return cls(hand_id=r.text("hand_id", 64), reason=r.text("reason"))


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseHeat:
    """Close the table's heat (no hand in progress, nobody seated); held during a hand."""

    NAME: ClassVar[str] = "close_heat"

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body (none)."""
        return {}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> CloseHeat:
        """Read the arguments (there are none)."""
        BodyReader(cls.NAME, body)
        return cls()


@dataclass(frozen=True, slots=True, kw_only=True)
class AckScore:
    """Acknowledge an entry's recorded score on the player's behalf (the desk's way)."""

    NAME: ClassVar[str] = "ack_score"
    entry_id: str
    method: str = "desk"

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"entry_id": self.entry_id, "method": self.method}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> AckScore:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        return cls(entry_id=r.text("entry_id", 40), method=r.opt_text("method", 32) or "desk")


@dataclass(frozen=True, slots=True, kw_only=True)
class Resend:
    """Publish again every message from ``from_seq`` on (the link does it from the journal)."""

    NAME: ClassVar[str] = "resend"
    from_seq: int

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"from_seq": self.from_seq}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> Resend:
        """Read the arguments (MessageError naming the field if one is bad)."""
        return cls(from_seq=BodyReader(cls.NAME, body).seq("from_seq"))


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectHand:
    """A supervisor's ruling on a settled hand of the open heat (game.table.corrections):
    ``void`` (the hand counts for nobody at that seat) or ``correct`` (its net for the seat
    becomes ``net``). Held until the hand in progress ends; the hand's record is kept."""

    NAME: ClassVar[str] = "correct_hand"
    RULINGS: ClassVar[tuple[str, ...]] = ("void", "correct")
    hand_id: str
    entry_id: str
    ruling: str
    reason: str
    net: int | None = None  # the corrected net (``correct`` only)
    dispute_id: int | None = None

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"hand_id": self.hand_id, "entry_id": self.entry_id, "ruling": self.ruling,
                "net": self.net, "reason": self.reason, "dispute_id": self.dispute_id}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> CorrectHand:
        """Read the arguments (MessageError naming the field if one is bad)."""
        r = BodyReader(cls.NAME, body)
        ruling = r.choice("ruling", cls.RULINGS)
        net = signed_cents(r, "net") if ruling == "correct" else None
        return cls(hand_id=r.text("hand_id", 64), entry_id=r.text("entry_id", 40),
                   ruling=ruling, reason=r.text("reason", 1000), net=net,
                   dispute_id=r.opt_seq("dispute_id"))


TableCommand = (OpenHeat | Seat | Unseat | VoidHand | CloseHeat | AckScore | Resend
                | StaffRoster | CorrectHand | ParticipantProofs)
COMMANDS: dict[str, type[TableCommand]] = {
    c.NAME: c for c in (OpenHeat, Seat, Unseat, VoidHand, CloseHeat, AckScore, Resend,
                        StaffRoster, CorrectHand, ParticipantProofs)}


def command_body(*, table: str | None, name: str, command_id: str | None,
                 args: Mapping[str, Any]) -> dict[str, Any]:
    """A desk command's body: ``{"table", "command", "command_id", **args}``."""
    return {"table": table, "command": name, "command_id": command_id, **args}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskOrder:
    """A desk command's whole body: the command, its id, and (at the table) who signed it and
    its envelope seq (a command applies once per signer and seq)."""

    command: TableCommand
    table: str | None = None
    command_id: str | None = None
    signer: str | None = None
    command_seq: int | None = None

    @property
    def name(self) -> str:
        """The command's name, e.g. ``"seat"``."""
        return self.command.NAME

    def encode(self) -> dict[str, Any]:
        """The JSON body (``signer`` and ``command_seq`` only when the table has set them)."""
        body = command_body(table=self.table, name=self.name, command_id=self.command_id,
                            args=self.command.args())
        if self.signer is not None:
            body["signer"] = self.signer
        if self.command_seq is not None:
            body["command_seq"] = self.command_seq
        return body

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> DeskOrder:
        """Read a command body; MessageError naming the field (or the unknown command)."""
        r = BodyReader("desk command", body)
        name = r.text("command", 32)
        kind = COMMANDS.get(name)
        if kind is None:
            raise MessageError("desk command", "command", "must be a known command", name)
        command = kind.decode(body)
        signer, command_id = r.raw("signer"), r.raw("command_id")
        return cls(command=command, table=r.raw("table"),
                   command_id=None if command_id is None else str(command_id),
                   signer=None if signer is None else str(signer),
                   command_seq=r.opt_seq("command_seq"))
