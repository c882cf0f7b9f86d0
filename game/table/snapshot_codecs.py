"""The codecs of the parts a table core owns, for its snapshot (`game.table.snapshot`): the
chip float and the spots, the people (roster, sign-ins, failed sign-ins), the payout being
checked, the deck checks' windows and the heat's ledger of settled hands.

Each part has a ``*_state`` function giving plain JSON data and a ``load_*`` function that
reads it back strictly (`game.table.snapshot_fields.Node`) into the freshly built object the core
owns. A loader checks types, ranges and references (a chip the registry does not hold, a
staff member not on the roster) and raises SnapshotError naming the field.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from game.chips.float import ChipFloat, Reconciliation
from game.chips.spot_book import SpotBook, SpotKey
from game.decks.check import DeckFinding, DeckWatch, Shuffle
from game.hand.deal import MAX_SEATS
from game.messages.desk import Seat
from game.staff import StaffRoster
from game.table.chip_duties import TableChips
from game.table.corrections import HandLedger, PlayedHand
from game.table.payout_check import PayoutCheck, SpotPay
from game.table.people import TableStaff
from game.table.snapshot_fields import Node, cards_text, plain, uid_text
from game.wagers.settle import SIDE_BETS, WAGERS

__all__ = [
    "chips_state", "decks_state", "ledger_state", "load_chips", "load_decks", "load_ledger",
    "load_payout", "load_seat_proof", "load_spots", "load_staff", "payout_state",
    "seat_proof_state", "spots_state", "staff_state",
]

_RESULTS: Final = frozenset({"win", "lose", "push"})
_RULINGS: Final = frozenset({"hand_voided", "hand_corrected"})


def _uids(uids: frozenset[bytes] | tuple[bytes, ...]) -> list[str]:
    return [uid_text(u) for u in sorted(uids)]


def _seat(node: Node) -> int:
    return node.number(low=1, high=MAX_SEATS)


def _seat_map(node: Node) -> dict[int, str]:
    """[[seat, entry id], ...] in the order the seats were taken (JSON keys are text)."""
    out: dict[int, str] = {}
    for item in node.array():
        pair = item.array()
        if len(pair) != 2:
            raise item.fail("must be [seat, entry id]")
        seat = _seat(pair[0])
        if seat in out:
            raise item.fail(f"seat {seat} is listed twice")
        out[seat] = pair[1].text()
    return out


def _seat_state(seats: dict[int, str]) -> list[list[Any]]:
    return [[s, e] for s, e in seats.items()]


def _spot_uids_state(spots: dict[SpotKey, frozenset[bytes]]) -> list[list[Any]]:
    return [[seat, spot, _uids(uids)] for (seat, spot), uids in sorted(spots.items())]


def _load_spot_uids(node: Node) -> dict[SpotKey, frozenset[bytes]]:
    out: dict[SpotKey, frozenset[bytes]] = {}
    for item in node.array():
        parts = item.array()
        if len(parts) != 3:
            raise item.fail("must be [seat, spot, [uids]]")
        key = _seat(parts[0]), parts[1].choice(WAGERS)
        if out and key <= next(reversed(out)):
            raise item.fail(f"seat {key[0]} {key[1]} is listed twice or out of order")
        out[key] = parts[2].uids()
    return out


# ---- the chip float and the spots ---------------------------------------------------------


def chips_state(duties: TableChips) -> dict[str, Any]:
    """The float's bindings and reconciliations, and the chip component's bookkeeping."""
    chips = duties.chip_float
    return {
        "owners": {uid_text(u): e for u, e in sorted(chips.holders().items())},
        "issued": {e: _uids(u) for e, u in sorted(chips.issued.items())},
        "reconciled": [_reconciliation_state(r, chips)
                       for _, r in sorted(chips.reconciled.items())],
        "chip_seats": _seat_state(duties.seats),
        "pay_before": _spot_uids_state(duties._pay_before),
        "pay_after": _spot_uids_state(duties._pay_after),
        "pay_entries": _seat_state(duties._pay_entries),
        **({"change": [{"seat": seat, "spot": spot, "entry_id": entry,
                        "taken": _uids(taken), "placed": _uids(placed)}
                       for (seat, spot), (entry, taken, placed) in sorted(duties.change.items())]}
           if duties.change else {}),
    }


def _reconciliation_state(done: Reconciliation, chips: ChipFloat) -> dict[str, Any]:
    """One entry's reconciliation; what it held is what came back plus what is missing, and
    what it was issued is written only when it is not the float's stack for the entry."""
    issued = None if done.issued == chips.issued_to(done.entry_id) else done.issued
    return {"entry_id": done.entry_id, "seat": done.seat,
            "issued": None if issued is None else [uid_text(u) for u in issued],
            "returned": [uid_text(u) for u in done.returned],
            "missing": [uid_text(u) for u in done.missing],
            "foreign": [uid_text(u) for u in done.foreign]}


def load_chips(node: Node, duties: TableChips) -> None:
    """Bind the float's chips and restore the chip component's bookkeeping."""
    chips = duties.chip_float
    f = node.obj("owners", "issued", "reconciled", "chip_seats", "pay_before", "pay_after",
                 "pay_entries", optional=("change",))
    registry = chips.registry
    owners: dict[bytes, str] = {}
    for key, value in f["owners"].items():
        uid = Node(key, f"{f['owners'].path} key").uid()
        chip = registry.lookup(uid)
        if chip is None or chip.chip_set != registry.chip_set:
            raise f["owners"].fail(f"chip {key} is not a registered chip of the set in play"
                                   f" {registry.chip_set!r}")
        owners[uid] = value.text()
    issued: dict[str, tuple[bytes, ...]] = {}
    for entry, value in f["issued"].items():
        stack = value.uids()
        unknown = sorted(uid_text(u) for u in stack if registry.lookup(u) is None)
        if unknown:
            raise value.fail(f"chip {unknown[0]} is not in the registry")
        issued[entry] = tuple(sorted(stack))
    chips.issued = issued  # the scratch core's float: a reconciliation reads its stacks
    reconciled: dict[str, Reconciliation] = {}
    cents: dict[bytes, int] = {}  # uid -> its worth, as `ChipFloat.value` counts it
    for item in f["reconciled"].array():
        done = _load_reconciliation(item, chips, cents)
        if reconciled and done.entry_id <= next(reversed(reconciled)):
            raise item.fail(f"entry {done.entry_id} is reconciled twice or out of order")
        reconciled[done.entry_id] = done
    chips._owner = owners
    chips.reconciled = reconciled
    chips.version += 1
    duties.seats = _seat_map(f["chip_seats"])
    duties._pay_before = _load_spot_uids(f["pay_before"])
    duties._pay_after = _load_spot_uids(f["pay_after"])
    duties._pay_entries = _seat_map(f["pay_entries"])
    duties.change = {}
    for item in f["change"].array() if "change" in f else []:
        g = item.obj("seat", "spot", "entry_id", "taken", "placed")
        where = (g["seat"].number(low=1, high=6), g["spot"].choice(WAGERS))
        if where in duties.change:
            raise item.fail(f"seat {where[0]} {where[1]} has two changes")
        duties.change[where] = (g["entry_id"].text(), frozenset(g["taken"].uids()),
                                frozenset(g["placed"].uids()))


def _load_reconciliation(node: Node, chips: ChipFloat, cents: dict[bytes, int]
                         ) -> Reconciliation:
    f = node.obj("entry_id", "seat", "issued", "returned", "missing", "foreign")
    entry = f["entry_id"].text()
    returned, missing, foreign = (f[name].sorted_uids()
                                  for name in ("returned", "missing", "foreign"))
    if not set(returned).isdisjoint(missing):
        raise node.fail("a chip is both returned and missing")
    held = tuple(sorted(returned + missing))
    stack = f["issued"].opt()
    issued = chips.issued_to(entry) if stack is None else tuple(stack.uid_list())
    returned_cents, missing_cents = _worth(chips, returned, cents), _worth(chips, missing, cents)
    return Reconciliation(
        entry_id=entry, seat=_seat(f["seat"]), issued=issued, held=held,
        returned=returned, missing=missing, foreign=foreign,
        issued_cents=_worth(chips, issued, cents),
        held_cents=returned_cents + missing_cents,  # held is their disjoint union
        returned_cents=returned_cents, missing_cents=missing_cents)


def _worth(chips: ChipFloat, uids: Iterable[bytes], cents: dict[bytes, int]) -> int:
    """`ChipFloat.value` of ``uids``, each chip's worth looked up once per restore (a month's
    checkpoint holds thousands of reconciliations of the same chips: D416)."""
    total = 0
    for uid in set(uids):
        worth = cents.get(uid)
        if worth is None:
            worth = cents[uid] = chips.value((uid,))
        total += worth
    return total


def spots_state(spots: SpotBook) -> dict[str, Any]:
    """What the readers last saw on each spot, keyed amounts, problems already reported and
    whose chips lie at each seat (duplicated UIDs follow from what lies where)."""
    return {
        "uids": _spot_uids_state(spots._uids),
        "manual": [[seat, spot, cents] for (seat, spot), cents in sorted(spots._manual.items())],
        "reported": [[seat, spot, uid_text(uid)] for seat, spot, uid in sorted(spots._reported)],
        "seat_entries": _seat_state(spots.seat_entries),
    }


def load_spots(node: Node, spots: SpotBook) -> None:
    """Restore the spots; the holders of each UID and the clones are rebuilt from them."""
    f = node.obj("uids", "manual", "reported", "seat_entries")
    uids = _load_spot_uids(f["uids"])
    manual: dict[SpotKey, int] = {}
    for item in f["manual"].array():
        parts = item.array()
        if len(parts) != 3:
            raise item.fail("must be [seat, spot, cents]")
        key = _seat(parts[0]), parts[1].choice(WAGERS)
        if key in uids or (manual and key <= next(reversed(manual))):
            raise item.fail(f"seat {key[0]} {key[1]} is keyed twice, out of order or also"
                            " read")
        manual[key] = parts[2].number()
    reported: set[tuple[int, str, bytes]] = set()
    last: tuple[int, str, bytes] | None = None
    for item in f["reported"].array():
        parts = item.array()
        if len(parts) != 3:
            raise item.fail("must be [seat, spot, uid]")
        seen = (_seat(parts[0]), parts[1].choice(WAGERS), parts[2].uid())
        if last is not None and seen <= last:
            raise item.fail("is listed twice or out of order")
        reported.add(seen)
        last = seen
    holders: dict[bytes, set[SpotKey]] = {}
    for key, found in uids.items():
        for uid in found:
            holders.setdefault(uid, set()).add(key)
    spots._uids = uids
    spots._manual = manual
    spots._reported = reported
    spots._holders = holders
    spots._clones = {u for u, held in holders.items() if len(held) > 1}
    spots.seat_entries = _seat_map(f["seat_entries"])
    spots.forget_wagers()


# ---- people ---------------------------------------------------------------------------------


def staff_state(staff: TableStaff) -> dict[str, Any]:
    """The roster, who is signed in, and the failed sign-ins on record: [terminal, staff id
    (None: unknown ids and cards), failures in a row, the last one's time]."""
    failures = staff.lockout._failures
    return {
        "roster": None if staff.roster is None else staff.roster.args(),
        "signed_in": sorted(staff.signed_in),
        "failures": [[t, s, n, last.isoformat()]
                     for (t, s), (n, last) in sorted(failures.items(),
                                                     key=lambda kv: (kv[0][0], kv[0][1] or ""))],
    }


def load_staff(node: Node, staff: TableStaff) -> None:
    """Restore the roster, the signed-in members (each must be on it) and the failures."""
    f = node.obj("roster", "signed_in", "failures")
    roster_node = f["roster"].opt()
    roster = None
    if roster_node is not None:
        try:
            roster = StaffRoster.decode(roster_node.data())
        except ValueError as exc:
            raise roster_node.fail(str(exc)) from None
        if roster.args() != roster_node.value:
            raise roster_node.fail("is not a roster as the table writes one")
    signed_in = {}
    for item in f["signed_in"].array():
        staff_id = item.text()
        member = None if roster is None else roster.member(staff_id)
        if member is None:
            raise item.fail(f"signed-in staff {staff_id!r} is not on the table's roster")
        signed_in[staff_id] = member
    if sorted(signed_in) != f["signed_in"].value:
        raise f["signed_in"].fail("must list distinct staff ids in order")
    failures: dict[tuple[str, str | None], tuple[int, datetime]] = {}
    for item in f["failures"].array():
        row = item.array()
        if len(row) != 4:
            raise item.fail("must be [terminal, staff id or null, failures, last failure]")
        terminal, count = row[0].text(empty=True), row[2].number(low=1)
        key = (terminal, row[1].opt_text())
        if key in failures:
            raise item.fail(f"terminal {key[0]!r}, staff {key[1]!r} is listed twice")
        failures[key] = (count, row[3].moment())
    staff.roster = roster
    staff.signed_in = signed_in
    staff.lockout._failures = failures


def seat_proof_state(proof: Seat) -> dict[str, Any]:
    """An entry's seating as the desk sent it (its acknowledgement credentials)."""
    return proof.args()


def load_seat_proof(node: Node) -> Seat:
    """One seating, checked as the desk command is."""
    try:
        proof = Seat.decode(node.data())
    except ValueError as exc:
        raise node.fail(str(exc)) from None
    if proof.args() != node.value:
        raise node.fail("is not a seating as the table writes one")
    return proof


# ---- the payout being checked ---------------------------------------------------------------


def payout_state(check: PayoutCheck | None) -> dict[str, Any] | None:
    """Every spot of the settled hand's payout check, as it stands."""
    if check is None:
        return None
    return {"hand_id": check.hand_id, "heat_id": check.heat_id,
            "spots": [{"seat": s.seat, "spot": s.spot, "result": s.result, "stake": s.stake,
                       "net": s.net, "expected": s.expected, "held": s.held, "paid": s.paid,
                       "keyed": s.keyed, "over_alerted": s.over_alerted}
                      for s in check.spots.values()]}


def load_payout(node: Node) -> PayoutCheck | None:
    """The payout check (None: no payout is waiting)."""
    found = node.opt()
    if found is None:
        return None
    f = found.obj("hand_id", "heat_id", "spots")
    spots: dict[SpotKey, SpotPay] = {}
    for item in f["spots"].array():
        s = item.obj("seat", "spot", "result", "stake", "net", "expected", "held", "paid",
                     "keyed", "over_alerted")
        pay = SpotPay(seat=_seat(s["seat"]), spot=s["spot"].choice(WAGERS),
                      result=s["result"].choice(_RESULTS), stake=s["stake"].number(),
                      net=s["net"].number(low=None), expected=s["expected"].number(),
                      held=s["held"].number(), paid=s["paid"].flag(), keyed=s["keyed"].flag(),
                      over_alerted=s["over_alerted"].flag())
        if pay.expected != max(0, pay.stake + pay.net):
            raise item.fail(f"expects {pay.expected}, not the stake plus the net")
        if (pay.seat, pay.spot) in spots:
            raise item.fail(f"seat {pay.seat} {pay.spot} is listed twice")
        spots[(pay.seat, pay.spot)] = pay
    check = PayoutCheck(hand_id=f["hand_id"].text(), heat_id=f["heat_id"].opt_text(), spots=())
    check.spots = spots  # as checked so far (the constructor would recompute `paid`)
    return check


# ---- deck checks ----------------------------------------------------------------------------


def _shuffle_state(shuffle: Shuffle) -> dict[str, Any]:
    return {"hand_id": shuffle.hand_id, "cards": cards_text(shuffle.cards),
            "strays": cards_text(shuffle.strays)}


def _load_shuffle(node: Node) -> Shuffle:
    f = node.obj("hand_id", "cards", "strays")
    return Shuffle(hand_id=f["hand_id"].text(),
                   cards=f["cards"].cards(), strays=f["strays"].cards(most=1_000))


def _finding_state(found: DeckFinding) -> dict[str, Any]:
    return {"kind": found.kind, "test": found.test, "message": found.message,
            "evidence": plain(found.evidence)}


def decks_state(decks: DeckWatch) -> dict[str, Any]:
    """The shuffles the repeat and chi-square checks still compare with, and the holds."""
    return {
        "recent": [_shuffle_state(s) for s in decks.recent],
        "window": [_shuffle_state(s) for s in decks.window],
        "windows_failed_in_row": decks.windows_failed_in_row,
        "windows_tested": decks.windows_tested, "windows_failed": decks.windows_failed,
        "last_window": plain(decks.last_window),
        "holds": [_finding_state(f) for f in decks.holds],
        "shuffles": decks.shuffles,
    }


def load_decks(node: Node, decks: DeckWatch) -> None:
    """Restore the deck checks' windows, counters and holds."""
    f = node.obj("recent", "window", "windows_failed_in_row", "windows_tested",
                 "windows_failed", "last_window", "holds", "shuffles")
    limits = decks.limits
    recent = [_load_shuffle(n) for n in f["recent"].array(most=limits.repeat_window)]
    window = [_load_shuffle(n) for n in f["window"].array(most=limits.chi_window - 1)]
    holds = []
    for item in f["holds"].array():
        h = item.obj("kind", "test", "message", "evidence")
        evidence = h["evidence"].data()
        if not isinstance(evidence, dict):
            raise h["evidence"].fail("must be an object")
        holds.append(DeckFinding(kind=h["kind"].choice({"deck_suspect"}), test=h["test"].text(),
                                 message=h["message"].text(), evidence=evidence))
    last = f["last_window"].data()
    if last is not None and not isinstance(last, dict):
        raise f["last_window"].fail("must be an object or null")
    tested = f["windows_tested"].number()
    decks.recent = deque(recent, maxlen=limits.repeat_window)
    decks.window = window
    decks.windows_failed_in_row = f["windows_failed_in_row"].number(high=tested)
    decks.windows_tested = tested
    decks.windows_failed = f["windows_failed"].number(high=tested)
    decks.last_window = last
    decks.holds = holds
    decks.shuffles = f["shuffles"].number()


# ---- the heat's settled hands -----------------------------------------------------------------


def ledger_state(ledger: HandLedger) -> dict[str, Any]:
    """The settled hands of the table's heat per entry, with the rulings on them."""
    return {
        "heat_id": ledger.heat_id, "stage": ledger.stage,
        "played": [{"hand_id": p.hand_id, "entry_id": p.entry_id, "seat": p.seat,
                    "settled_net": p.settled_net, "net": p.net,
                    "markers_used": sorted(p.markers_used), "ruling": p.ruling}
                   for p in ledger._played.values()],
        "order": {e: list(hands) for e, hands in ledger._order.items()},
    }


def load_ledger(node: Node, stages: frozenset[str]) -> HandLedger:
    """The heat's ledger; each entry's hands in order must be hands it played."""
    f = node.obj("heat_id", "stage", "played", "order")
    stage = f["stage"].opt()
    ledger = HandLedger(f["heat_id"].opt_text(), None if stage is None else stage.choice(stages))
    played: dict[tuple[str, str], PlayedHand] = {}
    for item in f["played"].array():
        p = item.obj("hand_id", "entry_id", "seat", "settled_net", "net", "markers_used",
                     "ruling")
        markers = [n.choice(SIDE_BETS) for n in p["markers_used"].array()]
        ruling = p["ruling"].opt()
        hand = PlayedHand(hand_id=p["hand_id"].text(), entry_id=p["entry_id"].text(),
                          seat=_seat(p["seat"]), settled_net=p["settled_net"].number(low=None),
                          net=p["net"].number(low=None), markers_used=frozenset(markers),
                          ruling=None if ruling is None else ruling.choice(_RULINGS))
        key = (hand.hand_id, hand.entry_id)
        if key in played:
            raise item.fail(f"hand {key[0]} of entry {key[1]} is listed twice")
        played[key] = hand
    order: dict[str, list[str]] = {}
    for entry, hands in f["order"].items():
        order[entry] = [n.text() for n in hands.array()]
        unknown = [h for h in order[entry] if (h, entry) not in played]
        if unknown:
            raise hands.fail(f"hand {unknown[0]} is not a settled hand of entry {entry}")
    ledger._played = played
    ledger._order = order
    return ledger

