"""The fault switches of a table rehearsal (`showdown simulate table`): what each fault is,
how it is written, when it fires, and the alert a real table raises for it.

A fault is written ``DEVICE.KIND`` followed by when: ``@handN`` (the run's N-th hand; shoe
faults also ``@handN.cardK``, the hand's K-th card, default the 3rd) or ``=P`` (a probability:
per hand for an event, per frame for the line faults ``shoe.corrupt`` and ``shoe.drop``), e.g.
``shoe.corrupt=0.05``, ``rfid.unplug@hand3``, ``shoe.stall@hand2.card5``. The probabilities
draw from a generator of their own seeded by the run's seed, so a seed replays the faults.
docs/simulate-table.md describes each fault, its alert and how the virtual staff put it right.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_CARD", "FAULTS", "FaultKind", "FaultSchedule", "FaultSpec", "parse_fault"]

DEFAULT_CARD: Final = 3  # a shoe fault at a hand strikes before its 3rd card (a hole card)


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One fault switch: what it does, the alert kinds the table raises for it (``device``:
    a device state message rather than an alert), and whether one may pass unseen."""

    name: str
    does: str
    alerts: tuple[str, ...]  # each must be raised for it
    also: tuple[str, ...] = ()  # may come with it
    line: bool = False  # =P is a per-frame probability over the whole run


FAULTS: Final[dict[str, FaultKind]] = {f.name: f for f in (
    FaultKind("shoe.corrupt", "a frame from the shoe has one byte damaged",
              ("device_bad_frame",), also=("device_recovered",), line=True),
    FaultKind("shoe.drop", "a frame from the shoe is lost on the line", (),
              also=("device_recovered",), line=True),
    FaultKind("shoe.stall", "the shoe's firmware hangs (silent) until the driver gives up on it",
              ("device_stalled",)),
    FaultKind("shoe.unplug", "the shoe's cable is pulled, and plugged back a second later",
              ("device_disconnected",)),
    FaultKind("shoe.jam", "the shoe jams as a card is drawn", ("device:jam",)),
    FaultKind("shoe.power", "the shoe loses power with a card in flight: that card is lost",
              ("device_session_changed",), also=("device_disconnected",)),
    FaultKind("rfid.unplug", "the chip reader's USB cable is pulled, and plugged back",
              ("device_disconnected",)),
    FaultKind("rfid.stall", "the chip reader's firmware hangs (silent) for a while",
              ("device_stalled",)),
    FaultKind("rfid.unknown_chip", "a chip the registry does not know lies on a wager",
              ("unknown_chip",)),
    FaultKind("rfid.cloned_chip", "a copy of a chip on one spot lies on another spot",
              ("chip_clone",)),
    FaultKind("rfid.foreign_chip", "a chip of another chip set lies on a wager",
              ("other_chip_set",)),
    FaultKind("rfid.pooled_chip", "a chip issued to one seat's entry is played on another"
              " seat's spot (rule 19: pooling)", ("chip_pooling",)),
    FaultKind("payout.overpay", "the dealer pays a winning spot one chip too many",
              ("payout_overpaid",)),
    FaultKind("payout.underpay", "the dealer forgets to pay a winning spot",
              ("payout_underpaid",)),
    FaultKind("deck.unshuffled", "the hand is dealt from a deck in new-deck order",
              ("deck_suspect",), also=("deck_review",)),
)}
_WRITTEN = re.compile(r"(?P<name>[a-z_]+\.[a-z_]+)(?:=(?P<p>[^@]+))?"
                      r"(?:@hand(?P<hand>\d+)(?:\.card(?P<card>\d+))?)?")


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One fault as written: at a hand (and card), or with a probability."""

    kind: FaultKind
    hand: int | None = None
    card: int | None = None
    probability: float | None = None
    written: str = ""  # how it was asked for, when not in this form (e.g. --deck factory)

    def __str__(self) -> str:
        if self.written:
            return self.written
        if self.probability is not None:
            return f"{self.kind.name}={self.probability:g}"
        card = f".card{self.card}" if self.card is not None else ""
        return f"{self.kind.name}@hand{self.hand}{card}"


def parse_fault(text: str) -> FaultSpec:
    """Read one written fault; ValueError saying what is wrong with it."""
    match = _WRITTEN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"fault {text!r}: write DEVICE.KIND@handN or DEVICE.KIND=P, e.g."
                         " shoe.corrupt=0.05 or rfid.unplug@hand3")
    kind = FAULTS.get(match["name"])
    if kind is None:
        raise ValueError(f"fault {text!r}: unknown fault {match['name']!r} (known: "
                         f"{', '.join(FAULTS)})")
    if (match["p"] is None) == (match["hand"] is None):
        raise ValueError(f"fault {text!r}: give either =P (a probability) or @handN")
    if match["p"] is not None:
        try:
            probability = float(match["p"])
        except ValueError:
            raise ValueError(f"fault {text!r}: {match['p']!r} is not a probability") from None
        if not 0.0 < probability <= 1.0:
            raise ValueError(f"fault {text!r}: a probability is within 0 (excluded) and 1")
        return FaultSpec(kind, probability=probability)
    hand = int(match["hand"])
    if hand < 1:
        raise ValueError(f"fault {text!r}: hands count from 1")
    card = None if match["card"] is None else int(match["card"])
    if card is not None and not kind.name.startswith("shoe."):
        raise ValueError(f"fault {text!r}: only shoe faults strike at a card")
    if card is not None and card < 1:
        raise ValueError(f"fault {text!r}: cards count from 1")
    if kind.name.startswith("shoe.") and card is None:
        card = DEFAULT_CARD
    return FaultSpec(kind, hand=hand, card=card)


class FaultSchedule:
    """Which faults strike at which hand: those written @handN, and the per-hand draws of
    those written =P (from the run's seed, never the cards' or players' generators)."""

    def __init__(self, specs: Iterable[FaultSpec], *, seed: int) -> None:
        self.specs = list(specs)
        self.rng = random.Random(f"{seed}:table-faults")

    def line_faults(self) -> list[FaultSpec]:
        """Per-frame probabilities that hold for the whole run."""
        return [s for s in self.specs if s.kind.line and s.probability is not None]

    def for_hand(self, hand: int) -> list[FaultSpec]:
        """The faults that strike at this hand (each drawn once a hand, in written order)."""
        out: list[FaultSpec] = []
        for spec in self.specs:
            if spec.hand == hand:
                out.append(spec)
            elif spec.probability is not None and not spec.kind.line \
                    and self.rng.random() < spec.probability:
                card = DEFAULT_CARD if spec.kind.name.startswith("shoe.") else None
                out.append(FaultSpec(spec.kind, hand=hand, card=card))
        return out

    @classmethod
    def parse(cls, written: Sequence[str], *, seed: int) -> FaultSchedule:
        """A schedule from written faults; ValueError naming the first wrong one."""
        return cls([parse_fault(w) for w in written], seed=seed)
