"""The table core's snapshot (game.table.snapshot): at every safe point of real play a fresh
core loaded from the snapshot answers the rest of the play exactly as the original, and a
snapshot that is malformed or from another configuration is refused with the reason."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from game.messages.desk import AckScore, CloseHeat, DeskOrder, OpenHeat, Seat, Unseat
from game.staff import LockoutPolicy
from game.table.core import TableCore
from game.table.inputs import (
    Acknowledge,
    ChipsSeen,
    Dispute,
    IssueChips,
    NoMoreBets,
    ReturnChips,
    StaffChange,
)
from game.table.snapshot import (
    SNAPSHOT_VERSION,
    SnapshotError,
    is_safe_point,
    restore_snapshot,
    take_snapshot,
)
from game.table.snapshot_fields import config_digest
from runtime.settings_files import read_paytables
from simulators.core_day import day, new_core
from tests.game.snapshot_support import as_json, check_snapshots
from tests.game.table.test_table_console import PAYTABLES, SETTINGS, Feed, play_winning_hand, seated

REPO = Path(__file__).resolve().parents[3]


def console_day() -> Feed:
    """One entry plays hands with the payout checked, disputes and acknowledges its score;
    sign-in failures lock a credential; the heat closes and a second one opens."""
    feed = seated(Feed())
    for _ in range(3):
        play_winning_hand(feed)
        feed.chips(1, "ante", 2 * 2_500)
        feed.chips(1, "play", 2 * 2_500)
    for _ in range(3):
        feed(StaffChange(event="sign_in_failed", method="pin", staff_id="S3", detail="bad pin"))
    feed(NoMoreBets(by="S3"))  # refused: not signed in
    feed(DeskOrder(command=Seat(entry_id="E2", seat=3), signer="desk", command_seq=2))
    feed(DeskOrder(command=Seat(entry_id="E2", seat=3), signer="desk", command_seq=2))
    feed(DeskOrder(command=Unseat(seat=3, entry_id="E2"), signer="desk", command_seq=3))
    play_winning_hand(feed)
    feed(DeskOrder(command=Unseat(seat=1, entry_id="E1"), signer="desk", command_seq=4))
    feed(ChipsSeen(seat=1, spot="ante", uids=frozenset()))
    feed(ReturnChips(seat=1, by="D12"))
    feed(DeskOrder(command=CloseHeat(), signer="desk", command_seq=5))
    feed(DeskOrder(command=OpenHeat(stage="semi_final", heat_id="S1"), signer="desk",
                   command_seq=6))
    feed(Dispute(entry_id="E1", note="I had more"))
    feed(Acknowledge(entry_id="E1", method="pin", by="E1"))
    feed(DeskOrder(command=AckScore(entry_id="E1"), signer="desk", command_seq=7))
    feed(IssueChips(seat=2, by="D12"))  # refused: nobody seated there
    return feed


def test_every_safe_point_of_a_console_day_restores_to_the_same_answers() -> None:
    feed = console_day()
    checked = check_snapshots(feed._new, feed.inputs)
    assert checked >= 20


def test_a_reconciliation_made_before_the_entry_was_issued_its_stack_is_kept() -> None:
    feed = seated(Feed())
    play_winning_hand(feed)  # E1 plays float chips; the verified payout binds them to it
    feed.chips(1, "ante", 2 * 2_500)
    feed.chips(1, "play", 2 * 2_500)
    feed(DeskOrder(command=Unseat(seat=1, entry_id="E1")))
    assert feed(ReturnChips(seat=1, by="D12")).ok
    assert feed.core.chips.chip_float.reconciled["E1"].issued == ()
    feed(ChipsSeen(seat=1, spot="ante", uids=frozenset()))
    feed(ChipsSeen(seat=1, spot="play", uids=frozenset()))
    feed(DeskOrder(command=Seat(entry_id="E1", seat=2)))
    feed.chips(2, "ante", 200_000)  # the reader issues the stack it reads (D346)
    assert feed.core.chips.chip_float.issued_to("E1") != ()
    state = take_snapshot(feed.core)
    assert [r["issued"] for r in state["chips"]["reconciled"]] == [[]]
    assert check_snapshots(feed._new, feed.inputs) >= 10


def test_a_snapshot_is_taken_only_between_hands() -> None:
    feed = seated(Feed())
    feed.chips(1, "ante", 2_500)
    feed.chips(1, "odds", 2_500)
    assert feed(NoMoreBets(by="D12")).ok
    assert not is_safe_point(feed.core)
    with pytest.raises(SnapshotError, match="between hands: hand t07-000001 is in progress"):
        take_snapshot(feed.core)


# ---- strict validation --------------------------------------------------------------------


def played() -> tuple[Feed, dict[str, Any]]:
    feed = seated(Feed())
    play_winning_hand(feed)
    return feed, as_json(take_snapshot(feed.core))


def refused(feed: Feed, state: Any) -> str:
    fresh = feed._new()
    before = take_snapshot(fresh)
    with pytest.raises(SnapshotError) as caught:
        restore_snapshot(fresh, state)
    assert take_snapshot(fresh) == before  # the core was left as it was built
    return str(caught.value)


@pytest.mark.parametrize("version", [SNAPSHOT_VERSION + 1, 0, True, "1", None])
def test_a_snapshot_of_another_version_is_refused_before_its_fields(version: Any) -> None:
    feed, state = played()
    state["version"] = version
    state.pop("ledger")  # another version may have other fields: the version is named first
    assert refused(feed, state) == (f"snapshot.version: snapshot version {version!r};"
                                    f" this table reads version {SNAPSHOT_VERSION}")


@pytest.mark.parametrize(("make", "field"), [
    (lambda: TableCore(table_id="t08", settings=SETTINGS, paytables=PAYTABLES,
                       deal=DEFAULT_DEAL, registry=_registry(), verify_payouts=True,
                       lockout=LockoutPolicy(free=3)), "table_id"),
    (lambda: TableCore(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                       deal=DEFAULT_DEAL, registry=_registry(extra=True), verify_payouts=True,
                       lockout=LockoutPolicy(free=3)), "registry"),
    (lambda: TableCore(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                       deal=DEFAULT_DEAL, registry=_registry(), verify_payouts=False,
                       lockout=LockoutPolicy(free=3)), "verify_payouts"),
    (lambda: TableCore(table_id="t07", settings=SETTINGS, paytables=PAYTABLES,
                       deal=DEFAULT_DEAL, registry=_registry(), verify_payouts=True,
                       lockout=LockoutPolicy(free=5)), "lockout"),
])
def test_a_snapshot_taken_under_another_configuration_is_refused(make: Any, field: str) -> None:
    _, state = played()
    core = make()
    with pytest.raises(SnapshotError, match=rf"^snapshot\.config\.{field}: the snapshot was"
                       rf" taken under another configuration \({field} "):
        restore_snapshot(core, state)


def _registry(*, extra: bool = False) -> ChipRegistry:
    from tests.game.table.test_table_console import uid
    chips = [Chip(uid=uid(i), value_cents=2_500, chip_set="house") for i in range(400)]
    if extra:
        chips.append(Chip(uid=uid(999), value_cents=2_500, chip_set="house"))
    return ChipRegistry(chips, chip_set="house", require_issued=False)  # as the Feed's


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.pop("ledger"), "snapshot: missing field ledger"),
    (lambda s: s.update(extra=1), "snapshot: unknown field extra"),
    (lambda s: s["counters"].update(hands_opened="1"),
     "snapshot.counters.hands_opened: must be a whole number, not text"),
    (lambda s: s["counters"].update(alerts_raised=-1),
     "snapshot.counters.alerts_raised: -1 is out of range 0.."),
    (lambda s: s["heat"]["seats"][0].update(seat=9),
     "snapshot.heat.seats[0].seat: 9 is out of range 1..6"),
    (lambda s: s["heat"]["seats"][0].update(balance=1),
     "snapshot.heat.seats[0]: entry E1: balance R0.01 is not the starting chips plus the"
     " hands' nets"),
    (lambda s: s["chips"]["owners"].update({"e0040000ffffffff": "E1"}),
     "snapshot.chips.owners: chip e0040000ffffffff is not a registered chip of the set in"
     " play 'house'"),
    (lambda s: s["chips"]["pay_entries"][0].__setitem__(0, 0),
     "snapshot.chips.pay_entries[0][0]: 0 is out of range 1..6"),
    (lambda s: s["spots"]["uids"][0].__setitem__(1, "pocket"),
     "snapshot.spots.uids[0][1]: must be one of ante, odds, play, pocket_bonus, sweet16,"
     " trips_plus, not 'pocket'"),
    (lambda s: s["spots"]["uids"][0].__setitem__(2, ["E004000000000001"]),
     "snapshot.spots.uids[0][2][0]: 'E004000000000001' is not a chip UID in lower-case hex"),
    (lambda s: s["staff"].update(signed_in=["D99"]),
     "snapshot.staff.signed_in[0]: signed-in staff 'D99' is not on the table's roster"),
    (lambda s: s["ledger"]["order"].update(E1=["t07-000009"]),
     "snapshot.ledger.order['E1']: hand t07-000009 is not a settled hand of entry E1"),
    (lambda s: s["payout"]["spots"][0].update(expected=1),
     "snapshot.payout.spots[0]: expects 1, not the stake plus the net"),
    (lambda s: s["decks"]["recent"][0].update(cards="Zz" + s["decks"]["recent"][0]["cards"]),
     "snapshot.decks.recent[0].cards: 'Zz' is not a card"),
    (lambda s: s["commands_seen"].update(desk=[3, 1]),
     "snapshot.commands_seen['desk']: command seqs must be one or more, distinct and in"
     " order"),
    (lambda s: s.update(payout=None),
     "snapshot.chips: holds a payout's chips with no payout waiting"),
    (lambda s: s["device_faults"].append(["printer", "jam"]),
     "snapshot.device_faults: 'printer' is not a shoe or rfid fault"),
])
def test_a_malformed_snapshot_is_refused_naming_the_field(change: Any, message: str) -> None:
    feed, state = played()
    broken = copy.deepcopy(state)
    change(broken)
    assert refused(feed, broken) == message


def test_a_snapshot_that_is_not_an_object_is_refused() -> None:
    feed, _ = played()
    assert refused(feed, ["not", "a", "snapshot"]) == "snapshot: must be an object, not a list"


def test_a_snapshot_loads_only_into_a_fresh_core() -> None:
    feed, state = played()
    with pytest.raises(SnapshotError, match="freshly constructed"):
        restore_snapshot(feed.core, state)


def test_the_snapshot_is_canonical_json() -> None:
    feed, state = played()
    text = json.dumps(take_snapshot(feed.core), sort_keys=True)
    assert json.loads(text) == state
    assert text == json.dumps(state, sort_keys=True)


# Every attribute of the core and of what it owns, and where the snapshot has it (the module
# docstring of game.table.snapshot says why each derived one follows). A new attribute fails
# this test until the snapshot stores it or says how it is derived.
ACCOUNTED = {
    "core": {"_commands_seen": "commands_seen", "_fed": "empty",
             "alerts_raised": "counters", "chips": "chips", "deal": "config",
             "decks": "decks", "device_faults": "device_faults", "disputed": "disputed",
             "hands_opened": "counters", "heat_id": "heat", "held": "empty",
             "inputs_applied": "counters", "last_hand_at": "last_hand_at", "ledger": "ledger",
             "payout": "payout", "paytables": "config", "proofs": "proofs", "recent": "recent",
             "session": "heat", "settings": "config", "spots": "spots", "staff": "staff",
             "table_id": "config", "unacknowledged": "unacknowledged",
             "verify_payouts": "config", "tallies": "tallies"},
    "session": {"_ended": "heat", "_hand": "empty", "_hands_opened": "heat",
                "_seats": "heat", "deal": "config", "paytables": "config",
                "rules": "heat.stage", "table_id": "config"},
    "spots": {"_clones": "derived", "_holders": "derived", "_manual": "spots",
              "_reported": "spots", "_uids": "spots", "chip_float": "chips",
              "marker_set": "config", "registry": "config", "seat_entries": "derived",
              "_wager_cache": "derived"},
    "chips": {"_pay_after": "chips", "_pay_before": "chips", "_pay_entries": "chips",
              "chip_float": "chips", "seats": "chips", "spots": "spots", "change": "chips"},
    "chip_float": {"_in_play": "derived", "_owner": "chips", "_static": "derived",
                   "issued": "chips", "reconciled": "chips", "registry": "config",
                   "version": "derived", "require_issued": "config",
                   "open_seats": "derived", "open_spots": "derived"},
    "staff": {"lockout": "staff", "roster": "staff", "signed_in": "staff"},
    "lockout": {"_failures": "staff", "policy": "config"},
    "decks": {"holds": "decks", "last_window": "decks", "limits": "constant",
              "recent": "decks", "shuffles": "decks", "window": "decks", "_traces": "derived",
              "windows_failed": "decks", "windows_failed_in_row": "decks",
              "windows_tested": "decks"},
    "ledger": {"_order": "ledger", "_played": "ledger", "heat_id": "ledger",
               "stage": "ledger"},
    "payout": {"hand_id": "payout", "heat_id": "payout", "spots": "payout"},
}


def test_every_attribute_of_the_core_and_what_it_owns_is_accounted_for() -> None:
    feed, state = played()
    core = feed.core
    assert core.session is not None and core.payout is not None
    owned = {"core": core, "session": core.session, "spots": core.spots,
             "chips": core.chips, "chip_float": core.chips.chip_float, "staff": core.staff,
             "lockout": core.staff.lockout, "decks": core.decks, "ledger": core.ledger,
             "payout": core.payout}
    for name, part in owned.items():
        names = set(vars(part)) if hasattr(part, "__dict__") else set(part.__slots__)
        assert names == set(ACCOUNTED[name]), name
        assert {where.split(".")[0] for where in ACCOUNTED[name].values()} <= (
            set(state) | {"empty", "derived", "constant"}), name
    assert core.spots.chip_float is core.chips.chip_float
    assert core.chips.spots is core.spots
    assert core.spots.seat_entries == core.chips.seats


def test_the_fingerprint_ignores_where_a_file_was_read_but_not_what_it_says(
        tmp_path: Path) -> None:
    text = (REPO / "config" / "paytables.toml").read_text("utf-8")
    moved = tmp_path / "moved.toml"
    moved.write_text(text, "utf-8")
    edited = tmp_path / "edited.toml"
    edited.write_text(text.replace("three_of_a_kind = 3", "three_of_a_kind = 4", 1), "utf-8")
    assert config_digest(read_paytables(moved)) == config_digest(PAYTABLES)
    assert config_digest(read_paytables(edited)) != config_digest(PAYTABLES)


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    code = ("from runtime.settings_files import read_tournament;"
            "from game.table.snapshot_fields import config_digest;"
            "print(config_digest(read_tournament(None)))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=60)
    assert run.stdout.strip() == config_digest(SETTINGS)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(),
                 st.text(max_size=5), st.just([]), st.just({}), st.just(["x"]),
                 st.just({"x": 1}))


@settings(deadline=None, max_examples=int(os.environ.get('SNAPSHOT_FUZZ', '150')))
@given(data=st.data())
def test_any_damaged_field_is_refused_or_loads_as_written(data: st.DataObject) -> None:
    """A damaged field is a SnapshotError; a change the loader accepts is one the core
    writes back the same (the snapshot has one form for each state)."""
    make, state = data.draw(st.sampled_from(_snapshots()))
    paths = [p for p in _paths(state) if p]
    path = data.draw(st.sampled_from(paths))
    broken = copy.deepcopy(state)
    parent = broken
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JUNK)
    fresh = make()
    try:
        restore_snapshot(fresh, broken)
    except SnapshotError as exc:
        assert str(exc).startswith("snapshot")
    else:
        assert take_snapshot(fresh) == broken, path


@functools.cache
def _snapshots() -> list[tuple[Callable[[], TableCore], dict[str, Any]]]:
    """A heat with a payout being checked, and a day of three heats between heats."""
    feed, state = played()
    floor = day(seed=2, heats=3)
    return [(feed._new, state), (new_core, as_json(take_snapshot(floor.core)))]

