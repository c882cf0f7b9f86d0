"""The table core's tallies (game.table.tallies) through typed inputs: when a count may be
taken, who may confirm it, the alert at a heat's close for a missing count (only at a table
that counts), decks under the right person, and the state kept by replay and by snapshot."""

from __future__ import annotations

import pytest

from game.messages.chips import ChipsCounted
from game.messages.decks import DecksEvent
from game.messages.desk import CloseHeat, DeskOrder, Unseat
from game.messages.table import Alert
from game.table.core import Decision
from game.table.snapshot import restore_snapshot, take_snapshot
from game.table.snapshot_fields import SnapshotError
from game.table.tally_inputs import ConfirmCount, CountChips, DeckStepped
from tests.game.table.test_table_console import R25, Feed, seated

TRAY = ((R25, 400),)  # the registry of the console tests: 400 chips of R25, all in the tray


def alerts(decision: Decision) -> list[Alert]:
    return [m for m in decision.messages if isinstance(m, Alert)]


def test_counts_follow_the_heat_and_a_second_person_confirms() -> None:
    feed = seated(Feed())
    closing = feed(CountChips(stage="closing", counted=TRAY, by="D12"))
    assert closing.error == "entries still seated (E1): the closing count is taken when every" \
                            " entry has left"
    opening = feed(CountChips(stage="opening", counted=((R25, 399),), by="D12"))
    assert opening.ok and opening.detail["expected_cents"] == 400 * R25
    assert opening.detail["difference_cents"] == -R25
    assert feed(ConfirmCount(stage="opening", by="X9", via="D12")).error == (
        "X9 is not on this table's staff roster")
    own = feed(ConfirmCount(stage="opening", by="D12", via="D12")).error
    assert own is not None and own.startswith("D12 counted this tray")
    done = feed(ConfirmCount(stage="opening", by="S3", via="D12", tolerance_cents=R25))
    [message] = [m for m in done.messages if isinstance(m, ChipsCounted)]
    assert (message.dealer_id, message.supervisor_id, message.over_tolerance) == (
        "D12", "S3", False)  # R25 short, R25 tolerated
    assert alerts(done) == []
    assert feed(DeskOrder(command=Unseat(seat=1))).ok
    assert feed(CountChips(stage="closing", counted=TRAY, by="D12")).ok
    closed = feed(DeskOrder(command=CloseHeat()))
    [missing] = [a for a in alerts(closed) if a.kind == "chip_count_missing"]
    assert missing.message == ("heat Q1 closed without a confirmed closing chip count (dealer"
                               " and supervisor)")
    assert feed.core.tallies.counts.pending == {}  # the unconfirmed count went with the heat
    assert feed(CountChips(stage="opening", counted=TRAY, by="D12")).error == (
        "no heat is open at this table: the tray is counted at a heat's opening and before"
        " its close")


def test_a_table_that_never_counts_closes_its_heats_without_an_alert() -> None:
    feed = seated(Feed())
    assert feed(DeskOrder(command=Unseat(seat=1))).ok
    closed = feed(DeskOrder(command=CloseHeat()))
    assert closed.ok and [a.kind for a in alerts(closed)] == []


def test_a_person_not_signed_in_cannot_count_and_a_dealer_cannot_receive_decks() -> None:
    feed = seated(Feed())
    assert feed(CountChips(stage="opening", counted=TRAY, by="S3")).error == (
        "S3 is not signed in at this table")
    refused = feed(DeckStepped(kind="received", decks=6, by="D12"))
    assert refused.error is not None and "is a supervisor's action" in refused.error
    opened = feed(DeckStepped(kind="opened", decks=1, by="D12"))
    [event] = [m for m in opened.messages if isinstance(m, DecksEvent)]
    assert (event.sealed, event.in_play, event.problems) == (
        -1, 1, ("1 more decks opened than received",))
    assert [a.kind for a in alerts(opened)] == ["deck_balance"]
    assert event.day == "2026-07-03"  # the venue's day of the input


def test_replay_and_snapshot_keep_the_tallies() -> None:
    feed = seated(Feed())
    feed.sign_in("S3")
    assert feed(CountChips(stage="opening", counted=TRAY, by="D12")).ok
    assert feed(ConfirmCount(stage="opening", by="S3", via="D12")).ok
    assert feed(DeckStepped(kind="received", decks=4, seals=("A1",), by="S3")).ok
    assert feed(DeckStepped(kind="destroyed", decks=1, by="S3", witness="D12")).ok
    state = feed.core.tallies.state()
    assert feed.replayed().tallies.state() == state
    fresh = Feed()
    restore_snapshot(fresh.core, take_snapshot(feed.core))
    assert fresh.core.tallies.state() == state
    assert fresh.core.tallies.decks.position == feed.core.tallies.decks.position
    older = {k: v for k, v in take_snapshot(feed.core).items() if k != "tallies"}
    before = Feed()
    restore_snapshot(before.core, older)  # a snapshot from before the tallies: none kept
    assert before.core.tallies.state() == Feed().core.tallies.state()
    broken = {**take_snapshot(feed.core), "tallies": {**state, "deck_steps": "lots"}}
    with pytest.raises(SnapshotError, match=r"snapshot\.tallies: not the table's counts"):
        restore_snapshot(Feed().core, broken)
