"""The deck inventory per table and day (game.decks.inventory, message ``decks.event``):
received = opened + sealed, opened = used + in play, used = destroyed + awaiting; a step that
breaks the balance or moves a seal from the wrong place is recorded and reported; the wrong
person or a destruction without a second person is refused."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.decks.inventory import (
    DeckBook,
    DeckRefused,
    DeckStep,
    Position,
    load_steps,
    read_seals,
    steps_state,
)
from game.messages.decks import DecksEvent
from game.messages.fields import MessageError


def step(kind: str, decks: int, *, day: str = "2026-12-06", by: str = "S1",
         seals: tuple[str, ...] = (), witness: str | None = None) -> DeckStep:
    return DeckStep(kind=kind, decks=decks, day=day, by=by, at=f"{day}T10:00:00Z",  # type: ignore[arg-type]
                    seals=seals, witness=witness)


def test_a_day_balances_and_carries_into_the_next() -> None:
    book = DeckBook()
    assert book.record(step("received", 12, seals=("A1", "A2")), role="supervisor") == []
    assert book.record(step("opened", 4, by="D1", seals=("A1",)), role="dealer") == []
    assert book.record(step("used", 3, by="D1", seals=("A1",)), role="dealer") == []
    assert book.record(step("destroyed", 2, witness="S2", seals=("A1",)), role="supervisor",
                       witness_role="supervisor") == []
    day = book.day("2026-12-06")
    assert (day.received, day.opened, day.used, day.destroyed) == (12, 4, 3, 2)
    # received 12 = opened 4 + sealed 8; opened 4 = used 3 + in play 1; used 3 = destroyed 2
    # + awaiting 1
    assert day.end == Position(sealed=8, in_play=1, awaiting=1)
    assert day.start == Position() and not day.problems
    tomorrow = book.day("2026-12-07")
    assert tomorrow.start == tomorrow.end == day.end
    book.record(step("used", 1, day="2026-12-07", by="D1"), role="dealer")
    assert book.day("2026-12-07").start == day.end
    assert book.day("2026-12-07").end == Position(sealed=8, in_play=0, awaiting=2)
    assert book.where == {"A1": "destroyed", "A2": "sealed"}


def test_a_broken_balance_is_recorded_and_reported() -> None:
    book = DeckBook()
    book.record(step("received", 2), role="supervisor")
    problems = book.record(step("opened", 3, by="D1"), role="dealer")
    assert problems == ["1 more decks opened than received"]
    assert book.position == Position(sealed=-1, in_play=3, awaiting=0)
    assert book.record(step("used", 5, by="D1"), role="dealer") == [
        "2 more decks used than opened"]
    assert book.day("2026-12-06").problems == ["1 more decks opened than received",
                                               "2 more decks used than opened"]
    assert book.day("2026-12-06").encode()["balanced"] is False


def test_seals_must_be_where_the_step_says() -> None:
    book = DeckBook()
    book.record(step("received", 2, seals=("A1", "A2")), role="supervisor")
    assert book.record(step("received", 1, seals=("A1",)), role="supervisor") == [
        "seal A1 was received already (sealed)"]
    assert book.record(step("opened", 1, by="D1", seals=("Z9",)), role="dealer") == [
        "seal Z9 is not sealed (never received here)"]
    assert book.record(step("used", 1, by="D1", seals=("A2",)), role="dealer") == [
        "seal A2 is not in play (sealed)"]


@pytest.mark.parametrize(("kind", "role", "words"), [
    ("received", "dealer", "decks received: S1 is signed in as dealer; a supervisor"),
    ("destroyed", "dealer", "decks destroyed: S1 is signed in as dealer"),
    ("opened", "clerk", "a dealer, supervisor or manager records decks opened"),
    ("opened", None, "signed in as None"),
])
def test_the_wrong_person_is_refused(kind: str, role: str | None, words: str) -> None:
    book = DeckBook()
    with pytest.raises(DeckRefused, match=words):
        book.record(step(kind, 1, witness="S2"), role=role, witness_role="supervisor")
    assert book.steps == [] and book.position == Position()


def test_a_destruction_needs_a_second_person() -> None:
    book = DeckBook()
    with pytest.raises(DeckRefused, match="a witness confirms the destruction"):
        book.record(step("destroyed", 1), role="supervisor")
    with pytest.raises(DeckRefused, match="S1 cannot witness their own destruction"):
        book.record(step("destroyed", 1, witness="S1"), role="supervisor",
                    witness_role="supervisor")
    with pytest.raises(DeckRefused, match="1 to 1000"):
        book.record(step("received", 0), role="supervisor")


def test_seal_numbers_are_read_strictly() -> None:
    assert read_seals([" A1 ", "B2"], 2) == ("A1", "B2")
    assert read_seals(None, 3) == ()
    for raw, words in ((["A1", "A1"], "given twice"), (["A", "B", "C"], "at most 2"),
                       ([""], "is not a seal number"), (["x" * 41], "is not a seal number")):
        with pytest.raises(ValueError, match=words):
            read_seals(raw, 2)


def test_the_book_replays_from_its_steps() -> None:
    book = DeckBook()
    book.record(step("received", 3, seals=("A1",)), role="supervisor")
    book.record(step("opened", 1, by="D1", seals=("A1",)), role="dealer")
    again = DeckBook()
    for s in load_steps(steps_state(book.steps)):
        again.apply(s)
    assert again.position == book.position and again.where == book.where
    assert again.day("2026-12-06").encode() == book.day("2026-12-06").encode()


def test_the_message_reads_back_and_refuses_a_destruction_without_witness() -> None:
    book = DeckBook()
    done = step("received", 6, seals=("A1",))
    message = DecksEvent.of(done, book.position.after("received", 6), [])
    assert DecksEvent.decode(message.encode()) == message
    assert message.encode()["sealed"] == 6
    body = {**message.encode(), "kind": "destroyed"}
    with pytest.raises(MessageError, match="witness"):
        DecksEvent.decode(body)
    with pytest.raises(MessageError, match="day"):
        DecksEvent.decode({**message.encode(), "day": "6 Dec"})


@given(st.lists(st.tuples(st.sampled_from(["received", "opened", "used", "destroyed"]),
                          st.integers(min_value=1, max_value=20),
                          st.sampled_from(["2026-12-06", "2026-12-07", "2026-12-08"])),
                max_size=30))
def test_the_three_balances_hold_for_any_steps(steps: list[tuple[str, int, str]]) -> None:
    book = DeckBook()
    totals = dict.fromkeys(("received", "opened", "used", "destroyed"), 0)
    flagged = False
    for kind, decks, day in sorted(steps, key=lambda s: s[2]):
        found = book.record(step(kind, decks, day=day, witness="S2"), role="supervisor",
                            witness_role="dealer")
        totals[kind] += decks
        flagged = flagged or bool(found)
        # received = opened + sealed; opened = used + in play; used = destroyed + awaiting
        assert totals["received"] == totals["opened"] + book.position.sealed
        assert totals["opened"] == totals["used"] + book.position.in_play
        assert totals["used"] == totals["destroyed"] + book.position.awaiting
    negative = min((book.position.sealed, book.position.in_play, book.position.awaiting),
                   default=0) < 0
    assert not negative or flagged  # a position below zero was reported when it happened
    days = sorted(book.days)
    for earlier, later in pairwise(days):
        assert book.days[later].start == book.days[earlier].end  # carried day to day
