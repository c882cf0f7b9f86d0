"""What a central instance answers over HTTP while it is not the active one.

`RoleGate` is the ASGI app the service listens with from its start: while the instance holds
the central lease it hands every request to the service's app (the page, the JSON API, SSE,
/healthz and the desk API, leaderboard.web.create_app); otherwise - a standby, or an instance
that has just lost the lease - every request gets 503 with JSON naming this instance and the
active one, ``{"status": "standby", "instance": ..., "active": ..., "epoch": ...}``, so a load
balancer's health check on /healthz follows the active instance and a desk sees who to reach
(docs/operations/standby-central.md, D400).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse

from leaderboard.central_lease import CentralLease

__all__ = ["RoleGate"]

_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


class RoleGate:
    """The service's app while ``inner`` is set and the lease is ours; 503 "standby" else."""

    def __init__(self, lease: CentralLease) -> None:
        self.lease = lease
        self.inner: _App | None = None

    def standby_body(self) -> dict[str, Any]:
        """The 503 answer's body: this instance, and the active one as last seen."""
        seen = self.lease.last_seen
        active = None if seen is None or seen.expired or seen.holder == self.lease.holder \
            else seen.holder
        return {"status": "standby", "instance": self.lease.holder, "active": active,
                "epoch": None if seen is None else seen.epoch,
                "error": ("this central instance is standby: the page and the desk are"
                          " served by the active one, "
                          + (active if active else "not known yet"))}

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        inner = self.inner
        if inner is not None and self.lease.epoch is not None:
            await inner(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets or lifespan here
        answer = JSONResponse(self.standby_body(), status_code=503,
                              headers={"Cache-Control": "no-store", "Retry-After": "2"})
        await answer(scope, receive, send)
