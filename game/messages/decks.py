"""The message a table sends for each step of its deck inventory (`game.decks.inventory`):
``decks.event``: decks received, opened, used or destroyed, by whom (and the witness of a
destruction), with the table's position after it and what the step broke of the balance.

Same form as `game.messages.table` (``TYPE``, ``encode``, a checking ``decode``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from game.decks.inventory import KINDS, MAX_DECKS, DeckStep, Position, read_seals
from game.messages.fields import BodyReader, MessageError

__all__ = ["DecksEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DecksEvent:
    """One deck inventory step at a table and the position it left."""

    TYPE: ClassVar[str] = "decks.event"
    kind: str
    decks: int
    day: str
    by: str
    at: str
    sealed: int
    in_play: int
    awaiting: int
    seals: tuple[str, ...] = ()
    lot: str | None = None
    source: str | None = None
    witness: str | None = None
    note: str | None = None
    problems: tuple[str, ...] = ()

    @classmethod
    def of(cls, step: DeckStep, position: Position, problems: list[str]) -> DecksEvent:
        """The message for a recorded step."""
        return cls(kind=step.kind, decks=step.decks, day=step.day, by=step.by, at=step.at,
                   sealed=position.sealed, in_play=position.in_play,
                   awaiting=position.awaiting, seals=step.seals, lot=step.lot,
                   source=step.source, witness=step.witness, note=step.note,
                   problems=tuple(problems))

    def encode(self) -> dict[str, Any]:
        """The JSON body."""
        return {"kind": self.kind, "decks": self.decks, "day": self.day, "by": self.by,
                "at": self.at, "sealed": self.sealed, "in_play": self.in_play,
                "awaiting": self.awaiting, "seals": list(self.seals), "lot": self.lot,
                "source": self.source, "witness": self.witness, "note": self.note,
                "problems": list(self.problems)}

    @classmethod
    def decode(cls, body: Mapping[str, Any], *, sender: str | None = None) -> DecksEvent:
        """Read a body (MessageError naming the field if it breaks a rule)."""
        del sender
        r = BodyReader(cls.TYPE, body)
        decks = r.count("decks")
        if not 0 < decks <= MAX_DECKS:
            raise MessageError(cls.TYPE, "decks", f"must be 1..{MAX_DECKS}", decks)
        try:
            seals = read_seals(r.raw("seals", []), decks)
        except ValueError as exc:
            raise MessageError(cls.TYPE, "seals", str(exc).partition(": ")[2],
                               r.raw("seals")) from None
        problems = r.raw("problems", [])
        if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
            raise MessageError(cls.TYPE, "problems", "must be a list of text", problems)
        day = r.text("day", 10)
        if len(day) != 10 or day[4] != "-" or day[7] != "-":
            raise MessageError(cls.TYPE, "day", "must be a date YYYY-MM-DD", day)
        kind = r.choice("kind", KINDS)
        witness = r.opt_text("witness", 40)
        if kind == "destroyed" and witness is None:
            raise MessageError(cls.TYPE, "witness", "must name the witness of a destruction")
        positions = {}
        for name in ("sealed", "in_play", "awaiting"):
            value = r.raw(name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise MessageError(cls.TYPE, name, "must be a whole number", value)
            positions[name] = value
        return cls(kind=kind, decks=decks, day=day, by=r.text("by", 40), at=r.text("at", 40),
                   seals=seals, lot=r.opt_text("lot", 40), source=r.opt_text("source", 100),
                   witness=witness, note=r.opt_text("note", 1000),
                   problems=tuple(problems), **positions)
