"""SpotBook keeps each seat's wagers as last read (game/chips/spot_book.py): whatever happens to
the spots, the duplicated UIDs, the seat's entry or the chip float, what `wagers` gives is
what reading every chip again gives, and each problem is still reported once."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from game.chips.float import ChipFloat, FloatError
from game.chips.registry import Chip, ChipRegistry
from game.chips.spot_book import SpotBook
from game.wagers.settle import WAGERS

R25 = 2_500
SEATS = (1, 2, 3)
ENTRIES = ("E1", "E2", "E3")


def uid(n: int) -> bytes:
    return bytes.fromhex(f"E0040000{n:08X}")


def book() -> SpotBook:
    chips = [Chip(uid=uid(i), value_cents=R25 * (1 + i % 3), chip_set="house",
                  issued_to=ENTRIES[i % 3] if i < 6 else None) for i in range(24)]
    chips += [Chip(uid=uid(100 + i), value_cents=50_000, chip_set="bonus-marker",
                   issued_to=ENTRIES[i % 3] if i < 2 else None) for i in range(4)]
    chips += [Chip(uid=uid(200), value_cents=R25, chip_set="other-set")]
    registry = ChipRegistry(chips, chip_set="house")
    return SpotBook(registry, chip_float=ChipFloat(registry))


UIDS = st.sampled_from([uid(i) for i in range(24)] + [uid(100 + i) for i in range(4)]
                       + [uid(200), uid(999)])
STEPS = st.lists(st.one_of(
    st.tuples(st.just("see"), st.sampled_from(SEATS), st.sampled_from(WAGERS),
              st.frozensets(UIDS, max_size=4)),
    st.tuples(st.just("key"), st.sampled_from(SEATS), st.sampled_from(WAGERS),
              st.integers(0, 20) .map(lambda n: n * R25)),
    st.tuples(st.just("clear"), st.sampled_from(SEATS)),
    st.tuples(st.just("sit"), st.sampled_from(SEATS), st.sampled_from((*ENTRIES, None))),
    st.tuples(st.just("issue"), st.sampled_from(ENTRIES), st.frozensets(UIDS, max_size=3)),
    st.tuples(st.just("paid"), st.sampled_from(ENTRIES), st.frozensets(UIDS, max_size=3),
              st.frozensets(UIDS, max_size=3)),
    st.tuples(st.just("reconcile"), st.sampled_from(ENTRIES), st.frozensets(UIDS, max_size=4)),
    st.tuples(st.just("read"), st.sampled_from(SEATS), st.booleans()),
), max_size=40)


def apply(spots: SpotBook, step: tuple) -> None:  # type: ignore[type-arg]
    chips = spots.chip_float
    assert chips is not None
    match step:
        case ("see", seat, spot, uids):
            spots.see_chips(seat, spot, uids)
        case ("key", seat, spot, cents):
            spots.key_amount(seat, spot, cents)
        case ("clear", seat):
            spots.clear_seat(seat)
        case ("sit", seat, entry):
            if entry is None:
                spots.seat_entries.pop(seat, None)
            else:
                spots.seat_entries[seat] = entry
        case ("issue", entry, uids):
            with contextlib.suppress(FloatError):
                chips.issue(entry, uids, seat=1, stack_cents=chips.value(uids))
        case ("paid", entry, before, after):
            chips.paid(entry, before, after)
        case ("reconcile", entry, seen):
            chips.reconcile(entry, 1, seen)
        case ("read", seat, report):
            spots.wagers(seat, None, report=report)


@settings(max_examples=400)
@given(steps=STEPS)
def test_wagers_are_what_reading_every_chip_again_gives(steps: list[tuple]) -> None:  # type: ignore[type-arg]
    spots, fresh = book(), book()
    for step in steps:
        apply(spots, step)
        apply(fresh, step)
        fresh.forget_wagers()  # the reference reads every chip, every time
        for seat in SEATS:
            for entry in (None, *ENTRIES):
                assert spots.wagers(seat, entry, report=False) == \
                    fresh.wagers(seat, entry, report=False)
        for seat in SEATS:  # each problem is new once, then reported no more
            got, want = spots.wagers(seat, None), fresh.wagers(seat, None)
            assert got == want
            assert spots._reported == fresh._reported


def test_a_clone_on_another_seat_changes_this_seats_count() -> None:
    spots = book()
    spots.seat_entries.update({1: "E1", 2: "E2"})
    spots.see_chips(1, "ante", frozenset({uid(0)}))
    assert spots.wagers(1, None)[0].amount("ante") == R25
    report = spots.see_chips(2, "ante", frozenset({uid(0)}))  # the same UID: a clone
    assert [a.kind for a in report.alerts] == ["chip_clone"]
    assert spots.wagers(1, None)[0].amount("ante") == 0  # counts on neither
    spots.see_chips(2, "ante", frozenset())
    assert spots.wagers(1, None)[0].amount("ante") == R25
