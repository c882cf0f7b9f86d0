"""The desk API's identity operations (issue 13), mounted with the others under
``/api/desk`` by `leaderboard.desk_api.routes.desk_routes`:

    POST /patrons/{id}/documents  {kind, number}              another document (201)
    GET  /holds?open=1&patron_id=                              possible list matches held
    POST /holds/{id}/approve      {why}                        a supervisor clears the match
    POST /holds/{id}/refuse       {why}                        a supervisor refuses the patron
    POST /disqualifications       {patron_id, why}             rule 57 (sends `unseat`, 201)
    GET  /fees                                                 entry fees by payment method

Decisions (approve, refuse, disqualify) are a supervisor's (leaderboard.desk.roles): an
operator enrolled as a dealer is answered 403. Every change names its operator in ``actor``.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy.orm import Session
from starlette.requests import Request

from game.money import format_rand
from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.desk import Disqualification, FeeLine, HoldView
from leaderboard.desk_api.http import Body, Result, iso
from runtime.clocks import WallClock

__all__ = ["IdentityApi", "disqualification_json", "fee_json", "hold_json"]

_MAX_ID: Final = 2**31 - 1  # ids are 32-bit integers on every database


def hold_json(v: HoldView) -> dict[str, Any]:
    """A hold as the API answers it."""
    return {"hold_id": v.hold_id, "patron_id": v.patron_id, "context": v.context,
            "matches": list(v.matches), "open": v.open, "opened_at": iso(v.opened_at),
            "opened_by": v.opened_by, "decision": v.decision,
            "decided_at": iso(v.decided_at), "decided_by": v.decided_by, "reason": v.reason}


def disqualification_json(d: Disqualification) -> dict[str, Any]:
    """A disqualification as the API answers it."""
    return {"patron_id": d.patron_id, "reason": d.reason, "entries": list(d.entries),
            "unseated": list(d.unseated), "withheld_awards": list(d.withheld),
            "seqs": [c.seq for c in d.commands]}


def fee_json(line: FeeLine) -> dict[str, Any]:
    """One payment method's fees."""
    return {"payment": line.payment, "entries": line.entries, "cents": line.cents,
            "shown": format_rand(line.cents)}



class IdentityApi:
    """The identity operations, sharing the settings and the desk clock."""

    def __init__(self, settings: TournamentSettings, clock: WallClock) -> None:
        self.settings = settings
        self.clock = clock

    def add_document(self, s: Session, b: Body, _: Request) -> Result:
        """Record another document a patron presents (checked against the lists at once)."""
        row = desk.add_document(s, self.settings, self.clock, actor=b.actor,
                                patron_id=b.path_text("patron_id"),
                                kind=b.text("kind"), number=b.text("number"),
                                why=b.optional_text("why"))
        return Result({"patron_id": row.patron_id, "kind": row.kind, "number": row.number},
                      status=201)

    def holds(self, s: Session, b: Body, _: Request) -> Result:
        """The holds (``open``: only those waiting for a decision)."""
        rows = desk.holds(s, open_only=b.flag("open"), patron_id=b.optional_text("patron_id"))
        return Result({"holds": [hold_json(v) for v in rows]})

    def approve(self, s: Session, b: Body, _: Request) -> Result:
        """A supervisor approves a possible match (the patron may play)."""
        view = desk.approve_hold(s, self.clock, actor=b.actor, hold_id=b.path_integer("hold_id"),
                                 why=b.optional_text("why"))
        return Result(hold_json(view))

    def refuse(self, s: Session, b: Body, _: Request) -> Result:
        """A supervisor refuses a possible match (the patron is refused, recorded)."""
        view = desk.refuse_hold(s, self.clock, actor=b.actor, hold_id=b.path_integer("hold_id"),
                                why=b.optional_text("why"))
        return Result(hold_json(view))

    def disqualify(self, s: Session, b: Body, _: Request) -> Result:
        """Disqualify a patron (rule 57); the unseat commands are sent."""
        result = desk.disqualify_patron(s, self.clock, actor=b.actor,
                                        patron_id=b.text("patron_id"),
                                        why=b.optional_text("why"))
        return Result(disqualification_json(result), result.commands, 201)

    def fees(self, s: Session, _: Body, __: Request) -> Result:
        """The entry fees collected, by payment method."""
        lines = desk.entry_fees(s)
        return Result({"fees": [fee_json(line) for line in lines],
                       "total_cents": sum(line.cents for line in lines)})
