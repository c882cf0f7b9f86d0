"""Heats: the `open_heat` and `close_heat` commands for a table, and which heats are open
and which entries occupy a seat."""

from __future__ import annotations

import re
import secrets
from typing import Any, Final

from sqlalchemy import Select, and_, bindparam, func, or_, select
from sqlalchemy.orm import Session

from game.messages.desk import CloseHeat, OpenHeat
from game.messages.table import HeatClosed, HeatOpened
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.command_log import record_command
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.ids import FINAL_HEAT, checked_table_id, semi_heat_id
from leaderboard.desk.values import DeskCommand
from leaderboard.models import AuditEntry, DeskCommandRecord, Entry, Score
from leaderboard.projections import SEATED
from leaderboard.projections.command_results import REFUSED
from runtime.clocks import WallClock

_HEAT_ID: Final = re.compile(r"[a-z0-9-]{1,64}")


def _open_heats_query() -> Select[Any]:
    last = (select(func.max(AuditEntry.id))
            .join(DeskCommandRecord, DeskCommandRecord.audit_id == AuditEntry.id)
            .where(AuditEntry.action.in_((HeatOpened.TYPE, HeatClosed.TYPE)),
                   DeskCommandRecord.state != REFUSED)
            .group_by(DeskCommandRecord.table_id))
    return select(AuditEntry.detail).where(AuditEntry.id.in_(last),
                                           AuditEntry.action == HeatOpened.TYPE)


# Built once: a statement object keeps its compiled cache key, where one built for each call
# costs its construction and its key again (the desk asks for these at every seat).
_OPEN_HEATS: Final = _open_heats_query()


def open_heats_by_table(session: Session) -> dict[str, tuple[str, Stage]]:
    """The heat the desk last opened at each table and has not closed: table -> (heat, stage).

    Each table's last heat-open or heat-close action that the table did not refuse decides
    (every such action records its command, leaderboard.desk.command_log): one aggregate
    query, whatever the number of heats a campaign has opened, and one row read a table.
    """
    return {str(detail["table"]): (str(detail["heat_id"]), Stage(detail["stage"]))
            for (detail,) in session.execute(_OPEN_HEATS)}


def _occupied_query(*, table: bool, player: bool) -> Select[Any]:
    scored = select(Score.entry_id).where(Score.entry_id == Entry.entry_id).exists()
    query = select(Entry).where(Entry.status == SEATED, ~scored)
    if table:
        query = query.where(Entry.table_id == bindparam("table"))
    if player:
        query = query.where(or_(Entry.played_by == bindparam("player"),
                                and_(Entry.played_by.is_(None),
                                     Entry.patron_id == bindparam("player"))))
    return query.order_by(Entry.entry_id)


_OCCUPIED: Final = {(t, p): _occupied_query(table=t, player=p)
                    for t in (False, True) for p in (False, True)}


def occupied_entries(session: Session, *, table: str | None = None,
              player: str | None = None) -> list[Entry]:
    """Entries seated (at `table`, or played by `player`) whose score has not come in."""
    query = _OCCUPIED[table is not None, player is not None]
    params = {k: v for k, v in (("table", table), ("player", player)) if v is not None}
    return list(session.scalars(query, params).all())


def open_heat(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
              table: str, stage: Stage | str, heat_id: str | None = None,
              why: str | None = None) -> DeskCommand:
    """Record and return the `open_heat` command for a table.

    Qualifying heats get an id of their own unless one is given; a semi-final heat must be
    ``semi-final-1`` or ``-2`` (the heats patrons choose, rule 27) and the Final
    ``final-1``.
    """
    actor = begin_action(session, actor)
    now = desk_now(clock)
    table = checked_table_id(table)
    try:
        stage = Stage(stage)
    except ValueError:
        raise DeskError(f"unknown stage {stage!r} (one of {', '.join(s.value for s in Stage)})"
                        ) from None
    open_now = open_heats_by_table(session)
    if table in open_now:
        raise Conflict(f"heat {open_now[table][0]} is still open at table {table}; close it first")
    if stage is Stage.QUALIFYING:
        day = settings.schedule.heat_day(now)
        if day is None:
            local = now.astimezone(settings.tz)
            raise Conflict(f"no qualifying heat runs at {local:%Y-%m-%d %H:%M}")
        heat_id = heat_id or f"q-{day:%Y%m%d}-{table}-{secrets.token_hex(2)}"
    else:
        sset = settings.stage(stage)
        heats = sset.heats or 1
        allowed = ([semi_heat_id(n) for n in range(1, heats + 1)] if stage is Stage.SEMI_FINAL
                   else [FINAL_HEAT])
        heat_id = heat_id or (allowed[0] if len(allowed) == 1 else None)
        if heat_id not in allowed:
            raise DeskError(f"a {stage} heat is one of {', '.join(allowed)}, not {heat_id!r}")
    if not _HEAT_ID.fullmatch(heat_id):
        raise DeskError(f"heat id {heat_id!r} must be a-z, 0-9 and '-' (at most 64)")
    if heat_id in {h for h, _ in open_now.values()}:
        raise Conflict(f"heat {heat_id} is already open at another table")
    command = OpenHeat(stage=stage.value, heat_id=heat_id)
    args = command.args()
    row = write_audit(session, now, actor, HeatOpened.TYPE,
                 detail={"table": table, "command": command.NAME, "args": args, **args}, why=why)
    command_out = record_command(session, row, table, command)
    session.commit()
    return command_out


def close_heat(session: Session, clock: WallClock, *, actor: str, table: str,
               why: str | None = None) -> DeskCommand:
    """Record and return the `close_heat` command; refused while entries are still seated."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    table = checked_table_id(table)
    open_now = open_heats_by_table(session)
    if table not in open_now:
        raise Conflict(f"the desk has no heat open at table {table}")
    seated = occupied_entries(session, table=table)
    if seated:
        raise Conflict(f"entries still seated at table {table} without a score: "
                       + ", ".join(e.entry_id for e in seated))
    row = write_audit(session, now, actor, HeatClosed.TYPE, detail={
        "table": table, "command": CloseHeat.NAME, "args": {}, "heat_id": open_now[table][0]},
        why=why)
    command = record_command(session, row, table, CloseHeat())
    session.commit()
    return command
