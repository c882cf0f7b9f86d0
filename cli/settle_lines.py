"""`showdown settle --lines`: many hands at once for scripts, one JSON line in, one line out.

Each input line is one hand (the object of docs/settle.md); each output line answers the input
line of the same number, in order: ``{"line": N, "settlement": {...}}``, or ``{"line": N,
"error": "..."}`` for a line refused (the same message the one-hand mode prints). A refused line
stops nothing; the command ends with exit code 2 when any line was refused.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cli.main import CommandError
from cli.settle import parse_hand, paytables_json, results_json
from game.errors import GameError
from game.paytables.lines import Paytables
from game.wagers.settle import settle_hand
from runtime.errors import one_line

__all__ = ["answer_line", "input_lines", "refused_error", "settle_lines"]

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
