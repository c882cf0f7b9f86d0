"""The desk API's operations on disputes as records (leaderboard.desk.dispute_records,
docs/disputes.md), mounted under ``/api/desk`` by `leaderboard.desk_api.routes.desk_routes`:

    POST /dispute-records                 {entry_id, claim[, hand_ids]}     raise (201)
    GET  /dispute-records?status=open[&entry_id=...]                        list
    GET  /dispute-records/{id}                                              one, with hands
    POST /dispute-records/{id}/ruling     {ruling, why[, hand_id][, net]}   rule (may send)
    POST /dispute-records/{id}/closing    {outcome}                         close

A ruling on a hand whose entry still plays at its table sends the table its ``correct_hand``
command after the answer is written, as every desk command is. Every change names its
operator in ``actor``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from game.tournament.schema import TournamentSettings
from leaderboard.desk import dispute_records as records
from leaderboard.desk_api.http import Body, Operation, Result, iso
from runtime.clocks import WallClock

__all__ = ["DisputesApi", "dispute_routes", "entry_disputes"]


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if hasattr(value, "isoformat"):
        return iso(value)
    return value


def _record(d: records.DisputeRecord) -> dict[str, Any]:
    body = asdict(d)
    body.pop("command", None)
    return {str(k): _json(v) for k, v in body.items()}



def entry_disputes(s: Session, entry_ids: list[str]) -> list[dict[str, Any]]:
    """The disputes of these entries, in short, for the patron's record at the desk: each
    one's status, ruling and what the participant was told."""
    rows = [d for e in entry_ids for d in records.dispute_records(s, entry_id=e)]
    return [{"dispute_id": d.dispute_id, "entry_id": d.entry_id, "status": d.status,
             "claim": d.claim, "at": iso(d.at), "ruling": d.ruling,
             "ruling_reason": d.ruling_reason, "outcome": d.outcome} for d in rows]


class DisputesApi:
    """The dispute operations, sharing the settings and the desk clock."""

    def __init__(self, settings: TournamentSettings, clock: WallClock) -> None:
        self.settings = settings
        self.clock = clock

    def raise_(self, s: Session, b: Body, _: Request) -> Result:
        """Record a participant's dispute at the desk."""
        hands = b.texts("hand_ids")
        d = records.raise_dispute(s, self.settings, self.clock, actor=b.actor,
                                  entry_id=b.text("entry_id"), claim=b.text("claim"),
                                  hand_ids=hands)
        return Result(_record(d), status=201)

    def list(self, s: Session, b: Body, _: Request) -> Result:
        """The disputes, by status and/or entry."""
        rows = records.dispute_records(s, status=b.optional_text("status"),
                                       entry_id=b.optional_text("entry_id"))
        return Result({"disputes": [_record(d) for d in rows]})

    def show(self, s: Session, b: Body, _: Request) -> Result:
        """One dispute with its hands, its score and its ruling."""
        return Result(_record(records.dispute_record(s, b.path_integer("dispute_id"))))

    def rule(self, s: Session, b: Body, _: Request) -> Result:
        """A supervisor's ruling; the table's command, if any, is sent after the answer."""
        d = records.rule_dispute(s, self.settings, self.clock, actor=b.actor,
                                 dispute_id=b.path_integer("dispute_id"), ruling=b.text("ruling"),
                                 why=b.text("why"), hand_id=b.optional_text("hand_id"),
                                 net_cents=b.optional_integer("net"))
        commands = () if d.command is None else (d.command,)
        sent = [{"table": c.table, "seq": c.seq, "command": c.command} for c in commands]
        return Result({**_record(d), "sent": sent}, commands, 201)

    def close(self, s: Session, b: Body, _: Request) -> Result:
        """Close a ruled dispute with what the participant was told."""
        d = records.close_dispute(s, self.clock, actor=b.actor,
                                  dispute_id=b.path_integer("dispute_id"),
                                  outcome=b.text("outcome"))
        return Result(_record(d))


Endpoint = Callable[[str, Operation], Callable[[Request], Awaitable[Response]]]


def dispute_routes(endpoint: Endpoint, api: DisputesApi) -> list[Route]:
    """The routes of `DisputesApi`, wrapped by the desk API's ``endpoint``."""
    e = endpoint
    return [
        Route("/dispute-records", e("dispute.raise", api.raise_), methods=["POST"]),
        Route("/dispute-records", e("disputes.show", api.list), methods=["GET"]),
        Route("/dispute-records/{dispute_id}", e("disputes.show", api.show), methods=["GET"]),
        Route("/dispute-records/{dispute_id}/ruling", e("dispute.rule", api.rule),
              methods=["POST"]),
        Route("/dispute-records/{dispute_id}/closing", e("dispute.close", api.close),
              methods=["POST"]),
    ]
