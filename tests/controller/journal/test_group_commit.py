"""Group commit: inputs that arrive together share one transaction (`Journal.append_batch`),
in order, each with its own record and result; a failure stores none of the batch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import pytest

from controller.clock import FakeClockSource
from controller.journal import Journal, JournalError, JournalRecord
from controller.journal.deciding import Entry
from controller.journal.group_commit import GroupCommit
from tests.controller.journal.support import events, nothing
from wire.outbox import OutgoingItem

Outgoing = Callable[[JournalRecord], Sequence[OutgoingItem]]


def _events(*types: str) -> Outgoing:
    return cast(Outgoing, events(*types))


def _last_record(journal: Journal) -> int:
    return max(r.seq for r in journal.records())


@dataclass(frozen=True, slots=True)
class _Decided:
    messages: Sequence[OutgoingItem]
    seen: tuple[int, str]  # the record's seq and what the decider was given with it


class _Decider:
    """Each entry's ``given`` is the messages its record causes (an `outgoing` function)."""

    def __init__(self) -> None:
        self.decided: list[int] = []

    def decide(self, record: JournalRecord, given: Outgoing) -> _Decided:
        self.decided.append(record.seq)
        return _Decided(messages=given(record), seen=(record.seq, record.kind))


def _entry(kind: str, payload: dict[str, object], fake: FakeClockSource,
           outgoing: Outgoing) -> Entry[Outgoing]:
    return Entry(kind=kind, payload=payload, clock=fake(), given=outgoing)


def test_a_batch_is_one_transaction_of_records_in_order(journal: Journal,
                                                        fake: FakeClockSource) -> None:
    before = _last_record(journal)
    decider = _Decider()
    stored = journal.append_batch([
        _entry("chips", {"spot": 1}, fake, _events("a")),
        _entry("chips", {"spot": 2}, fake, nothing),
        _entry("card", {"card": "As"}, fake, _events("b", "c")),
    ], decider)
    assert [s.record.seq for s in stored] == [before + 1, before + 2, before + 3]
    assert decider.decided == [before + 1, before + 2, before + 3]
    assert [s.decision.seen for s in stored] == [
        (before + 1, "chips"), (before + 2, "chips"), (before + 3, "card")]
    assert [len(s.messages) for s in stored] == [1, 0, 2]
    assert [m.seq for s in stored for m in s.messages] == [1, 2, 3]
    records = list(journal.records(after=before))
    assert [(r.kind, r.payload) for r in records] == [
        ("chips", {"spot": 1}), ("chips", {"spot": 2}), ("card", {"card": "As"})]
    assert journal.verify() == []
    assert journal.append_batch([], decider) == []


def test_a_batch_whose_input_fails_stores_none_of_it(journal: Journal,
                                                     fake: FakeClockSource) -> None:
    before = _last_record(journal)

    def broken(_record: JournalRecord) -> list[OutgoingItem]:
        raise RuntimeError("the core failed")

    with pytest.raises(RuntimeError, match="the core failed"):
        journal.append_batch([_entry("chips", {"spot": 1}, fake, _events("a")),
                              _entry("chips", {"spot": 2}, fake, broken)], _Decider())
    with pytest.raises(JournalError, match="reserved"):
        journal.append_batch([_entry("chips", {}, fake, nothing),
                              _entry("journal.x", {}, fake, nothing)], _Decider())
    assert _last_record(journal) == before and journal.pending(10) == []
    record, _ = journal.append(kind="chips", payload={"spot": 3}, clock=fake(), outgoing=nothing)
    assert record.seq == before + 1  # no seq was used by the failed batches
    assert journal.verify() == []


async def test_inputs_submitted_together_share_a_transaction_in_order() -> None:
    batches: list[list[int]] = []
    gate = asyncio.Event()

    async def commit(batch: list[int]) -> list[int]:
        batches.append(batch)
        await gate.wait()
        return [n * 10 for n in batch]

    commits: GroupCommit[int, int] = GroupCommit(commit, most=3)
    first = commits.submit(1)
    await asyncio.sleep(0)  # the first transaction starts alone
    later = [commits.submit(n) for n in (2, 3, 4, 5)]
    assert commits.waiting == 4
    gate.set()
    assert await first == 10
    assert await asyncio.gather(*later) == [20, 30, 40, 50]
    assert batches == [[1], [2, 3, 4], [5]]  # at most 3 a transaction, in submission order
    assert (commits.batches, commits.inputs) == (3, 5)
    await commits.idle()


async def test_a_cancelled_input_is_left_out_and_a_failed_commit_reaches_every_sender(
        ) -> None:
    seen: list[list[str]] = []

    async def commit(batch: list[str]) -> list[str]:
        seen.append(batch)
        if "bad" in batch:
            raise JournalError("disk full")
        await asyncio.sleep(0)
        return batch

    commits: GroupCommit[str, str] = GroupCommit(commit)
    running = commits.submit("a")
    await asyncio.sleep(0)
    dropped, kept = commits.submit("dropped"), commits.submit("kept")
    dropped.cancel()
    assert await running == "a" and await kept == "kept"
    one, two = commits.submit("x"), commits.submit("bad")
    for future in (one, two):
        with pytest.raises(JournalError, match="disk full"):
            await future
    await commits.idle()
    assert seen == [["a"], ["kept"], ["x", "bad"]]
    assert (commits.batches, commits.inputs) == (2, 2)
