"""The desk API's dispute bundles (issue 33, D383), mounted under ``/api/desk`` by
`leaderboard.desk_api.routes.desk_routes`:

    POST /dispute-records/{id}/bundles  {bundle}   a table's bundle (its JSON text), checked
                                                   against the enrolled tables' keys,
                                                   countersigned by the central key (201)
    GET  /dispute-records/{id}/bundles             the dispute's countersigned bundles

A bundle that does not verify, or is about another entry, is refused (400) with the reasons.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from leaderboard.desk.dispute_bundles import StoredBundle, countersign_bundle, dispute_bundles
from leaderboard.desk.errors import DeskError
from leaderboard.desk_api.http import Body, Operation, Result, iso
from runtime.clocks import WallClock
from wire.signing import Signer

__all__ = ["BundlesApi", "bundle_routes"]


def _json(b: StoredBundle) -> dict[str, Any]:
    return {"bundle_id": b.bundle_id, "dispute_id": b.dispute_id, "table": b.table,
            "bundle_sha256": b.bundle_sha256, "countersigned_at": iso(b.countersigned_at),
            "countersigned_by": b.countersigned_by, "bundle": dict(b.bundle)}


class BundlesApi:
    """The bundle operations, sharing the desk clock and the central signing key."""

    def __init__(self, clock: WallClock, signer: Signer | None) -> None:
        self.clock, self.signer = clock, signer

    def countersign(self, s: Session, b: Body, _: Request) -> Result:
        """Check, countersign and store a table's bundle for the dispute."""
        dispute_id, text = b.path_integer("dispute_id"), b.text("bundle")
        if self.signer is None:
            raise DeskError("this service has no signing key to countersign with")
        stored = countersign_bundle(s, self.clock, actor=b.actor, dispute_id=dispute_id,
                                    bundle_text=text, signer=self.signer)
        return Result(_json(stored), status=201)

    def bundles(self, s: Session, b: Body, _: Request) -> Result:
        """The dispute's countersigned bundles, as stored."""
        rows = dispute_bundles(s, b.path_integer("dispute_id"))
        return Result({"bundles": [_json(r) for r in rows]})


Endpoint = Callable[[str, Operation], Callable[[Request], Awaitable[Response]]]


def bundle_routes(endpoint: Endpoint, api: BundlesApi) -> list[Route]:
    """The routes of `BundlesApi`, wrapped by the desk API's ``endpoint``."""
    e = endpoint
    return [
        Route("/dispute-records/{dispute_id}/bundles", e("dispute.countersign", api.countersign),
              methods=["POST"]),
        Route("/dispute-records/{dispute_id}/bundles", e("disputes.show", api.bundles),
              methods=["GET"]),
    ]
