"""The catalogue of significant events (South Africa's Gambling Act s27: significant events
are monitored): every message a table or the desk sends over MQTT, every audit action the
central service writes and every reason it refuses a message for, each with its severity
and why a regulator wants it.

The scale (D372): ``info`` (the routine record of play and the desk's counter work),
``notice`` (a person's decision or a change a reviewer reads: rulings, staff, money, lists),
``warning`` (something refused, held, disputed or gone wrong that someone must look at) and
``critical`` (the integrity of the records or the money at risk: act now). A few events rise
above their usual severity by what their body says (`Escalation`: a refused command, an
overridden payout check).

docs/significant-events.md is generated from this module (``python -m
leaderboard.significant_events > docs/significant-events.md``);
tests/leaderboard/test_significant_events.py fails when a message type or an audit action in
the code is missing here. To add one: a line in `MESSAGES`, `COMMANDS`, `AUDIT_ACTIONS` or
`REJECTIONS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from game.messages.chips import ChipsCounted, ChipsReconciled
from game.messages.console import PayoutChecked, ScoreDisputed, StaffEvent
from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.decks import DecksEvent
from game.messages.desk import (
    AckScore,
    CloseHeat,
    CorrectHand,
    OpenHeat,
    ParticipantProofs,
    Resend,
    Seat,
    Unseat,
    VoidHand,
)
from game.messages.table import (
    Alert,
    CommandResult,
    DeviceState,
    EntrySeated,
    EntryUnseated,
    HandSettled,
    HandVoided,
    HeatClosed,
    HeatOpened,
    ScoreAcknowledged,
    ScoreRecorded,
    ScoreVoided,
)
from game.staff import StaffRoster
from wire.messages import Availability, CommandRejected, Standings

__all__ = [
    "AUDIT_ACTIONS",
    "COMMANDS",
    "MESSAGES",
    "REJECTIONS",
    "SEVERITIES",
    "Escalation",
    "EventKind",
    "Severity",
    "SignificantEvent",
    "at_least",
    "catalogue_markdown",
    "event_of",
    "known_names",
    "names_at_least",
    "severity_of",
]

Severity = Literal["info", "notice", "warning", "critical"]
SEVERITIES: Final[tuple[Severity, ...]] = ("info", "notice", "warning", "critical")  # rising
EventKind = Literal["message", "command", "audit", "rejection"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    """The event is of ``severity`` when its body's ``field`` is one of ``values`` (or, with
    ``nonzero``, any value but 0, empty or absent)."""

    field: str
    severity: Severity
    values: tuple[Any, ...] = ()
    nonzero: bool = False
    when: str  # the condition as the doc says it

    def applies(self, body: Mapping[str, Any]) -> bool:
        """True when ``body`` meets the condition."""
        value = body.get(self.field)
        if self.nonzero:
            return bool(value)
        return any(value == v and type(value) is type(v) for v in self.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class SignificantEvent:
    """One kind of event: its name (a message type, a command name or an audit action),
    where it comes from, its usual severity and why a regulator wants it."""

    name: str
    kind: EventKind
    severity: Severity
    why: str
    escalations: tuple[Escalation, ...] = ()

    def severity_for(self, body: Mapping[str, Any] | None) -> Severity:
        """The severity of one occurrence (the highest escalation its body meets)."""
        found = [e.severity for e in self.escalations if body is not None and e.applies(body)]
        return max((self.severity, *found), key=SEVERITIES.index)


def _events(kind: EventKind, *rows: tuple[str, Severity, str] | SignificantEvent
            ) -> Mapping[str, SignificantEvent]:
    events = [r if isinstance(r, SignificantEvent)
              else SignificantEvent(name=r[0], kind=kind, severity=r[1], why=r[2]) for r in rows]
    names = [e.name for e in events]
    if len(set(names)) != len(names):
        raise ValueError(f"a {kind} is listed twice in the catalogue")
    return {e.name: e for e in events}


# Every message type a table or the link publishes (wire.messages.TABLE_MESSAGES) and the
# service's standings.
MESSAGES: Final = _events(
    "message",
    (DeviceState.TYPE, "info", "a device of the table (shuffler, card or chip reader) changed"
     " state: the record shows the equipment the game relied on"),
    (Alert.TYPE, "warning", "something the pit had to look at (a device fault, a bad chip, a"
     " hand's alert): a game fault must be investigated"),
    (HeatOpened.TYPE, "notice", "a session of play began at a table: play outside an opened heat"
     " would be unlawful play"),
    (HeatClosed.TYPE, "notice", "a session of play ended: the heat's results are final from here"),
    (EntrySeated.TYPE, "info", "who played where: a participant seated at a table"),
    (EntryUnseated.TYPE, "notice", "a participant left before their stage ended and records no"
     " score (rule 14)"),
    (HandSettled.TYPE, "info", "every wager, result and payout of a hand: the record of play"),
    (HandVoided.TYPE, "warning", "a hand was voided and counts for nobody: a ruling the players"
     " were affected by"),
    SignificantEvent(
        name=CommandResult.TYPE, kind="message", severity="info",
        why="the table's answer to a desk command: what the central service ordered was done",
        escalations=(Escalation(field="accepted", values=(False,), severity="warning",
                                when="the table refused the command"),)),
    (CommandRejected.TYPE, "critical", "the table's link refused a command before the table saw"
     " it (bad signature, replay, wrong table): a possible forged or repeated instruction"),
    SignificantEvent(
        name=PayoutChecked.TYPE, kind="message", severity="info",
        why="a payout checked against the chip readers: the game paid what the paytable says",
        escalations=(Escalation(field="outcome", values=("overridden",), severity="warning",
                                when="a supervisor overrode a mismatch"),)),
    SignificantEvent(
        name=StaffEvent.TYPE, kind="message", severity="info",
        why="who was signed in at a table's console: every act at the table has a person",
        escalations=(Escalation(field="event", values=("sign_in_failed", "unlocked"),
                                severity="notice",
                                when="a failed sign-in, or a manager lifted a wait"),
                     Escalation(field="event", values=("locked",), severity="warning",
                                when="repeated failures made the console wait"))),
    (HandDisputed.TYPE, "warning", "a dealer or supervisor disputed a hand's result: a complaint"
     " to be ruled on"),
    (HandCorrected.TYPE, "notice", "a supervisor's ruling moved a participant's chips: a"
     " correction to the record of play"),
    SignificantEvent(
        name=ChipsReconciled.TYPE, kind="message", severity="info",
        why="a participant's chips counted at the end of the heat: issued, held and returned",
        escalations=(Escalation(field="missing_cents", nonzero=True, severity="warning",
                                when="chips are missing"),)),
    SignificantEvent(
        name=ChipsCounted.TYPE, kind="message", severity="notice",
        why="a heat's opening or closing tray count, by the dealer and confirmed by a"
            " supervisor under their own credentials (N.J.A.C. 13:69D-1.21)",
        escalations=(Escalation(field="over_tolerance", values=(True,), severity="warning",
                                when="the difference is over the house's tolerance"),)),
    SignificantEvent(
        name=DecksEvent.TYPE, kind="message", severity="notice",
        why="decks received, opened, used or destroyed at a table, by whom (and the witness"
            " of a destruction): the deck inventory (Michigan R 432.1816)",
        escalations=(Escalation(field="problems", nonzero=True, severity="warning",
                                when="the day's deck balance does not hold"),)),
    (ScoreRecorded.TYPE, "notice", "a participant's score, once, as the table recorded it: what"
     " standings and prizes are computed from"),
    (ScoreAcknowledged.TYPE, "info", "the participant (or the desk) accepted the recorded score"),
    (ScoreVoided.TYPE, "warning", "the table voided a recorded score: it no longer counts"),
    (ScoreDisputed.TYPE, "warning", "a participant disputed their score at the table: a"
     " complaint to be ruled on"),
    (Availability.TYPE, "notice", "a table's link went online or offline: gaps in monitoring"),
    (Standings.TYPE, "info", "the standings the public page shows, as published"),
)

# Every command the desk sends a table (game.messages.desk.COMMANDS).
COMMANDS: Final = _events(
    "command",
    (OpenHeat.NAME, "notice", "the central service opened play at a table"),
    (Seat.NAME, "info", "the central service seated a participant"),
    (Unseat.NAME, "notice", "a supervisor took a participant out of play"),
    (VoidHand.NAME, "warning", "a supervisor voided the hand in progress"),
    (CloseHeat.NAME, "notice", "the central service closed play at a table"),
    (AckScore.NAME, "info", "the desk acknowledged a score for the participant"),
    (Resend.NAME, "info", "the central service asked a table to publish its record again"),
    (StaffRoster.NAME, "notice", "who may act at the tables changed: access control"),
    (CorrectHand.NAME, "warning", "a supervisor's ruling changes a settled hand's outcome for a"
     " participant"),
    (ParticipantProofs.NAME, "info", "a participant's proofs of identity changed after seating"),
)

# Every audit action the central service writes (desk actions, the ingest's notes, the
# service's own changes).
AUDIT_ACTIONS: Final = _events(
    "audit",
    # sign-in and staff administration
    ("desk.signed_in", "info", "who worked the desk, and from when"),
    ("desk.signed_out", "info", "when a desk session ended"),
    ("desk.session_revoked", "notice", "a desk session ended by its owner or a manager before"
     " its time (a terminal left signed in, a credential feared seen)"),
    ("desk.sign_in_failed", "notice", "a wrong passphrase or unknown account at the desk: a"
     " possible attempt at someone else's access"),
    ("desk.locked", "warning", "repeated failures locked a desk account"),
    ("alert.staff_not_enrolled", "critical", "a staff account the audit trail holds no valid"
     " enrolment for tried to sign in or was left out of the tables' roster: a person added"
     " outside the service"),
    ("alert.messages_unresendable", "critical", "messages of a table the central database"
     " lacks and the table can no longer resend (its journal was rotated): a gap in the"
     " records only a backup taken before the rotation fills"),
    ("alert.triggers_restored", "critical", "a trigger that records writes made outside the"
     " service was missing and was put back: someone may have dropped it to edit unseen"),
    ("central.lease_taken", "notice", "a central instance became the active one (at a"
     " start, or taking over from one that stopped renewing): which instance wrote the"
     " records from when"),
    ("staff.enrolled", "notice", "a person was given access and a role"),
    ("staff.enabled", "notice", "a person's access was restored"),
    ("staff.disabled", "notice", "a person's access was removed"),
    ("staff.pin_changed", "notice", "a table console credential was replaced"),
    ("staff.card_changed", "notice", "an employee card was replaced (the old one no longer"
     " works)"),
    ("staff.passphrase_set", "notice", "a desk credential was replaced"),
    ("staff.roster_sent", "info", "the tables were told who may act at them"),
    (StaffRoster.NAME, "info", "the floor's desk sent the tables the staff roster"),
    # patrons, identity and the exclusion lists
    ("patron.registered", "info", "a person registered to play, with the identity checked"),
    ("patron.credentials", "notice", "a participant's card or PIN was issued or replaced"),
    ("patron.credentials_sent", "info", "the tables were given a participant's new proofs"),
    ("patron.display", "info", "how a participant's name appears on the public page"),
    ("identity.document_added", "info", "another identity document recorded for a person"),
    ("identity.held", "warning", "a registration, buy-in or seating held as a possible match of"
     " an exclusion list: a supervisor must decide"),
    ("identity.hold_approved", "notice", "a supervisor decided a possible list match is"
     " another person: the patron may play"),
    ("identity.hold_refused", "warning", "a supervisor decided a patron is the listed person:"
     " refused and refunded"),
    ("eligibility.refused", "warning", "a minor, an excluded or a barred person was refused"
     " (the exclusion registers at work)"),
    ("list.imported", "notice", "an exclusion or staff list was loaded: the lists in force"),
    ("list.rescreened", "notice", "every registered patron was checked again against the"
     " lists"),
    ("patron.disqualified", "critical", "a participant was disqualified (rule 57): their"
     " entries and prizes are withheld"),
    # entries, money and seats
    ("entry.bought", "info", "a buy-in paid: money taken into the promotion"),
    ("entry.refunded", "notice", "a buy-in paid back: money out of the promotion"),
    ("entry.released", "notice", "a table fault released a participant's place"),
    (EntrySeated.TYPE, "info", "the desk seated a participant at a table"),
    ("entry.unseat", "notice", "the desk took a participant out of their seat"),
    ("entry.seat_mismatch", "warning", "a table reported a seating the desk did not order"),
    ("entry.seat_stale", "notice", "a table reported a seating the desk has since changed"),
    ("command.resent", "info", "a desk command was sent again to its table"),
    ("command.refused", "warning", "a table refused a desk command: what was ordered was not"
     " done"),
    (HeatOpened.TYPE, "notice", "the desk opened a heat at a table"),
    (HeatClosed.TYPE, "notice", "the desk closed a heat (or a fault closed it)"),
    # scores, disputes and rulings
    ("score.ack_sent", "info", "the desk acknowledged a score for the participant"),
    (ScoreVoided.TYPE, "warning", "a supervisor voided a recorded score"),
    ("score.corrected", "warning", "a supervisor replaced a recorded score's figure"),
    ("score.dispute_resolved", "notice", "a supervisor resolved a participant's dispute"),
    ("dispute.raised", "warning", "a participant's complaint recorded at the desk"),
    ("dispute.ruled", "notice", "a supervisor's ruling on a complaint"),
    ("dispute.bundle_countersigned", "info", "a table's dispute bundle checked and"
     " countersigned by the central service"),
    ("certifier.exported", "notice", "the promotion's records exported for the independent"
     " certifier (Consumer Protection Act s36): who, which period, the bundle's digest"),
    ("dispute.closed", "info", "the participant was told the outcome of their complaint"),
    # line-ups, the Final's draw and prizes
    ("semi_final.allocated", "notice", "who qualified for the semi-finals, from the standings"),
    ("final.allocated", "notice", "who qualified for the Final, from the standings"),
    ("semi_final.seat_chosen", "info", "a semi-finalist chose a heat and seat"),
    ("proxy.nominated", "notice", "a place is to be played by a proxy (rules 25, 41)"),
    ("final.draw_committed", "notice", "the Final's seed committed before the draw: its"
     " SHA-256 and the witness, recorded before any seat is drawn"),
    ("final.drawn", "notice", "the Final's seats were drawn"),
    ("final.seats_applied", "info", "the Final's drawn seats were given to the entries"),
    ("prize.awarded", "notice", "prizes awarded and their amounts: money owed to winners"),
    ("prize.claimed", "notice", "a prize paid to its winner against their document"),
    # the service itself
    ("table.enrolment_changed", "critical", "a table's signing key or venue was changed: the"
     " key that proves its records"),
)

# Every reason the ingest refuses a message for (leaderboard.ingest.INGEST_REASONS): the
# ``rejections`` rows, kept for the regulator.
_FORGED: Final = "a possible forged, altered or replayed message"
_MALFORMED: Final = "a message no table of ours should send: a fault or a tampered link"
REJECTIONS: Final = _events(
    "rejection",
    ("bad_signature", "critical", f"the signature does not verify: {_FORGED}"),
    ("unknown_signer", "critical", f"signed by a key no enrolled table holds: {_FORGED}"),
    ("replayed_seq", "critical", f"a stored seq sent again with other content: {_FORGED}"),
    ("wrong_venue", "critical", "an envelope of another venue: a misrouted or replayed"
     " message"),
    ("wrong_topic", "critical", "a table's message on another table's topic: a table"
     " speaking for another"),
    ("table_inactive", "warning", "a message from a table marked inactive"),
    ("out_of_window", "warning", "a seq too far ahead of the table's record"),
    ("too_large", "warning", _MALFORMED),
    ("not_json", "warning", _MALFORMED),
    ("duplicate_key", "warning", _MALFORMED),
    ("not_object", "warning", _MALFORMED),
    ("unknown_version", "warning", _MALFORMED),
    ("missing_field", "warning", _MALFORMED),
    ("extra_field", "warning", _MALFORMED),
    ("wrong_type", "warning", _MALFORMED),
    ("invalid_value", "warning", _MALFORMED),
    ("not_canonical", "warning", _MALFORMED),
    ("malformed_body", "warning", "a signed message whose body breaks its type's rules"),
    ("score_conflict", "critical", "a table recorded a second, different score for one entry:"
     " the score of record is in question"),
    ("score_stale", "notice", "a score for an entry the desk has since moved on"),
    ("ack_conflict", "warning", "a second, different acknowledgement of a score"),
    ("ack_mismatch", "warning", "an acknowledgement of a score other than the one recorded"),
    ("void_conflict", "warning", "a void of a score that cannot be voided"),
    ("hand_conflict", "critical", "a second, different record of one hand: the record of play"
     " is in question"),
    ("store_error", "warning", "the database refused to store a message (it is asked for"
     " again)"),
)

_KINDS: Final[Mapping[EventKind, Mapping[str, SignificantEvent]]] = {
    "message": MESSAGES, "command": COMMANDS, "audit": AUDIT_ACTIONS, "rejection": REJECTIONS}


def event_of(kind: EventKind, name: str) -> SignificantEvent | None:
    """The catalogue's entry for a message type, command or audit action (None: unknown)."""
    return _KINDS[kind].get(name)


def severity_of(kind: EventKind, name: str, body: Mapping[str, Any] | None = None
                ) -> Severity:
    """The severity of one occurrence; an event missing from the catalogue is a ``warning``
    (nobody has said why it matters)."""
    event = event_of(kind, name)
    return "warning" if event is None else event.severity_for(body)


def names_at_least(kind: EventKind, floor: Severity) -> frozenset[str]:
    """The names of ``kind`` whose occurrences can be of ``floor`` or above (their usual
    severity or an escalation's)."""
    return frozenset(e.name for e in _KINDS[kind].values()
                     if any(at_least(s, floor)
                            for s in (e.severity, *(x.severity for x in e.escalations))))


def known_names(kind: EventKind) -> frozenset[str]:
    """Every name of ``kind`` in the catalogue."""
    return frozenset(_KINDS[kind])


def at_least(severity: str, floor: str) -> bool:
    """True when ``severity`` is ``floor`` or above (ValueError for a name not on the scale)."""
    for value in (severity, floor):
        if value not in SEVERITIES:
            raise ValueError(f"{value!r} is not a severity ({', '.join(SEVERITIES)})")
    return SEVERITIES.index(severity) >= SEVERITIES.index(floor)


_TITLES: Final[Mapping[EventKind, str]] = {
    "message": "Messages a table publishes (MQTT)",
    "command": "Commands the desk sends a table (MQTT)",
    "audit": "Audit actions the central service writes",
    "rejection": "Messages the central service refused (ingest rejections)",
}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def catalogue_markdown() -> str:
    """docs/significant-events.md: the scale, then a table per kind of event."""
    out = [
        "# Significant events",
        "",
        "<!-- Generated by `python -m leaderboard.significant_events >"
        " docs/significant-events.md`",
        "     from leaderboard/significant_events.py: edit that, not this file. -->",
        "",
        "South Africa's Gambling Act s27 asks that significant events be monitored. These are",
        "every message the tables and the desk exchange, every action the central service",
        "records in its audit log and every reason it refuses a table's message for, each",
        "with its severity and why a regulator wants it.",
        "`showdown leaderboard events` lists them from the central database (docs/cli.md).",
        "",
        "| severity | meaning |",
        "|---|---|",
        "| `info` | the routine record of play and of the desk's counter work |",
        "| `notice` | a person's decision or a change a reviewer reads: rulings, staff, money,"
        " lists |",
        "| `warning` | something refused, held, disputed or gone wrong that someone must look at |",
        "| `critical` | the integrity of the records or the money at risk: act now |",
        "",
    ]
    for kind, events in _KINDS.items():
        out += [f"## {_TITLES[kind]}", "", "| event | severity | why it is wanted |",
                "|---|---|---|"]
        for event in sorted(events.values(), key=lambda e: e.name):
            rises = "".join(f"; `{e.severity}` when {e.when}" for e in event.escalations)
            out.append(f"| `{event.name}` | `{event.severity}`{rises} | {_cell(event.why)} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
