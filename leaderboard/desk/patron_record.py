"""A patron's record as the desk shows it (``GET /api/desk/patrons/{id}``, `showdown desk patron
show`): who they are, their standing and documents' kinds, and each entry they hold with its
short code and where it stands in the central records: seated, its score recorded (the
score, hands, table), acknowledged by card, PIN, signature or at the desk and when, disputed,
voided or corrected (D333). A detail view: entry ids beside the codes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.money import format_rand
from game.tournament.schema import TournamentSettings
from leaderboard.desk.lookups import get_patron
from leaderboard.desk.seating import shown_code
from leaderboard.models import Dispute, Entry, Score

__all__ = ["entry_progress", "patron_record"]

# How an acknowledgement's method reads (the table's methods, joined by "+", and the desk's).
_METHODS = {"card": "rewards card", "pin": "PIN", "signature": "signature on the screen",
            "desk_signature": "signed slip at the desk", "desk_id_check": "ID checked at the desk",
            "desk": "at the desk"}


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _iso(moment: datetime | None) -> str | None:
    value = _utc(moment)
    return None if value is None else value.isoformat()


def _method_text(method: str | None) -> str | None:
    if method is None:
        return None
    return " + ".join(_METHODS.get(m, m) for m in method.split("+"))


def entry_progress(entry: Entry, score: Score | None, *, disputed: bool,
                   settings: TournamentSettings) -> dict[str, Any]:
    """Where one entry stands: its ``state`` (one word), the score block when one is recorded
    (amounts in cents and rand, times in UTC and venue-local), and a one-line ``summary``."""
    def local(moment: datetime | None) -> str | None:
        value = _utc(moment)
        return None if value is None else f"{value.astimezone(settings.tz):%Y-%m-%d %H:%M}"

    out: dict[str, Any] = {"entry_id": entry.entry_id, "code": shown_code(entry),
                           "stage": entry.stage, "heat_id": entry.heat_id,
                           "table": entry.table_id, "seat": entry.seat,
                           "status": entry.status, "played_by": entry.played_by,
                           "disqualified": entry.disqualified_at is not None}
    where = f"table {entry.table_id} seat {entry.seat}" if entry.table_id else "no table"
    if score is None:
        out.update(state=entry.status, score=None,
                   summary=f"{entry.status}" + (f" at {where}" if entry.table_id else ""))
        return out
    counted = score.counted_cents
    acknowledged = _utc(score.counted_acknowledged_at)
    voided = score.voided_at is not None or score.status == "voided"
    state = ("voided" if voided else "acknowledged" if acknowledged is not None
             else "disputed" if disputed else "scored")
    out["state"] = state
    out["score"] = {
        "score_cents": counted, "score": format_rand(counted),
        "table_score_cents": score.score_cents, "corrected": score.corrected_cents is not None,
        "hands": score.hands, "table": score.table_id, "status": score.status,
        "recorded_at": _iso(score.recorded_at),
        "recorded_local": local(score.recorded_at),
        "acknowledged": acknowledged is not None, "ack_method": score.ack_method,
        "ack_method_text": _method_text(score.ack_method),
        "acknowledged_at": None if acknowledged is None else acknowledged.isoformat(),
        "acknowledged_local": local(acknowledged),
        "voided": voided, "void_reason": score.void_reason, "disputed": disputed,
    }
    text = f"scored {format_rand(counted)} in {score.hands} hands at table {score.table_id}"
    if voided:
        text += f"; score voided ({score.void_reason or 'no reason given'})"
    elif acknowledged is not None:
        how = _method_text(score.ack_method) or "a correction"
        text += f"; acknowledged by {how} at {local(acknowledged)}"
    elif disputed:
        text += "; disputed, awaiting a supervisor's ruling"
    else:
        text += "; awaiting the player's acknowledgement"
    out["summary"] = text
    return out


def patron_record(session: Session, settings: TournamentSettings,
                  patron_id: str) -> dict[str, Any]:
    """The patron's record (NotFound for no such patron); JSON-ready."""
    patron = get_patron(session, patron_id)
    entries = session.scalars(select(Entry).where(Entry.patron_id == patron.patron_id)
                              .order_by(Entry.bought_at, Entry.entry_id)).all()
    ids = [e.entry_id for e in entries]
    scores = {s.entry_id: s for s in session.scalars(
        select(Score).where(Score.entry_id.in_(ids)))} if ids else {}
    open_disputes = set(session.scalars(select(Dispute.entry_id).where(
        Dispute.entry_id.in_(ids), Dispute.resolved_at.is_(None)))) if ids else set()
    return {"patron_id": patron.patron_id, "name": patron.name, "id_kind": patron.id_kind,
            "standing": patron.standing, "standing_reason": patron.standing_reason,
            "documents": [d.kind for d in patron.documents],
            "card": patron.card_hash is not None, "pin": patron.pin_hash is not None,
            "entries": [entry_progress(e, scores.get(e.entry_id),
                                       disputed=e.entry_id in open_disputes,
                                       settings=settings) for e in entries]}
