"""The printable score slip (``GET /slip/{entry_id}``): the entry's short code and the player's
name as the desk sent them (D331, D332), score in rand, hands, time in the venue's zone,
table, stage and heat, how the score was acknowledged, and the verification code (the SHA-256
of the signed ``score.recorded`` message, `wire.verification`) for the casino's paper trail.

Plain HTML with the console's stylesheet (its print rules make it an A6-size slip); every value
is escaped; the only script is the console's own file (its Print button).
"""

from __future__ import annotations

from html import escape
from typing import Final

from controller.console.views import Slip, local_time

__all__ = ["not_found_page", "slip_page"]

_HEAD: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/console.css">
<script src="/static/console.js" defer></script></head>
<body class="slip-page">
"""


def _row(label: str, value: str, cls: str = "") -> str:
    extra = f' class="{cls}"' if cls else ""
    return f"<tr{extra}><th>{escape(label)}</th><td>{escape(value)}</td></tr>\n"


def slip_page(slip: Slip) -> str:
    """The slip's HTML."""
    if slip.acknowledged:
        ack = (f"{slip.acknowledged.replace('+', ' + ')} at"
               f" {local_time(slip.acknowledged_at, slip.tz)}")
    elif slip.disputed is not None:
        ack = f"DISPUTED: {slip.disputed}"
    else:
        ack = "not yet acknowledged"
    rows = "".join([
        _row("Entry", slip.entry_code or slip.entry_id, "entry"),
        *([_row("Player", slip.name, "player")] if slip.name else []),
        _row("Score", slip.score, "score"),
        _row("Hands", str(slip.hands)),
        _row("Status", slip.status.replace("_", " ")),
        _row("Time", local_time(slip.at, slip.tz)),
        _row("Table", slip.table + ("" if slip.seat is None else f", seat {slip.seat}")),
        _row("Stage / heat", f"{slip.stage} / {slip.heat_id}"),
        _row("Acknowledged", ack, "ack"),
    ])
    warning = ""
    if slip.problems:
        warning = ('<p class="slip-warning">The journal reports a problem with this record: '
                   + escape("; ".join(slip.problems)) + "</p>\n")
    return (_HEAD.format(title=escape(f"Score slip {slip.entry_code or slip.entry_id}"))
            + '<main class="slip">\n<h1>Heads Up Poker Showdown</h1>\n<h2>Score slip</h2>\n'
            + f'<table class="slip-facts">\n{rows}</table>\n{warning}'
            + '<section class="verify"><h3>Verification code</h3>\n'
            + f'<p class="code" id="code">{escape(slip.code_grouped)}</p>\n'
            + f'<p class="code-full" id="code-full">SHA-256 {escape(slip.code)}'
            + f" (message {slip.seq})</p></section>\n"
            + '<p class="no-print"><button class="button" type="button" data-print>Print</button>'
            + ' <a class="button" href="/player">Back</a></p>\n'
            + "</main></body></html>\n")


def not_found_page(entry_id: str) -> str:
    """The page for an entry with no score recorded at this table."""
    return (_HEAD.format(title="No score slip")
            + '<main class="slip"><h1>No score slip</h1>\n'
            + f"<p>Entry {escape(entry_id[:40])} has no score recorded at this table.</p>\n"
            + '<p><a class="button" href="/player">Back</a></p></main></body></html>\n')
