"""A snapshot's chip UID lists are read in one pass (D416): they accept and refuse
exactly what reading each UID on its own does, with the same message naming the same item."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from game.table.snapshot_fields import Node, SnapshotError


def _one_by_one(value: Any) -> list[bytes] | str:
    try:
        return [n.uid() for n in Node(value, "x").array()]
    except SnapshotError as exc:
        return str(exc)


def _at_once(value: Any) -> list[bytes] | str:
    try:
        return Node(value, "x").uid_list()
    except SnapshotError as exc:
        return str(exc)


@pytest.mark.parametrize("value", [
    [], ["e004000000000001"], ["e004000000000001", "e004000000000002"],
    ["E004000000000001"], ["e0040000000001", ""], ["e0 04"], [" e004"], ["e004\n"],
    ["e00"], ["zz"], [1], [None], [True], [["e004"]], "e004", None, {"e004": 1},
    ["ab" * 32], ["ab" * 33], ["e004", "E004"],
])
def test_a_uid_list_reads_as_each_uid_on_its_own(value: Any) -> None:
    assert _at_once(value) == _one_by_one(value)


@given(st.lists(st.one_of(st.text(alphabet="0123456789abcdefABCDEF x", max_size=70),
                          st.integers(), st.none())))
def test_any_list_reads_as_each_uid_on_its_own(value: list[Any]) -> None:
    assert _at_once(value) == _one_by_one(value)


def test_uids_are_refused_out_of_order_or_twice() -> None:
    with pytest.raises(SnapshotError, match="x: chip UIDs must be distinct and in order"):
        Node(["e002", "e001"], "x").uids()
    with pytest.raises(SnapshotError, match="x: chip UIDs must be distinct and in order"):
        Node(["e001", "e001"], "x").uids()
    assert Node(["e001", "e002"], "x").uids() == frozenset({b"\xe0\x01", b"\xe0\x02"})
