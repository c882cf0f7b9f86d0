"""The table core's record of its people: the roster the desk sent, who is signed in at the
console now, failed sign-ins and their back-offs (per terminal and staff id), and whether a
person may take an action.

Rebuilt from the journal like the rest of the core: a sign-in is journaled with its outcome
(the daemon checked the secret, with the terminal it came from), so replay gives the same
people signed in and the same back-offs; a manager's lifting of a back-off is journaled too.
A table that has never received a roster is a table from before rosters: it names whoever
the record says (its journal replays as it was written); the daemon's console still admits
nobody without a credential.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from game.errors import GameError
from game.messages.console import StaffEvent
from game.messages.fields import format_ts
from game.staff import Lockout, LockoutPolicy, StaffMember, StaffRoster, refusal
from game.table.inputs import StaffChange

__all__ = ["NotAllowed", "TableStaff"]


class NotAllowed(GameError):
    """A console action by someone who may not take it; the message says why."""


class TableStaff:
    """Roster, signed-in staff and sign-in back-offs at one table."""

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

    def wait_until(self, terminal: str, staff_id: str | None, at: datetime) -> datetime | None:
        """When a sign-in from ``terminal`` for ``staff_id`` (None: an unknown id or a card)
        may be tried, if later than ``at`` (None: now)."""
        return self.lockout.wait_until(terminal, staff_id, at)

    def backed_off(self, at: datetime) -> list[dict[str, Any]]:
        """The back-offs in force, for the screen of signed-in staff."""
        return [b.view() for b in self.lockout.backed_off(at)]

    def change(self, given: StaffChange, at: datetime) -> list[StaffEvent]:
        """Apply a journaled sign-in, sign-out, failure or lifted back-off; the messages."""
        stamp = format_ts(at)
        staff_id = given.staff_id
        terminal = given.terminal or ""
        if given.event == "sign_in_failed":
            return self._failed(given, terminal, at)
        if given.event == "unlocked":
            return self._unlock(given, at)
        if staff_id is None:
            raise NotAllowed(f"a {given.event} names nobody")
        member = self.member(staff_id)
        if given.event == "signed_in":
            if member is None:
                raise NotAllowed(f"{staff_id} is not on this table's staff roster")
            self.lockout.succeeded(terminal, staff_id)
            self.signed_in[staff_id] = member
            role = member.role
        else:
            gone = self.signed_in.pop(staff_id, None)
            if gone is None:
                raise NotAllowed(f"{staff_id} is not signed in")
            role = gone.role
        return [StaffEvent(event=given.event, method=given.method, staff_id=staff_id,
                           role=role, detail=given.detail, at=stamp)]

    def _failed(self, given: StaffChange, terminal: str, at: datetime) -> list[StaffEvent]:
        """A failed sign-in counts against (terminal, id); one refused unchecked while the
        terminal had to wait is recorded and not counted."""
        stamp = format_ts(at)
        where = f" at {terminal}" if terminal else ""
        out = [StaffEvent(event="sign_in_failed", method=given.method,
                          staff_id=given.staff_id, detail=given.detail + where, at=stamp)]
        if given.waited:
            return out
        key = None if given.method == "card" else given.staff_id  # a card: the terminal's
        back_off = self.lockout.failed(terminal, key, at)
        if back_off.wait_until is not None:
            wait = math.ceil((back_off.wait_until - at).total_seconds())
            out.append(StaffEvent(
                event="locked", method=given.method, staff_id=key,
                detail=f"{back_off.failures} failed sign-ins{where}: the next attempt there"
                f" waits {wait} s, until {format_ts(back_off.wait_until)}", at=stamp))
        return out

    def _unlock(self, given: StaffChange, at: datetime) -> list[StaffEvent]:
        """A manager lifts a back-off (refused for anyone else, and when none is in force)."""
        self.authorize("unlock_staff", given.by)
        who = given.staff_id or "unknown ids and cards"
        where = "every terminal" if given.terminal is None else given.terminal
        lifted = self.lockout.lift(given.staff_id, given.terminal, at)
        if not lifted:
            raise NotAllowed(f"nothing is locked for {who} at {where}: no sign-in back-off"
                             " is on record there")
        terminals = ", ".join(b.terminal or "(no terminal recorded)" for b in lifted)
        return [StaffEvent(event="unlocked", method=given.method, staff_id=given.staff_id,
                           detail=f"back-off lifted by {given.by} at {terminals}:"
                           f" {given.detail}", at=format_ts(at))]

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
