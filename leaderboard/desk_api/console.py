"""The desk API's operations for the tables' consoles (issue 12), mounted with the others
under ``/api/desk`` by `leaderboard.desk_api.routes.desk_routes`:

    POST /staff                  {staff_id, name, role[, pin][, card][, passphrase]}  enrol
    GET  /staff                                                          the members (no hashes)
    POST /staff/{id}/disable     POST /staff/{id}/enable                 raise the roster version
    POST /staff/{id}/pin         {pin}        POST /staff/{id}/card {card}
    POST /staff/roster           [{table}]                               send the roster (sends)
    POST /patrons/{id}/credentials  {rewards_card and/or pin}            hashed, for seating
    POST /acknowledgements       {entry_id, method}                      desk ack (sends)
    GET  /disputes?open=1        POST /dispute-resolutions {entry_id, resolution}
    GET  /payouts?overridden=1

A PIN or card number in a request is hashed at once and never repeated in an answer, a log
or the audit. Every change is recorded under the signed-in person (leaderboard.desk.auth).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session
from starlette.requests import Request

from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.desk import DisputeView, PayoutCheckView, StaffView
from leaderboard.desk_api.http import Body, Result, iso
from runtime.clocks import WallClock

__all__ = ["ConsoleApi"]


def _staff(v: StaffView) -> dict[str, Any]:
    return {"staff_id": v.staff_id, "name": v.name, "role": v.role, "active": v.active,
            "pin": v.has_pin, "card": v.has_card, "passphrase": v.has_passphrase,
            "enrolled_at": iso(v.enrolled_at),
            "changed_at": iso(v.changed_at), "roster_version": v.roster_version}


def _dispute(d: DisputeView) -> dict[str, Any]:
    return {"dispute_id": d.dispute_id, "entry_id": d.entry_id, "table": d.table,
            "seq": d.seq, "stage": d.stage, "heat_id": d.heat_id,
            "score_cents": d.score_cents, "note": d.note, "at": iso(d.at), "open": d.open,
            "resolved_at": iso(d.resolved_at), "resolved_by": d.resolved_by,
            "resolution": d.resolution}


def _payout(p: PayoutCheckView) -> dict[str, Any]:
    return {"hand_id": p.hand_id, "table": p.table, "seq": p.seq, "heat_id": p.heat_id,
            "outcome": p.outcome, "mismatches": list(p.mismatches),
            "unverifiable": list(p.unverifiable), "by": p.by, "reason": p.reason,
            "at": iso(p.at)}


class ConsoleApi:
    """The console operations, sharing the settings and the desk clock."""

    def __init__(self, settings: TournamentSettings, clock: WallClock) -> None:
        self.settings = settings
        self.clock = clock

    def enrol(self, s: Session, b: Body, _: Request) -> Result:
        """Enrol a dealer, clerk, supervisor or manager."""
        view = desk.enrol_staff(s, self.clock, actor=b.actor, staff_id=b.text("staff_id"),
                                name=b.text("name"), role=b.text("role"),
                                pin=b.optional_text("pin"), card=b.optional_text("card"),
                                desk_passphrase=b.optional_text("passphrase"),
                                why=b.optional_text("why"))
        return Result(_staff(view), status=201)

    def members(self, s: Session, _: Body, __: Request) -> Result:
        """The enrolled members."""
        return Result({"staff": [_staff(v) for v in desk.list_staff(s)]})

    def disable(self, s: Session, b: Body, _: Request) -> Result:
        """Disable a member's credentials."""
        return self._active(s, b, active=False)

    def enable(self, s: Session, b: Body, _: Request) -> Result:
        """Enable a member's credentials again."""
        return self._active(s, b, active=True)

    def _active(self, s: Session, b: Body, *, active: bool) -> Result:
        view = desk.set_staff_active(s, self.clock, actor=b.actor,
                                     staff_id=b.path_text("staff_id"), active=active,
                                     why=b.optional_text("why"))
        return Result(_staff(view))

    def pin(self, s: Session, b: Body, _: Request) -> Result:
        """Give a member a new PIN."""
        view = desk.change_staff_pin(s, self.clock, actor=b.actor,
                                     staff_id=b.path_text("staff_id"),
                                     pin=b.text("pin"), why=b.optional_text("why"))
        return Result(_staff(view))

    def card(self, s: Session, b: Body, _: Request) -> Result:
        """Give a member a new employee card."""
        view = desk.change_staff_card(s, self.clock, actor=b.actor,
                                      staff_id=b.path_text("staff_id"),
                                      card=b.text("card"), why=b.optional_text("why"))
        return Result(_staff(view))

    def send_roster(self, s: Session, b: Body, _: Request) -> Result:
        """Send the roster to every active table, or one."""
        commands = desk.send_roster(s, self.clock, actor=b.actor,
                                    table=b.optional_text("table"), why=b.optional_text("why"))
        version = commands[0].args["version"] if commands else None
        return Result({"roster_version": version,
                       "sent": [{"table": c.table, "seq": c.seq} for c in commands]},
                      commands, 201)

    def credentials(self, s: Session, b: Body, _: Request) -> Result:
        """Record a patron's rewards card and/or PIN (hashed)."""
        done = desk.set_patron_credentials(
            s, self.clock, actor=b.actor, patron_id=b.path_text("patron_id"),
            rewards_card=b.optional_text("rewards_card"), pin=b.optional_text("pin"),
            why=b.optional_text("why"), card_forms=self.settings.card_forms)
        patron = done.patron
        return Result({"patron_id": patron.patron_id, "card": patron.card_hash is not None,
                       "pin": patron.pin_hash is not None,
                       "sent": [{"table": c.table, "seq": c.seq, "entry_id": c.args["entry_id"]}
                                for c in done.commands]}, done.commands)

    def acknowledge(self, s: Session, b: Body, _: Request) -> Result:
        """Send a score's acknowledgement taken at the desk to its table."""
        command = desk.acknowledge_score(s, self.clock, actor=b.actor,
                                         entry_id=b.text("entry_id"), method=b.text("method"),
                                         why=b.optional_text("why"))
        return Result({"table": command.table, "seq": command.seq, **command.args},
                      (command,), 201)

    def disputes(self, s: Session, b: Body, _: Request) -> Result:
        """The disputes (``open``: only those not resolved)."""
        rows = desk.disputes(s, open_only=b.flag("open"), entry_id=b.optional_text("entry_id"))
        return Result({"disputes": [_dispute(d) for d in rows]})

    def resolve(self, s: Session, b: Body, _: Request) -> Result:
        """Record the supervisor's resolution of an entry's open dispute."""
        rows = desk.resolve_dispute(s, self.clock, actor=b.actor, entry_id=b.text("entry_id"),
                                    resolution=b.text("resolution"))
        return Result({"resolved": [_dispute(d) for d in rows]}, status=201)

    def payouts(self, s: Session, b: Body, _: Request) -> Result:
        """The payout checks (``overridden``: only a supervisor's overrides)."""
        rows = desk.payout_checks(s, overridden_only=b.flag("overridden"))
        return Result({"payouts": [_payout(p) for p in rows]})
