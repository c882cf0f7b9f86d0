"""The desk API's seat draw operations (rule 40; D380), mounted under ``/api/desk`` by
`leaderboard.desk_api.routes.desk_routes`:

    POST /draw-commitments  {stage, witness}        the seed drawn and committed (201)
    POST /draws             {stage, commitment_id}  the seats drawn from it, seed revealed
    GET  /draws/{id}/replay                         the draw recomputed, its commitment

A commitment answers ``{"commitment_id", "seed_sha256", "committed_at", ...}`` and never the
seed; the draw answers the seats and ``seed_hex``, which anyone can hash and compare with the
digest shown first, and replay (game.tournament.draw.draw_seats).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.desk.seat_draw import COMMITMENT_VALID
from leaderboard.desk.values import Commitment
from leaderboard.desk_api.http import Body, Operation, Result, iso
from runtime.clocks import WallClock

__all__ = ["DrawsApi", "commitment_json", "draw_routes"]


def commitment_json(c: Commitment | None) -> dict[str, Any] | None:
    """A commitment as the API answers it (its digest, never its seed)."""
    if c is None:
        return None
    return {"commitment_id": c.commitment_id, "stage": c.stage, "seed_sha256": c.seed_sha256,
            "witness": c.witness, "committed_by": c.committed_by,
            "committed_at": iso(c.committed_at), "expires_at": iso(c.expires_at),
            "used_at": iso(c.used_at)}


class DrawsApi:
    """The draw operations, sharing the settings, the clock and how long a commitment lasts."""

    def __init__(self, settings: TournamentSettings, clock: WallClock, *,
                 commitment_valid: timedelta = COMMITMENT_VALID) -> None:
        self.settings, self.clock, self.commitment_valid = settings, clock, commitment_valid

    def draw_commit(self, s: Session, b: Body, _: Request) -> Result:
        """Draw and commit the seed before a witness; its SHA-256 is shown, not the seed."""
        c = desk.commit_draw(s, self.clock, actor=b.actor, stage=b.text("stage"),
                             witness=b.text("witness"), valid_for=self.commitment_valid,
                             why=b.optional_text("why"))
        return Result(commitment_json(c) or {}, status=201)

    def draw(self, s: Session, b: Body, _: Request) -> Result:
        """Draw the Final's seats from a commitment's seed and reveal the seed."""
        stage = b.optional_text("stage") or "final"
        if stage != "final":  # the schema already allows only the Final
            raise desk.DeskError(f"only the Final's seats are drawn, not the {stage!r} stage's")
        outcome = desk.draw_final(s, self.settings, self.clock, actor=b.actor,
                                  why=b.optional_text("why"),
                                  commitment_id=b.integer("commitment_id"))
        return Result({"draw_id": outcome.draw_id, "seats": dict(outcome.seats),
                       "random_hex": outcome.random_hex, "seed_hex": outcome.random_hex,
                       "reused": outcome.reused,
                       "commitment": commitment_json(outcome.commitment)},
                      status=200 if outcome.reused else 201)

    def replay(self, s: Session, b: Body, _: Request) -> Result:
        """Recompute a stored draw; with its commitment, whether the seed matches it."""
        r = desk.replay_draw(s, b.path_integer("draw_id"))
        return Result({"draw_id": r.draw_id, "matches": r.matches,
                       "stored": dict(r.stored), "replayed": dict(r.replayed),
                       "bytes_used": r.bytes_used, "seed_hex": r.random_hex,
                       "drawn_by": r.drawn_by, "drawn_at": iso(r.drawn_at),
                       "commitment": commitment_json(r.commitment),
                       "seed_matches_commitment": r.seed_matches_commitment})


Endpoint = Callable[[str, Operation], Callable[[Request], Awaitable[Response]]]


def draw_routes(endpoint: Endpoint, api: DrawsApi) -> list[Route]:
    """The routes of `DrawsApi`, wrapped by the desk API's ``endpoint``."""
    e = endpoint
    return [
        Route("/draw-commitments", e("draw.commit", api.draw_commit), methods=["POST"]),
        Route("/draws", e("draw.final", api.draw), methods=["POST"]),
        Route("/draws/{draw_id}/replay", e("draw.replay", api.replay), methods=["GET"]),
    ]
