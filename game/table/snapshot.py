"""A snapshot of the table's decision core (`game.table.core.TableCore`) at a safe point, so
the daemon starts from it and replays only the journal records written after it.

`take_snapshot` gives plain JSON data (canonical under ``json.dumps(sort_keys=True)``);
`restore_snapshot` loads it into a freshly constructed core (same constructor arguments) after
checking it strictly: its version, the **config fingerprint** (the table id and digests of
everything the constructor got), and every field's type, range and references. A snapshot
that fails any check raises SnapshotError naming the field and why, and the core it was
loaded into is left untouched (the state is built on a scratch core and moved over whole).

A safe point is a moment with no hand in progress (`is_safe_point`): between hands (a payout
may still be waiting to be checked) and between heats.

What the snapshot holds, attribute by attribute (everything else is provably derived):

* core: ``table_id``, ``settings``, ``paytables``, ``deal``, ``verify_payouts``, and the
  registry, marker set and lockout policy below are the constructor's (in ``config``, as
  digests); ``hands_opened``, ``inputs_applied``, ``alerts_raised`` (``counters``);
  ``heat_id`` and ``session`` (``heat``: stage, seats in seating order with each entry's
  ledger, the session's hands opened, the entries ended); ``unacknowledged`` (score bodies);
  ``proofs`` (seat commands); ``disputed``; ``recent`` (hand records, at most ten);
  ``device_faults``; ``last_hand_at``; ``_commands_seen`` (per signer, the sorted seqs);
  ``payout`` (every spot as checked so far); ``decks`` (windows, counters, holds);
  ``ledger`` (the heat's settled hands and rulings); ``tallies`` (the chip counts pending and
  confirmed, the last closing count, the deck steps the deck book is replayed from; optional:
  older snapshots have none).
* ``held`` and ``_fed`` are empty at a safe point (held commands apply when the hand ends,
  and what was fed is forgotten then), so `is_safe_point` requires it and nothing is stored.
* the hand in progress (``session._hand``) is None at a safe point.
* the chip component (``chips``, `game.table.chip_duties.TableChips`): ``seats`` (stored
  as ``chip_seats``), ``_pay_before``, ``_pay_after``, ``_pay_entries``, ``change`` (the
  change being made on a spot between hands, written only when there is one) (``chips``); its
  ``spots`` are the core's. Its ``chip_float``: the bindings (``_owner``), ``issued`` and
  ``reconciled`` (its cents are recomputed from the registry); the float's ``_static`` and
  ``_in_play`` follow from the registry, its ``require_issued`` from the registry and
  ``verify_payouts``, its ``open_seats`` and ``open_spots`` from the seats waiting for a stack,
  the payout's spots and the change being made (set again on loading), and its ``version``
  (a cache's key) only moves on, on loading too.
* spots: ``_uids``, ``_manual``, ``_reported``; ``seat_entries`` always equals the chip
  component's ``seats`` (both change together), and ``_holders`` and ``_clones`` follow from
  ``_uids`` (a UID's holders are the spots whose last read holds it; a clone is a UID with
  two holders or more); ``_wager_cache`` (each seat's wagers as last read) is emptied on
  loading and read again from the rest.
* staff: the roster, the signed-in ids (each member is the roster's), the failed sign-ins.
* decks: ``_traces`` (what the repeat checks compare of each shuffle in ``recent``) is made
  again from ``recent`` when first needed; each is tied to its shuffle's cards by identity.

State that grows: ``_commands_seen`` gets one seq per signed desk command for the life of the
table, ``last_hand_at`` and the float's ``reconciled`` one item per entry that played here.
They are kept whole (the core needs them to refuse a duplicate command and to show an
entry's last hand); bench/snapshot.py measures the size after a long day.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, Final

from game.hand.deal import MAX_SEATS
from game.messages.table import ScoreRecorded
from game.table.core import RECENT_HANDS, TableCore
from game.table.session import EntryEnded, TableSession
from game.table.snapshot_codecs import (
    chips_state,
    decks_state,
    ledger_state,
    load_chips,
    load_decks,
    load_ledger,
    load_payout,
    load_seat_proof,
    load_spots,
    load_staff,
    payout_state,
    seat_proof_state,
    spots_state,
    staff_state,
)
from game.table.snapshot_fields import Node, SnapshotError, config_digest, plain
from game.tournament.entries import Entry, EntryStatus, Stage

__all__ = ["SNAPSHOT_VERSION", "SnapshotError", "config_fingerprint", "is_safe_point",
           "restore_snapshot", "take_snapshot"]

SNAPSHOT_VERSION: Final[int] = 1
_STAGES: Final = frozenset(s.value for s in Stage)
_PLAY_DEVICES: Final = frozenset({"shoe", "rfid"})
_FIELDS: Final = ("version", "config", "counters", "heat", "unacknowledged", "proofs",
                  "disputed", "recent", "device_faults", "last_hand_at", "commands_seen",
                  "staff", "payout", "chips", "spots", "decks", "ledger")
_fingerprints: weakref.WeakKeyDictionary[TableCore, dict[str, Any]] = (
    weakref.WeakKeyDictionary())


def is_safe_point(core: TableCore) -> bool:
    """True when no hand is in progress (between hands or between heats)."""
    return core.hand is None and not core.held and not core._fed


def config_fingerprint(core: TableCore) -> dict[str, Any]:
    """The table id and a digest of each constructor argument (computed once per core)."""
    found = _fingerprints.get(core)
    if found is None:
        found = {
            "table_id": core.table_id,
            "settings": config_digest(core.settings),
            "paytables": config_digest(core.paytables),
            "deal": config_digest(core.deal),
            "registry": config_digest(core.chips.chip_float.registry),
            "marker_set": core.spots.marker_set,
            "verify_payouts": core.verify_payouts,
            "lockout": config_digest(core.staff.lockout.policy),
        }
        _fingerprints[core] = found
    return dict(found)


def take_snapshot(core: TableCore) -> dict[str, Any]:
    """The core's whole state as plain JSON data; SnapshotError when a hand is in progress."""
    if not is_safe_point(core):
        hand = core.hand
        raise SnapshotError("a snapshot is taken between hands: hand"
                            f" {hand.hand_id if hand else '?'} is in progress")
    return {
        "version": SNAPSHOT_VERSION,
        "config": config_fingerprint(core),
        "counters": {"hands_opened": core.hands_opened, "inputs_applied": core.inputs_applied,
                     "alerts_raised": core.alerts_raised},
        "heat": _heat_state(core),
        "unacknowledged": [s.encode() for s in core.unacknowledged.values()],
        "proofs": [seat_proof_state(p) for p in core.proofs.values()],
        "disputed": [[e, note] for e, note in core.disputed.items()],
        "recent": plain(list(core.recent)),
        "device_faults": [[role, why] for role, why in core.device_faults.items()],
        "last_hand_at": [[e, at] for e, at in core.last_hand_at.items()],
        "commands_seen": _commands_state(core._commands_seen),
        "staff": staff_state(core.staff),
        "payout": payout_state(core.payout),
        "chips": chips_state(core.chips),
        "spots": spots_state(core.spots),
        "decks": decks_state(core.decks),
        "ledger": ledger_state(core.ledger),
        "tallies": core.tallies.state(),
    }


def restore_snapshot(core: TableCore, state: Mapping[str, Any]) -> None:
    """Load ``state`` into a freshly constructed ``core``; SnapshotError (naming the field)
    for a malformed, wrong-version or other-configuration snapshot, the core untouched."""
    if core.inputs_applied or core.session is not None:
        raise SnapshotError("a snapshot is loaded into a freshly constructed table core")
    top = Node(state)
    if isinstance(state, Mapping) and "version" in state:  # first: another version's fields
        version = state["version"]  # differ
        if type(version) is not int or version != SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot.version: snapshot version {version!r}; this table"
                                f" reads version {SNAPSHOT_VERSION}")
    f = top.obj(*_FIELDS, optional=("tallies",))  # tallies: none in older snapshots
    _check_config(f["config"], core)
    scratch = _scratch(core)
    _load(f, scratch)
    core.__dict__.update(scratch.__dict__)


# ---- the parts the core holds itself ------------------------------------------------------


def _heat_state(core: TableCore) -> dict[str, Any] | None:
    session = core.session
    if session is None:
        return None
    return {
        "heat_id": core.heat_id, "stage": session.rules.stage.value,
        "hands_opened": session._hands_opened,
        "seats": [{"seat": seat, "entry_id": e.entry_id, "balance": e.balance_cents,
                   "markers_left": e.markers_left, "status": e.status.value,
                   "nets": list(e.nets_cents), "score": e.score_cents}
                  for seat, e in session.seats.items()],
        "ended": [{"entry_id": e.entry_id, "seat": e.seat, "status": e.status.value,
                   "score": e.score_cents, "hands_played": e.hands_played,
                   "markers_forfeited": e.markers_forfeited, "hand_id": e.hand_id}
                  for e in session.ended],
    }


def _commands_state(seen: set[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for signer, seq in sorted(seen):
        out.setdefault(signer, []).append(seq)
    return out


def _check_config(node: Node, core: TableCore) -> None:
    expected = config_fingerprint(core)
    given = node.obj(*expected)
    for name, value in expected.items():
        if given[name].value != value:
            raise given[name].fail(
                f"the snapshot was taken under another configuration ({name}"
                f" {given[name].value!r}, this table has {value!r})")


def _scratch(core: TableCore) -> TableCore:
    """A fresh core built from ``core``'s constructor arguments."""
    return TableCore(table_id=core.table_id, settings=core.settings, paytables=core.paytables,
                     deal=core.deal, registry=core.chips.chip_float.registry,
                     marker_set=core.spots.marker_set, verify_payouts=core.verify_payouts,
                     lockout=core.staff.lockout.policy)


def _load(f: dict[str, Node], core: TableCore) -> None:
    counters = f["counters"].obj("hands_opened", "inputs_applied", "alerts_raised")
    core.hands_opened = counters["hands_opened"].number()
    core.inputs_applied = counters["inputs_applied"].number()
    core.alerts_raised = counters["alerts_raised"].number()
    _load_heat(f["heat"], core)
    core.unacknowledged = {}
    for item in f["unacknowledged"].array():
        score = _load_score(item, core.table_id)
        if score.entry_id in core.unacknowledged:
            raise item.fail(f"entry {score.entry_id} has two unacknowledged scores")
        core.unacknowledged[score.entry_id] = score
    core.proofs = {}
    for item in f["proofs"].array():
        proof = load_seat_proof(item)
        if proof.entry_id in core.proofs:
            raise item.fail(f"entry {proof.entry_id} has two seatings")
        core.proofs[proof.entry_id] = proof
    core.disputed = _pairs(f["disputed"], key="entry id")
    core.recent.clear()
    for item in f["recent"].array(most=RECENT_HANDS):
        record = item.data()
        if not isinstance(record, dict) or not isinstance(record.get("hand_id"), str):
            raise item.fail("must be a hand record with its hand_id")
        core.recent.append(record)
    core.device_faults = _pairs(f["device_faults"], key="device role")
    unknown = sorted(set(core.device_faults) - _PLAY_DEVICES)
    if unknown:
        raise f["device_faults"].fail(f"{unknown[0]!r} is not a shoe or rfid fault")
    core.last_hand_at = _pairs(f["last_hand_at"], key="entry id")
    core._commands_seen = _load_commands(f["commands_seen"])
    load_staff(f["staff"], core.staff)
    core.payout = load_payout(f["payout"])
    load_chips(f["chips"], core.chips)
    core.spots.seat_entries = dict(core.chips.seats)
    load_spots(f["spots"], core.spots)
    core.chips.refresh(core.session)  # derived: where float chips count now
    if core.payout is None and core.chips.holds_payout():
        raise f["chips"].fail("holds a payout's chips with no payout waiting")
    load_decks(f["decks"], core.decks)
    core.ledger = load_ledger(f["ledger"], _STAGES)
    if "tallies" in f:
        try:
            core.tallies.load(f["tallies"].value)
        except (KeyError, TypeError, ValueError) as exc:
            raise f["tallies"].fail(f"not the table's counts and decks: {exc}") from None


def _pairs(node: Node, *, key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in node.array():
        pair = item.array()
        if len(pair) != 2:
            raise item.fail(f"must be [{key}, text]")
        name = pair[0].text()
        if name in out:
            raise item.fail(f"{key} {name!r} is listed twice")
        out[name] = pair[1].text(empty=True)
    return out


def _load_commands(node: Node) -> set[tuple[str, int]]:
    seen: set[tuple[str, int]] = set()
    for signer, seqs in node.items():
        numbers = [n.number() for n in seqs.array()]
        if not numbers or numbers != sorted(set(numbers)):
            raise seqs.fail("command seqs must be one or more, distinct and in order")
        seen.update((signer, n) for n in numbers)
    return seen


def _load_score(node: Node, table_id: str) -> ScoreRecorded:
    body = node.data()
    if not isinstance(body, dict):
        raise node.fail("must be a score.recorded body")
    try:
        score = ScoreRecorded.decode(body, sender=table_id)
    except ValueError as exc:
        raise node.fail(str(exc)) from None
    if score.encode() != body:
        raise node.fail("is not a score as the table writes one")
    return score


def _load_heat(node: Node, core: TableCore) -> None:
    found = node.opt()
    if found is None:
        return
    f = found.obj("heat_id", "stage", "hands_opened", "seats", "ended")
    stage = Stage(f["stage"].choice(_STAGES))
    session = TableSession(table_id=core.table_id, rules=core.settings.stage(stage).rules,
                           paytables=core.paytables, deal=core.deal)
    seats: dict[int, Entry] = {}
    for item in f["seats"].array(most=MAX_SEATS):
        s = item.obj("seat", "entry_id", "balance", "markers_left", "status", "nets", "score")
        seat = s["seat"].number(low=1, high=MAX_SEATS)
        if seat in seats:
            raise s["seat"].fail(f"seat {seat} is listed twice")
        try:
            entry = Entry(entry_id=s["entry_id"].text(), rules=session.rules,
                          balance_cents=s["balance"].number(),
                          markers_left=s["markers_left"].number(),
                          status=EntryStatus(s["status"].choice({"active"})),
                          nets_cents=tuple(n.number(low=None) for n in s["nets"].array()),
                          score_cents=s["score"].opt_int())
        except ValueError as exc:
            if isinstance(exc, SnapshotError):
                raise
            raise item.fail(str(exc)) from None
        if any(e.entry_id == entry.entry_id for e in seats.values()):
            raise item.fail(f"entry {entry.entry_id} is seated twice")
        seats[seat] = entry
    ended = []
    for item in f["ended"].array():
        e = item.obj("entry_id", "seat", "status", "score", "hands_played",
                     "markers_forfeited", "hand_id")
        ended.append(EntryEnded(
            entry_id=e["entry_id"].text(), seat=e["seat"].number(low=1, high=MAX_SEATS),
            status=EntryStatus(e["status"].choice({"finished", "ended_early"})),
            score_cents=e["score"].number(), hands_played=e["hands_played"].number(),
            markers_forfeited=e["markers_forfeited"].number(), hand_id=e["hand_id"].text()))
    session._seats = seats
    session._hands_opened = f["hands_opened"].number()
    session._ended = ended
    core.session, core.heat_id = session, f["heat_id"].text()
