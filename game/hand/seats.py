"""One seat's part of a hand, as one small record per seat, and the checks on its spots.

`SeatState` holds what the machine knows of a seat (its start, the last snapshot of its
spots, the wagers locked at no more bets, its Play, whether it folded); the helpers check a
snapshot and describe how the spots differ from the locked wagers.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from game.errors import InvalidWager
from game.hand.events import PlayMade, SeatStart
from game.money import format_rand
from game.wagers.settle import SIDE_BETS, WAGERS, SeatWagers

__all__ = [
    "NO_WAGERS",
    "WAGER_LABELS",
    "SeatState",
    "changed_fields",
    "describe_change",
    "is_empty",
    "verify_snapshot",
]

NO_WAGERS: Final = SeatWagers()
WAGER_LABELS: Final = {  # what people read for each wager field
    "ante": "Ante",
    "odds": "Odds",
    "play": "Play",
    "trips_plus": "Trips Plus",
    "pocket_bonus": "Pocket Bonus",
    "sweet16": "Sweet 16",
    "markers": "markers",
}


@dataclass(slots=True, kw_only=True)
class SeatState:
    """A seat at the hand: its start and what the machine has recorded for it so far."""

    start: SeatStart
    seen: SeatWagers | None = None  # the last snapshot of its spots (None: none seen)
    locked: SeatWagers | None = None  # locked at no more bets (None: not in the hand)
    play: PlayMade | None = None
    folded: bool = False

    @property
    def seat(self) -> int:
        """The seat number."""
        return self.start.seat

    @property
    def spots(self) -> SeatWagers:
        """What lies on the spots as last seen (no wagers when no snapshot came)."""
        return NO_WAGERS if self.seen is None else self.seen

    @property
    def locked_play_cents(self) -> int | None:
        """The Play made, in cents, or None when no Play is locked."""
        return None if self.play is None else self.play.amount_cents


def is_empty(w: SeatWagers) -> bool:
    """True when no chip and no marker lies on the spots."""
    return w.staked_cents == 0 and not w.markers


def verify_snapshot(seat: int, wagers: SeatWagers) -> None:
    """Refuse a snapshot that is not whole cents >= 0 on each spot, or markers off side bets."""
    if not isinstance(wagers, SeatWagers):
        raise InvalidWager(seat, "wagers", "a snapshot is a SeatWagers of amounts in cents")
    for f in fields(SeatWagers):
        if f.name == "markers":
            continue
        value = getattr(wagers, f.name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidWager(seat, f.name, f"{value!r} is not a whole number of cents >= 0")
    if not isinstance(wagers.markers, frozenset) or not wagers.markers <= set(SIDE_BETS):
        raise InvalidWager(
            seat, "markers", f"markers go on side bets only ({', '.join(SIDE_BETS)})"
        )


def changed_fields(seen: SeatWagers, locked: SeatWagers, play: int | None) -> list[str]:
    """Spots that differ from the locked wagers (Play only when it is locked, ``play``)."""
    out = [n for n in WAGERS if n != "play" and seen.amount(n) != locked.amount(n)]
    if play is not None and seen.play != play:
        out.append("play")
    if seen.markers != locked.markers:
        out.append("markers")
    return out


def describe_change(
    seen: SeatWagers, locked: SeatWagers, play: int | None, names: list[str]
) -> str:
    """The changed spots as "Ante R25.00 -> R50.00; markers none -> trips_plus"."""
    parts = []
    for name in names:
        if name == "markers":
            was = ", ".join(sorted(locked.markers)) or "none"
            now = ", ".join(sorted(seen.markers)) or "none"
            parts.append(f"markers {was} -> {now}")
        else:
            was_cents = play if name == "play" and play is not None else locked.amount(name)
            parts.append(
                f"{WAGER_LABELS[name]} {format_rand(was_cents)} -> {format_rand(seen.amount(name))}"
            )
    return "; ".join(parts)
