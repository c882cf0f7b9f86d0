"""Settlement of one hand: every wager of every seat against the dealer, with a readable reason.

Rules: rules.md §5 (base game), §6 (Odds), §7 (side bets), §9 (edge cases), §0 (decisions);
tournament.md (Final bonus markers). Every pay comes from the `Paytables` passed in.

- The dealer "opens" with a pair or better (board included).
- A winning wager's net is the pay (the stake is returned); a loss is minus the chips staked;
  a push is 0. A side bet carrying a bonus marker plays chips + marker: a win pays on both, a
  loss costs only the chips, and the marker is used up either way (it is never chips).
- A pay that is not a whole number of cents (3 to 2 on an odd number of cents) is rounded
  down to the cent, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from game.errors import InvalidHand, InvalidWager
from game.money import format_rand
from game.paytables.lines import Pay, Paytables, hole_class, sweet16_line_name
from game.poker.cards import Card, check_distinct
from game.poker.evaluate import Category, HandValue, evaluate

__all__ = [
    "SIDE_BETS",
    "WAGERS",
    "HandSettlement",
    "Outcome",
    "Result",
    "SeatHand",
    "SeatSettlement",
    "SeatWagers",
    "WagerResult",
    "check_seat",
    "settle_hand",
]

WAGERS: Final = ("ante", "odds", "play", "trips_plus", "pocket_bonus", "sweet16")
SIDE_BETS: Final = ("trips_plus", "pocket_bonus", "sweet16")
Outcome = Literal["win", "lose", "tie", "fold"]
Result = Literal["win", "lose", "push"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatWagers:
    """A seat's wagers in cents (0 = not placed; play 0 = folded at settlement) and markers."""

    ante: int = 0
    odds: int = 0
    play: int = 0
    trips_plus: int = 0
    pocket_bonus: int = 0
    sweet16: int = 0
    markers: frozenset[str] = frozenset()

    def amount(self, wager: str) -> int:
        """The chips on one wager (a name from WAGERS)."""
        if wager not in WAGERS:
            raise KeyError(wager)
        value: int = getattr(self, wager)
        return value

    @property
    def staked_cents(self) -> int:
        """All chips on the table for this seat (markers are not chips)."""
        return sum(self.amount(w) for w in WAGERS)


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatHand:
    """One seat's hole cards and wagers."""

    seat: int
    hole: tuple[Card, Card]
    wagers: SeatWagers


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerResult:
    """How one wager settled: result, chips staked, net change and a reason a dealer can read."""

    wager: str
    result: Result
    stake_cents: int
    net_cents: int
    reason: str
    line: str | None = None
    marker: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatSettlement:
    """One seat's settlement: its hand, main-game outcome and one result per wager placed."""

    seat: int
    hand: HandValue
    outcome: Outcome
    results: tuple[WagerResult, ...]

    @property
    def net_cents(self) -> int:
        """The change of the seat's chips over the whole hand."""
        return sum(r.net_cents for r in self.results)

    @property
    def markers_used(self) -> frozenset[str]:
        """The side bets whose bonus marker was used up in this hand."""
        return frozenset(r.wager for r in self.results if r.marker)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandSettlement:
    """The settlement of a whole hand: the dealer's hand, whether it opens, and every seat."""

    dealer_hand: HandValue
    dealer_opens: bool
    seats: tuple[SeatSettlement, ...]



def check_seat(hand: SeatHand) -> None:
    """Check one seat's wagers against the game rules; raises InvalidWager(seat, field, reason).

    Ante > 0 and Odds == Ante; Play is 0 (fold) or exactly 3x, 2x or 1x the Ante; a side bet
    (chips or marker) needs Ante and Odds; amounts are non-negative whole cents; markers name
    side bets only. House limits (denomination, minimum, caps, balance) are in
    game/wagers/house_limits.py.
    """
    seat, w = hand.seat, hand.wagers
    for name in WAGERS:
        amount: object = w.amount(name)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise InvalidWager(seat, name, f"must be a whole number of cents, got {amount!r}")
        if amount < 0:
            raise InvalidWager(seat, name, f"must not be negative, got {amount}")
    for marker in sorted(w.markers, key=str):
        if marker not in SIDE_BETS:
            raise InvalidWager(
                seat, "markers",
                f"a marker rides only on a side bet ({', '.join(SIDE_BETS)}), not {marker!r}",
            )
    side_bets = [s for s in SIDE_BETS if w.amount(s) > 0 or s in w.markers]
    if w.ante == 0:
        if side_bets:
            raise InvalidWager(seat, side_bets[0], "a side bet needs the Ante and the Odds in play")
        raise InvalidWager(seat, "ante", "the Ante is required")
    if w.odds != w.ante:
        raise InvalidWager(
            seat, "odds", f"the Odds must equal the Ante ({w.ante} cents), got {w.odds}"
        )
    if w.play not in (0, 3 * w.ante, 2 * w.ante, w.ante):
        raise InvalidWager(
            seat, "play",
            f"must be exactly 3x ({3 * w.ante}), 2x ({2 * w.ante}) or 1x ({w.ante}) the Ante,"
            f" or 0 for a fold; got {w.play}",
        )


def settle_hand(
    *,
    dealer: tuple[Card, Card],
    board: tuple[Card, Card, Card, Card, Card],
    seats: Sequence[SeatHand],
    paytables: Paytables,
    marker_value_cents: int = 50_000,
) -> HandSettlement:
    """Settle every wager of every seat once, at the end of the hand (seats by seat number).

    Raises InvalidHand (wrong number of cards, a seat twice), DuplicateCard, InvalidWager.
    """
    _check_cards(dealer, board, seats)
    if isinstance(marker_value_cents, bool) or not isinstance(marker_value_cents, int) or (
        marker_value_cents <= 0
    ):
        raise InvalidWager(None, "marker_value_cents", f"must be a positive whole number of cents,"
                           f" got {marker_value_cents!r}")
    for seat in seats:
        check_seat(seat)
    dealer_hand = evaluate((*dealer, *board))
    showdown = _Showdown(
        dealer=dealer, dealer_hand=dealer_hand,
        opens=dealer_hand.category >= Category.PAIR,
        paytables=paytables, marker_value_cents=marker_value_cents,
    )
    settled = tuple(showdown.settle(s, board) for s in sorted(seats, key=lambda s: s.seat))
    return HandSettlement(dealer_hand=dealer_hand, dealer_opens=showdown.opens, seats=settled)


def _check_cards(
    dealer: Sequence[Card], board: Sequence[Card], seats: Sequence[SeatHand]
) -> None:
    if len(dealer) != 2:
        raise InvalidHand(f"dealer: expected 2 hole cards, got {len(dealer)}")
    if len(board) != 5:
        raise InvalidHand(f"board: expected 5 cards, got {len(board)}")
    numbers: set[int] = set()
    for seat in seats:
        if len(seat.hole) != 2:
            raise InvalidHand(f"seat {seat.seat}: expected 2 hole cards, got {len(seat.hole)}")
        if seat.seat in numbers:
            raise InvalidHand(f"seat {seat.seat} appears twice")
        numbers.add(seat.seat)
    check_distinct([*dealer, *board, *(c for s in seats for c in s.hole)])


@dataclass(frozen=True, slots=True, kw_only=True)
class _Showdown:
    """What every seat is settled against: the dealer's cards and hand, and the paytables."""

    dealer: tuple[Card, Card]
    dealer_hand: HandValue
    opens: bool
    paytables: Paytables
    marker_value_cents: int

    def settle(self, seat: SeatHand, board: Sequence[Card]) -> SeatSettlement:
        hand = evaluate((*seat.hole, *board))
        w = seat.wagers
        if w.play == 0:
            outcome: Outcome = "fold"
        elif hand > self.dealer_hand:
            outcome = "win"
        elif hand < self.dealer_hand:
            outcome = "lose"
        else:
            outcome = "tie"
        results = [*self._main(w, hand, outcome), *self._side_bets(seat, hand, outcome)]
        return SeatSettlement(seat=seat.seat, hand=hand, outcome=outcome, results=tuple(results))

    # -- main game: Ante, Odds, Play (rules.md §5, §6) ----------------------------------------

    def _dealer_text(self) -> str:
        d = _lower(self.dealer_hand.name)
        return f"dealer opens with {d}" if self.opens else f"dealer does not open ({d})"

    def _versus(self, hand: HandValue, outcome: Outcome) -> str:
        s = _lower(hand.name)
        verb = {"win": "beats it", "lose": "loses to it", "tie": "ties it (same five-card hand)"}
        return f"{self._dealer_text()}; seat's {s} {verb[outcome]}"

    def _main(self, w: SeatWagers, hand: HandValue, outcome: Outcome) -> list[WagerResult]:
        if outcome == "fold":
            return [
                _lose("ante", w.ante, "seat folded: Ante loses"),
                _lose("odds", w.odds, "seat folded: Odds loses"),
            ]
        vs = self._versus(hand, outcome)
        k = w.play // w.ante
        play_name = f"Play ({k}x the Ante)"
        if outcome == "tie":
            return [
                _push("ante", w.ante, f"{vs}: Ante pushes"),
                _push("odds", w.odds, f"{vs}: Odds pushes"),
                _push("play", w.play, f"{vs}: {play_name} pushes"),
            ]
        if outcome == "win":
            ante = (
                _even_money("ante", w.ante, f"{vs}: Ante")
                if self.opens
                else _push("ante", w.ante, f"{vs}: Ante pushes (the dealer does not open)")
            )
            return [ante, self._odds_win(w.odds, hand, vs),
                    _even_money("play", w.play, f"{vs}: {play_name}")]
        ante = (
            _lose("ante", w.ante, f"{vs}: Ante loses")
            if self.opens
            else _push("ante", w.ante, f"{vs}: Ante pushes (the dealer does not open)")
        )
        return [ante, self._odds_lose(w.odds, hand, vs),
                _lose("play", w.play, f"{vs}: {play_name} loses")]

    def _odds_win(self, stake: int, hand: HandValue, vs: str) -> WagerResult:
        table = self.paytables.odds_win
        hit = table.line(hand)
        if hit is None:
            return _push("odds", stake, f"{vs}: Odds pushes ({_lower(hand.category.label)}"
                                        " is not on the winning Odds table)")
        category, pay = hit
        return _paid("odds", chips=stake, extra=0, pay=pay, line=category.key,
                     reason=f"{vs}: Odds pays {pay} (winning Odds table, {category.key} line)")

    def _odds_lose(self, stake: int, hand: HandValue, vs: str) -> WagerResult:
        if not self.opens:
            return _lose("odds", stake, f"{vs}: Odds loses (no bad beat when the dealer"
                                        " does not open)")
        hit = self.paytables.odds_lose.line(hand)
        if hit is None:
            return _lose("odds", stake, f"{vs}: Odds loses ({_lower(hand.category.label)}"
                                        " is not on the bad-beat table)")
        category, pay = hit
        return _paid("odds", chips=stake, extra=0, pay=pay, line=category.key,
                     reason=f"bad beat: {vs}: Odds pays {pay}"
                            f" (bad-beat table, {category.key} line)")

    # -- side bets (rules.md §7), settled for folded seats too (§0 item 3) -------------------

    def _side_bets(self, seat: SeatHand, hand: HandValue, outcome: Outcome) -> list[WagerResult]:
        w = seat.wagers
        folded = "seat folded, side bets still settle; " if outcome == "fold" else ""
        results: list[WagerResult] = []
        for name in SIDE_BETS:
            chips, marker = w.amount(name), name in w.markers
            if chips == 0 and not marker:
                continue
            extra = self.marker_value_cents if marker else 0
            if name == "trips_plus":
                results.append(self._trips_plus(chips, extra, hand, folded))
            elif name == "pocket_bonus":
                results.append(self._pocket_bonus(chips, extra, seat.hole, folded))
            else:
                results.append(self._sweet16(chips, extra, seat.hole, folded))
        return results

    def _trips_plus(self, chips: int, extra: int, hand: HandValue, folded: str) -> WagerResult:
        text = f"{folded}seat's own hand is {_lower(hand.name)}"
        hit = self.paytables.trips_plus.line(hand)
        if hit is None:
            return _side_lose("trips_plus", chips, extra, f"{text}: Trips Plus loses"
                              f" ({_lower(hand.category.label)} is not on the Trips Plus table)")
        category, pay = hit
        return _paid("trips_plus", chips=chips, extra=extra, pay=pay, line=category.key,
                     reason=f"{text}: Trips Plus pays {pay} ({category.key} line)")

    def _pocket_bonus(
        self, chips: int, extra: int, hole: tuple[Card, Card], folded: str
    ) -> WagerResult:
        text = f"{folded}hole cards {_cards(hole)} ({hole_class(*hole)})"
        line = self.paytables.pocket_line(hole, self.dealer)
        if line is None:
            return _side_lose("pocket_bonus", chips, extra,
                              f"{text} hit no Pocket Bonus line: Pocket Bonus loses")
        if line.dealer is not None:
            text += f" with the dealer's {_cards(self.dealer)} ({hole_class(*self.dealer)})"
        return _paid("pocket_bonus", chips=chips, extra=extra, pay=line.pays, line=line.name,
                     reason=f"{text} hit the Pocket Bonus line {line.name!r}: pays {line.pays}")

    def _sweet16(
        self, chips: int, extra: int, hole: tuple[Card, Card], folded: str
    ) -> WagerResult:
        total = sum(_blackjack_value(c) for c in hole)
        text = f"{folded}hole cards {_cards(hole)} total {total}"
        name = sweet16_line_name(*hole)
        if name is None:
            return _side_lose("sweet16", chips, extra, f"{text}, not 16: Sweet 16 loses")
        hit = self.paytables.sweet16.line(hole)
        if hit is None:
            return _side_lose("sweet16", chips, extra, f"{text} ({_line_label(name)}), a line"
                              " not on the Sweet 16 table: Sweet 16 loses")
        _, pay = hit
        return _paid("sweet16", chips=chips, extra=extra, pay=pay, line=name,
                     reason=f"{text} ({_line_label(name)}): Sweet 16 pays {pay} ({name} line)")


# -- building results --------------------------------------------------------------------------

def _push(wager: str, stake: int, reason: str) -> WagerResult:
    return WagerResult(wager=wager, result="push", stake_cents=stake, net_cents=0,
                       reason=f"{reason}: stake {format_rand(stake)} returned")


def _lose(wager: str, stake: int, reason: str) -> WagerResult:
    return WagerResult(wager=wager, result="lose", stake_cents=stake, net_cents=-stake,
                       reason=f"{reason}: {format_rand(-stake)}")


def _even_money(wager: str, stake: int, reason: str) -> WagerResult:
    return WagerResult(wager=wager, result="win", stake_cents=stake, net_cents=stake,
                       reason=f"{reason} wins 1 to 1: +{format_rand(stake)}")


def _side_lose(wager: str, chips: int, extra: int, reason: str) -> WagerResult:
    if extra == 0:
        return _lose(wager, chips, reason)
    return WagerResult(
        wager=wager, result="lose", stake_cents=chips, net_cents=-chips, marker=True,
        reason=f"{reason}: {format_rand(-chips)} in chips; the {format_rand(extra)} bonus marker"
               " is used up (a marker is never chips)",
    )


def _paid(wager: str, *, chips: int, extra: int, pay: Pay, line: str, reason: str) -> WagerResult:
    """A winning wager: net = the pay on chips + marker, rounded down to the cent if need be."""
    played = chips + extra
    cents, remainder = divmod(played * pay.to_win, pay.per)
    on = (
        f"{format_rand(chips)} in chips + {format_rand(extra)} bonus marker = {format_rand(played)}"
        if extra else format_rand(played)
    )
    text = f"{reason} on {on}: +{format_rand(cents)}"
    if remainder:
        text += (f" (exact pay {cents} {remainder}/{pay.per} cents, rounded down to"
                 f" {cents} cents)")
    if extra:
        text += "; chips returned, the marker is removed"
    return WagerResult(wager=wager, result="win", stake_cents=chips, net_cents=cents,
                       reason=text, line=line, marker=extra > 0)


def _lower(name: str) -> str:
    return name[:1].lower() + name[1:]


def _cards(cards: Sequence[Card]) -> str:
    return " ".join(str(c) for c in cards)


def _line_label(name: str) -> str:
    return "Sweet 16" if name == "sweet_16" else name.replace("_", " ")


def _blackjack_value(card: Card) -> int:
    rank = card.rank + 2  # 2..14
    return 11 if rank == 14 else min(rank, 10)
