"""Plain-JSON records of hands, the wire and storage contract shared with the leaderboard.

`hand_record` turns a settled or void `Hand` into a JSON-ready dict: cards in read order with
where each went, every seat's wagers per spot, decisions, each wager's result with its reason,
corrections and alerts. Its ``"settle"`` part is exactly the input of `showdown settle`
(docs/settle.md), so anyone can re-check a published hand with the pit's tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from game.hand import Hand, Phase
from game.hand.events import (
    AlertRaised,
    AlertResolved,
    CardCorrected,
    CardRead,
    HandOpened,
    HandVoided,
    PlayMade,
    SeatFolded,
    WagersSeen,
)
from game.wagers.settle import WAGERS, HandSettlement, SeatWagers

__all__ = ["RECORD_VERSION", "hand_record", "settlement_record", "wagers_record"]

RECORD_VERSION = 1


def _ts(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def wagers_record(wagers: SeatWagers) -> dict[str, Any]:
    """A seat's wagers as {"ante": cents, ..., "markers": [...]} (zero amounts left out)."""
    out: dict[str, Any] = {w: wagers.amount(w) for w in WAGERS if wagers.amount(w)}
    if wagers.markers:
        out["markers"] = sorted(wagers.markers)
    return out


def settlement_record(settlement: HandSettlement) -> dict[str, Any]:
    """The settlement: the dealer's hand and, per seat, its hand, outcome and every result."""
    return {
        "dealer": {"hand": settlement.dealer_hand.name, "opens": settlement.dealer_opens},
        "seats": [
            {
                "seat": s.seat,
                "hand": s.hand.name,
                "category": s.hand.category.key,
                "outcome": s.outcome,
                "net": s.net_cents,
                "markers_used": sorted(s.markers_used),
                "wagers": {
                    r.wager: {
                        "result": r.result, "stake": r.stake_cents, "net": r.net_cents,
                        "reason": r.reason, "line": r.line, "marker": r.marker,
                    }
                    for r in s.results
                },
            }
            for s in settlement.seats
        ],
    }


def hand_record(hand: Hand, *, entries: Mapping[int, str], table: str) -> dict[str, Any]:
    """The full record of a settled or void hand; `entries` maps seat -> entry id."""
    if hand.phase not in (Phase.SETTLED, Phase.VOID):
        raise ValueError(f"hand {hand.hand_id} is {hand.phase.value}, not settled or void")
    events = hand.events
    opened = next(e for e in events if isinstance(e, HandOpened))
    reads = [e for e in events if isinstance(e, CardRead)]
    placed = hand.cards()
    decisions: dict[int, dict[str, Any]] = {}
    for e in events:
        if isinstance(e, PlayMade):
            decisions[e.seat] = {"play": e.multiple, "street": e.street, "amount": e.amount_cents}
        elif isinstance(e, SeatFolded):
            decisions[e.seat] = {"fold": True}
    keyed = {e.seat for e in events if isinstance(e, WagersSeen) and e.source == "manual"}
    seats: list[dict[str, Any]] = []
    for seat in hand.seats_in_hand:
        wagers = hand.wagers(seat)
        hole = [str(c) for t, c in placed if t.kind == "seat" and t.seat == seat]
        seats.append({
            "seat": seat,
            "entry_id": entries.get(seat),
            "hole": hole,
            "wagers": wagers_record(wagers) if wagers else {},
            "decision": decisions.get(seat),
            "wager_source": "manual" if seat in keyed else "rfid",
        })
    voided = next((e for e in events if isinstance(e, HandVoided)), None)
    settlement = hand.settlement
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "table": table,
        "hand_id": hand.hand_id,
        "status": hand.phase.value,
        "opened_at": _ts(opened.at),
        "deal": {"seats": [s.seat for s in opened.seats]},
        "reads": [{"card": str(e.card), "source": e.source, "at": _ts(e.at)} for e in reads],
        "cards": [{"target": str(t), "card": str(c)} for t, c in placed],
        "dealer": [str(c) for t, c in placed if t.kind == "dealer"],
        "board": [str(c) for t, c in placed if t.kind == "board"],
        "burns": [str(c) for t, c in placed if t.kind == "burn"],
        "seats": seats,
        "corrections": [
            {"position": e.position, "target": str(e.target), "card": str(e.card),
             "replaced": str(e.replaced), "reason": e.reason, "by": e.by, "at": _ts(e.at)}
            for e in events if isinstance(e, CardCorrected)
        ],
        "alerts": [
            {"id": e.alert_id, "kind": e.kind, "message": e.message, "seat": e.seat,
             "field": e.field}
            for e in events if isinstance(e, AlertRaised)
        ],
        "resolutions": [
            {"id": e.alert_id, "reason": e.reason, "by": e.by, "at": _ts(e.at)}
            for e in events if isinstance(e, AlertResolved)
        ],
        "nets": {str(seat): net for seat, net in sorted(hand.nets_cents().items())},
        # Rule 58: a hand with any card or wager keyed by hand is marked manual, end to end.
        "manual": bool(keyed) or any(e.source == "manual" for e in reads),
    }
    if voided is not None:
        record["void"] = {"reason": voided.reason, "by": voided.by, "at": _ts(voided.at)}
    if settlement is not None:
        record["settlement"] = settlement_record(settlement)
        record["settle"] = {  # the input of `showdown settle`, to re-check this hand
            "dealer": record["dealer"],
            "board": record["board"],
            "seats": [
                {"seat": s["seat"], "hole": s["hole"],
                 "wagers": {w: a for w, a in s["wagers"].items() if w != "markers"},
                 **({"markers": s["wagers"]["markers"]} if "markers" in s["wagers"] else {})}
                for s in seats
            ],
        }
    return record
