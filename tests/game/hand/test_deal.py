"""The deal sequence as data: targets in shoe order, and the config format with its refusals."""

from __future__ import annotations

import tomllib

import pytest

from game.errors import ConfigError, IllegalAction
from game.hand.deal import (
    DEFAULT_DEAL,
    UTH_DEAL,
    BoardGroup,
    DealSequence,
    Target,
    parse_deal_sequence,
    street_of_board,
)


def seat(n: int, i: int) -> Target:
    return Target(kind="seat", index=i, seat=n)


def dealer(i: int) -> Target:
    return Target(kind="dealer", index=i)


def burn(i: int) -> Target:
    return Target(kind="burn", index=i)


def board(i: int) -> Target:
    return Target(kind="board", index=i)


def test_default_is_rules_section_0_item_5() -> None:
    # 2 passes, seats in order (active only), dealer last; burn 1, flop 3, burn 1, turn+river 2.
    expected = (
        seat(1, 0), seat(3, 0), seat(5, 0), dealer(0),
        seat(1, 1), seat(3, 1), seat(5, 1), dealer(1),
        burn(0), board(0), board(1), board(2),
        burn(1), board(3), board(4),
    )
    assert DEFAULT_DEAL.targets([1, 3, 5]) == expected
    assert not DEFAULT_DEAL.face_down


def test_default_card_counts_match_rules_4_1() -> None:
    # rules.md §4.1: 2 x 6 + 2 + 5 = 19 cards, plus the burns (two in §0 item 5).
    assert len(DEFAULT_DEAL.targets([1, 2, 3, 4, 5, 6])) == 19 + 2
    groups = (BoardGroup(burn=1, cards=3), BoardGroup(burn=1, cards=1), BoardGroup(burn=1, cards=1))
    three_burns = DealSequence(board=groups)
    assert len(three_burns.targets([1, 2, 3, 4, 5, 6])) == 22
    no_burns = DealSequence(board=(BoardGroup(burn=0, cards=3), BoardGroup(burn=0, cards=2)))
    assert len(no_burns.targets([1, 2, 3, 4, 5, 6])) == 19


def test_uth_style_reads_five_board_cards_after_the_holes() -> None:
    assert UTH_DEAL.face_down
    assert UTH_DEAL.targets([2]) == (
        seat(2, 0), dealer(0), seat(2, 1), dealer(1),
        board(0), board(1), board(2), board(3), board(4),
    )


def test_packets_and_dealer_first() -> None:
    seq = DealSequence(hole="packets", dealer="first")
    assert seq.targets([4, 6])[:6] == (
        dealer(0), dealer(1), seat(4, 0), seat(4, 1), seat(6, 0), seat(6, 1),
    )


def test_three_burns_sequence_order() -> None:
    seq = parse_deal_sequence(
        {"board": [{"burn": 1, "cards": 3}, {"burn": 1, "cards": 1}, {"burn": 1, "cards": 1}]}
    )
    assert seq.targets([1])[4:] == (
        burn(0), board(0), board(1), board(2), burn(1), board(3), burn(2), board(4),
    )


def test_parse_from_toml_text() -> None:
    text = """
    [deal]
    hole = "passes"
    dealer = "last"
    board = [{burn = 1, cards = 3}, {burn = 1, cards = 2}]
    """
    assert parse_deal_sequence(tomllib.loads(text)["deal"]) == DEFAULT_DEAL
    assert parse_deal_sequence({}) == DEFAULT_DEAL
    assert parse_deal_sequence({"board": [{"cards": 5}]}) == UTH_DEAL


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"holes": "passes"}, "holes"),
        ({"hole": "singles"}, "hole"),
        ({"dealer": "middle"}, "dealer"),
        ({"board": "3,2"}, "board"),
        ({"board": []}, "board"),
        ({"board": [3, 2]}, "board[0]"),
        ({"board": [{"burn": 1, "cards": 3}, {"burn": 1}]}, "board[1].cards"),
        ({"board": [{"burn": 1, "cards": 3, "face": "up"}, {"cards": 2}]}, "board[0].face"),
        ({"board": [{"burn": -1, "cards": 3}, {"cards": 2}]}, "board[0].burn"),
        ({"board": [{"burn": 4, "cards": 3}, {"cards": 2}]}, "board[0].burn"),
        ({"board": [{"burn": True, "cards": 3}, {"cards": 2}]}, "board[0].burn"),
        ({"board": [{"burn": 1, "cards": 3.0}, {"cards": 2}]}, "board[0].cards"),
        ({"board": [{"cards": 0}, {"cards": 5}]}, "board[0].cards"),
        ({"board": [{"cards": 3}, {"cards": 3}]}, "board"),
        ({"board": [{"cards": 4}]}, "board"),
        ({"board": [{"cards": 2}, {"cards": 3}]}, "board"),
        ({"board": [{"cards": 4}, {"cards": 1}]}, "board"),
    ],
)
def test_parse_refuses_off_format(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_deal_sequence(data, source="table.toml")
    assert err.value.source == "table.toml"
    assert err.value.key == key


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(ConfigError):
        DealSequence(board=(BoardGroup(burn=0, cards=2), BoardGroup(burn=0, cards=3)))


@pytest.mark.parametrize("seats", [[0], [7], [3, 1], [2, 2], [True]])
def test_targets_refuse_bad_seat_lists(seats: list[int]) -> None:
    with pytest.raises(IllegalAction):
        DEFAULT_DEAL.targets(seats)


def test_target_names_and_streets() -> None:
    assert str(seat(3, 1)) == "seat 3 hole card 2"
    assert str(dealer(0)) == "dealer hole card 1"
    assert str(burn(1)) == "burn card 2"
    assert [str(board(i)) for i in range(5)] == [
        "flop card 1", "flop card 2", "flop card 3", "turn", "river",
    ]
    assert [street_of_board(i) for i in range(5)] == ["flop"] * 3 + ["turn_river"] * 2
    assert "burn 1, board 3" in DEFAULT_DEAL.describe()
    assert "board face down 5" in UTH_DEAL.describe()
