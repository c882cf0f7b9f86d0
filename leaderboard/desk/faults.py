"""A table taken out of service mid-heat: its entries refunded or freed, its heat
closed."""

from __future__ import annotations

from sqlalchemy.orm import Session

from game.messages.desk import CloseHeat
from game.messages.table import HeatClosed
from game.tournament.entries import Stage
from leaderboard.desk.action import begin_action, desk_now, require_reason, write_audit
from leaderboard.desk.command_log import record_command
from leaderboard.desk.entries import record_refund
from leaderboard.desk.errors import Conflict
from leaderboard.desk.heats import occupied_entries, open_heats_by_table
from leaderboard.desk.ids import checked_table_id
from leaderboard.desk.lookups import REGISTERED
from leaderboard.desk.seating import record_unseat
from leaderboard.desk.values import DeskCommand, TableFault
from leaderboard.projections import RELEASED
from runtime.clocks import WallClock


def table_fault(session: Session, clock: WallClock, *, actor: str, table: str,
                why: str) -> TableFault:
    """Take a table out of service mid-heat (D60): its unfinished qualifying entries are
    refunded, its semi-final and Final places are freed to be seated again, and the desk
    closes its heat. The returned commands (unseat each, close the heat) go to the table,
    which applies them if it comes back, so it never plays those entries on."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the table is out of service",
                            kept="the audit and the table's record")
    table = checked_table_id(table)
    open_now = open_heats_by_table(session)
    if table not in open_now:
        raise Conflict(f"the desk has no heat open at table {table}")
    heat_id = open_now[table][0]
    refunded: dict[str, int] = {}
    released: list[str] = []
    commands: list[DeskCommand] = []
    for entry in occupied_entries(session, table=table):
        commands.append(record_unseat(session, now, actor, entry, why=why, table_fault=True,
                                reason=f"table out of service: {reason}"))
        if entry.stage == Stage.QUALIFYING.value:
            record_refund(session, now, actor, entry, cause="table_fault", why=reason)
            refunded[entry.entry_id] = entry.buy_in_cents
        else:  # the place is played again from the start, at a table the desk seats it at
            write_audit(session, now, actor, RELEASED, detail={
                "entry_id": entry.entry_id, "table": table, "heat_id": entry.heat_id,
                "seat": entry.seat}, why=why)
            entry.table_id, entry.status = None, REGISTERED
            released.append(entry.entry_id)
    row = write_audit(session, now, actor, HeatClosed.TYPE, detail={
        "table": table, "command": CloseHeat.NAME, "args": {}, "heat_id": heat_id,
        "table_fault": True}, why=why)
    commands.append(record_command(session, row, table, CloseHeat()))
    session.commit()
    return TableFault(table=table, heat_id=heat_id, refunded=refunded,
                      released=tuple(released), commands=tuple(commands))
