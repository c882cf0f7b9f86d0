"""Cards: parsing, formatting and indices."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.errors import DuplicateCard, GameError, InvalidCard
from game.poker.cards import (
    DECK,
    card_from_index,
    card_index,
    format_cards,
    parse_card,
    parse_cards,
)


def test_every_card_round_trips_through_text_and_index() -> None:
    assert len(DECK) == 52
    assert len({str(c) for c in DECK}) == 52
    for i, card in enumerate(DECK):
        assert parse_card(str(card)) is card
        assert card_index(card) == i
        assert card_from_index(i) is card


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Ah", "Ah"), ("Td", "Td"), ("10d", "Td"), ("2c", "2c"), ("ks", "Ks"), ("QH", "Qh"),
     (" 9d ", "9d"), ("A♥", "Ah"), ("5♣", "5c"), ("10♦", "Td"), ("J♠", "Js")],
)
def test_usual_notations_parse(text: str, expected: str) -> None:
    assert str(parse_card(text)) == expected


def test_index_is_rank_major() -> None:
    assert card_index(parse_card("2c")) == 0
    assert card_index(parse_card("2s")) == 3
    assert card_index(parse_card("As")) == 51
    assert sorted(parse_cards("As 2c Kd")) == list(parse_cards("2c Kd As"))


@pytest.mark.parametrize("bad", ["1x", "Zz", "A", "", "Ahh", "11d", "1d", "Ax", "0h", "T", "h"])
def test_bad_tokens_are_named(bad: str) -> None:
    with pytest.raises(InvalidCard) as err:
        parse_card(bad)
    assert repr(bad) in str(err.value)


def test_parse_cards_names_the_bad_token_and_refuses_duplicates() -> None:
    assert [str(c) for c in parse_cards("Ah Kd 5s")] == ["Ah", "Kd", "5s"]
    assert [str(c) for c in parse_cards("Ah,Kd, 10s")] == ["Ah", "Kd", "Ts"]
    assert [str(c) for c in parse_cards(["Ah", "Kd"])] == ["Ah", "Kd"]
    with pytest.raises(InvalidCard, match="'Qx'"):
        parse_cards("Ah Qx 5s")
    with pytest.raises(DuplicateCard, match="Ah"):
        parse_cards("Ah Kd ah")
    assert len(parse_cards("Ah Ah", distinct=False)) == 2


def test_bad_indices_refused() -> None:
    for bad in (-1, 52, 3.0, True, "1"):
        with pytest.raises(InvalidCard):
            card_from_index(bad)  # type: ignore[arg-type]


def test_cards_are_immutable_hashable_and_picklable() -> None:
    card = parse_card("Ah")
    with pytest.raises(AttributeError):
        card.rank = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(card)) is card
    assert {card: 1}[parse_card("AH")] == 1
    assert card.is_red and not parse_card("As").is_red
    assert card.name == "ace of hearts"
    assert format_cards(parse_cards("Ah 10c")) == "Ah Tc"


@given(st.text(max_size=6))
def test_any_text_parses_to_a_card_or_raises_invalid_card(text: str) -> None:
    try:
        card = parse_card(text)
    except GameError as exc:
        assert isinstance(exc, InvalidCard)
    else:
        assert parse_card(str(card)) is card
