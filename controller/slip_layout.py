"""A score slip as people read it, without I/O: its facts (`Slip`, read from the journal by
`controller.console.views`), the lines both printings show (`slip_layout`: the browser's HTML
slip, `controller.console.slip`, and the receipt printer's, `controller.receipt_printer`) and
the QR code's payload (`qr_payload`).

The QR code carries what identifies the signed ``score.recorded`` message and its code, so a
scanner at the desk finds the message without typing 64 hex digits (decision D349)::

    showdown-slip:1:<table>:<seq>:<verification code, 64 lower-case hex digits>
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Final

__all__ = ["QR_SCHEME", "Slip", "SlipLayout", "local_time", "qr_payload", "slip_layout"]

QR_SCHEME: Final = "showdown-slip:1"
TITLE: Final = "Heads Up Poker Showdown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Slip:
    """A score slip's facts, from the journal's stored messages."""

    entry_id: str
    table: str
    seat: int | None
    entry_code: str | None  # the short display code the desk sent (D331)
    name: str | None  # the player's name as the desk sent it (the page's style, D332)
    tz: tzinfo  # the venue's time zone (the tournament's venue.timezone): the slip's times
    stage: str
    heat_id: str
    score_cents: int
    score: str
    hands: int
    status: str
    at: str | None
    seq: int
    code: str
    code_grouped: str
    acknowledged: str | None  # the method, once acknowledged
    acknowledged_at: str | None
    disputed: str | None  # the participant's note, if disputed (and not acknowledged since)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SlipLayout:
    """What a printed slip shows, in order: the title, the facts (label, value, a class name
    for the HTML), a warning when the journal reports a problem, the code (grouped, and in
    full with its message's seq) and the QR code's payload."""

    title: str
    heading: str
    facts: tuple[tuple[str, str, str], ...]
    warning: str | None
    code_grouped: str
    code: str  # the full code, 64 hex digits
    code_full: str  # "SHA-256 <code>"
    message: str  # "message 123": the seq of the signed score.recorded message
    qr: str


def local_time(stamp: str | None, tz: tzinfo = UTC) -> str:
    """An RFC 3339 stamp as the slip prints it: in the venue's time zone ``tz``, to the
    second, with the zone's abbreviation ("2026-07-03 14:05:09 SAST")."""
    if not stamp:
        return "-"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def qr_payload(slip: Slip) -> str:
    """The QR code's text: the scheme, the table, the message's seq and the full code."""
    return f"{QR_SCHEME}:{slip.table}:{slip.seq}:{slip.code}"


def _acknowledgement(slip: Slip) -> str:
    if slip.acknowledged:
        return (f"{slip.acknowledged.replace('+', ' + ')} at"
                f" {local_time(slip.acknowledged_at, slip.tz)}")
    if slip.disputed is not None:
        return f"DISPUTED: {slip.disputed}"
    return "not yet acknowledged"


def slip_layout(slip: Slip) -> SlipLayout:
    """The slip's lines: the same on the browser's slip and the receipt printer's."""
    facts = (
        ("Entry", slip.entry_code or slip.entry_id, "entry"),
        *((("Player", slip.name, "player"),) if slip.name else ()),
        ("Score", slip.score, "score"),
        ("Hands", str(slip.hands), ""),
        ("Status", slip.status.replace("_", " "), ""),
        ("Time", local_time(slip.at, slip.tz), "time"),
        ("Table", slip.table + ("" if slip.seat is None else f", seat {slip.seat}"), ""),
        ("Stage / heat", f"{slip.stage} / {slip.heat_id}", ""),
        ("Acknowledged", _acknowledgement(slip), "ack"),
    )
    warning = None
    if slip.problems:
        warning = ("The journal reports a problem with this record: "
                   + "; ".join(slip.problems))
    return SlipLayout(title=TITLE, heading="Score slip", facts=facts, warning=warning,
                      code_grouped=slip.code_grouped, code=slip.code,
                      code_full=f"SHA-256 {slip.code}",
                      message=f"message {slip.seq}", qr=qr_payload(slip))
