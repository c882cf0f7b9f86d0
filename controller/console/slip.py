"""The printable score slip (``GET /slip/{entry_id}``): the entry's short code and the player's
name as the desk sent them (D331, D332), score in rand, hands, time in the venue's zone,
table, stage and heat, how the score was acknowledged, and the verification code (the SHA-256
of the signed ``score.recorded`` message, `wire.verification`) as text and as a QR code
(`controller.slip_layout.qr_payload`, drawn by segno as inline SVG) for the casino's paper trail.

The lines are the receipt printer's (`controller.slip_layout.slip_layout`). Plain HTML with the
console's stylesheet (its print rules make it an A6-size slip); every value is escaped; the only
script is the console's own file (its Print button).
"""

from __future__ import annotations

from html import escape
from typing import Final

import segno

from controller.slip_layout import Slip, slip_layout

__all__ = ["not_found_page", "qr_svg", "slip_page"]

_HEAD: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/console.css">
<script src="/static/console.js" defer></script></head>
<body class="slip-page">
"""
QR_ERROR: Final = "m"  # error correction M (15 %): a creased slip still scans
QR_SCALE: Final = 4  # pixels a module on the screen (the print rules size it on paper)


def _row(label: str, value: str, cls: str = "") -> str:
    extra = f' class="{cls}"' if cls else ""
    return f"<tr{extra}><th>{escape(label)}</th><td>{escape(value)}</td></tr>\n"


def qr_svg(payload: str) -> str:
    """The QR code of ``payload`` as inline SVG (segno; no script, no style attribute)."""
    code = segno.make(payload, error=QR_ERROR, micro=False)
    return str(code.svg_inline(scale=QR_SCALE, border=4, svgclass="slip-qr",
                               lineclass="slip-qr-modules", title="Verification QR code"))


def slip_page(slip: Slip) -> str:
    """The slip's HTML."""
    layout = slip_layout(slip)
    rows = "".join(_row(label, value, cls) for label, value, cls in layout.facts)
    warning = ""
    if layout.warning:
        warning = f'<p class="slip-warning">{escape(layout.warning)}</p>\n'
    return (_HEAD.format(title=escape(f"Score slip {slip.entry_code or slip.entry_id}"))
            + f'<main class="slip">\n<h1>{escape(layout.title)}</h1>\n'
            + f"<h2>{escape(layout.heading)}</h2>\n"
            + f'<table class="slip-facts">\n{rows}</table>\n{warning}'
            + '<section class="verify"><h3>Verification code</h3>\n'
            + f'<p class="code" id="code">{escape(layout.code_grouped)}</p>\n'
            + f'<p class="code-full" id="code-full">{escape(layout.code_full)}'
            + f" ({escape(layout.message)})</p>\n"
            + f'<div class="qr" id="qr" data-payload="{escape(layout.qr)}">{qr_svg(layout.qr)}'
            + "</div></section>\n"
            + '<p class="no-print"><button class="button" type="button" data-print>Print</button>'
            + ' <a class="button" href="/player">Back</a></p>\n'
            + "</main></body></html>\n")


def not_found_page(entry_id: str) -> str:
    """The page for an entry with no score recorded at this table."""
    return (_HEAD.format(title="No score slip")
            + '<main class="slip"><h1>No score slip</h1>\n'
            + f"<p>Entry {escape(entry_id[:40])} has no score recorded at this table.</p>\n"
            + '<p><a class="button" href="/player">Back</a></p></main></body></html>\n')
