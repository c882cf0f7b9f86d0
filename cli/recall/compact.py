"""The compact recall: one screen a hand, for a dispute at the table (`showdown recall --compact`).

Reads hand bodies shaped like game.hand.record's hand record (plus the table's heat, stage and end
time) and lays out what a pit boss needs to answer a player: the hand id, table, heat, times in
the venue's zone, each seat's entry, cards, wagers, decision, the result and pay/take of every
wager in rand, the dealer's cards and the board, and marks for corrections, voids, alerts and
manual reads. Anything missing or odd in a body is shown as "?" rather than failing: a damaged
message is still shown, flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any

from controller.journal import CheckedMessage, Fault, IntegrityProblem
from game.money import format_rand
from game.wagers.settle import WAGERS
from game.words import spoken

__all__ = ["local_time", "render_compact"]


def local_time(text: Any, tz: tzinfo) -> str:
    """An RFC 3339 time as "YYYY-MM-DD HH:MM:SS" in `tz`; "?" when absent, as stored if odd."""
    if not isinstance(text, str) or not text:
        return "?"
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return text
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


def render_compact(hands: Sequence[CheckedMessage], *, tz: tzinfo, zone: str, banner: str,
                   faults: Sequence[Fault], fault_error: str | None,
                   problems: Sequence[IntegrityProblem] | None) -> str:
    """The whole compact recall: banner, damage and faults, then one block per hand."""
    lines = [banner, f"times in {zone}"]
    lines += damage_lines(problems, hands)
    if fault_error:
        lines.append(f"ERROR STATE UNKNOWN: the faults cannot be read: {fault_error}")
    elif faults:
        lines.append(f"ERROR STATE: {len(faults)} open fault(s)")
        lines += [f"  fault {f.seq} at {local_time(f.wall.isoformat(), tz)}: {f.kind}: "
                  f"{f.detail}" for f in faults]
    lines.append(f"{len(hands)} hand(s), oldest first")
    for hand in hands:
        lines.append("")
        lines += hand_block(hand, tz)
    return "\n".join(lines)


def damage_lines(problems: Sequence[IntegrityProblem] | None,
                 hands: Sequence[CheckedMessage]) -> list[str]:
    """The JOURNAL DAMAGED lines (none when the check and every shown hand are intact); a
    NOT CHECKED line when the whole-journal check was skipped (`problems` None)."""
    flagged = [h for h in hands if h.problems]
    lines: list[str] = []
    if problems is None:
        lines.append("journal integrity NOT CHECKED (--no-check): only each shown hand was "
                     "checked; run `showdown journal verify` before relying on it")
        problems = ()
    if not problems and not flagged:
        return lines
    lines += [f"JOURNAL DAMAGED: {len(problems)} integrity problem(s) found by the check; "
              f"{len(flagged)} shown hand(s) fail their own check. Do not settle a dispute on "
              "it alone: run `showdown journal verify` and see docs/journal.md."]
    lines += [f"  !! {p}" for p in problems]
    return lines


def hand_block(hand: CheckedMessage, tz: tzinfo) -> list[str]:
    """One hand on one screen."""
    body: Mapping[str, Any] = hand.body if hand.body is not None else {}
    status = str(body.get("status", "?")).upper()
    state = "delivered" if hand.delivered else "NOT YET DELIVERED"
    stage = f" ({spoken(str(body['stage']))})" if body.get("stage") else ""
    lines = [f"=== HAND {body.get('hand_id', '?')}  table {body.get('table', '?')}  heat "
             f"{body.get('heat_id') or '-'}{stage}  {status}  [message seq {hand.seq}, {state}]"]
    lines += [f"  !! {p}" for p in hand.problems]
    if hand.body is None:
        return [*lines, "  (body unreadable)"]
    ended = "settled" if "settled_at" in body else "voided"
    lines.append(f"  opened {local_time(body.get('opened_at'), tz)}  {ended} "
                 f"{local_time(body.get(ended + '_at'), tz)}")
    marks = _marks(body)
    if marks:
        lines.append("  MARKED: " + "; ".join(marks))
    void = body.get("void")
    if isinstance(void, Mapping):
        lines.append(f"  VOID: {void.get('reason', '?')} (by {void.get('by', '?')}, "
                     f"{local_time(void.get('at'), tz)})")
    lines.append(f"  dealer {_cards(body.get('dealer'))}{_dealer_hand(body)}   board "
                 f"{_cards(body.get('board'))}")
    results = _results(body)
    nets = _mapping(body.get("nets"))
    for seat in _list(body.get("seats")):
        if isinstance(seat, Mapping):
            lines += _seat_lines(seat, results.get(str(seat.get("seat"))), nets)
    lines += _corrections(body, tz) + _alerts(body, tz)
    return lines


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _rand(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return format_rand(value)
    return "?"


def _signed(value: Any) -> str:
    text = _rand(value)
    return f"+{text}" if isinstance(value, int) and value > 0 else text


def _by_wager(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The items in the table's wager order (ante, odds, play, side bets), any other after."""
    known = [w for w in WAGERS if w in mapping]
    return [(w, mapping[w]) for w in known + sorted(set(mapping) - set(known))]


def _cards(value: Any) -> str:
    cards = [str(c) for c in _list(value)]
    return " ".join(cards) if cards else "-"


def _marks(body: Mapping[str, Any]) -> list[str]:
    marks = []
    if body.get("status") == "void":
        marks.append("VOID")
    if body.get("manual"):
        keyed = [str(r.get("card", "?")) for r in _list(body.get("reads"))
                 if isinstance(r, Mapping) and r.get("source") == "manual"]
        marks.append("MANUAL (keyed by hand" + (f": cards {' '.join(keyed)})" if keyed else ")"))
    if _list(body.get("corrections")):
        marks.append(f"{len(body['corrections'])} correction(s)")
    if _list(body.get("alerts")):
        marks.append(f"{len(body['alerts'])} alert(s)")
    return marks


def _dealer_hand(body: Mapping[str, Any]) -> str:
    settlement = body.get("settlement")
    dealer = settlement.get("dealer") if isinstance(settlement, Mapping) else None
    if not isinstance(dealer, Mapping):
        return ""
    opens = "opens" if dealer.get("opens") else "does not open"
    return f" ({dealer.get('hand', '?')}, {opens})"


def _results(body: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Per seat (as text), its settlement entry."""
    settlement = body.get("settlement")
    seats = settlement.get("seats") if isinstance(settlement, Mapping) else None
    return {str(s.get("seat")): s for s in _list(seats) if isinstance(s, Mapping)}


def _seat_lines(seat: Mapping[str, Any], result: Mapping[str, Any] | None,
                nets: Mapping[str, Any]) -> list[str]:
    number = seat.get("seat", "?")
    source = " MANUAL wagers" if seat.get("wager_source") == "manual" else ""
    wagers = _mapping(seat.get("wagers"))
    staked = ", ".join(f"{w} {_rand(a)}" for w, a in _by_wager(wagers) if w != "markers") or "none"
    markers = f" markers {' '.join(map(str, wagers['markers']))}" if "markers" in wagers else ""
    lines = [f"  seat {number}  entry {seat.get('entry_id') or '-'}  hole "
             f"{_cards(seat.get('hole'))}  {_decision(seat.get('decision'))}{source}",
             f"    wagers: {staked}{markers}"]
    if result is not None:
        per = _mapping(result.get("wagers"))
        paid = ", ".join(f"{w} {r.get('result', '?')} {_signed(r.get('net'))}"
                         + (f" ({r['reason']})" if r.get("reason") else "")
                         for w, r in _by_wager(per) if isinstance(r, Mapping))
        lines.append(f"    {result.get('hand', '?')}, {result.get('outcome', '?')}: "
                     f"{paid or 'no wagers'}")
    lines.append(f"    net {_signed(nets.get(str(number)))}")
    return lines


def _decision(decision: Any) -> str:
    if not isinstance(decision, Mapping):
        return "no decision"
    if decision.get("fold"):
        return "FOLDED"
    return (f"played {decision.get('play', '?')}x {decision.get('street', '')} "
            f"{_rand(decision.get('amount'))}").replace("  ", " ")


def _corrections(body: Mapping[str, Any], tz: tzinfo) -> list[str]:
    return [f"  CORRECTION card {c.get('position', '?')} ({c.get('target', '?')}): "
            f"{c.get('replaced', '?')} -> {c.get('card', '?')}, {c.get('reason', '?')}, by "
            f"{c.get('by', '?')} {local_time(c.get('at'), tz)}"
            for c in _list(body.get("corrections")) if isinstance(c, Mapping)]


def _alerts(body: Mapping[str, Any], tz: tzinfo) -> list[str]:
    resolved = {r.get("id"): r for r in _list(body.get("resolutions")) if isinstance(r, Mapping)}
    lines = []
    for a in _list(body.get("alerts")):
        if not isinstance(a, Mapping):
            continue
        seat = f" seat {a['seat']}" if a.get("seat") is not None else ""
        r = resolved.get(a.get("id"))
        end = (f"; resolved by {r.get('by', '?')} {local_time(r.get('at'), tz)}: "
               f"{r.get('reason', '?')}" if r else "; not resolved in this hand")
        lines.append(f"  ALERT {a.get('kind', '?')}{seat}: {a.get('message', '?')}{end}")
    return lines
