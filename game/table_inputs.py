"""What the table core takes in: every journaled input as a typed value, and the one decoder
from a journal record's (kind, payload) to it.

Kinds: devices ``card``, ``chips``, ``manual_wager``, ``shoe_status``, ``device_alert``; the
dealer's console ``dealer`` (with an ``action``); the tournament desk ``desk`` (a signed
command, `game.desk_commands`); the daemon's boot record ``start``. A payload that cannot be
read becomes `Unreadable`, which the core refuses with the reason (it is journaled all the
same, so replay sees the same refusal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from game.cards import Card, parse_card
from game.chips import parse_uid
from game.desk_commands import DeskOrder
from game.errors import GameError

__all__ = [
    "Acknowledge",
    "Boot",
    "CardSeen",
    "ChipsSeen",
    "CorrectCard",
    "DealerAction",
    "DeviceTrouble",
    "NoMoreBets",
    "ResolveAlert",
    "RevealHand",
    "SettleHand",
    "ShoeReported",
    "TableInput",
    "Unreadable",
    "VoidByDealer",
    "WagerKeyed",
    "decode_input",
    "reason_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Boot:
    """The daemon started (a boot record: nothing changes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardSeen:
    """A card read by the shoe, or keyed by the dealer."""

    card: Card
    source: Literal["shoe", "manual"] = "shoe"
    read_index: object = None  # the shoe's read counter, quoted in an alert


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipsSeen:
    """An antenna's inventory of one spot: the UIDs lying there now."""

    seat: int
    spot: str
    uids: frozenset[bytes]


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerKeyed:
    """An amount the dealer keyed for a spot (reader failure, rule 58)."""

    seat: int
    spot: str
    amount_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeReported:
    """The shoe reported its state."""

    device: str | None
    state: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceTrouble:
    """A device driver's alert (or its good news: connected, reconnected)."""

    device: str | None
    kind: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledge:
    """The player acknowledged their recorded score at the table."""

    entry_id: str
    method: str = "card_tap"
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
class Unreadable:
    """An input whose payload could not be read: refused with ``reason``."""

    reason: str
    desk: bool = False  # a desk command: it gets a command.result
    command_id: str | None = None
    command: str | None = None


DealerAction = (Acknowledge | NoMoreBets | SettleHand | RevealHand | VoidByDealer | CorrectCard
                | ResolveAlert)
TableInput = (Boot | CardSeen | ChipsSeen | WagerKeyed | ShoeReported | DeviceTrouble
              | DealerAction | DeskOrder | Unreadable)


def reason_of(exc: BaseException) -> str:
    """An exception as the one-line reason a refusal gives."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _by(p: Mapping[str, Any]) -> str | None:
    by = p.get("by")
    return None if by is None else str(by)


def _card(p: Mapping[str, Any]) -> CardSeen:
    source: Literal["shoe", "manual"] = "manual" if p.get("source") == "manual" else "shoe"
    return CardSeen(card=parse_card(p["card"]), source=source, read_index=p.get("read_index"))


def _chips(p: Mapping[str, Any]) -> ChipsSeen:
    return ChipsSeen(seat=int(p["seat"]), spot=str(p["spot"]),
                     uids=frozenset(parse_uid(u) for u in p["uids"]))


def _wager(p: Mapping[str, Any]) -> WagerKeyed:
    return WagerKeyed(seat=int(p["seat"]), spot=str(p["spot"]), amount_cents=int(p["amount"]))


def _shoe(p: Mapping[str, Any]) -> ShoeReported:
    return ShoeReported(device=p.get("device"), state=p["state"], detail=p.get("detail", ""))


def _trouble(p: Mapping[str, Any]) -> DeviceTrouble:
    return DeviceTrouble(device=p.get("device"), kind=p["kind"], detail=p.get("detail", ""))


_DEALER: dict[str, Callable[[Mapping[str, Any]], DealerAction]] = {
    "acknowledge": lambda p: Acknowledge(entry_id=str(p["entry_id"]),
                                         method=str(p.get("method", "card_tap")), by=_by(p)),
    "no_more_bets": lambda p: NoMoreBets(by=_by(p)),
    "settle": lambda p: SettleHand(by=_by(p)),
    "reveal": lambda p: RevealHand(by=_by(p)),
    "void": lambda p: VoidByDealer(reason=str(p["reason"]), by=_by(p)),
    "correct_card": lambda p: CorrectCard(position=int(p["position"]), card=parse_card(p["card"]),
                                          reason=str(p["reason"]), by=_by(p)),
    "resolve_alert": lambda p: ResolveAlert(alert_id=int(p["alert_id"]), reason=str(p["reason"]),
                                            by=_by(p)),
}


def _dealer(p: Mapping[str, Any]) -> DealerAction:
    action = p["action"]
    read = _DEALER.get(action) if isinstance(action, str) else None
    if read is None:
        raise ValueError(f"unknown dealer action {action!r}")
    return read(p)


_READERS: dict[str, Callable[[Mapping[str, Any]], TableInput]] = {
    "start": lambda _: Boot(),
    "card": _card,
    "chips": _chips,
    "manual_wager": _wager,
    "shoe_status": _shoe,
    "device_alert": _trouble,
    "dealer": _dealer,
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
