"""The decks of cards at one table, per venue day (Michigan R 432.1816): decks RECEIVED from the
cage or pit stock (by a supervisor, with a count and their seal or lot numbers), OPENED into
play (by the dealer), USED (retired from play) and DESTROYED (by a supervisor, with a witness).

The balance, carried from day to day: received = opened + still sealed; opened = used + in
play; used = destroyed + awaiting destruction. A step that would leave fewer than none
sealed, in play or awaiting destruction (more opened than received, ...), or a seal number
that is not where the step says it was, breaks the balance: it is recorded as it was done and
reported (D377), never refused, so the record shows what happened.

Pure: the people, times and venue day come in as arguments; `DeckBook` is rebuilt by replaying
the same journaled inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from game.errors import GameError

__all__ = [
    "KINDS",
    "MAX_DECKS",
    "ROLES_OF",
    "DeckBook",
    "DeckDay",
    "DeckRefused",
    "DeckStep",
    "Kind",
    "Position",
    "balance_problems",
    "load_steps",
    "read_seals",
    "steps_state",
]

Kind = Literal["received", "opened", "used", "destroyed"]
KINDS: Final[tuple[Kind, ...]] = ("received", "opened", "used", "destroyed")
ROLES_OF: Final[Mapping[str, frozenset[str]]] = {
    "received": frozenset({"supervisor", "manager"}),
    "opened": frozenset({"dealer", "supervisor", "manager"}),
    "used": frozenset({"dealer", "supervisor", "manager"}),
    "destroyed": frozenset({"supervisor", "manager"}),
}
MAX_DECKS: Final = 1000  # decks in one step: more than a pit's stock
MAX_SEAL: Final = 40  # characters of a seal or lot number


class DeckRefused(GameError):
    """A deck step that cannot be recorded (wrong person, no witness); says why."""


def read_seals(raw: object, decks: int) -> tuple[str, ...]:
    """Seal numbers as given (a list of text, at most one per deck); ValueError says why."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > decks:
        raise ValueError(f"seals: a list of at most {decks} seal numbers (one per deck)")
    seals: list[str] = []
    for seal in raw:
        if not isinstance(seal, str) or not seal.strip() or len(seal) > MAX_SEAL:
            raise ValueError(f"seals: {str(seal)[:40]!r} is not a seal number (text of 1 to"
                             f" {MAX_SEAL} characters)")
        seals.append(seal.strip())
    if len(set(seals)) != len(seals):
        raise ValueError("seals: a seal number is given twice")
    return tuple(seals)


@dataclass(frozen=True, slots=True, kw_only=True)
class Position:
    """Decks at the table: still sealed, in play, used and awaiting destruction."""

    sealed: int = 0
    in_play: int = 0
    awaiting: int = 0

    def after(self, kind: Kind, decks: int) -> Position:
        """The position after a step of ``decks`` decks."""
        moves = {"received": (decks, 0, 0), "opened": (-decks, decks, 0),
                 "used": (0, -decks, decks), "destroyed": (0, 0, -decks)}[kind]
        return Position(sealed=self.sealed + moves[0], in_play=self.in_play + moves[1],
                        awaiting=self.awaiting + moves[2])

    def encode(self) -> dict[str, int]:
        """Plain data."""
        return {"sealed": self.sealed, "in_play": self.in_play, "awaiting": self.awaiting}


def balance_problems(position: Position) -> list[str]:
    """What is wrong with a position: any of its counts below zero."""
    words = {"sealed": ("opened", "received"), "in_play": ("used", "opened"),
             "awaiting": ("destroyed", "used")}
    out = []
    for name, (more, than) in words.items():
        value = getattr(position, name)
        if value < 0:
            out.append(f"{-value} more decks {more} than {than}")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DeckStep:
    """One recorded step of the deck inventory."""

    kind: Kind
    decks: int
    day: str  # the venue's day, YYYY-MM-DD
    by: str
    at: str
    seals: tuple[str, ...] = ()
    lot: str | None = None
    source: str | None = None  # received: where from (cage, pit stock)
    witness: str | None = None  # destroyed: the second person
    note: str | None = None


@dataclass(slots=True)
class DeckDay:
    """One venue day's deck figures at the table."""

    day: str
    start: Position
    end: Position
    received: int = 0
    opened: int = 0
    used: int = 0
    destroyed: int = 0
    problems: list[str] = field(default_factory=list)

    def encode(self) -> dict[str, Any]:
        """Plain data, for the status and the screens."""
        return {"day": self.day, "start": self.start.encode(), "end": self.end.encode(),
                "received": self.received, "opened": self.opened, "used": self.used,
                "destroyed": self.destroyed, "balanced": not self.problems,
                "problems": list(self.problems)}


class DeckBook:
    """The table's deck inventory: the position now, where each seal number is, and the
    figures of each venue day."""

    def __init__(self) -> None:
        self.position = Position()
        self.where: dict[str, str] = {}  # seal number -> sealed | in_play | awaiting | destroyed
        self.days: dict[str, DeckDay] = {}
        self.steps: list[DeckStep] = []

    def record(self, step: DeckStep, *, role: str | None,
               witness_role: str | None = None) -> list[str]:
        """Record a step; returns what it broke of the balance (empty: balanced).

        DeckRefused for the wrong person (``role``: the role of ``step.by``; ``witness_role``:
        the witness's, a destruction's second person) or a step of no decks."""
        allowed = ROLES_OF[step.kind]
        if role not in allowed:
            who = "a dealer, supervisor or manager" if "dealer" in allowed else \
                "a supervisor or manager"
            raise DeckRefused(f"decks {step.kind}: {step.by} is signed in as {role}; {who}"
                              f" records decks {step.kind}")
        if not 0 < step.decks <= MAX_DECKS:
            raise DeckRefused(f"decks: {step.decks} is not a number of decks (1 to {MAX_DECKS})")
        if step.kind == "destroyed":
            if step.witness is None or witness_role is None:
                raise DeckRefused("decks destroyed: a witness confirms the destruction with"
                                  " their own credential")
            if step.witness == step.by:
                raise DeckRefused(f"decks destroyed: {step.by} cannot witness their own"
                                  " destruction of decks: a second person witnesses it")
        if step.kind != "received" and step.lot is not None:
            raise DeckRefused("lot: a lot number is recorded when decks are received")
        return self.apply(step)

    def apply(self, step: DeckStep) -> list[str]:
        """Record a step already checked (a snapshot's replay); what it broke."""
        problems = self._seal_problems(step)
        before = self.position
        after = before.after(step.kind, step.decks)
        problems.extend(p for p in balance_problems(after) if p not in balance_problems(before))
        today = self.days.get(step.day)
        if today is None:
            today = self.days[step.day] = DeckDay(day=step.day, start=before, end=before)
        setattr(today, step.kind, getattr(today, step.kind) + step.decks)
        today.end = after
        today.problems.extend(problems)
        self.position = after
        self.steps.append(step)
        return problems

    def _seal_problems(self, step: DeckStep) -> list[str]:
        """Move the step's seal numbers; what is wrong with them."""
        was = {"received": None, "opened": "sealed", "used": "in_play",
               "destroyed": "awaiting"}[step.kind]
        goes = {"received": "sealed", "opened": "in_play", "used": "awaiting",
                "destroyed": "destroyed"}[step.kind]
        out = []
        for seal in step.seals:
            now = self.where.get(seal)
            if was is None and now is not None:
                out.append(f"seal {seal} was received already ({now.replace('_', ' ')})")
            elif was is not None and now != was:
                where = "never received here" if now is None else now.replace("_", " ")
                out.append(f"seal {seal} is not {was.replace('_', ' ')} ({where})")
            self.where[seal] = goes
        return out

    def day(self, day: str) -> DeckDay:
        """The figures of a venue day (a day with no step: the position carried in)."""
        found = self.days.get(day)
        if found is not None:
            return found
        earlier = [d for d in sorted(self.days) if d < day]
        carried = self.days[earlier[-1]].end if earlier else Position()
        return DeckDay(day=day, start=carried, end=carried)

    def view(self, day: str) -> dict[str, Any]:
        """The position now and the day's figures, for the screen and the status."""
        return {"position": self.position.encode(), "today": self.day(day).encode(),
                "sealed_seals": sorted(s for s, w in self.where.items() if w == "sealed"),
                "in_play_seals": sorted(s for s, w in self.where.items() if w == "in_play")}


def steps_state(steps: Iterable[DeckStep]) -> list[dict[str, Any]]:
    """The steps as plain data (the table's snapshot: the book is their replay)."""
    return [{"kind": s.kind, "decks": s.decks, "day": s.day, "by": s.by, "at": s.at,
             "seals": list(s.seals), "lot": s.lot, "source": s.source, "witness": s.witness,
             "note": s.note} for s in steps]


def load_steps(raw: object) -> list[DeckStep]:
    """`steps_state`'s data read back (ValueError naming what is wrong)."""
    if not isinstance(raw, list):
        raise ValueError("deck steps must be a list")
    out = []
    for item in raw:
        if not isinstance(item, Mapping) or item.get("kind") not in KINDS:
            raise ValueError(f"not a deck step: {str(item)[:60]}")
        decks, seals = item["decks"], item["seals"]
        if type(decks) is not int or not isinstance(seals, list):
            raise ValueError(f"not a deck step: {str(item)[:60]}")

        def opt(name: str, data: Mapping[str, Any] = item) -> str | None:
            value = data.get(name)
            return None if value is None else str(value)

        out.append(DeckStep(kind=item["kind"], decks=decks, day=str(item["day"]),
                            by=str(item["by"]), at=str(item["at"]),
                            seals=tuple(str(s) for s in seals), lot=opt("lot"),
                            source=opt("source"), witness=opt("witness"), note=opt("note")))
    return out
