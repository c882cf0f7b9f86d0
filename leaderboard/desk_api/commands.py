"""The desk API's table commands: delivering them and waiting briefly for the table's verdict,
listing them with their state, and comparing the desk's view of each table with the table's.

    GET /commands?state=&pending=&table=&entry=&limit=   the desk's commands, newest first
    GET /commands/{seq}                             one command and its state
    GET /table-check[?table=]                       each table's two views and differences

An action that sends commands (open a heat, seat, ...) is answered once the tables have
answered, or after ``answer_wait`` seconds (the service's ``http.desk_answer_wait_s``,
default 3): 200/201 when every table accepted, 409 with the table's reason when one refused
(the desk has undone its part: a refused seat leaves the entry not seated), 202 when a
command is sent but not answered yet (``GET /commands/{seq}`` tells later). Each answer lists
its ``commands`` with their state. The answers come through the ingest (the tables'
``command.result`` messages), so the wait costs nothing when the ingest is not running; with
``answer_wait`` None the API neither waits nor lists the commands: it answers as before
(docs/desk-commands.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from leaderboard.desk import DeskCommand, NotFound
from leaderboard.desk.command_log import CommandView, command_views, mark_sent
from leaderboard.desk.sender import CommandSender, SendError
from leaderboard.desk.table_check import check_tables
from leaderboard.desk_api.http import Body, Result
from leaderboard.projections.command_results import ACCEPTED, REFUSED

__all__ = ["CommandsApi", "Delivery", "deliver", "wait_for_answers"]

_POLL_S: Final = 0.05
_log = structlog.get_logger("leaderboard.desk_api.routes")


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """What became of an action's commands: the send error, if any, and their states."""

    error: str | None
    views: tuple[CommandView, ...]
    waited: bool  # for the tables' answers
    listed: bool  # the answer lists the commands and their state
    unread: str | None = None  # the database did not answer while the states were read

    def status(self, ok: int) -> int:
        """The HTTP status: ``ok`` when every command was accepted (or the API did not
        wait), 409 when a table refused one, 202 when one has no answer yet."""
        if self.unread is not None:
            return 202
        if not self.waited or not self.views:
            return ok
        if any(v.state == REFUSED for v in self.views):
            return 409
        return ok if all(v.state == ACCEPTED for v in self.views) else 202

    def body(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The action's answer with its commands' states (and the refusal's reason)."""
        if self.unread is not None:
            answer = {**answer, "note": self.unread}
        if not self.views or not self.listed:
            return answer
        out = {**answer, "commands": [v.as_dict() for v in self.views]}
        refused = [v for v in self.views if v.state == REFUSED]
        if self.waited and refused:
            out["error"] = "; ".join(f"table {v.table} refused {v.command} (seq {v.seq}):"
                                     f" {v.reason}" for v in refused)
        return out


def _views(sessions: sessionmaker[Session], seqs: Sequence[int]) -> tuple[CommandView, ...]:
    with sessions() as session:
        found = {v.seq: v for v in command_views(session, seqs=seqs, limit=len(seqs))}
    return tuple(found[s] for s in seqs if s in found)


async def wait_for_answers(sessions: sessionmaker[Session], seqs: Sequence[int], *,
                           timeout: float) -> tuple[CommandView, ...]:
    """The commands' states once each is accepted or refused, or when ``timeout`` runs out."""
    deadline = time.monotonic() + timeout
    while True:
        views = await run_in_threadpool(_views, sessions, seqs)
        if all(v.answered for v in views) or time.monotonic() >= deadline:
            return views
        await asyncio.sleep(_POLL_S)


async def deliver(engine: Engine, sender: CommandSender, commands: Sequence[DeskCommand],
                  clock: Callable[[], datetime], *, answer_wait: float | None) -> Delivery:
    """Send an action's commands in order (stopping at the first the broker does not take),
    record each as sent or not, then wait up to ``answer_wait`` s for the tables' verdicts."""
    sessions = sessionmaker(engine, expire_on_commit=False)
    error, sent = None, []
    for command in commands:
        try:
            await sender.send(command)
        except SendError as exc:
            error = str(exc)
            break
        sent.append(command)
    seqs = [c.seq for c in commands]
    views: tuple[CommandView, ...] = ()
    try:
        await run_in_threadpool(mark_sent, engine, sent, clock())
        if error is not None:
            await run_in_threadpool(mark_sent, engine, commands[len(sent):len(sent) + 1],
                                    clock(), error=error)
        if error is None and answer_wait is not None and seqs:
            views = await wait_for_answers(sessions, seqs, timeout=answer_wait)
        elif seqs:
            views = await run_in_threadpool(_views, sessions, seqs)
    except SQLAlchemyError as exc:  # sent all the same: its state is read later
        _log.error("desk_command_state_unread", seqs=seqs, error=repr(exc))
        return Delivery(error=error, views=(), waited=False, listed=answer_wait is not None,
                        unread="sent; the database did not answer while the tables' answers"
                               " were read: GET /api/desk/commands?pending=true tells later")
    return Delivery(error=error, views=views, waited=answer_wait is not None and error is None,
                    listed=answer_wait is not None)


class CommandsApi:
    """The operations on the desk's commands (registered in leaderboard.desk_api.routes)."""

    def commands(self, s: Session, b: Body, _: Request) -> Result:
        """GET /commands: the desk's commands, newest first."""
        limit = b.optional_integer("limit") or 200
        views = command_views(s, state=b.optional_text("state"), pending=b.flag("pending"),
                              table=b.optional_text("table"), entry=b.optional_text("entry"),
                              limit=limit)
        return Result({"commands": [v.as_dict() for v in views]})

    def command(self, s: Session, b: Body, _: Request) -> Result:
        """GET /commands/{seq}: one command and its state."""
        seq = b.path_integer("seq")
        views = command_views(s, seqs=[seq], limit=1)
        if not views:
            raise NotFound(f"no desk command with seq {seq} (a command recorded before"
                           " revision 0005 has no state: see the audit)")
        return Result(views[0].as_dict())

    def table_check(self, s: Session, b: Body, _: Request) -> Result:
        """GET /table-check: each table as the desk has it and as it reports itself."""
        table = b.optional_text("table")
        views = check_tables(s, None if table is None else [table])
        findings = [f.as_dict() for v in views for f in v.findings]
        return Result({"tables": [v.as_dict() for v in views], "findings": findings,
                       "agree": not findings})
