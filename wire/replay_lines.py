"""A replayed hand beside the recorded one, line by line (the comparison of `dispute replay`).

Pure: two lists of table messages (what the table published, what the replay produced) in,
`Line`s out. Messages are paired by type, hand, entry and order. A hand's record is split
into the lines a pit boss reads: its status and void, the dealer's cards and hand, the board,
the burns, the cards read, every correction and alert, and per seat its entry, hole cards,
wagers, decision, hand rank, outcome, each bet's result and amount (ante, odds, play, every
side bet, with its marker), its net and the markers it used. Any other field of any message
becomes a line of its own. A line matches when both values are equal; amounts are shown in
rand. docs/disputes.md, "Replaying a bundle".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from game.messages.console import PayoutChecked
from game.money import format_rand
from game.wagers.settle import WAGERS
from wire.dispute_bundle import HAND_TYPES
from wire.dispute_replay import Message

__all__ = ["Line", "compare", "describe"]

_MONEY: Final = frozenset({"net", "stake", "score", "balance_before", "balance_after",
                           "recorded_net", "counted_net", "expected", "held", "amount"})
_HAND_FIELDS: Final = frozenset({"status", "void", "dealer", "board", "burns", "reads",
                                 "corrections", "alerts", "resolutions", "seats", "nets",
                                 "settlement"})
_SEAT_ITEMS: Final = ("entry", "hole", "wagers", "decision", "hand rank", "category", "outcome")
_BETS: Final = ("ante", "odds", "play", *(w for w in WAGERS if w not in ("ante", "odds", "play")))


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """One compared line: where (hand, subject, item) and both values (None: absent)."""

    hand_id: str | None
    subject: str
    item: str
    recorded: Any
    replayed: Any

    @property
    def match(self) -> bool:
        """Both sides say the same."""
        return bool(self.recorded == self.replayed)

    def as_dict(self) -> dict[str, Any]:
        """The line for JSON: raw values, the words shown, and whether they match."""
        return {"hand_id": self.hand_id, "subject": self.subject, "item": self.item,
                "recorded": self.recorded, "replayed": self.replayed, "match": self.match,
                "recorded_text": describe(self.item, self.recorded),
                "replayed_text": describe(self.item, self.replayed)}


def describe(item: str, value: Any) -> str:
    """A value as a person reads it: amounts in rand, lists joined, a bet's result in words."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and (item.rsplit(" ", maxsplit=1)[-1] in _MONEY or item in _BETS):
        return format_rand(value)
    if isinstance(value, Mapping) and "result" in value and "stake" in value:
        net = int(value.get("net") or 0)
        sign = "+" if net > 0 else ""
        marker = " + marker" if value.get("marker") else ""
        line = f" ({value['line']})" if value.get("line") else ""
        return (f"{value['result']} {sign}{format_rand(net)} on "
                f"{format_rand(int(value['stake']))}{marker}{line}")
    if isinstance(value, Mapping) and item.endswith(" paid"):
        must = int(value.get("must_hold") or 0)
        held = value.get("held")
        seen = "" if held is None else f", held {format_rand(int(held))}"
        what = "taken (nothing left)" if must == 0 else f"spot to hold {format_rand(must)}"
        return f"{what}: {value.get('readers')}{seen}"
    if isinstance(value, Mapping) and item == "decision":
        if value.get("fold"):
            return "fold"
        return (f"play {value.get('play')}x {value.get('street')} "
                f"({format_rand(int(value.get('amount') or 0))})")
    if isinstance(value, Mapping) and item == "wagers":
        return ", ".join(f"{k} {format_rand(v)}" if isinstance(v, int)
                         else f"marker(s) on {' and '.join(map(str, v))}" if k == "markers"
                         else f"{k} {v}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return " ".join(describe(item, v) if not isinstance(v, str) else v for v in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={describe(k, v)}" for k, v in value.items() if v is not None)
    return str(value)


def _key(m: Message) -> tuple[str, str | None, str | None]:
    kind = "hand" if m.type in HAND_TYPES else m.type  # a settled hand replayed void pairs
    return (kind, m.body.get("hand_id"), m.body.get("entry_id"))


def _paired(recorded: Sequence[Message], replayed: Sequence[Message]
            ) -> list[tuple[Message | None, Message | None]]:
    """Messages of the same type, hand and entry, paired in order; the rest alone."""
    left: dict[tuple[str, str | None, str | None], list[Message]] = {}
    for m in replayed:
        left.setdefault(_key(m), []).append(m)
    pairs: list[tuple[Message | None, Message | None]] = []
    for m in recorded:
        same = left.get(_key(m))
        pairs.append((m, same.pop(0) if same else None))
    pairs.extend((None, m) for ms in left.values() for m in ms)
    return pairs


def _seat_view(body: Mapping[str, Any] | None) -> dict[int, dict[str, Any]]:
    if body is None:
        return {}
    out: dict[int, dict[str, Any]] = {}
    for s in body.get("seats") or ():
        out.setdefault(int(s["seat"]), {}).update({
            "entry": s.get("entry_id"), "hole": s.get("hole"), "wagers": s.get("wagers"),
            "decision": s.get("decision")})
    for s in (body.get("settlement") or {}).get("seats") or ():
        view = out.setdefault(int(s["seat"]), {})
        view.update({"hand rank": s.get("hand"), "category": s.get("category"),
                     "outcome": s.get("outcome"), "markers used": s.get("markers_used"),
                     "bets": s.get("wagers") or {}})
    for seat, net in (body.get("nets") or {}).items():
        out.setdefault(int(seat), {})["net"] = net
    return out


def _hand_lines(hand_id: str | None, rec: Mapping[str, Any] | None,
                rep: Mapping[str, Any] | None) -> list[Line]:
    def get(body: Mapping[str, Any] | None, *path: str) -> Any:
        value: Any = body
        for p in path:
            value = value.get(p) if isinstance(value, Mapping) else None
        return value

    def line(subject: str, item: str, *path: str) -> Line:
        return Line(hand_id=hand_id, subject=subject, item=item, recorded=get(rec, *path),
                    replayed=get(rep, *path))

    lines = [line("hand", "status", "status")]
    if get(rec, "void") is not None or get(rep, "void") is not None:
        lines.append(line("hand", "void", "void"))
    lines += [line("dealer", "cards", "dealer"),
              line("dealer", "hand rank", "settlement", "dealer", "hand"),
              line("dealer", "opens", "settlement", "dealer", "opens"),
              line("board", "cards", "board"), line("board", "burns", "burns"),
              Line(hand_id=hand_id, subject="shoe", item="cards read",
                   recorded=[r.get("card") for r in get(rec, "reads") or ()] if rec else None,
                   replayed=[r.get("card") for r in get(rep, "reads") or ()] if rep else None),
              line("hand", "card corrections", "corrections"),
              line("hand", "alerts", "alerts"), line("hand", "alert resolutions", "resolutions")]
    seats_rec, seats_rep = _seat_view(rec), _seat_view(rep)
    for seat in sorted(set(seats_rec) | set(seats_rep)):
        a, b = seats_rec.get(seat, {}), seats_rep.get(seat, {})
        subject = f"seat {seat}"
        for item in _SEAT_ITEMS:
            lines.append(Line(hand_id=hand_id, subject=subject, item=item,
                              recorded=a.get(item), replayed=b.get(item)))
        bets_a, bets_b = a.get("bets") or {}, b.get("bets") or {}
        named = set(bets_a) | set(bets_b)
        for bet in [w for w in _BETS if w in named] + sorted(named - set(_BETS)):
            lines.append(Line(hand_id=hand_id, subject=subject, item=bet,
                              recorded=bets_a.get(bet), replayed=bets_b.get(bet)))
        for item in ("markers used", "net"):
            lines.append(Line(hand_id=hand_id, subject=subject, item=item,
                              recorded=a.get(item), replayed=b.get(item)))
    others = sorted((set(rec or {}) | set(rep or {})) - _HAND_FIELDS)
    lines += [line("hand", key, key) for key in others]
    return lines


def _payout_view(hand: Mapping[str, Any] | None, check: Mapping[str, Any] | None
                 ) -> dict[tuple[int, str], dict[str, Any]]:
    """What each wagered spot had to hold once paid and taken, and what the chip readers'
    check (``payout.checked``) says of it."""
    if hand is None:
        return {}
    mismatches = {(int(m["seat"]), str(m["spot"])): m for m in (check or {}).get("mismatches")
                  or () if isinstance(m, Mapping)}
    keyed = {(int(m["seat"]), str(m["spot"])) for m in (check or {}).get("unverifiable")
             or () if isinstance(m, Mapping)}
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for seat in (hand.get("settlement") or {}).get("seats") or ():
        for bet, r in (seat.get("wagers") or {}).items():
            where = (int(seat["seat"]), str(bet))
            view: dict[str, Any] = {"must_hold": max(0, int(r["stake"]) + int(r["net"]))}
            if check is None:
                view["readers"] = "no payout check of the chip readers"
            elif where in mismatches:
                view["readers"] = f"not paid ({check.get('outcome')})"
                view["held"] = mismatches[where].get("held")
            elif where in keyed:
                view["readers"] = "keyed by hand, not read"
            else:
                view["readers"] = "verified by the chip readers"
            out[where] = view
    return out


def _payout_lines(hand_id: str | None, rec: Mapping[str, Any] | None,
                  rep: Mapping[str, Any] | None, recorded: Sequence[Message],
                  replayed: Sequence[Message]) -> list[Line]:
    def check(ms: Sequence[Message]) -> Mapping[str, Any] | None:
        return next((m.body for m in ms if m.type == PayoutChecked.TYPE
                     and m.body.get("hand_id") == hand_id), None)

    a, b = _payout_view(rec, check(recorded)), _payout_view(rep, check(replayed))
    return [Line(hand_id=hand_id, subject=f"seat {seat}", item=f"{bet} paid",
                 recorded=a.get((seat, bet)), replayed=b.get((seat, bet)))
            for seat, bet in sorted(set(a) | set(b),
                                    key=lambda k: (k[0], _BETS.index(k[1])
                                                   if k[1] in _BETS else 99, k[1]))]


def _message_lines(subject: str, rec: Message | None, rep: Message | None) -> list[Line]:
    a = rec.body if rec else {}
    b = rep.body if rep else {}
    hand_id = a.get("hand_id", b.get("hand_id"))
    keys = [*a, *(k for k in b if k not in a)]
    return [Line(hand_id=hand_id, subject=subject, item=k,
                 recorded=a.get(k) if rec else None, replayed=b.get(k) if rep else None)
            for k in keys]


def _subject(m: Message) -> str:
    entry = m.body.get("entry_id")
    return f"{m.type} {entry}" if entry else m.type


def compare(recorded: Iterable[Message], replayed: Iterable[Message]) -> list[Line]:
    """Every line of every message, the record's beside the replay's (hands first)."""
    out: list[Line] = []
    recorded, replayed = list(recorded), list(replayed)
    for rec, rep in _paired(recorded, replayed):
        one = rec or rep
        assert one is not None
        if one.type in HAND_TYPES:
            out += _hand_lines(one.body.get("hand_id"), rec.body if rec else None,
                               rep.body if rep else None)
            out += _payout_lines(one.body.get("hand_id"), rec.body if rec else None,
                                 rep.body if rep else None, recorded, replayed)
            if rec is None or rep is None:
                out.append(Line(hand_id=one.body.get("hand_id"), subject="hand",
                                item="message", recorded=rec.type if rec else None,
                                replayed=rep.type if rep else None))
        else:
            out += _message_lines(_subject(one), rec, rep)
    return out
