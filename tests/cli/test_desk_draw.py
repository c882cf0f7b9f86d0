"""Issue 33 point 8 at the desk: `showdown desk draw --witness` commits to the seed's digest
before it draws. The commitment route is another part's (stood in for here by a route that
records what it is asked and answers as the contract says); the draw is the real desk API's,
on SQLite and PostgreSQL. A service without the route is drawn as before, and says so."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.cli.test_desk import Desk
from tests.leaderboard.desk_fields import final_field
from tests.leaderboard.served import Served, serve_desk_api

SEED = bytes(range(32))
ASKED: list[dict[str, Any]] = []


async def _commit(request: Request) -> JSONResponse:
    ASKED.append({"path": "draw-commitments", "body": await request.json(),
                  "authorised": request.headers.get("authorization", "").startswith("Bearer ")})
    return JSONResponse({"commitment_id": 7, "seed_sha256": hashlib.sha256(SEED).hexdigest(),
                         "committed_at": "2026-07-31T18:00:00+00:00"}, status_code=201)


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def central(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    route = Route("/draw-commitments", _commit, methods=["POST"])
    with serve_desk_api(request.param, tmp_path_factory.mktemp("central"),
                        extra_routes=[route]) as served:
        yield served


@pytest.fixture
def run(central: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Desk:
    ASKED.clear()
    return Desk(central, tmp_path / "desk-home", capsys, monkeypatch)


def test_the_draw_is_committed_before_a_witness_first(run: Desk) -> None:
    with run.database() as engine, Session(engine, expire_on_commit=False) as s:
        final_field(s, run.clock)
    code, _, err = run("draw")
    assert code == 2 and "--witness STAFF_ID is required" in err and ASKED == []
    code, out, err = run("draw", "--witness", "S-night")
    assert code == 0, err
    lines = out.splitlines()
    digest = hashlib.sha256(SEED).hexdigest()
    # The commitment is printed first, then the draw and its six seats.
    assert lines[0] == (f"commitment 7 made at 2026-07-31T18:00:00+00:00: seed SHA-256"
                        f" {digest}, witnessed by S-night")
    assert lines[1].startswith("draw ") and " made, random bytes " in lines[1]
    assert sorted(int(line.rsplit(" ", 1)[1]) for line in lines[2:]) == [1, 2, 3, 4, 5, 6]
    assert ASKED == [{"path": "draw-commitments", "authorised": True,
                      "body": {"stage": "final", "witness": "S-night", "why": None}}]
    again = run.json("draw", "--witness", "S-night")
    assert again["commitment"]["commitment_id"] == 7 and again["reused"]


def test_without_the_commitment_route_the_draw_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_desk_api("sqlite", tmp_path / "plain") as plain:
        desk = Desk(plain, tmp_path / "home", capsys, monkeypatch)
        with desk.database() as engine, Session(engine, expire_on_commit=False) as s:
            final_field(s, desk.clock)
        code, out, err = desk("draw", "--witness", "S-night", "--json")
    assert code == 0, err
    drawn = json.loads(out)
    assert drawn["commitment"] is None and sorted(drawn["seats"].values()) == [1, 2, 3, 4, 5, 6]
