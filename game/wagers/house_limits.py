"""House limits on wagers: denomination, table limits, side-bet cap, markers, affordability.

Rules: tournament.md "Money" and "Final Bonus Bet markers", rules.md §0 items 7-9. The game
rules (Ante == Odds, Play 3x/2x/1x, side bets need the main bets) are checked here too, at the
wagers phase, so one call tells a table whether a seat's opening wagers can be accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from game.errors import ConfigError, InvalidWager
from game.money import format_rand
from game.wagers.settle import SIDE_BETS, WAGERS, SeatWagers

__all__ = ["PLAY_MULTIPLES", "HouseRules", "check_play", "check_wagers", "least_stake_cents"]

PLAY_MULTIPLES = (3, 2, 1)
"""Play is exactly 3x the Ante preflop, 2x on the flop, 1x at the river (rules.md §0 item 7)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HouseRules:
    """The house limits in force at a table (all amounts in cents)."""

    denomination_cents: int = 2_500          # every wager a multiple of R25
    min_ante_cents: int = 2_500              # Ante + Odds >= R50
    max_ante_cents: int = 100_000            # table maximum on the main bets (setting)
    side_bet_max_cents: int = 25_000         # chips on one side bet
    marker_value_cents: int = 50_000         # a Final bonus marker
    markers_per_entry: int = 0               # 3 in the Final
    side_bets_need_main: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "side_bets_need_main":
                if value is not True:
                    raise ConfigError(
                        "HouseRules", f.name,
                        "only true is supported: settlement needs Ante and Odds in play"
                        " for a side bet (rules.md §0 item 8)",
                    )
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(
                    "HouseRules", f.name, f"must be a whole number >= 0, got {value!r}"
                )
        unit = self.denomination_cents
        if unit <= 0:
            raise ConfigError("HouseRules", "denomination_cents", "must be positive")
        for name in ("min_ante_cents", "max_ante_cents", "side_bet_max_cents"):
            value = getattr(self, name)
            if value % unit:
                raise ConfigError(
                    "HouseRules", name,
                    f"{format_rand(value)} is not a multiple of the denomination"
                    f" {format_rand(unit)}",
                )
        if self.min_ante_cents <= 0:
            raise ConfigError("HouseRules", "min_ante_cents", "must be positive")
        if self.max_ante_cents < self.min_ante_cents:
            raise ConfigError("HouseRules", "max_ante_cents", "is below min_ante_cents")


def least_stake_cents(rules: HouseRules) -> int:
    """The fewest chips that can play a hand: minimum Ante + Odds + 1x Play (rules.md §0 item 9)."""
    return 3 * rules.min_ante_cents


def check_wagers(
    *, seat: int, wagers: SeatWagers, balance_cents: int, markers_left: int, rules: HouseRules
) -> None:
    """Check a seat's opening wagers against game rules and house limits; raises InvalidWager.

    Checked in this order: amounts are whole cents >= 0; no Play yet; markers name side bets and
    are in play and in hand; Ante > 0 and Odds == Ante (unless only side bets are allowed);
    denomination; Ante limits; side-bet cap; affordability (Ante + Odds + side-bet chips + a 1x
    Play must be covered by the balance).
    """
    for name in WAGERS:
        value = getattr(wagers, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidWager(seat, name, f"must be whole cents, got {value!r}")
        if value < 0:
            raise InvalidWager(seat, name, f"cannot be negative ({format_rand(value)})")
    if wagers.play:
        raise InvalidWager(
            seat, "play", "no Play bet with the opening wagers (Play follows the deal)"
        )
    _check_markers(seat, wagers, markers_left, rules)

    ante, odds = wagers.ante, wagers.odds
    side_bets = [w for w in SIDE_BETS if wagers.amount(w) or w in wagers.markers]
    if ante == 0 and odds == 0:
        if not side_bets:
            raise InvalidWager(seat, "ante", "no wager placed")
        if rules.side_bets_need_main:
            raise InvalidWager(seat, side_bets[0], "a side bet needs an Ante and Odds in play")
    elif ante == 0:
        raise InvalidWager(seat, "ante", "an Odds bet needs an equal Ante")
    elif odds != ante:
        raise InvalidWager(
            seat, "odds", f"must equal the Ante ({format_rand(odds)} against {format_rand(ante)})"
        )

    unit = rules.denomination_cents
    for name in WAGERS:
        value = wagers.amount(name)
        if value % unit:
            raise InvalidWager(
                seat, name,
                f"{format_rand(value)} is not a multiple of the denomination {format_rand(unit)}",
            )
    if ante:
        if ante < rules.min_ante_cents:
            raise InvalidWager(
                seat, "ante",
                f"{format_rand(ante)} is below the minimum Ante {format_rand(rules.min_ante_cents)}"
                f" (Ante + Odds at least {format_rand(2 * rules.min_ante_cents)})",
            )
        if ante > rules.max_ante_cents:
            raise InvalidWager(
                seat, "ante",
                f"{format_rand(ante)} is above the table maximum"
                f" {format_rand(rules.max_ante_cents)}",
            )
    for name in SIDE_BETS:
        value = wagers.amount(name)
        if value > rules.side_bet_max_cents:
            raise InvalidWager(
                seat, name,
                f"{format_rand(value)} in chips is above the side-bet maximum"
                f" {format_rand(rules.side_bet_max_cents)}",
            )

    sides = sum(wagers.amount(w) for w in SIDE_BETS)
    needed = ante + odds + sides + ante
    if needed > balance_cents:
        raise InvalidWager(
            seat, "total",
            f"Ante {format_rand(ante)} + Odds {format_rand(odds)} + side bets {format_rand(sides)}"
            f" + a 1x Play {format_rand(ante)} = {format_rand(needed)} is more than the"
            f" {format_rand(balance_cents)} the entry holds",
        )


def _check_markers(seat: int, wagers: SeatWagers, markers_left: int, rules: HouseRules) -> None:
    markers = wagers.markers
    if not isinstance(markers, frozenset):
        raise InvalidWager(seat, "markers", f"must be a set of side-bet names, got {markers!r}")
    if not markers:
        return
    for name in sorted(markers):
        if name not in SIDE_BETS:
            raise InvalidWager(
                seat, "markers",
                f"a bonus marker rides only on a side bet ({', '.join(SIDE_BETS)}), not {name!r}",
            )
    if rules.markers_per_entry == 0:
        raise InvalidWager(seat, "markers", "bonus markers are not in play in this stage")
    if len(markers) > markers_left:
        raise InvalidWager(
            seat, "markers",
            f"{len(markers)} bonus marker(s) placed but the entry has {markers_left} left",
        )


def check_play(*, seat: int, ante_cents: int, multiple: int, available_cents: int) -> None:
    """Check that a Play of `multiple` x Ante is allowed and affordable from `available_cents`.

    `available_cents` is the balance minus the chips already staked this hand.
    """
    if isinstance(multiple, bool) or multiple not in PLAY_MULTIPLES:
        raise InvalidWager(seat, "play", f"must be 3x, 2x or 1x the Ante, not {multiple!r}x")
    if isinstance(ante_cents, bool) or not isinstance(ante_cents, int) or ante_cents <= 0:
        raise InvalidWager(seat, "play", f"needs an Ante in play (Ante {ante_cents!r})")
    play = multiple * ante_cents
    if play > available_cents:
        raise InvalidWager(
            seat, "play",
            f"a {multiple}x Play of {format_rand(play)} is more than the"
            f" {format_rand(max(available_cents, 0))} the entry has left",
        )
