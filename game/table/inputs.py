"""What the table core takes in: every journaled input as a typed value, the one decoder
from a journal record's (kind, payload) to it, and the one encoder of a device's input to
the (kind, payload) the journal stores (`encode_input`; decoding its payload gives the same
input back, so the daemon decides on the typed value and replay on the decoded one alike).

Kinds: devices ``card``, ``chips``, ``manual_wager``, ``shoe_status``, ``device_alert``; the
dealer's console ``dealer`` (with an ``action``); the participant's ``participant``
(acknowledge or dispute a score); staff sign-ins ``staff``; the tournament desk ``desk`` (a
signed command, `game.messages.desk`); the daemon's boot record ``start``. A payload that cannot be
read becomes `Unreadable`, which the core refuses with the reason (it is journaled all the
same, so replay sees the same refusal). ``slip``: a score slip sent to the receipt printer
(a record; nothing changes). Requests from outside (the consoles, the desk) are
journaled as they came and read only by `decode_input`; a device's reading becomes its typed
input first (controller.device_inputs) and is journaled as `encode_input` writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from game.chips.registry import format_uid, parse_uid
from game.errors import GameError
from game.messages.desk import DeskOrder
from game.poker.cards import Card, parse_card
from game.table.tally_inputs import TALLY_ACTIONS, TallyInput, read_tally

__all__ = [
    "Acknowledge",
    "Boot",
    "CardSeen",
    "ChipsSeen",
    "ClearFault",
    "CorrectCard",
    "DealerAction",
    "DeviceInput",
    "DeviceTrouble",
    "Dispute",
    "DisputeHand",
    "IssueChips",
    "NoMoreBets",
    "PayoutCheckPressed",
    "PayoutOverride",
    "ResolveAlert",
    "ResolveAlerts",
    "ReturnChips",
    "RevealHand",
    "RuleHand",
    "SettleHand",
    "ShoeReported",
    "SlipPrinted",
    "StaffChange",
    "TableInput",
    "Unreadable",
    "VoidByDealer",
    "WagerKeyed",
    "decode_input",
    "encode_input",
    "operator_of",
    "reason_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Boot:
    """The daemon started (a boot record: nothing changes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardSeen:
    """A card read by the shoe, or keyed by the dealer; with the read's provenance as the
    journal keeps it (the device, its power-on session, the read's quality), which the
    core does not look at."""

    card: Card
    source: Literal["shoe", "manual"] = "shoe"
    read_index: object = None  # the shoe's read counter, quoted in an alert
    by: str | None = None  # who keyed a manual card
    device: str | None = None  # the shoe's serial number, or "manual:<operator>"
    session: int | None = None  # the shoe's power-on session ``read_index`` counts in
    quality: int | None = None  # the shoe's confidence in the read, 0..100


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipsSeen:
    """An antenna's inventory of one spot: the UIDs lying there now."""

    seat: int
    spot: str
    uids: frozenset[bytes]
    reader: str | None = None  # the reader's serial number (provenance, as journaled)
    antenna: int | None = None
    report_seq: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerKeyed:
    """An amount the dealer keyed for a spot (reader failure, rule 58)."""

    seat: int
    spot: str
    amount_cents: int
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeReported:
    """The shoe reported its state."""

    device: str | None
    state: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceTrouble:
    """A device driver's alert (or its good news: connected, reconnected). ``role`` says
    which of the table's devices it is ("shoe", "rfid", "id_reader"; None in old journals)."""

    device: str | None
    kind: str
    detail: str
    role: str | None = None
    # kind "recovered" (D347): what the driver healed since the last notice, counter -> count
    counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledge:
    """The player acknowledged their recorded score at the table, by ``method`` (the proofs
    the daemon checked before journaling: "card", "pin", "signature", joined by "+")."""

    entry_id: str
    method: str = "card_tap"
    by: str | None = None
    evidence: str | None = None  # SHA-256 of the signature drawn, when one was


@dataclass(frozen=True, slots=True, kw_only=True)
class Dispute:
    """The player disputed their recorded score at the table, with a note."""

    entry_id: str
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffChange:
    """A dealer, supervisor or manager signed in or out at the console, or failed to (the
    daemon checked the PIN or card before journaling; the secret itself is never journaled),
    or a manager (``by``) lifted a sign-in back-off ("unlocked", the reason in ``detail``).

    ``terminal`` is the console client's address the attempt came from (None in records from
    before terminals: one terminal, ""); ``waited``: an attempt refused unchecked because the
    terminal had to wait (recorded, not counted)."""

    event: Literal["signed_in", "signed_out", "sign_in_failed", "unlocked"]
    method: str
    staff_id: str | None = None
    detail: str = ""
    terminal: str | None = None
    waited: bool = False
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PayoutCheckPressed:
    """The dealer says the payout is done: any spot not paid becomes an alert."""

    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearFault:
    """A supervisor clears a device fault that blocks play (e.g. to go on by manual entry)."""

    role: str
    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PayoutOverride:
    """A supervisor accepts the payout as it stands, with the reason."""

    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NoMoreBets:
    """The dealer closed betting: the hand opens with the wagers on the spots."""

    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SettleHand:
    """The dealer settles the hand."""

    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RevealHand:
    """The dealer reveals the dealer's cards."""

    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidByDealer:
    """The dealer (or a supervisor at the console) voids the hand."""

    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectCard:
    """A misread card corrected by position."""

    position: int
    card: Card
    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveAlert:
    """A hand's open alert resolved, with the reason."""

    alert_id: int
    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveAlerts:
    """Several open alerts of the hand resolved in one act, with one reason: all or none."""

    alert_ids: tuple[int, ...]
    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleHand:
    """A supervisor's ruling at the table on one seat's result in a settled hand of the open
    heat: ``void`` it, or ``correct`` it to ``net`` (the desk's `CorrectHand`, made here)."""

    hand_id: str
    seat: int
    ruling: Literal["void", "correct"]
    reason: str
    net: int | None = None  # the corrected net, cents (``correct`` only)
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DisputeHand:
    """A dealer or supervisor disputes one entry's result in a settled hand (by seat or entry)."""

    hand_id: str
    claim: str
    seat: int | None = None
    entry_id: str | None = None
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueChips:
    """The dealer issues the starting stack lying on the seat's spots to its entry."""

    seat: int
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReturnChips:
    """The dealer has placed a finished entry's chips on its seat's spots: reconcile them."""

    seat: int
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unreadable:
    """An input whose payload could not be read: refused with ``reason``."""

    reason: str
    desk: bool = False  # a desk command: it gets a command.result
    command_id: str | None = None
    command: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SlipPrinted:
    """A score slip sent to the table's receipt printer (kind ``slip``): whose entry, the
    ``score.recorded`` message it shows (``seq``, its verification ``code``), who pressed Print
    (``by``; None: printed by itself on acknowledgement, ``[printer] print_on_acknowledge``),
    and whether it printed (``error``: why not). A record only: nothing of the table changes."""

    entry_id: str
    seq: int
    code: str
    printed: bool
    by: str | None = None
    error: str | None = None
    printer: str = ""


DeviceInput = CardSeen | ChipsSeen | WagerKeyed | ShoeReported | DeviceTrouble
DealerAction = (Acknowledge | NoMoreBets | SettleHand | RevealHand | VoidByDealer | CorrectCard
                | ResolveAlert | ResolveAlerts | PayoutCheckPressed | PayoutOverride | ClearFault
                | DisputeHand | IssueChips | ReturnChips | RuleHand | TallyInput)
TableInput = (Boot | CardSeen | ChipsSeen | WagerKeyed | ShoeReported | DeviceTrouble
              | DealerAction | DeskOrder | Unreadable | Dispute | StaffChange | SlipPrinted)


def reason_of(exc: BaseException) -> str:
    """An exception as the one-line reason a refusal gives."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _by(p: Mapping[str, Any]) -> str | None:
    by = p.get("by")
    return None if by is None else str(by)


def operator_of(device: object) -> str | None:
    """The operator a manual device names after its colon ("manual:D12": "D12"), if any."""
    if isinstance(device, str) and ":" in device:
        return device.partition(":")[2] or None
    return None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _card(p: Mapping[str, Any]) -> CardSeen:
    source: Literal["shoe", "manual"] = "manual" if p.get("source") == "manual" else "shoe"
    by = _by(p)
    device = p.get("device")
    if by is None and source == "manual":
        by = operator_of(device)  # the manual shoe names its operator
    return CardSeen(card=parse_card(p["card"]), source=source, read_index=p.get("read_index"),
                    by=by if source == "manual" else None, device=_text_or_none(device),
                    session=_int_or_none(p.get("session")),
                    quality=_int_or_none(p.get("quality")))


def _chips(p: Mapping[str, Any]) -> ChipsSeen:
    return ChipsSeen(seat=int(p["seat"]), spot=str(p["spot"]),
                     uids=frozenset(parse_uid(u) for u in p["uids"]),
                     reader=_text_or_none(p.get("reader")),
                     antenna=_int_or_none(p.get("antenna")),
                     report_seq=_int_or_none(p.get("report_seq")))


def _wager(p: Mapping[str, Any]) -> WagerKeyed:
    return WagerKeyed(seat=int(p["seat"]), spot=str(p["spot"]), amount_cents=int(p["amount"]),
                      by=_by(p))


def _shoe(p: Mapping[str, Any]) -> ShoeReported:
    return ShoeReported(device=p.get("device"), state=p["state"], detail=p.get("detail", ""))


def _trouble(p: Mapping[str, Any]) -> DeviceTrouble:
    role = p.get("role")
    counts = p.get("counts") or {}
    if not isinstance(counts, dict) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in counts.items()):
        raise ValueError("counts must map counter names to whole numbers")
    return DeviceTrouble(device=p.get("device"), kind=p["kind"], detail=p.get("detail", ""),
                         role=None if role is None else str(role),
                         counts=tuple(sorted(counts.items())))


MAX_ALERTS_AT_ONCE: Final = 100  # alerts one `resolve_alerts` may name


def _resolve_alerts(p: Mapping[str, Any]) -> ResolveAlerts:
    ids = p["alert_ids"]
    if not isinstance(ids, list | tuple) or not ids:
        raise ValueError("alert_ids: name the alerts to resolve, as a list of alert ids")
    if len(ids) > MAX_ALERTS_AT_ONCE:
        raise ValueError(f"alert_ids: {len(ids)} alerts at once; at most {MAX_ALERTS_AT_ONCE}")
    bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int) or i < 0]
    if bad:
        raise ValueError(f"alert_ids: {bad[0]!r} is not an alert id")
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"alert_ids: alert {twice[0]} is named twice")
    return ResolveAlerts(alert_ids=tuple(ids), reason=_reason(p), by=_by(p))


_RULINGS: Final[dict[str, Literal["void", "correct"]]] = {"void": "void", "correct": "correct"}


def _rule_hand(p: Mapping[str, Any]) -> RuleHand:
    hand_id, seat = p["hand_id"], p["seat"]
    if not isinstance(hand_id, str) or not hand_id.strip():
        raise ValueError("hand_id: name the settled hand")
    if isinstance(seat, bool) or not isinstance(seat, int):
        raise ValueError(f"seat: {seat!r} is not a seat number")
    ruling = _RULINGS.get(p["ruling"]) if isinstance(p["ruling"], str) else None
    if ruling is None:
        raise ValueError(f"ruling: {p['ruling']!r} is not a ruling; void or correct")
    net = p.get("net")
    if ruling == "correct":
        if isinstance(net, bool) or not isinstance(net, int):
            raise ValueError(f"net: {net!r} is not a whole number of cents (a corrected hand"
                             " needs the net it counts for)")
    elif net is not None:
        raise ValueError("net: a voided hand counts nothing; send a net only to correct")
    return RuleHand(hand_id=hand_id.strip(), seat=seat, ruling=ruling, reason=_reason(p),
                    net=net, by=_by(p))


_DEALER: dict[str, Callable[[Mapping[str, Any]], DealerAction]] = {
    "acknowledge": lambda p: Acknowledge(entry_id=str(p["entry_id"]),
                                         method=str(p.get("method", "card_tap")), by=_by(p)),
    "payout_check": lambda p: PayoutCheckPressed(by=_by(p)),
    "payout_override": lambda p: PayoutOverride(reason=_reason(p), by=_by(p)),
    "clear_fault": lambda p: ClearFault(role=str(p["role"]), reason=_reason(p), by=_by(p)),
    "no_more_bets": lambda p: NoMoreBets(by=_by(p)),
    "issue_chips": lambda p: IssueChips(seat=int(p["seat"]), by=_by(p)),
    "return_chips": lambda p: ReturnChips(seat=int(p["seat"]), by=_by(p)),
    "settle": lambda p: SettleHand(by=_by(p)),
    "reveal": lambda p: RevealHand(by=_by(p)),
    "void": lambda p: VoidByDealer(reason=str(p["reason"]), by=_by(p)),
    "correct_card": lambda p: CorrectCard(position=int(p["position"]), card=parse_card(p["card"]),
                                          reason=str(p["reason"]), by=_by(p)),
    "resolve_alert": lambda p: ResolveAlert(alert_id=int(p["alert_id"]), reason=str(p["reason"]),
                                            by=_by(p)),
    "resolve_alerts": _resolve_alerts,
    "rule_hand": _rule_hand,
    "dispute_hand": lambda p: DisputeHand(
        hand_id=str(p["hand_id"]), claim=_reason(p),
        seat=None if p.get("seat") is None else int(p["seat"]),
        entry_id=None if p.get("entry_id") is None else str(p["entry_id"]), by=_by(p)),
}


def _tally_reader(action: str) -> Callable[[Mapping[str, Any]], DealerAction]:
    def read(p: Mapping[str, Any]) -> DealerAction:
        return read_tally(action, p)
    return read


_DEALER.update({a: _tally_reader(a) for a in TALLY_ACTIONS})  # game.table.tally_inputs


def _dealer(p: Mapping[str, Any]) -> DealerAction:
    action = p["action"]
    read = _DEALER.get(action) if isinstance(action, str) else None
    if read is None:
        raise ValueError(f"unknown dealer action {action!r}")
    return read(p)


def _reason(p: Mapping[str, Any]) -> str:
    reason = p["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("a reason is required")
    return reason.strip()


def _participant(p: Mapping[str, Any]) -> Acknowledge | Dispute:
    action, entry = p["action"], str(p["entry_id"])
    if action == "acknowledge":
        evidence = p.get("evidence")
        return Acknowledge(entry_id=entry, method=str(p["method"]), by=None,
                           evidence=None if evidence is None else str(evidence))
    if action == "dispute":
        note = p["note"]
        if not isinstance(note, str) or not note.strip():
            raise ValueError("a dispute needs a note saying what is wrong")
        return Dispute(entry_id=entry, note=note.strip())
    raise ValueError(f"unknown participant action {action!r}")


_STAFF_EVENTS: dict[str, Literal["signed_in", "signed_out", "sign_in_failed", "unlocked"]] = {
    "signed_in": "signed_in", "signed_out": "signed_out", "sign_in_failed": "sign_in_failed",
    "unlocked": "unlocked"}


def _staff(p: Mapping[str, Any]) -> StaffChange:
    event = _STAFF_EVENTS.get(str(p["event"]))
    if event is None:
        raise ValueError(f"unknown staff event {p['event']!r}")
    staff_id, terminal, by = p.get("staff_id"), p.get("terminal"), p.get("by")
    if event == "unlocked" and (not isinstance(p.get("detail"), str)
                                or not p["detail"].strip()):
        raise ValueError("lifting a sign-in back-off needs a reason")
    return StaffChange(event=event, method=str(p["method"]),
                       staff_id=None if staff_id is None else str(staff_id),
                       detail=str(p.get("detail", "")),
                       terminal=None if terminal is None else str(terminal),
                       waited=p.get("waited") is True, by=None if by is None else str(by))


def _slip(p: Mapping[str, Any]) -> SlipPrinted:
    printed = p["printed"]
    if not isinstance(printed, bool):
        raise ValueError("printed must be true or false")
    return SlipPrinted(entry_id=str(p["entry_id"]), seq=int(p["seq"]), code=str(p["code"]),
                       printed=printed, by=_by(p), error=_text_or_none(p.get("error")),
                       printer=str(p.get("printer", "")))


_READERS: dict[str, Callable[[Mapping[str, Any]], TableInput]] = {
    "start": lambda _: Boot(),
    "card": _card,
    "chips": _chips,
    "manual_wager": _wager,
    "shoe_status": _shoe,
    "device_alert": _trouble,
    "dealer": _dealer,
    "participant": _participant,
    "staff": _staff,
    "slip": _slip,
    "desk": DeskOrder.decode,
}


def decode_input(kind: str, payload: Mapping[str, Any]) -> TableInput:
    """The typed input of a journal record; `Unreadable` (with the reason) if it is not one."""
    read = _READERS.get(kind)
    if read is None:
        return Unreadable(reason=f"unknown input kind {kind!r}")
    try:
        return read(payload)
    except (GameError, KeyError, TypeError, ValueError) as exc:
        if kind != "desk":
            return Unreadable(reason=reason_of(exc))
        command_id, command = payload.get("command_id"), payload.get("command")
        return Unreadable(reason=reason_of(exc), desk=True,
                          command_id=None if command_id is None else str(command_id),
                          command=None if command is None else str(command))


def encode_input(given: DeviceInput) -> tuple[str, dict[str, Any]]:
    """A device's input as the journal stores it: its kind and payload (JSON data).

    The payloads are those the daemon has always journaled for a reading, key for key, so
    old and new records are alike; `decode_input` reads each back to ``given``. Provenance
    a value lacks (None) is left out, and a manual card's ``by`` when its device names it.
    """
    match given:
        case CardSeen():
            card: dict[str, Any] = {"card": str(given.card),
                                    "source": "manual" if given.source == "manual"
                                    else "device"}
            _put(card, read_index=given.read_index, quality=given.quality,
                 device=given.device, session=given.session)
            if given.source == "manual" and given.by is not None \
                    and given.by != operator_of(given.device):
                card["by"] = given.by
            return "card", card
        case ChipsSeen():
            chips: dict[str, Any] = {"seat": given.seat, "spot": given.spot,
                                     "uids": sorted(format_uid(u) for u in given.uids)}
            _put(chips, reader=given.reader, antenna=given.antenna,
                 report_seq=given.report_seq)
            return "chips", chips
        case WagerKeyed():
            return "manual_wager", {"seat": given.seat, "spot": given.spot,
                                    "amount": given.amount_cents, "by": given.by}
        case ShoeReported():
            return "shoe_status", {"state": str(given.state), "device": given.device,
                                   "detail": given.detail}
        case DeviceTrouble():
            trouble: dict[str, Any] = {"device": given.device, "kind": given.kind,
                                       "detail": given.detail, "role": given.role}
            if given.counts:
                trouble["counts"] = dict(given.counts)
            return "device_alert", trouble


def _put(payload: dict[str, Any], **fields: object) -> None:
    payload.update((k, v) for k, v in fields.items() if v is not None)
