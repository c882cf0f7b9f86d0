"""Tournament entries: a chip ledger per entry, hands counted per entry, score at the stage's end.

Rules: tournament.md "Stages" and "Final Bonus Bet markers"; promotion rules [14, 15, 34, 43,
46, 50]; rules.md §0 item 9 (an entry that cannot cover the minimum ends). An entry is a frozen
value: `apply` returns the entry after one more hand and never changes the original, so an
entry's state is exactly the replay of its settlements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

from game.errors import ConfigError, IllegalAction, InvalidWager
from game.money import format_rand
from game.wagers.house_limits import HouseRules, least_stake_cents
from game.wagers.settle import SeatSettlement

__all__ = [
    "UNUSED_MARKER_RULES",
    "Entry",
    "EntryStatus",
    "Stage",
    "StageRules",
    "UnusedMarkers",
]

UnusedMarkers = Literal["forfeit", "count_at_value"]
UNUSED_MARKER_RULES: tuple[UnusedMarkers, ...] = ("forfeit", "count_at_value")


class Stage(StrEnum):
    """The three stages of the tournament, in order."""

    QUALIFYING = "qualifying"
    SEMI_FINAL = "semi_final"
    FINAL = "final"


class EntryStatus(StrEnum):
    """Where an entry stands: still playing, finished its hands, or ended early (out of chips)."""

    ACTIVE = "active"
    FINISHED = "finished"
    ENDED_EARLY = "ended_early"


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRules:
    """What an entry in one stage needs: hands to play, starting chips, markers and house limits."""

    stage: Stage
    hands: int
    starting_chips_cents: int
    markers: int
    house: HouseRules
    unused_markers: UnusedMarkers = "forfeit"

    def __post_init__(self) -> None:
        source = f"stage {self.stage}"
        for name in ("hands", "starting_chips_cents", "markers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(source, name, f"must be a whole number >= 0, got {value!r}")
        if self.hands < 1:
            raise ConfigError(source, "hands", "an entry must play at least one hand")
        if self.markers != self.house.markers_per_entry:
            raise ConfigError(
                source, "markers",
                f"{self.markers} markers per entry but the house rules say"
                f" {self.house.markers_per_entry}",
            )
        if self.unused_markers not in UNUSED_MARKER_RULES:
            raise ConfigError(
                source, "unused_markers", f"must be one of {', '.join(UNUSED_MARKER_RULES)}"
            )
        if self.starting_chips_cents < least_stake_cents(self.house):
            raise ConfigError(
                source, "starting_chips_cents",
                f"{format_rand(self.starting_chips_cents)} cannot cover one hand at the minimum"
                f" ({format_rand(least_stake_cents(self.house))})",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One entry's chip ledger in one stage; `nets_cents` holds each hand's net, in order.

    Invariants: balance_cents == rules.starting_chips_cents + sum(nets_cents) >= 0;
    hands_played == len(nets_cents); score_cents is set exactly when the entry is not active.
    """

    entry_id: str
    rules: StageRules
    balance_cents: int
    markers_left: int
    status: EntryStatus = EntryStatus.ACTIVE
    nets_cents: tuple[int, ...] = ()
    score_cents: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.entry_id, str) or not self.entry_id:
            raise ValueError("an entry needs a non-empty entry_id")
        if self.balance_cents != self.rules.starting_chips_cents + sum(self.nets_cents):
            raise ValueError(
                f"entry {self.entry_id}: balance {format_rand(self.balance_cents)} is not the"
                " starting chips plus the hands' nets"
            )
        if self.balance_cents < 0:
            raise ValueError(f"entry {self.entry_id}: negative balance")
        if not 0 <= self.markers_left <= self.rules.markers:
            raise ValueError(f"entry {self.entry_id}: {self.markers_left} markers left")
        if self.hands_played > self.rules.hands:
            raise ValueError(f"entry {self.entry_id}: more hands than the stage has")
        if (self.score_cents is None) != (self.status is EntryStatus.ACTIVE):
            raise ValueError(f"entry {self.entry_id}: a score exactly when the entry has ended")

    @classmethod
    def start(cls, *, entry_id: str, rules: StageRules) -> Entry:
        """A new entry in a stage: the stage's starting chips and markers, no hands played."""
        return cls(
            entry_id=entry_id,
            rules=rules,
            balance_cents=rules.starting_chips_cents,
            markers_left=rules.markers,
        )

    @property
    def stage(self) -> Stage:
        """The stage this entry plays in."""
        return self.rules.stage

    @property
    def hands_played(self) -> int:
        """Hands settled for this entry (counted per entry, not per table round)."""
        return len(self.nets_cents)

    @property
    def hands_required(self) -> int:
        """Hands the stage requires for a score."""
        return self.rules.hands

    @property
    def hands_left(self) -> int:
        """Hands still to play (0 once the entry has ended)."""
        if self.status is not EntryStatus.ACTIVE:
            return 0
        return self.rules.hands - self.hands_played

    @property
    def is_active(self) -> bool:
        """Whether the entry can still take a seat for a hand."""
        return self.status is EntryStatus.ACTIVE

    @property
    def markers_forfeited(self) -> int:
        """Markers left unused once the entry has ended (0 while it is active)."""
        return 0 if self.is_active else self.markers_left

    def apply(self, settlement: SeatSettlement) -> Entry:
        """The entry after one more settled hand (this entry is unchanged).

        Moves the balance by the settlement's net, counts the hand, spends the markers used, and
        ends the entry after its last hand or when it can no longer cover the minimum.
        Raises IllegalAction for an entry that has ended, InvalidWager for a settlement that the
        wager checks could not have allowed (more markers than left, more chips staked than held).
        """
        seat = settlement.seat
        if not self.is_active:
            raise IllegalAction(
                f"entry {self.entry_id} has {self.status.value.replace('_', ' ')}"
                f" (score {format_rand(self.score_cents or 0)}): it cannot play another hand"
            )
        used = settlement.markers_used
        if len(used) > self.markers_left:
            raise InvalidWager(
                seat, "markers",
                f"entry {self.entry_id} used {len(used)} bonus marker(s) with"
                f" {self.markers_left} left",
            )
        staked = sum(r.stake_cents for r in settlement.results)
        if staked > self.balance_cents:
            raise InvalidWager(
                seat, "total",
                f"entry {self.entry_id} staked {format_rand(staked)} holding only"
                f" {format_rand(self.balance_cents)}",
            )
        for r in settlement.results:
            if r.net_cents < -r.stake_cents:
                raise InvalidWager(
                    seat, r.wager,
                    f"net {format_rand(r.net_cents)} loses more than the"
                    f" {format_rand(r.stake_cents)} staked",
                )
        net = settlement.net_cents
        balance = self.balance_cents + net
        if balance < 0:  # unreachable when the checks above hold; kept as the ledger's guard
            raise InvalidWager(seat, "total", f"entry {self.entry_id} would go below zero")
        after = replace(
            self,
            balance_cents=balance,
            markers_left=self.markers_left - len(used),
            nets_cents=(*self.nets_cents, net),
        )
        if after.hands_played == self.rules.hands:
            return after._ended(EntryStatus.FINISHED)
        if balance < least_stake_cents(self.rules.house):
            return after._ended(EntryStatus.ENDED_EARLY)
        return after

    def _ended(self, status: EntryStatus) -> Entry:
        score = self.balance_cents
        if self.rules.unused_markers == "count_at_value":
            score += self.markers_left * self.rules.house.marker_value_cents
        return replace(self, status=status, score_cents=score)
