"""The prizes awarded so far, for the standings document and the page (rules 17, 18, 52, 55):
each with its kind and place, amount, the winning entry (and its display name when the page
shows names) and whether it has been claimed, is still open (until when) or has expired."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.money import format_rand
from game.tournament.schema import TournamentSettings
from leaderboard.desk.awards import prize_status
from leaderboard.display_names import entry_code
from leaderboard.eligibility import from_db
from leaderboard.models import PrizeAward

__all__ = ["awarded_prizes"]

_LABELS: Final = {"weekly": "Weekly prize", "top_score": "Top Score Progressive",
                  "final": "Final Prize Pool"}


def awarded_prizes(session: Session, settings: TournamentSettings, *, now: datetime,
                   names: Mapping[str, str] | None = None,
                   codes: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every prize awarded, in award order, with the winning entry's ``code`` (from
    ``codes``, entry id -> code, or derived); ``names`` (patron id -> display name) adds a
    ``name`` to each (left out of what leaves the service, like every name)."""
    out: list[dict[str, Any]] = []
    for row in session.scalars(select(PrizeAward).order_by(PrizeAward.id)):
        status = prize_status(row, now)
        deadline = from_db(row.deadline).astimezone(settings.tz)
        item: dict[str, Any] = {
            "award_id": row.id, "kind": row.kind, "label": _LABELS.get(row.kind, row.kind),
            "place": row.place, "entry_id": row.entry_id,
            "code": (codes or {}).get(row.entry_id) or entry_code(row.entry_id),
            "amount": {"cents": row.amount_cents, "text": format_rand(row.amount_cents)},
            "status": status, "deadline_local": f"{deadline:%Y-%m-%d %H:%M}"}
        if names is not None:
            item["name"] = names.get(row.patron_id)
        out.append(item)
    return out
