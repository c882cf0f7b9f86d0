"""What the table's screens show, as one JSON-ready document: the dealer's touch screen, the
participant's view and the score slip all read `screen_view`.

Pure and read-only: it looks at a `TableCore` (heat, seats, spots, the hand in play, the
payout check, scores waiting, who is signed in, the last hands) and the table-level alerts the
caller hands in (``notices``: the bodies of recent ``alert`` messages without an alert id, which
the core does not keep), and never changes anything. Every amount is given twice, in cents and
as rand (``{"cents": 2500, "rand": "R25.00"}``); every alert carries what to do about it, and
identical alerts come as one with a ``count`` (D337). ``cards`` is what lies on the table: the
hand in play's, or the last hand's until the next opens (D336).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from game.decks.check import DECK_ROLE
from game.hand import Hand
from game.hand.events import AlertRaised, PlayMade, SeatChecked, SeatFolded
from game.money import format_rand
from game.table.status import held_view
from game.wagers.settle import WAGERS, SeatWagers

if TYPE_CHECKING:
    from game.table.core import TableCore

__all__ = ["ALERT_HELP", "NOTICE_KINDS", "PHASE_LABELS", "SPOT_LABELS", "alert_help",
           "collapse_alerts", "money",
           "screen_view"]

SPOT_LABELS: Final[Mapping[str, str]] = {
    "ante": "Ante", "odds": "Odds", "play": "Play", "trips_plus": "Trips Plus",
    "pocket_bonus": "Pocket Bonus", "sweet16": "Sweet 16",
}
PHASE_LABELS: Final[Mapping[str, str]] = {
    "wagers_open": "Place your bets", "bets_closed": "No more bets: deal the hole cards",
    "hole_cards": "Dealing hole cards", "preflop_decisions": "Preflop decisions",
    "flop": "Dealing the flop", "flop_decisions": "Flop decisions",
    "turn_river": "Dealing turn and river", "river_decisions": "River decisions: settle",
    "showdown": "Showdown", "settled": "Settled", "void": "Void",
}
# What the dealer (or supervisor) does about each alert, by its kind (issue 12, §1).
ALERT_HELP: Final[Mapping[str, str]] = {
    "wager_invalid": "Fix the seat's wagers so they meet the rules (Odds equal to the Ante,"
                     " the table limits), then resolve the alert.",
    "late_wager": "Chips were placed after no more bets on a seat that is not in the hand:"
                  " return them to the player, then resolve.",
    "wager_changed": "A wager changed after no more bets: put it back as it was (the alert"
                     " shows before and after), then resolve.",
    "play_size": "The Play must be 3x the Ante preflop, 2x on the flop, 1x on the river, or"
                 " nothing: have the player correct it, then resolve.",
    "play_unaffordable": "The Play is more than the seat's chips can cover: the player"
                         " reduces or withdraws it, then resolve.",
    "card_before_bets": "A card came out before no more bets: set it aside, then resolve;"
                        " call no more bets before dealing.",
    "duplicate_card": "A card was read twice: check the shoe and the layout, set the repeated"
                      " read aside, then a supervisor resolves (or corrects a misread).",
    "extra_card": "Every card of the hand is already out: set the extra card aside, then"
                  " resolve.",
    "card_held": "A card came out while the hand is paused: set it aside (it is discarded)"
                 " and fix the open alert first, then resolve.",
    "card_without_hand": "A card was read with no hand open: set it aside; open the hand"
                         " with No more bets before dealing.",
    "unknown_chip": "A chip the registry does not know is on the spot: take it off and hand"
                    " it to the pit; it counts for nothing.",
    "other_chip_set": "A chip of another chip set is on the spot: take it off; only this"
                      " tournament's chips count.",
    "issued_to_other_entry": "A chip issued to another entry is on the spot: take it off and"
                             " call a supervisor.",
    "not_issued": "A chip not issued to any entry is on the spot: take it off and call a"
                  " supervisor.",
    "chip_clone": "One chip UID is on two spots at once (a cloned chip or a misread): it counts"
                  " on neither. Take the chips off both spots, check them with the pit, and"
                  " call a supervisor; a real clone goes to surveillance.",
    "chip_pooling": "A chip issued to another entry is on this seat (rule 19: no pooling or"
                    " transfer): it counts for nobody. Give it back to its entry and call a"
                    " supervisor.",
    "chip_issue_wrong": "The starting stack cannot be issued as it lies: do what the alert"
                        " says (only float chips, exactly the starting stack on the seat's"
                        " spots), then press Issue chips again.",
    "chips_missing": "Chips issued to the entry did not come back to the float: count the"
                     " seat and the tray, look for them, and a supervisor reports the missing"
                     " UIDs to the cage.",
    "misplaced_marker": "A bonus marker counts only on a side bet of its own entry: move it"
                        " or take it off.",
    "payout_overpaid": "The spot holds more than it must: take the extra chips back.",
    "payout_underpaid": "The spot holds less than it must: pay the rest onto it.",
    "loser_not_taken": "The wager lost: take the losing chips off the spot.",
    "device_fault": "No more bets and settle wait for this device: reconnect it (cable, power);"
                    " if it cannot be fixed, a supervisor clears the fault with a reason and"
                    " goes on by manual entry (Manual card, Manual wager).",
    "device_reads_lost": "The shoe was away or silent, and it keeps nothing for later: a card"
                         " dealt meanwhile was not read. Compare the cards on the layout with"
                         " the hand on the screen, key any missing card (Manual card) or"
                         " correct a misplaced one (Correct a card), then a supervisor clears"
                         " the fault with a reason.",
    "deck_suspect": "The deck may be unshuffled, preset or not a full single deck (the alert"
                    " names the test, the cards and the hands): stop dealing from it, count the"
                    " deck, replace it with a freshly shuffled one, then a supervisor clears the"
                    " deck hold with a reason.",
    "deck_review": "The shuffle check over the last window of hands failed at 95% (one window"
                   " in twenty does by chance): a supervisor reviews the shuffling; two"
                   " failing windows in a row hold the table.",
    "manual_entry": "A reader is being replaced by keyed entry: a supervisor keys each card"
                    " and wager (Manual card, Manual wager); the hand is marked manual.",
    "chip_count_discrepancy": "The tray count confirmed by the supervisor differs from what"
                              " the table expected by more than the house allows: count again"
                              " with the supervisor, look for the chips, and report the"
                              " difference (the alert names each chip value off).",
    "chip_count_missing": "The heat closed without its confirmed opening or closing tray count:"
                          " the supervisor reports why; count the tray before the next heat.",
    "deck_balance": "The decks recorded do not balance (more opened than received, used than"
                    " opened, or destroyed than used, or a seal number out of place): count the"
                    " decks with a supervisor and record what was missed.",
    "device_recovered": "For information, play goes on: the device had trouble and the driver"
                        " put it right by itself (frames sent again, a reader back). Many of"
                        " these in a shift: have the technician check the cable and device.",
}
# Alert kinds that are notices: shown, never blocking play, nothing to resolve (D347).
NOTICE_KINDS: Final = frozenset({"device_recovered"})
_DEVICE_HELP: Final = ("The {device} reports a problem: check its cable and power. If it cannot"
                       " be fixed, a supervisor keys cards or wagers by hand (Manual card,"
                       " Manual wager).")
_DEFAULT_HELP: Final = "Check the table; a supervisor resolves the alert or voids the hand."
_NOTICES: Final = 12  # table-level alerts shown at most


def money(cents: int) -> dict[str, Any]:
    """An amount as the screens get it: cents and rand."""
    return {"cents": cents, "rand": format_rand(cents)}


def alert_help(kind: str, device: str | None = None) -> str:
    """What to do about an alert of ``kind`` (a device alert names its device)."""
    if kind in ALERT_HELP:
        return ALERT_HELP[kind]
    if kind.startswith("device_"):
        return _DEVICE_HELP.format(device=device or "reader")
    return _DEFAULT_HELP


def _seconds_since(stamp: str | None, now: datetime) -> int | None:
    if stamp is None:
        return None
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if then.tzinfo is None or now.tzinfo is None:
        return None
    return max(0, int((now - then).total_seconds()))


def _spots(wagers: SeatWagers, keyed: Iterable[str] = ()) -> list[dict[str, Any]]:
    keyed = set(keyed)
    return [{"spot": w, "label": SPOT_LABELS[w], **money(wagers.amount(w)), "keyed": w in keyed}
            for w in WAGERS if wagers.amount(w)]


def _decisions(hand: Hand) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for e in hand.events:
        if isinstance(e, PlayMade):
            out.setdefault(e.seat, []).append({
                "street": e.street, "decision": "play", "multiple": e.multiple,
                "amount": money(e.amount_cents),
                "text": f"Play {e.multiple}x ({format_rand(e.amount_cents)}) {e.street}"})
        elif isinstance(e, SeatChecked):
            out.setdefault(e.seat, []).append({"street": e.street, "decision": "check",
                                               "text": f"check {e.street}"})
        elif isinstance(e, SeatFolded):
            out.setdefault(e.seat, []).append({"street": "river", "decision": "fold",
                                               "text": "fold"})
    return out


def _hand_alert(a: AlertRaised) -> dict[str, Any]:
    return {"alert_id": a.alert_id, "kind": a.kind, "message": a.message, "seat": a.seat,
            "spot": a.field, "card": None if a.card is None else str(a.card),
            "source": "hand", "resolvable": True, "what_to_do": alert_help(a.kind)}


def _hand(core: TableCore, hand: Hand) -> dict[str, Any]:
    placed = hand.cards()
    cards = [{"position": i, "target": str(t), "kind": t.kind, "seat": t.seat,
              "index": t.index, "card": str(c)} for i, (t, c) in enumerate(placed)]
    board: list[str | None] = [None] * 5
    for t, c in placed:
        if t.kind == "board" and 0 <= t.index < len(board):
            board[t.index] = str(c)
    return {
        "hand_id": hand.hand_id,
        "phase": hand.phase.value,
        "phase_label": PHASE_LABELS.get(hand.phase.value, hand.phase.value),
        "paused": hand.paused,
        "seats_in_hand": list(hand.seats_in_hand),
        "cards": cards,
        "dealer": [str(c) for t, c in placed if t.kind == "dealer"],
        "board": board,
        "burns": [str(c) for t, c in placed if t.kind == "burn"],
        "next_target": None if hand.next_target is None else str(hand.next_target),
        "manual": any(getattr(e, "source", None) == "manual" for e in hand.events),
        "alerts": [_hand_alert(a) for a in hand.open_alerts],
        "can": {"no_more_bets": hand.can_no_more_bets(), "settle": hand.can_settle(),
                "reveal": hand.can_reveal()},
        "heat_id": core.heat_id,
    }


def entry_labels(core: TableCore) -> dict[str, dict[str, str | None]]:
    """Entry id -> what people see of it (D331): its short code and the player's name, as
    the desk's seat command gave them, for entries seated or waiting for acknowledgement."""
    out: dict[str, dict[str, str | None]] = {
        e: {"entry_code": s.entry_code, "name": s.name}
        for e, s in core.unacknowledged.items()}
    for entry_id, seated in core.proofs.items():
        out[entry_id] = {"entry_code": seated.entry_code, "name": seated.name}
    return out


def _label(labels: Mapping[str, Mapping[str, str | None]], entry_id: Any) -> dict[str, Any]:
    """The code and name fields shown beside an entry id (None when the desk sent none)."""
    found = labels.get(entry_id) if isinstance(entry_id, str) else None
    return {"entry_code": None if found is None else found.get("entry_code"),
            "name": None if found is None else found.get("name")}


def _seats(core: TableCore, now: datetime) -> list[dict[str, Any]]:
    session = core.session
    if session is None:
        return []
    hand = core.hand
    decisions = {} if hand is None else _decisions(hand)
    placed = () if hand is None else hand.cards()
    out = []
    labels = entry_labels(core)
    for seat, entry in sorted(session.seats.items()):
        read, _ = core.spots.wagers(seat, entry.entry_id, report=False)
        keyed = [w for w in WAGERS if core.spots.keyed(seat, w)]
        locked = None if hand is None else hand.wagers(seat)
        last = core.last_hand_at.get(entry.entry_id)
        out.append({
            "seat": seat,
            "entry_id": entry.entry_id,
            **_label(labels, entry.entry_id),
            "chips": money(entry.balance_cents),
            "hands_played": entry.hands_played,
            "hands_total": entry.hands_required,
            "hands_left": entry.hands_left,
            "markers_left": entry.markers_left,
            "markers_total": entry.rules.markers,
            "last_hand_at": last,
            "seconds_since_last_hand": _seconds_since(last, now),
            "spots": _spots(read, keyed),
            "staked": money(read.staked_cents),
            "markers": sorted(read.markers),
            "in_hand": locked is not None,
            "locked": None if locked is None else _spots(locked),
            "hole": [str(c) for t, c in placed if t.kind == "seat" and t.seat == seat],
            "decisions": decisions.get(seat, []),
        })
    return out


def _to_settle(result: str, stake: int, net: int) -> dict[str, Any]:
    if result == "win" or net > 0:
        return {"action": "pay", "amount": money(net),
                "text": f"pay {format_rand(net)}"}
    if net < 0:
        return {"action": "take", "amount": money(-net), "text": f"take {format_rand(-net)}"}
    return {"action": "push", "amount": money(0),
            "text": f"push: leave {format_rand(stake)}" if stake else "push"}


def _settlement(record: Mapping[str, Any],
                labels: Mapping[str, Mapping[str, str | None]]) -> dict[str, Any] | None:
    block = record.get("settlement")
    if not isinstance(block, Mapping):
        return None
    entries = {s.get("seat"): s.get("entry_id") for s in record.get("seats", ())}
    seats = []
    for s in block.get("seats", ()):
        wagers = []
        for name, r in s.get("wagers", {}).items():
            stake, net = int(r.get("stake", 0)), int(r.get("net", 0))
            wagers.append({"spot": name, "label": SPOT_LABELS.get(name, name),
                           "result": r.get("result"), "reason": r.get("reason"),
                           "stake": money(stake), "net": money(net),
                           "marker": bool(r.get("marker")),
                           **_to_settle(str(r.get("result")), stake, net)})
        seats.append({"seat": s.get("seat"), "entry_id": entries.get(s.get("seat")),
                      **_label(labels, entries.get(s.get("seat"))),
                      "hand": s.get("hand"), "outcome": s.get("outcome"),
                      "net": money(int(s.get("net", 0))), "wagers": wagers})
    dealer = block.get("dealer", {})
    return {"hand_id": record.get("hand_id"), "dealer_hand": dealer.get("hand"),
            "dealer_opens": dealer.get("opens"), "seats": seats}


def _payout(core: TableCore) -> dict[str, Any] | None:
    check = core.payout
    if check is None:
        return None
    view = check.view()
    spots = []
    for s in check.spots.values():
        shown = s.view()
        spots.append({**shown, "label": SPOT_LABELS.get(s.spot, s.spot),
                      "expected": money(s.expected), "held": money(s.held),
                      "stake": money(s.stake), "net": money(s.net),
                      "difference": money(s.held - s.expected),
                      "what_to_do": None if s.paid else s.problem()[1]})
    spots.sort(key=lambda x: (x["seat"], WAGERS.index(x["spot"]) if x["spot"] in WAGERS else 9))
    return {"hand_id": view["hand_id"], "complete": view["complete"], "spots": spots}


def _recall(record: Mapping[str, Any],
            labels: Mapping[str, Mapping[str, str | None]]) -> dict[str, Any]:
    nets = record.get("nets", {})
    return {
        "hand_id": record.get("hand_id"),
        "status": record.get("status"),
        "at": record.get("settled_at") or record.get("voided_at") or record.get("opened_at"),
        "board": list(record.get("board", ())),
        "dealer": list(record.get("dealer", ())),
        "burns": list(record.get("burns", ())),
        "seats": [{"seat": s.get("seat"), "entry_id": s.get("entry_id"),
                   **_label(labels, s.get("entry_id")),
                   "hole": list(s.get("hole", ())),
                   "net": money(int(nets.get(str(s.get("seat")), 0)))}
                  for s in record.get("seats", ())],
        "manual": bool(record.get("manual")),
        "void_reason": (record.get("void") or {}).get("reason"),
    }


def _scores(core: TableCore) -> list[dict[str, Any]]:
    return [{"entry_id": entry_id, "entry_code": s.entry_code, "name": s.name,
             "seat": s.seat, "score": money(s.score), "hands": s.hands,
             "status": s.status, "stage": s.stage, "heat_id": s.heat_id, "at": s.at,
             "disputed": entry_id in core.disputed, "note": core.disputed.get(entry_id)}
            for entry_id, s in sorted(core.unacknowledged.items())]


def _notices(core: TableCore, notices: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table-level alerts worth showing now: raised since the hand in play opened (or
    since the last hand ended), and the payout's while its check is open."""
    hand = core.hand
    since: str | None = None
    if hand is not None and hand.events:
        opened = getattr(hand.events[0], "at", None)
        since = None if opened is None else opened.isoformat()
    elif core.recent:
        last = core.recent[0]
        since = last.get("settled_at") or last.get("voided_at")
    since_at = _parse(since)
    out = []
    for body in notices:
        if body.get("alert_id") is not None:
            continue  # a hand's alert: the hand itself says whether it is still open
        at = _parse(body.get("at"))
        payout = body.get("source") == "payout"
        if payout:
            if core.payout is None or body.get("hand_id") != core.payout.hand_id:
                continue
        elif since_at is not None and (at is None or at < since_at):
            continue
        kind = str(body.get("kind", "alert"))
        device = str(body.get("message", "")).split(":", 1)[0] if kind.startswith(
            "device_") else None
        out.append({"alert_id": None, "kind": kind, "message": body.get("message"),
                    "seat": body.get("seat"), "source": body.get("source"),
                    "at": body.get("at"), "resolvable": False,
                    "notice": kind in NOTICE_KINDS,
                    **({"evidence": body["evidence"]} if body.get("evidence") else {}),
                    "what_to_do": alert_help(kind, device)})
    return out[-_NOTICES:]


def _key(alert: Mapping[str, Any]) -> tuple[Any, ...]:
    return (alert.get("kind"), alert.get("message"), alert.get("seat"))


def collapse_alerts(alerts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Identical alerts (same kind, words and seat) as one item with ``count`` (D337): the
    first one's fields, resolvable or clearable if any of them is, and every hand alert's id
    in ``alert_ids`` (so one act can resolve them all); first-seen order."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for alert in alerts:
        item = out.get(_key(alert))
        if item is None:
            item = out[_key(alert)] = {**alert, "count": 0, "alert_ids": []}
        item["count"] += 1
        if alert.get("alert_id") is not None:
            item["alert_ids"].append(alert["alert_id"])
            if item.get("alert_id") is None:
                item["alert_id"] = alert["alert_id"]
        for flag in ("resolvable", "clearable"):
            if alert.get(flag):
                item[flag] = True
        if alert.get("role") is not None and item.get("role") is None:
            item["role"] = alert["role"]
    return list(out.values())


def _cards(hand_view: Mapping[str, Any] | None,
           last: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The cards on the table: the hand in play's, else the last hand's until the next opens
    (D336: the dealer pays and takes with the cards still in view)."""
    if hand_view is not None:
        holes: dict[str, list[str]] = {}
        for c in hand_view["cards"]:
            if c["kind"] == "seat":
                holes.setdefault(str(c["seat"]), []).append(c["card"])
        return {"hand_id": hand_view["hand_id"], "live": True, "status": hand_view["phase"],
                "dealer": hand_view["dealer"], "board": hand_view["board"],
                "burns": hand_view["burns"], "holes": holes}
    if last is None:
        return None
    board: list[str | None] = list(last.get("board", ()))[:5]
    board += [None] * (5 - len(board))
    return {"hand_id": last.get("hand_id"), "live": False, "status": last.get("status"),
            "dealer": list(last.get("dealer", ())), "board": board,
            "burns": list(last.get("burns", ())),
            "holes": {str(s.get("seat")): list(s.get("hole", ()))
                      for s in last.get("seats", ())}}


def _device_faults(core: TableCore) -> list[dict[str, Any]]:
    """The devices whose fault blocks play until they are back or a supervisor clears it, and
    the suspect decks holding the next hand (game.decks.check)."""
    return [{"alert_id": None, "kind": "device_fault", "role": role, "message": detail,
             "seat": None, "source": "device", "resolvable": False, "clearable": True,
             "what_to_do": ALERT_HELP["device_fault"]}
            for role, detail in sorted(core.device_faults.items())] + [
        {"alert_id": None, "kind": f.kind, "role": DECK_ROLE, "message": f.message,
         "evidence": f.evidence, "seat": None, "source": "deck", "resolvable": False,
         "clearable": True, "what_to_do": ALERT_HELP[f.kind]} for f in core.decks.holds]


def _parse(stamp: object) -> datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        value = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def screen_view(core: TableCore, *, now: datetime,
                notices: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Everything the table's screens show now (JSON-ready; see the module docstring).

    ``notices`` are recent ``alert`` message bodies, oldest first (the core keeps only the
    hand's own alerts); ``now`` (aware) gives each seat's time since its last hand.
    """
    session = core.session
    hand = core.hand
    last = core.recent[0] if core.recent else None
    hand_view = None if hand is None else _hand(core, hand)
    # The core closes a finished hand at once: until the next opens, the screens show how the
    # last one settled (what to pay and take per spot).
    labels = entry_labels(core)
    settlement = _settlement(last, labels) if hand is None and last is not None else None
    alerts = collapse_alerts(_device_faults(core) + (
        [] if hand_view is None else list(hand_view["alerts"])) + _notices(core, notices))
    return {
        "table": core.table_id,
        "heat": None if session is None else {
            "heat_id": core.heat_id, "stage": session.rules.stage.value,
            "hands_per_entry": session.rules.hands, "markers_per_entry": session.rules.markers,
        },
        "seats": _seats(core, now),
        "hand": hand_view,
        "alerts": alerts,
        "settlement": settlement,
        "cards": _cards(hand_view, last),
        "last_hand": None if last is None else {"hand_id": last.get("hand_id"),
                                                "status": last.get("status")},
        "payout": _payout(core),
        "verify_payouts": core.verify_payouts,
        "scores": _scores(core),
        "staff": core.staff.view(),
        "roster": core.staff.roster is not None,
        "recall": [_recall(r, labels) for r in core.recent],
        "held_commands": [held_view(h) for h in core.held],
        "chips": core.chips.view(session),
        "hands_opened": core.hands_opened,
        "now": now.isoformat(),
    }
