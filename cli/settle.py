"""`showdown settle`: the pit's re-check tool; one hand as JSON on stdin, its settlement on stdout.

The contract (input, output and every refusal) is documented in docs/settle.md. Malformed input
is refused with one line naming the seat and the field; nothing is guessed. With ``--lines``,
many hands as JSON lines: each input line one hand, each output line answers the
input line of the same number, in order, ``{"line": N, "settlement": {...}}`` or ``{"line": N,
"error": "..."}`` for a line refused with the message the one-hand mode prints; a refused line
stops nothing, and the command ends with exit code 2 when any line was refused).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cli.arguments import rand_amount
from cli.errors import CommandError
from game.errors import GameError, InvalidWager
from game.money import format_rand
from game.paytables.lines import Paytables
from game.poker.cards import RANK_CHARS, Card, parse_card
from game.wagers.settle import (
    SIDE_BETS,
    WAGERS,
    HandSettlement,
    SeatHand,
    SeatSettlement,
    SeatWagers,
    settle_hand,
)
from runtime.errors import one_line
from runtime.settings_files import read_paytables

__all__ = ["ParsedHand", "answer_line", "input_lines", "parse_hand", "paytables_json",
           "refused_error", "register", "results_json", "run", "settle_lines", "settlement_json"]

_TOP_FIELDS = ("dealer", "board", "seats")
_SEAT_FIELDS = ("seat", "hole", "wagers", "markers")
_MAX_SEAT = 6
_MARKER_VALUE_CENTS = 50_000  # R500, the Final bonus marker of the shipped settings


def register(sub: Any) -> None:
    """Add the `settle` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "settle",
        help="settle one hand given as JSON on stdin (the pit's re-check tool)",
        description="Read one hand as JSON on stdin and print the settlement of every wager as "
        "JSON on stdout; with --lines, one hand per line in and one answer per line out "
        "(format: docs/settle.md).",
    )
    p.add_argument("--lines", action="store_true",
                   help="JSON lines: one hand per input line, one answer per output line")
    p.add_argument("--input", metavar="FILE", type=Path, default=None,
                   help="read the hand(s) from FILE instead of stdin")
    p.add_argument("--paytables", metavar="FILE", type=Path, default=None,
                   help="paytable file (default: $SHOWDOWN_PAYTABLES or the shipped"
                        " paytables.toml)")
    p.add_argument("--marker-value", metavar="AMOUNT", type=rand_amount, default=None,
                   help="value of a Final bonus marker in rand (default R500)")
    p.add_argument("--marker-value-cents", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Settle the hand on stdin and print the result."""
    paytables = read_paytables(args.paytables)
    args.marker_value_cents = _marker_value(args)
    if args.lines:
        total, refused = settle_lines(input_lines(args.input), sys.stdout, paytables,
                                      args.marker_value_cents)
        if refused:
            raise refused_error(refused, total)
        return 0
    hand = parse_hand(_read_input(args.input))
    settlement = settle_hand(dealer=hand.dealer, board=hand.board, seats=hand.seats,
                             paytables=paytables, marker_value_cents=args.marker_value_cents)
    print(json.dumps(settlement_json(settlement, hand, paytables), indent=2, ensure_ascii=False))
    return 0


def _marker_value(args: argparse.Namespace) -> int:
    """The marker value in cents: --marker-value in rand, or the deprecated --marker-value-cents
    (accepted this release, with a warning); R500 when neither is given."""
    old = args.marker_value_cents
    if old is not None:
        if args.marker_value is not None:
            raise CommandError("--marker-value-cents is the old name of --marker-value: give one")
        print(f"showdown settle: warning: --marker-value-cents is now --marker-value in rand"
              f" (--marker-value {format_rand(old) if old > 0 else old}); the old name is"
              " accepted until the next release", file=sys.stderr)
    value = args.marker_value if old is None else old
    if value is None:
        return _MARKER_VALUE_CENTS
    if value <= 0:
        raise CommandError(f"--marker-value must be more than R0.00, got {format_rand(value)}")
    return int(value)


# -- input -------------------------------------------------------------------------------------

def _read_input(path: Path | None) -> str:
    if path is None or str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text at byte {exc.start + 1}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedHand:
    """A hand read from the JSON input, with the wager names each seat listed (0 included)."""

    dealer: tuple[Card, Card]
    board: tuple[Card, Card, Card, Card, Card]
    seats: tuple[SeatHand, ...]
    listed: Mapping[int, frozenset[str]]


def parse_hand(text: str) -> ParsedHand:
    """Read and check the JSON hand; raises CommandError or GameError naming the seat and field."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                          parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise CommandError(f"input: expected a JSON object with {', '.join(_TOP_FIELDS)}")
    _known_fields("input", data, _TOP_FIELDS)
    for name in _TOP_FIELDS:
        if name not in data:
            raise CommandError(f"input: missing field {name!r}")
    seen: dict[Card, str] = {}
    dealer = _cards(data["dealer"], "dealer", 2, seen)
    board = _cards(data["board"], "board", 5, seen)
    raw_seats = data["seats"]
    if not isinstance(raw_seats, list) or not raw_seats:
        raise CommandError("seats: expected a non-empty list of seats")
    if len(raw_seats) > _MAX_SEAT:
        raise CommandError(f"seats: a table has at most {_MAX_SEAT} seats, got {len(raw_seats)}")
    seats: list[SeatHand] = []
    listed: dict[int, frozenset[str]] = {}
    for i, raw in enumerate(raw_seats):
        seat = _seat(raw, i, set(listed), seen)
        seats.append(seat)
        listed[seat.seat] = frozenset(raw["wagers"])
    return ParsedHand(dealer=(dealer[0], dealer[1]),
                      board=(board[0], board[1], board[2], board[3], board[4]),
                      seats=tuple(seats), listed=listed)


def _seat(raw: object, index: int, taken: set[int], seen: dict[Card, str]) -> SeatHand:
    where = f"seats[{index}]"
    if not isinstance(raw, dict):
        raise CommandError(f"{where}: expected an object with seat, hole and wagers")
    number = raw.get("seat")
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= _MAX_SEAT:
        raise CommandError(f"{where}: seat: expected a seat number 1 to {_MAX_SEAT},"
                           f" got {number!r}")
    if number in taken:
        raise CommandError(f"seat {number}: appears twice")
    who = f"seat {number}"
    _known_fields(who, raw, _SEAT_FIELDS)
    for name in ("hole", "wagers"):
        if name not in raw:
            raise CommandError(f"{who}: missing field {name!r}")
    hole = _cards(raw["hole"], f"{who}: hole", 2, seen)
    wagers = raw["wagers"]
    if not isinstance(wagers, dict):
        raise CommandError(f"{who}: wagers: expected an object of amounts in cents")
    for name, amount in wagers.items():
        if name not in WAGERS:
            raise InvalidWager(number, "wagers", f"unknown wager {name!r}"
                               f" (expected one of {', '.join(WAGERS)})")
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise InvalidWager(number, name, f"must be a whole number of cents, got {amount!r}")
        if amount < 0:
            raise InvalidWager(number, name, f"must not be negative, got {amount}")
    markers = raw.get("markers", [])
    if not isinstance(markers, list):
        raise InvalidWager(number, "markers", "expected a list of side-bet names")
    for marker in markers:
        if marker not in SIDE_BETS:
            raise InvalidWager(number, "markers", f"unknown marker {marker!r}: a marker rides"
                               f" only on a side bet ({', '.join(SIDE_BETS)})")
    if len(set(markers)) != len(markers):
        raise InvalidWager(number, "markers", "a side bet carries at most one marker")
    return SeatHand(
        seat=number, hole=(hole[0], hole[1]),
        wagers=SeatWagers(
            ante=wagers.get("ante", 0), odds=wagers.get("odds", 0), play=wagers.get("play", 0),
            trips_plus=wagers.get("trips_plus", 0), pocket_bonus=wagers.get("pocket_bonus", 0),
            sweet16=wagers.get("sweet16", 0), markers=frozenset(markers),
        ),
    )


def _cards(raw: object, where: str, count: int, seen: dict[Card, str]) -> list[Card]:
    if not isinstance(raw, list):
        raise CommandError(f"{where}: expected a list of {count} cards such as \"Ah\"")
    if len(raw) != count:
        raise CommandError(f"{where}: expected {count} cards, got {len(raw)}")
    cards: list[Card] = []
    for token in raw:
        if not isinstance(token, str):
            raise CommandError(f"{where}: invalid card {token!r}: expected text such as \"Ah\"")
        try:
            card = parse_card(token)
        except GameError as exc:
            raise CommandError(f"{where}: {exc}") from exc
        if card in seen:
            raise CommandError(f"{where}: duplicate card {card} (already in {seen[card]})")
        seen[card] = where
        cards.append(card)
    return cards


def _known_fields(where: str, data: Mapping[str, object], known: tuple[str, ...]) -> None:
    for name in data:
        if name not in known:
            raise CommandError(f"{where}: unknown field {name!r} (expected {', '.join(known)})")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise CommandError(f"invalid JSON: the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> None:
    raise CommandError(f"invalid JSON: {name} is not a number")


# -- output ------------------------------------------------------------------------------------

def settlement_json(
    settlement: HandSettlement, hand: ParsedHand, paytables: Paytables
) -> dict[str, Any]:
    """The settlement as the JSON document of docs/settle.md."""
    return {**results_json(settlement, hand), "paytables": paytables_json(paytables)}


def results_json(settlement: HandSettlement, hand: ParsedHand) -> dict[str, Any]:
    """The dealer's and the seats' part of the settlement document (no paytables)."""
    return {
        "dealer": {"hand": settlement.dealer_hand.name, "opens": settlement.dealer_opens},
        "seats": [_seat_json(s, hand.listed[s.seat]) for s in settlement.seats],
    }


def _seat_json(settled: SeatSettlement, listed: frozenset[str]) -> dict[str, Any]:
    wagers: dict[str, Any] = {}
    for r in settled.results:
        entry: dict[str, Any] = {"result": r.result, "net": r.net_cents, "stake": r.stake_cents,
                                 "reason": r.reason}
        if r.line is not None:
            entry["line"] = r.line
        if r.marker:
            entry["marker"] = True
        wagers[r.wager] = entry
    for name in listed - wagers.keys():  # a wager given as 0 cents, e.g. "play": 0 for a fold
        reason = ("no Play bet: the seat folded" if name == "play"
                  else "not placed (0 cents): nothing to settle")
        wagers[name] = {"result": "none", "net": 0, "stake": 0, "reason": reason}
    ordered = {name: wagers[name] for name in WAGERS if name in wagers}
    return {"seat": settled.seat, "hand": settled.hand.name, "outcome": settled.outcome,
            "net": settled.net_cents, "wagers": ordered}


def paytables_json(paytables: Paytables) -> dict[str, Any]:
    """The paytables in force, as shown with every settlement (rules.md §0 item 1)."""
    return {
        "source": paytables.source,
        "trips_plus": {c.key: str(p) for c, p in paytables.trips_plus.pays.items()},
        "odds_win": {c.key: str(p) for c, p in paytables.odds_win.pays.items()},
        "odds_lose": {c.key: str(p) for c, p in paytables.odds_lose.pays.items()},
        "pocket_bonus": [
            {"line": ln.name, "pays": str(ln.pays), "hands": _classes(ln.hands),
             **({"dealer": _classes(ln.dealer)} if ln.dealer is not None else {})}
            for ln in paytables.pocket_bonus
        ],
        "sweet16": {name: str(p) for name, p in paytables.sweet16.pays.items()},
    }


def _classes(classes: frozenset[str]) -> str:
    """Hole-card classes weakest first, e.g. "22, 33, ..., KK" or "AJs, AQs, AKs"."""
    return ", ".join(sorted(classes, key=lambda c: (RANK_CHARS.index(c[0]),
                                                    RANK_CHARS.index(c[1]), c[2:])))


_SHOWN_REFUSED = 10  # line numbers named in the closing error


def input_lines(path: Path | None) -> Iterator[bytes]:
    """The raw lines of ``path`` (stdin when None or "-"), without their line endings."""
    if path is None or str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream standing in for stdin
            for text in sys.stdin:
                yield text.rstrip("\r\n").encode()
            return
        yield from (raw.rstrip(b"\r\n") for raw in stream)
        return
    try:
        with path.open("rb") as file:
            yield from (raw.rstrip(b"\r\n") for raw in file)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc


def answer_line(number: int, raw: bytes, paytables: Paytables, marker_value_cents: int,
                shown: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The answer to input line ``number`` and whether it settled (False: refused)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {"line": number, "error": f"not UTF-8 text at byte {exc.start + 1}"}, False
    if not text.strip():
        return {"line": number, "error": "empty line: expected one hand as a JSON object"}, False
    try:
        hand = parse_hand(text)
        settlement = settle_hand(dealer=hand.dealer, board=hand.board, seats=hand.seats,
                                 paytables=paytables, marker_value_cents=marker_value_cents)
    except (CommandError, GameError) as exc:
        return {"line": number, "error": one_line(exc)}, False
    return {"line": number, "settlement": {**results_json(settlement, hand), "paytables": shown}
            }, True


def settle_lines(lines: Iterator[bytes], out: IO[str], paytables: Paytables,
                 marker_value_cents: int) -> tuple[int, list[int]]:
    """Answer every line on ``out`` in order, flushed line by line; returns the number of
    lines and the refused line numbers."""
    shown = paytables_json(paytables)
    refused: list[int] = []
    number = 0
    for number, raw in enumerate(lines, start=1):
        answer, settled = answer_line(number, raw, paytables, marker_value_cents, shown)
        if not settled:
            refused.append(number)
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
        out.flush()
    return number, refused


def refused_error(refused: list[int], total: int) -> CommandError:
    """The closing error of a run with refused lines."""
    named = ", ".join(str(n) for n in refused[:_SHOWN_REFUSED])
    more = ", ..." if len(refused) > _SHOWN_REFUSED else ""
    which = "line" if len(refused) == 1 else "lines"
    return CommandError(f"{len(refused)} of {total} lines refused ({which} {named}{more});"
                        " each has its error line on stdout")
