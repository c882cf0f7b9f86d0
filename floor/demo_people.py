"""The demo floor's people and their small helpers: the desk actions the floor takes for the
virtual dealers (a staff roster, a buy-in, a dispute's ruling), the order in which the tables'
participants acknowledge their scores, and the virtual table that keeps to it.

Scores tie often, and ties rank by the earlier acknowledgement (tournament.md): tables that
play a round in parallel therefore acknowledge one after the other, in table order, so that a
seed gives the same ranking however fast each table happened to play.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.auth import authorise, init_first_manager, sign_in
from leaderboard.desk.command_log import record_command
from leaderboard.desk.disputes import resolve_dispute
from runtime.clocks import WallClock
from simulators.table_play import VirtualTable
from wire.messages import StaffRoster

__all__ = ["AckTurns", "DemoTable", "buy", "free_port", "resolve", "roster_command",
           "until_stopped"]

_T = TypeVar("_T")


class AckTurns:
    """Tables acknowledge their heat's scores in a fixed order (one round of parallel heats)."""

    def __init__(self, order: Sequence[str]) -> None:
        self._pending = list(order)
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def turn(self, table: str) -> AsyncIterator[None]:
        """Wait until the tables before `table` have acknowledged (or given up), then hold
        the turn while `table`'s participants acknowledge."""
        async with self._changed:
            await self._changed.wait_for(lambda: not self._pending
                                         or self._pending[0] == table
                                         or table not in self._pending)
        try:
            yield
        finally:
            await self.release(table)

    async def release(self, table: str) -> None:
        """`table` is done (or stopped): the next table's turn."""
        async with self._changed:
            if table in self._pending:
                self._pending.remove(table)
            self._changed.notify_all()


class DemoTable(VirtualTable):
    """A virtual table whose participants acknowledge in their turn (`turns`, if set)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turns: AckTurns | None = None

    async def acknowledge_all(self) -> None:
        """Every score waiting at the table is acknowledged, when it is this table's turn."""
        if self.turns is None:
            await super().acknowledge_all()
            return
        async with self.turns.turn(self.table.table_id):
            await super().acknowledge_all()


def roster_command(session: Session, clock: WallClock, by: str, *, table: str,
                   args: dict[str, Any]) -> desk.DeskCommand:
    """Record the sending of a table's staff roster in the desk's audit (who is enrolled,
    never their hashes); the command to send."""
    roster = StaffRoster.decode(args)
    actor = begin_action(session, by)
    row = write_audit(session, desk_now(clock), actor, StaffRoster.NAME, detail={
        "table": table, "command": StaffRoster.NAME, "version": roster.version,
        "members": [{"staff_id": m.staff_id, "role": m.role} for m in roster.members]})
    command = record_command(session, row, table, roster)  # its seq: docs/desk-commands.md
    session.commit()
    return command


def enrol_desk(session: Session, clock: WallClock, *, manager: str, manager_name: str,
               staff: Sequence[tuple[str, str]], passwords: Mapping[str, str]) -> str:
    """Enrol a new database's first manager, who enrols the other `staff` (id, role) with
    their `passwords`, as `showdown desk init` and the desk do; the manager's session token."""
    init_first_manager(session, clock, staff_id=manager, name=manager_name,
                       passphrase_text=passwords[manager])
    token = sign_in(session, clock, staff_id=manager, passphrase_text=passwords[manager],
                    client="demo").token
    for staff_id, role in staff:
        if staff_id == manager:
            continue
        actor = authorise(session, clock, token, "staff.enrol").staff_id
        desk.enrol_staff(session, clock, actor=actor, staff_id=staff_id,
                         name=staff_id.replace("-", " ").title(), role=role,
                         desk_passphrase=passwords[staff_id])
    return token


def buy(session: Session, settings: Any, by: str, *, clock: WallClock, patron_id: str,
        entry_id: str) -> str:
    """A desk buy-in for the patron, in cash, under the seeded run's entry id; the id."""
    return desk.buy_entry(session, settings, clock, actor=by, patron_id=patron_id,
                          payment="cash", entry_id=entry_id).entry_id


def resolve(session: Session, clock: WallClock, by: str, *, entry_id: str,
            resolution: str) -> None:
    """The supervisor's ruling on a dispute, recorded at the desk (audited)."""
    resolve_dispute(session, clock, actor=by, entry_id=entry_id, resolution=resolution)


def free_port(host: str, wanted: int) -> int:
    """`wanted` if it can be listened on now, else 0 (any free port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, wanted))
        except OSError:
            return 0
    return wanted


async def until_stopped(work: Awaitable[_T], stop: asyncio.Event) -> tuple[bool, _T | None]:
    """Run `work` until it ends or `stop` is set: (finished, its result); its error raises."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        return False, None
    return True, task.result()
