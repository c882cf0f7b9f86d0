"""The table core's record of its people: the roster the desk sent, who is signed in at the
console now, failed sign-ins and lock-outs, and whether a person may take an action.

Rebuilt from the journal like the rest of the core: a sign-in is journaled with its outcome
(the daemon checked the secret), so replay gives the same people signed in and locked out.
A table that has never received a roster is a table from before rosters: it names whoever
the record says (its journal replays as it was written); the daemon's console still admits
nobody without a credential.
"""

from __future__ import annotations

from datetime import datetime

from game.errors import GameError
from game.messages.console import StaffEvent
from game.messages.fields import format_ts
from game.staff import Lockout, LockoutPolicy, StaffMember, StaffRoster, refusal
from game.table.inputs import StaffChange

__all__ = ["NotAllowed", "TableStaff"]


class NotAllowed(GameError):
    """A console action by someone who may not take it; the message says why."""


class TableStaff:
    """Roster, signed-in staff and lock-outs at one table."""

    def __init__(self, policy: LockoutPolicy | None = None) -> None:
        self.roster: StaffRoster | None = None
        self.signed_in: dict[str, StaffMember] = {}
        self.lockout = Lockout(policy or LockoutPolicy())

    def take_roster(self, roster: StaffRoster) -> None:
        """Replace the roster with a newer one; signed-in staff no longer on it (or no longer
        active) are signed out."""
        if self.roster is not None and roster.version <= self.roster.version:
            raise NotAllowed(f"staff roster version {roster.version} is not newer than the"
                             f" table's version {self.roster.version}")
        self.roster = roster
        for staff_id in list(self.signed_in):
            member = roster.member(staff_id)
            if member is None or not member.active:
                del self.signed_in[staff_id]
            else:
                self.signed_in[staff_id] = member

    def member(self, staff_id: str) -> StaffMember | None:
        """An enrolled member by id."""
        return None if self.roster is None else self.roster.member(staff_id)

    def locked_until(self, staff_id: str, at: datetime) -> datetime | None:
        """When a locked credential unlocks (None: not locked)."""
        return self.lockout.locked_until(staff_id, at)

    def change(self, given: StaffChange, at: datetime) -> list[StaffEvent]:
        """Apply a journaled sign-in, sign-out or failure; the messages it causes."""
        stamp = format_ts(at)
        staff_id = given.staff_id
        if given.event == "sign_in_failed":
            out = [StaffEvent(event="sign_in_failed", method=given.method, staff_id=staff_id,
                              detail=given.detail, at=stamp)]
            if staff_id is not None and self.lockout.failed(staff_id, at):
                until = self.lockout.locked_until(staff_id, at)
                out.append(StaffEvent(
                    event="locked", method=given.method, staff_id=staff_id,
                    detail=f"{self.lockout.policy.failures} failed sign-ins: locked until"
                    f" {format_ts(until) if until else stamp}", at=stamp))
            return out
        if staff_id is None:
            raise NotAllowed(f"a {given.event} names nobody")
        member = self.member(staff_id)
        if given.event == "signed_in":
            if member is None:
                raise NotAllowed(f"{staff_id} is not on this table's staff roster")
            self.lockout.succeeded(staff_id)
            self.signed_in[staff_id] = member
            role = member.role
        else:
            gone = self.signed_in.pop(staff_id, None)
            if gone is None:
                raise NotAllowed(f"{staff_id} is not signed in")
            role = gone.role
        return [StaffEvent(event=given.event, method=given.method, staff_id=staff_id,
                           role=role, detail=given.detail, at=stamp)]

    def authorize(self, action: str, by: str | None) -> None:
        """Raise NotAllowed when ``by`` may not take ``action`` (a table with a roster)."""
        if self.roster is None:
            return
        member = None if by is None else self.signed_in.get(by)
        if member is None and by is not None and self.member(by) is not None:
            raise NotAllowed(f"{by} is not signed in at this table")
        why = refusal(member, action)
        if why is not None:
            raise NotAllowed(why)

    def view(self) -> list[dict[str, str]]:
        """Who is signed in, for the screen and the status."""
        return [{"staff_id": m.staff_id, "name": m.name, "role": m.role}
                for _, m in sorted(self.signed_in.items())]
