"""Final bonus markers (tournament.md), and the checks on wagers and hands (check_seat, refusals).

Every expected amount is worked out by hand from the rules (in units of the Ante or of the
side-bet stake) and scaled here; nothing is taken from running the code. Paytables:
settle_helpers (built from rules.md §0, independent of the config files).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from game.errors import DuplicateCard, InvalidHand, InvalidWager
from game.poker.cards import parse_cards
from game.wagers.settle import (
    SIDE_BETS,
    WAGERS,
    SeatHand,
    SeatWagers,
    check_seat,
    settle_hand,
)
from tests.game.settle_helpers import (
    ANTE,
    MARKER,
    TABLES_A,
    by_wager,
    hand,
    main_wagers,
    one,
    two,
)

# -- Final bonus markers (tournament.md) ---------------------------------------------------------

def test_marker_win_pays_on_chips_plus_marker() -> None:
    # Example 1's seat: flush, Trips Plus 7 to 1 on R25 + R500 = R525 -> +R3,675.
    w = replace(main_wagers(1), trips_plus=ANTE, markers=frozenset({"trips_plus"}))
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", w)
    trips = by_wager(s)["trips_plus"]
    assert (trips.result, trips.stake_cents, trips.net_cents, trips.line, trips.marker) == (
        "win", ANTE, 7 * (ANTE + MARKER), "flush", True)
    assert "the marker is removed" in trips.reason
    assert s.markers_used == frozenset({"trips_plus"})


def test_marker_loss_costs_only_the_chips() -> None:
    w = replace(main_wagers(1), pocket_bonus=ANTE, markers=frozenset({"pocket_bonus"}))
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", w)
    pocket = by_wager(s)["pocket_bonus"]
    assert (pocket.result, pocket.net_cents, pocket.marker) == ("lose", -ANTE, True)
    assert "marker is used up" in pocket.reason
    assert s.markers_used == frozenset({"pocket_bonus"})


def test_marker_alone_without_chips() -> None:
    # Q♥6♠ is mixed colour 16 (6 to 1) on the R500 marker alone; Trips Plus loses (pair).
    w = replace(main_wagers(0), markers=frozenset({"sweet16", "trips_plus"}))
    s = one("2c 3c", "9c 8d 5h 4c Kd", "Qh 6s", w)
    r = by_wager(s)
    assert (r["sweet16"].result, r["sweet16"].stake_cents, r["sweet16"].net_cents) == (
        "win", 0, 6 * MARKER)
    assert (r["trips_plus"].result, r["trips_plus"].net_cents) == ("lose", 0)
    assert s.markers_used == frozenset({"sweet16", "trips_plus"})
    assert "pocket_bonus" not in r
    assert s.net_cents == -2 * ANTE + 6 * MARKER


def test_marker_value_is_a_parameter() -> None:
    w = replace(main_wagers(1), sweet16=ANTE, markers=frozenset({"sweet16"}))
    s = hand("2c 3c", "9c 8d 5h 4c Kd", ("Qh 6s", w), marker_value_cents=10_000).seats[0]
    assert by_wager(s)["sweet16"].net_cents == 6 * (ANTE + 10_000)


def test_no_marker_no_markers_used() -> None:
    s = one("Kc 4c", "3h 8c 4h 8h 4s", "Th 2h", replace(main_wagers(1), trips_plus=ANTE))
    assert s.markers_used == frozenset()
    assert not any(r.marker for r in s.results)


BAD_WAGERS = [
    (SeatWagers(), "ante"),
    (SeatWagers(ante=ANTE), "odds"),
    (SeatWagers(ante=ANTE, odds=2 * ANTE), "odds"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=4 * ANTE), "play"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=ANTE + 1), "play"),
    (SeatWagers(ante=ANTE, odds=ANTE, play=-ANTE), "play"),
    (SeatWagers(trips_plus=ANTE), "trips_plus"),
    (SeatWagers(ante=ANTE, sweet16=ANTE), "odds"),  # the Odds are missing
    (SeatWagers(sweet16=ANTE, pocket_bonus=ANTE), "pocket_bonus"),
    (SeatWagers(markers=frozenset({"pocket_bonus"})), "pocket_bonus"),
    (SeatWagers(ante=ANTE, odds=ANTE, trips_plus=-1), "trips_plus"),
    (SeatWagers(ante=-ANTE, odds=-ANTE), "ante"),
    (SeatWagers(ante=ANTE, odds=ANTE, markers=frozenset({"ante"})), "markers"),
    (SeatWagers(ante=ANTE, odds=ANTE, markers=frozenset({"jackpot"})), "markers"),
    (SeatWagers(ante=2500.0, odds=2500.0), "ante"),  # type: ignore[arg-type]
    (SeatWagers(ante=True, odds=True), "ante"),
    (SeatWagers(ante=ANTE, odds=ANTE, pocket_bonus="25"), "pocket_bonus"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("wagers", "field"), BAD_WAGERS)
def test_check_seat_refuses(wagers: SeatWagers, field: str) -> None:
    with pytest.raises(InvalidWager) as err:
        check_seat(SeatHand(seat=4, hole=two("Ah Kd"), wagers=wagers))
    assert (err.value.seat, err.value.field) == (4, field)
    assert str(err.value).startswith(f"seat 4: {field}: ")


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_check_seat_accepts(k: int) -> None:
    w = SeatWagers(ante=ANTE, odds=ANTE, play=k * ANTE, trips_plus=1, pocket_bonus=0,
                   sweet16=25_000, markers=frozenset(SIDE_BETS))
    check_seat(SeatHand(seat=1, hole=two("Ah Kd"), wagers=w))


def test_seat_wagers_amount_and_staked() -> None:
    w = SeatWagers(ante=1, odds=2, play=3, trips_plus=4, pocket_bonus=5, sweet16=6,
                   markers=frozenset({"sweet16"}))
    assert [w.amount(n) for n in WAGERS] == [1, 2, 3, 4, 5, 6]
    assert w.staked_cents == 21  # the marker is not chips
    with pytest.raises(KeyError):
        w.amount("markers")


def test_settle_hand_refuses_bad_cards_and_seats() -> None:
    w = main_wagers(1)
    with pytest.raises(DuplicateCard):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("Ah 9d", w))
    with pytest.raises(DuplicateCard):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", w), ("9d 7h", w))
    d, b = parse_cards("Ah Kd"), parse_cards("2c 3c 4c 5c 6c")
    seat = SeatHand(seat=1, hole=two("8s 9d"), wagers=w)
    with pytest.raises(InvalidHand, match="seat 1 appears twice"):
        settle_hand(dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
                    seats=[seat, replace(seat, hole=two("7s 7d"))], paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="board: expected 5 cards"):
        settle_hand(dealer=(d[0], d[1]), board=b[:4], seats=[seat],  # type: ignore[arg-type]
                    paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="dealer: expected 2"):
        settle_hand(dealer=d[:1], board=(b[0], b[1], b[2], b[3], b[4]),  # type: ignore[arg-type]
                    seats=[seat], paytables=TABLES_A)
    with pytest.raises(InvalidHand, match="seat 1: expected 2 hole cards"):
        settle_hand(dealer=(d[0], d[1]), board=(b[0], b[1], b[2], b[3], b[4]),
                    seats=[replace(seat, hole=parse_cards("8s 9d 7d"))],  # type: ignore[arg-type]
                    paytables=TABLES_A)
    with pytest.raises(InvalidWager, match="play"):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", replace(w, play=5 * ANTE)))
    with pytest.raises(InvalidWager, match="marker_value_cents"):
        hand("Ah Kd", "2c 3c 4c 5c 6c", ("8s 9d", w), marker_value_cents=0)


# -- hypothesis properties ---------------------------------------------------------------------
