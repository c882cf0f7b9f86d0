"""A heat's opening and closing chip counts (game.chips.counts) and their message
(``chips.counted``): the arithmetic, what the table expects, the refusals (a bad quantity, the
same person confirming, a dealer confirming, a second confirmation) and the tolerance."""

from __future__ import annotations

import pytest

from game.chips.counts import (
    CountBook,
    CountRefused,
    expected_of,
    over_tolerance,
    read_counted,
    total_of,
)
from game.messages.chips import ChipsCounted
from game.messages.fields import MessageError

VALUES = frozenset({500, 2_500, 10_000})


def test_a_count_is_read_by_value_and_totalled() -> None:
    counted = read_counted({"10000": 3, 500: 40, "2500": 0}, VALUES)
    assert counted == ((500, 40), (2_500, 0), (10_000, 3))
    assert total_of(counted) == 40 * 500 + 3 * 10_000  # R500.00


@pytest.mark.parametrize(("raw", "words"), [
    ({}, "give how many chips of each value"),
    ([1, 2], "give how many chips of each value"),
    ({"500": -1}, "must be 0 to 100000, not -1"),
    ({"500": 2.5}, "must be a whole number"),
    ({"500": True}, "must be a whole number"),
    ({"500": "4"}, "must be a whole number"),
    ({"abc": 4}, "'abc' is not a chip value in whole cents"),
    ({"0": 4}, "'0' is not a chip value in whole cents"),
    ({"700": 4}, "R7.00 is not a chip value of the set in play (R5.00, R25.00, R100.00)"),
    ({"500": 1, 500: 2}, "R5.00 is given twice"),
    ({"500": 100_001}, "must be 0 to 100000"),
])
def test_bad_quantities_are_refused_naming_what_is_wrong(raw: object, words: str) -> None:
    with pytest.raises(ValueError, match="counted: ") as caught:
        read_counted(raw, VALUES)
    assert words in str(caught.value)


def test_what_the_table_expects() -> None:
    book = CountBook()
    # with an RFID float: the float's chips by value (values it holds none of are left out)
    assert expected_of({500: 10, 2_500: 0}, stage="opening", opening=None,
                       last_closing=None) == ((500, 10),)
    # without: nothing known at a first opening
    assert expected_of(None, stage="opening", opening=None, last_closing=None) is None
    opened = book.record(heat_id="H1", stage="opening", counted=((500, 8),), expected=None,
                         dealer_id="D1", role="dealer", at="t1")
    done = book.confirm(heat_id="H1", stage="opening", supervisor_id="S1", role="supervisor",
                        active=True, tolerance_cents=0, at="t2")
    assert opened.difference_cents is None and done.supervisor_id == "S1"
    # at closing: the heat's opening count; at the next opening: the last closing count
    assert expected_of(None, stage="closing", opening=done, last_closing=None) == ((500, 8),)
    book.record(heat_id="H1", stage="closing", counted=((500, 7),), expected=((500, 8),),
                dealer_id="D1", role="dealer", at="t3")
    closing = book.confirm(heat_id="H1", stage="closing", supervisor_id="S1",
                           role="supervisor", active=True, tolerance_cents=0, at="t4")
    assert closing.difference_cents == -500 and closing.over
    assert closing.differences() == ((500, -1),)
    assert book.last_closing == closing
    assert expected_of(None, stage="opening", opening=None,
                       last_closing=book.last_closing) == ((500, 7),)
    assert "difference -R5.00 (R5.00 x -1)" in closing.summary()


def test_the_tolerance_is_either_way_and_strict() -> None:
    assert not over_tolerance(None, 0)
    assert not over_tolerance(0, 0)
    assert over_tolerance(1, 0) and over_tolerance(-1, 0)
    assert not over_tolerance(-2_500, 2_500)
    assert over_tolerance(2_501, 2_500)


def _pending(book: CountBook, dealer: str = "D1") -> None:
    book.record(heat_id="H1", stage="opening", counted=((500, 10),), expected=((500, 10),),
                dealer_id=dealer, role="dealer", at="t1")


def test_the_counter_cannot_confirm_their_own_count() -> None:
    book = CountBook()
    _pending(book, dealer="S1")
    with pytest.raises(CountRefused, match="S1 counted this tray: a second person"):
        book.confirm(heat_id="H1", stage="opening", supervisor_id="S1", role="supervisor",
                     active=True, tolerance_cents=0, at="t2")
    assert ("H1", "opening") in book.pending and not book.confirmed


@pytest.mark.parametrize(("role", "active", "words"), [
    ("dealer", True, "D2 is a dealer: a supervisor or manager confirms"),
    (None, True, "D2 is not on this table's staff roster"),
    ("supervisor", False, "D2's credential is disabled"),
])
def test_only_an_active_supervisor_or_manager_confirms(role: str | None, active: bool,
                                                       words: str) -> None:
    book = CountBook()
    _pending(book)
    with pytest.raises(CountRefused, match=words):
        book.confirm(heat_id="H1", stage="opening", supervisor_id="D2", role=role,
                     active=active, tolerance_cents=0, at="t2")


def test_a_manager_confirms_and_a_confirmed_stage_is_closed() -> None:
    book = CountBook()
    with pytest.raises(CountRefused, match="no opening count of heat H1 is waiting"):
        book.confirm(heat_id="H1", stage="opening", supervisor_id="M1", role="manager",
                     active=True, tolerance_cents=0, at="t0")
    _pending(book)
    _pending(book)  # a recount replaces the first count
    book.confirm(heat_id="H1", stage="opening", supervisor_id="M1", role="manager",
                 active=True, tolerance_cents=0, at="t2")
    with pytest.raises(CountRefused, match="confirmed already"):
        _pending(book)
    with pytest.raises(CountRefused, match="confirmed already"):
        book.confirm(heat_id="H1", stage="opening", supervisor_id="M1", role="manager",
                     active=True, tolerance_cents=0, at="t3")
    assert book.missing("H1") == ("closing",)


def test_a_clerk_cannot_count() -> None:
    with pytest.raises(CountRefused, match="C1 is signed in as clerk"):
        CountBook().record(heat_id="H1", stage="opening", counted=((500, 1),), expected=None,
                           dealer_id="C1", role="clerk", at="t1")


def _message() -> ChipsCounted:
    book = CountBook()
    book.record(heat_id="H1", stage="closing", counted=((500, 10), (2_500, 4)),
                expected=((500, 10), (2_500, 5)), dealer_id="D1", role="dealer",
                at="2026-12-06T10:00:00Z")
    return ChipsCounted.of(book.confirm(heat_id="H1", stage="closing", supervisor_id="S1",
                                        role="supervisor", active=True,
                                        tolerance_cents=1_000, at="2026-12-06T10:01:00Z"))


def test_the_message_carries_the_count_and_reads_back() -> None:
    message = _message()
    body = message.encode()
    assert body["counted"] == {"500": 10, "2500": 4}
    assert body["total_cents"] == 10 * 500 + 4 * 2_500
    assert body["expected_cents"] == 10 * 500 + 5 * 2_500
    assert body["difference_cents"] == -2_500
    assert body["over_tolerance"] is True  # R25.00 off, R10.00 allowed
    assert ChipsCounted.decode(body) == message


@pytest.mark.parametrize(("field", "value", "words"), [
    ("total_cents", 1, "must be the value of the count"),
    ("expected_cents", 1, "must be the value of the expected count"),
    ("difference_cents", 0, "must be the total less the expected"),
    ("over_tolerance", False, "must say whether the difference is over the tolerance"),
    ("supervisor_id", "D1", "must be a second person"),
    ("stage", "middle", "must be one of"),
    ("counted", {"500": -3}, "must be 0 to 100000"),
])
def test_a_message_that_does_not_add_up_is_refused(field: str, value: object,
                                                   words: str) -> None:
    body = {**_message().encode(), field: value}
    with pytest.raises(MessageError, match=field) as caught:
        ChipsCounted.decode(body)
    assert words in str(caught.value)
