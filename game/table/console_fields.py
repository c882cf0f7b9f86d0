"""Every console action's fields checked against the table at the door, before anything is
journaled (issue 32, D341): amounts in whole cents and in the table's smallest chip, seats
and spots that exist, cards that exist, card positions, alert ids and hand ids of this table.

A refusal is `FieldRefused`, its text the JSON field's name first and then the reason
(``amount: R0.125 is not a whole number of cents``); the caller (the daemon's console path)
answers it and journals nothing. What depends on the moment (an alert still open, a seat
still seated) is checked here against the state now and again by the core when the input is
applied, so an input that raced a change is still refused, journaled as the core journals
every refusal. An action this module does not know is left to the core. Pure: it reads the
core (`TableCore`) and returns nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from game.errors import GameError
from game.hand.deal import MAX_SEATS
from game.money import format_rand
from game.poker.cards import parse_card
from game.table.core import TableCore
from game.table.inputs import MAX_ALERTS_AT_ONCE
from game.table.tally_inputs import (
    TALLY_FIELDS,
    VOUCHED_ACTIONS,
    CountChips,
    TallyFieldError,
    read_tally,
)
from game.wagers.settle import SIDE_BETS, WAGERS

__all__ = ["CHECKED_ACTIONS", "MAX_REASON", "FieldRefused", "check_console_fields",
           "smallest_chip_cents"]

MAX_REASON: Final = 1000  # characters of a reason or a claim


class FieldRefused(GameError):
    """A console request with a bad field: ``field`` names it, the text says why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(f"{field}: {reason}")


Fields = Mapping[str, Any]


def check_console_fields(action: str, fields: Fields, core: TableCore) -> None:
    """Raise `FieldRefused` for the first bad or unknown field of a staff console action
    (``fields`` without ``action`` and the session); nothing for an action not listed here."""
    known = _CHECKS.get(action)
    if known is None:
        return
    names, check = known
    extra = sorted(set(fields) - names)
    if extra:
        takes = ", ".join(sorted(names)) if names else "no fields"
        raise FieldRefused(extra[0][:40], f"{action} has no such field (it takes: {takes})")
    check(fields, core)


# ---- one value ------------------------------------------------------------------------

def _given(fields: Fields, name: str, what: str) -> Any:
    if fields.get(name) is None:
        raise FieldRefused(name, f"missing: give {what}")
    return fields[name]


def _whole(fields: Fields, name: str, what: str) -> int:
    value = _given(fields, name, what)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FieldRefused(name, f"{_shown(value)} is not {what}")
    if isinstance(value, str):
        raise FieldRefused(name, f"{_shown(value)} is text: send {what} as a JSON number")
    if isinstance(value, float):
        raise FieldRefused(name, f"{_shown(value)} is not {what}: send a whole number")
    return value


def _shown(value: object) -> str:
    text = "true" if value is True else "false" if value is False else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _cents(fields: Fields, name: str) -> int:
    """A whole number of cents (refused: floats, text, true/false)."""
    value = _given(fields, name, "an amount in cents")
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 1e12:
        shown = f"R{value / 100:.6f}".rstrip("0").rstrip(".")
        if value.is_integer():
            raise FieldRefused(name, f"{value!r} is not whole cents: send cents as an integer"
                               f" ({int(value)} for {format_rand(int(value))})")
        raise FieldRefused(name, f"{shown} is not a whole number of cents")
    return _whole(fields, name, "an amount in whole cents")


def _text(fields: Fields, name: str, what: str, limit: int = MAX_REASON) -> str:
    value = _given(fields, name, what)
    if not isinstance(value, str):
        raise FieldRefused(name, f"{_shown(value)} is not text: give {what}")
    text = " ".join(value.split())
    if not text:
        raise FieldRefused(name, f"empty: give {what}")
    if len(text) > limit:
        raise FieldRefused(name, f"{len(text)} characters; at most {limit}")
    return text


def _reason(fields: Fields, core: TableCore) -> None:
    del core
    _text(fields, "reason", "the reason, in words")


def _seat(fields: Fields, name: str = "seat") -> int:
    seat = _whole(fields, name, "a seat number")
    if not 1 <= seat <= MAX_SEATS:
        raise FieldRefused(name, f"{seat} is not a seat at this table (seats 1..{MAX_SEATS})")
    return seat


def _seated(core: TableCore, seat: int, name: str = "seat") -> None:
    session = core.session
    if session is None:
        raise FieldRefused(name, "no heat is open at this table, so no seat is seated")
    if seat not in session.seats:
        raise FieldRefused(name, f"no entry is seated at seat {seat}")


def _card(fields: Fields, name: str = "card") -> None:
    value = _given(fields, name, "a card such as As or Td")
    if not isinstance(value, str):
        raise FieldRefused(name, f"{_shown(value)} is not a card: give one such as As or Td")
    try:
        parse_card(value)
    except GameError as exc:
        raise FieldRefused(name, f"{_shown(value)} is not a card ({exc})") from None


def _hand_id(fields: Fields, core: TableCore) -> str:
    hand_id = _text(fields, "hand_id", "the settled hand's id", 64)
    if not core.ledger.results(hand_id):
        raise FieldRefused("hand_id", f"{hand_id} is not a settled hand of this table's heat")
    return hand_id


def _played(fields: Fields, core: TableCore, hand_id: str) -> None:
    seat = _seat(fields)
    played = core.ledger.results(hand_id)
    if all(p.seat != seat for p in played):
        seats = ", ".join(str(p.seat) for p in played)
        raise FieldRefused("seat", f"seat {seat} did not play hand {hand_id} (seats {seats}"
                           " did)")


def smallest_chip_cents(core: TableCore) -> int:
    """The least valuable chip of the chip set in play (every amount is made of chips)."""
    registry = core.spots.registry
    return min(c.value_cents for c in registry if c.chip_set == registry.chip_set)


def _open_alerts(core: TableCore, name: str) -> tuple[str, set[int]]:
    hand = core.hand
    if hand is None:
        raise FieldRefused(name, "no hand is in play, so no hand alert is open")
    return hand.hand_id, {a.alert_id for a in hand.open_alerts}


# ---- each action ----------------------------------------------------------------------

def _nothing(fields: Fields, core: TableCore) -> None:
    del fields, core


def _manual_wager(fields: Fields, core: TableCore) -> None:
    seat = _seat(fields)
    spot = _given(fields, "spot", "the spot")
    if not isinstance(spot, str) or spot not in WAGERS:
        raise FieldRefused("spot", f"{_shown(spot)} is not a spot; spots are"
                           f" {', '.join(WAGERS)}")
    payout = core.payout
    paying = payout is not None and (seat, spot) in payout.spots
    if not paying:
        _seated(core, seat)
    amount = _cents(fields, "amount")
    if amount < 0:
        raise FieldRefused("amount", f"{format_rand(amount)} is below nothing (key 0 for an"
                           " empty spot)")
    unit = smallest_chip_cents(core)
    if amount % unit:
        raise FieldRefused("amount", f"{format_rand(amount)} is not a multiple of the smallest"
                           f" chip, {format_rand(unit)}")
    session = core.session
    if not paying and session is not None:
        house = session.rules.house
        limit = (house.side_bet_max_cents if spot in SIDE_BETS else
                 3 * house.max_ante_cents if spot == "play" else house.max_ante_cents)
        if amount > limit:
            raise FieldRefused("amount", f"{format_rand(amount)} is above the table's limit"
                               f" of {format_rand(limit)} on {spot}")


def _manual_card(fields: Fields, core: TableCore) -> None:
    del core
    _card(fields)


def _correct_card(fields: Fields, core: TableCore) -> None:
    position = _whole(fields, "position", "a card position")
    hand = core.hand
    placed = 0 if hand is None else len(hand.cards())
    if hand is None:
        raise FieldRefused("position", "no hand is in play, so no card can be corrected")
    if not 0 <= position < placed:
        held = f"positions 0..{placed - 1} hold cards" if placed else "no card is placed yet"
        raise FieldRefused("position", f"{position} holds no card in hand {hand.hand_id}"
                           f" ({held})")
    _card(fields)
    _reason(fields, core)


def _resolve_alert(fields: Fields, core: TableCore) -> None:
    alert_id = _whole(fields, "alert_id", "an alert id")
    hand_id, open_ids = _open_alerts(core, "alert_id")
    if alert_id not in open_ids:
        listed = ", ".join(str(i) for i in sorted(open_ids)) or "none"
        raise FieldRefused("alert_id", f"alert {alert_id} is not open in hand {hand_id}"
                           f" (open: {listed})")
    _reason(fields, core)


def _resolve_alerts(fields: Fields, core: TableCore) -> None:
    ids = _given(fields, "alert_ids", "the alerts to resolve, as a list of ids")
    if not isinstance(ids, list) or not ids:
        raise FieldRefused("alert_ids", "give the alerts to resolve, as a list of alert ids")
    if len(ids) > MAX_ALERTS_AT_ONCE:
        raise FieldRefused("alert_ids", f"{len(ids)} alerts; at most {MAX_ALERTS_AT_ONCE} in"
                           " one act")
    bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int)]
    if bad:
        raise FieldRefused("alert_ids", f"{_shown(bad[0])} is not an alert id")
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise FieldRefused("alert_ids", f"alert {twice[0]} is named twice")
    hand_id, open_ids = _open_alerts(core, "alert_ids")
    closed = [i for i in ids if i not in open_ids]
    if closed:
        listed = ", ".join(str(i) for i in closed)
        raise FieldRefused("alert_ids", f"{listed} {'is' if len(closed) == 1 else 'are'} not"
                           f" open in hand {hand_id}; none was resolved")
    _reason(fields, core)


def _clear_fault(fields: Fields, core: TableCore) -> None:
    _text(fields, "role", "the device's role (shoe, rfid, deck)", 40)
    _reason(fields, core)


def _seat_only(fields: Fields, core: TableCore) -> None:
    del core
    _seat(fields)


def _issue_chips(fields: Fields, core: TableCore) -> None:
    _seated(core, _seat(fields))


def _dispute_hand(fields: Fields, core: TableCore) -> None:
    hand_id = _hand_id(fields, core)
    if fields.get("seat") is not None:
        _played(fields, core, hand_id)
    if fields.get("entry_id") is not None:
        entry = _text(fields, "entry_id", "the entry's id", 40)
        if all(p.entry_id != entry for p in core.ledger.results(hand_id)):
            raise FieldRefused("entry_id", f"entry {entry} did not play hand {hand_id}")
    _text(fields, "reason", "what is wrong with the hand (the claim)")


def _rule_hand(fields: Fields, core: TableCore) -> None:
    hand_id = _hand_id(fields, core)
    _played(fields, core, hand_id)
    ruling = _given(fields, "ruling", "the ruling: void or correct")
    if ruling not in ("void", "correct"):
        raise FieldRefused("ruling", f"{_shown(ruling)} is not a ruling; void or correct")
    if ruling == "correct":
        _cents(fields, "net")
    elif fields.get("net") is not None:
        raise FieldRefused("net", "a voided hand counts nothing; send a net only to correct")
    _reason(fields, core)


_VOUCH: Final = frozenset({"staff_id", "pin", "method", "wait"})  # a second person's proof


def _tally(action: str) -> Check:
    """A chip count's or deck step's fields (game.table.tally_inputs), and the credential
    of the person who vouches for a confirmation or a destruction (checked by the gate)."""
    def check(fields: Fields, core: TableCore) -> None:
        if action in VOUCHED_ACTIONS and fields.get("method") != "card":
            who = fields.get("staff_id")
            if not isinstance(who, str) or not who.strip() or len(who) > 40:
                raise FieldRefused("staff_id", "the staff id of the "
                                   + ("supervisor who confirms" if action == "confirm_count"
                                      else "witness") + " (with their PIN, or method card)")
            if not isinstance(fields.get("pin"), str) or not fields["pin"]:
                raise FieldRefused("pin", f"{who.strip()}'s own PIN")
        try:
            given = read_tally(action, {k: v for k, v in fields.items() if k not in _VOUCH})
        except TallyFieldError as exc:
            raise FieldRefused(exc.field, exc.reason) from None
        if isinstance(given, CountChips):
            registry = core.chips.chip_float.registry
            values = {c.value_cents for c in registry if c.chip_set == registry.chip_set}
            unknown = [v for v, _ in given.counted if values and v not in values]
            if unknown:
                shown = ", ".join(format_rand(v) for v in sorted(values))
                raise FieldRefused("counted", f"{format_rand(unknown[0])} is not a chip value"
                                              f" of the set in play ({shown})")
    return check


Check = Callable[[Fields, TableCore], None]
_CHECKS: Final[dict[str, tuple[frozenset[str], Check]]] = {
    "no_more_bets": (frozenset(), _nothing),
    "settle": (frozenset(), _nothing),
    "reveal": (frozenset(), _nothing),
    "payout_check": (frozenset(), _nothing),
    "void": (frozenset({"reason"}), _reason),
    "payout_override": (frozenset({"reason"}), _reason),
    "clear_fault": (frozenset({"role", "reason"}), _clear_fault),
    "manual_card": (frozenset({"card"}), _manual_card),
    "manual_wager": (frozenset({"seat", "spot", "amount"}), _manual_wager),
    "correct_card": (frozenset({"position", "card", "reason"}), _correct_card),
    "resolve_alert": (frozenset({"alert_id", "reason"}), _resolve_alert),
    "resolve_alerts": (frozenset({"alert_ids", "reason"}), _resolve_alerts),
    "issue_chips": (frozenset({"seat"}), _issue_chips),
    "return_chips": (frozenset({"seat"}), _seat_only),
    "dispute_hand": (frozenset({"hand_id", "seat", "entry_id", "reason"}), _dispute_hand),
    "rule_hand": (frozenset({"hand_id", "seat", "ruling", "net", "reason"}), _rule_hand),
    **{action: (names | (_VOUCH if action in VOUCHED_ACTIONS else frozenset()),
                _tally(action)) for action, names in TALLY_FIELDS.items()},
}
CHECKED_ACTIONS: Final = frozenset(_CHECKS)  # the staff actions whose fields are listed here
