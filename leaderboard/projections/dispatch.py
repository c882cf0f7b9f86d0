"""Applying one newly stored message: its body decoded once, then the rule of its type."""

from __future__ import annotations

from sqlalchemy import Connection

from leaderboard.projections.chips import chip_rows
from leaderboard.projections.command_results import command_result
from leaderboard.projections.console import console_rows
from leaderboard.projections.decoding import NOT_READ, Decoded, NotRead, read
from leaderboard.projections.hands import hand
from leaderboard.projections.results import MALFORMED_BODY, Outcome, Projected
from leaderboard.projections.scores import score_acknowledged, score_recorded, score_voided
from leaderboard.projections.seatings import entry_seated, entry_unseated
from leaderboard.projections.sql import LaterMessages, statements
from leaderboard.projections.tallies import tally_rows
from wire.envelope import Envelope
from wire.messages import (
    ChipsCounted,
    ChipsReconciled,
    CommandResult,
    DecksEvent,
    EntrySeated,
    EntryUnseated,
    HandCorrected,
    HandDisputed,
    HandSettled,
    HandVoided,
    MessageError,
    PayoutChecked,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
)

__all__ = ["project"]


def project(
    connection: Connection, envelope: Envelope, *, later: LaterMessages | None = None,
    text: str | None = None, decoded: Decoded | NotRead = NOT_READ,
) -> Projected:
    """Apply one newly stored message; ``later`` is given when the table's higher seqs exist.

    ``text`` is the body's JSON text and ``decoded`` what `decoding.read` gave for it, if the
    caller has them. Runs inside the caller's transaction (the one that stored the message).
    """
    result = Outcome()
    message = read(envelope) if decoded is NOT_READ else decoded
    if isinstance(message, MessageError):
        result.refuse(envelope, MALFORMED_BODY, str(message))
        return result.frozen()
    if message is None:
        return result.frozen()
    sql = statements(connection)
    match message:
        case ScoreRecorded():
            score_recorded(connection, sql, envelope, message, later=later, result=result)
        case ScoreAcknowledged():
            score_acknowledged(connection, sql, envelope, message, result)
        case ScoreVoided():
            score_voided(connection, sql, envelope, message, result)
        case HandSettled() | HandVoided():
            hand(connection, sql, envelope, message, text=text, result=result)
        case EntrySeated():
            entry_seated(connection, sql, envelope, message, later=later, result=result)
        case EntryUnseated():
            entry_unseated(connection, sql, envelope, message, result)
        case CommandResult():
            command_result(connection, envelope, message, result)
        case ScoreDisputed() | PayoutChecked() | HandDisputed() | HandCorrected():
            done = console_rows(connection, [(0, envelope, message)])
            return done.get(0, result.frozen())
        case ChipsReconciled():
            return chip_rows(connection, [(0, envelope, message)]).get(0, result.frozen())
        case ChipsCounted() | DecksEvent():
            return tally_rows(connection, [(0, envelope, message)]).get(0, result.frozen())
    return result.frozen()
