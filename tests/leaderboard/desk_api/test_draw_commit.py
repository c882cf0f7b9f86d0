"""The Final's seat draw committed before it is drawn (issue 33 point 8, D380): the seed's
SHA-256 recorded and shown first with a witness, the seed revealed by the draw, used once,
expiring; the seats recomputed here from the revealed seed with the pure shuffle."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import timedelta

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from game.tournament.draw import draw_seats
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk.sender import NullSender
from leaderboard.models import AuditEntry, DrawCommitment, Entry
from tests.leaderboard.desk_api_support import Api, enrol_desk_staff
from tests.leaderboard.desk_fields import final_field
from tests.leaderboard.desk_helpers import FakeClock

FINAL = {"stage": "final"}


async def _field(engine: Engine, clock: FakeClock) -> Api:
    with Session(engine, expire_on_commit=False) as s:
        await asyncio.to_thread(final_field, s, clock)
    api = Api(engine, clock, NullSender())
    enrol_desk_staff(engine, clock, "sup-1", "supervisor")
    return api


def _finalists(engine: Engine) -> list[str]:
    with Session(engine) as s:
        return list(s.scalars(select(Entry.entry_id).where(Entry.stage == Stage.FINAL.value)))


async def test_commit_then_draw_reveals_a_seed_that_matches_and_gives_the_seats(
        engine: Engine, clock: FakeClock) -> None:
    api = await _field(engine, clock)
    status, c = await api.call("POST", "/draw-commitments", {**FINAL, "witness": "sup-1"})
    assert status == 201, c
    assert "seed_hex" not in c and len(c["seed_sha256"]) == 64
    assert (c["witness"], c["committed_by"]) == ("sup-1", "desk-1")
    with Session(engine) as s:  # the digest is in the audit before the draw
        row = s.scalars(select(AuditEntry).where(
            AuditEntry.action == "final.draw_committed")).one()
        assert (row.actor, row.detail["seed_sha256"], row.detail["witness"]) == (
            "desk-1", c["seed_sha256"], "sup-1")
    status, body = await api.call("POST", "/draws", {"commitment_id": c["commitment_id"]})
    assert status == 201, body
    seed = bytes.fromhex(body["seed_hex"])
    assert hashlib.sha256(seed).hexdigest() == c["seed_sha256"]
    again = draw_seats(_finalists(engine), list(range(1, 7)), seed)
    assert body["seats"] == {a.finalist: a.seat for a in again.assignments}
    assert body["commitment"]["used_at"] is not None
    with Session(engine) as s:
        rows = s.execute(select(Entry.entry_id, Entry.seat).where(
            Entry.stage == Stage.FINAL.value)).all()
    seated = {str(e): seat for e, seat in rows}
    assert seated == body["seats"]
    status, replay = await api.call("GET", f"/draws/{body['draw_id']}/replay")
    assert status == 200 and replay["matches"] and replay["seed_matches_commitment"]
    assert (replay["seed_hex"], replay["commitment"]["seed_sha256"],
            replay["commitment"]["witness"]) == (body["seed_hex"], c["seed_sha256"], "sup-1")
    # The same commitment again: the stored draw, nothing drawn anew; a new commitment,
    # or a draw without one, is refused.
    status, same = await api.call("POST", "/draws", {"commitment_id": c["commitment_id"]})
    assert (status, same["seats"], same["reused"]) == (200, body["seats"], True)
    status, refused = await api.call("POST", "/draw-commitments", {**FINAL, "witness": "sup-1"})
    assert status == 409 and "drawn already" in refused["error"]
    status, refused = await api.call("POST", "/draws", {})
    assert status == 400 and "commitment_id" in refused["error"]


async def test_the_witness_must_be_another_active_supervisor_or_manager(
        engine: Engine, clock: FakeClock) -> None:
    api = await _field(engine, clock)
    enrol_desk_staff(engine, clock, "clerk-1", "clerk")
    enrol_desk_staff(engine, clock, "sup-2", "supervisor")
    with Session(engine) as s:
        desk.set_staff_active(s, clock, actor="desk-1", staff_id="sup-2", active=False,
                              why="left")
    for witness, said in (("desk-1", "someone other than the person drawing"),
                          ("clerk-1", "a supervisor or manager witnesses"),
                          ("nobody", "not an enrolled staff member"),
                          ("sup-2", "disabled")):
        status, body = await api.call("POST", "/draw-commitments",
                                      {**FINAL, "witness": witness})
        assert status == 400 and said in body["error"], (witness, body)
    status, body = await api.call("POST", "/draw-commitments",
                                  {"stage": "semi_final", "witness": "sup-1"})
    assert status == 400 and "final" in body["error"]
    with Session(engine) as s:
        assert s.scalars(select(DrawCommitment)).all() == []


async def test_a_commitment_is_used_once_expires_and_its_witness_cannot_draw(
        engine: Engine, clock: FakeClock) -> None:
    api = await _field(engine, clock)
    status, first = await api.call("POST", "/draw-commitments", {**FINAL, "witness": "sup-1"})
    assert status == 201
    status, body = await api.call("POST", "/draw-commitments", {**FINAL, "witness": "sup-1"})
    assert status == 409 and f"commitment {first['commitment_id']}" in body["error"]
    clock.now += timedelta(minutes=31)
    api.token = api.sign_in("desk-1")  # the session's idle time is over too
    status, body = await api.call("POST", "/draws", {"commitment_id": first["commitment_id"]})
    assert status == 409 and "expired" in body["error"]
    # A manager witnesses a new commitment and then tries to draw with it.
    mgr2 = Api(engine, clock, NullSender(), staff_id="mgr-2")
    status, second = await api.call("POST", "/draw-commitments", {**FINAL, "witness": "mgr-2"})
    assert status == 201 and second["seed_sha256"] != first["seed_sha256"]
    status, body = await mgr2.call("POST", "/draws", {"commitment_id": second["commitment_id"]})
    assert status == 400 and "witnessed" in body["error"]
    assert (await api.call("POST", "/draws", {"commitment_id": 999}))[0] == 404
    status, drawn = await api.call("POST", "/draws", {"commitment_id": second["commitment_id"]})
    assert status == 201
    status, body = await api.call("POST", "/draws", {"commitment_id": first["commitment_id"]})
    assert status == 409 and "drawn already" in body["error"]
    # A seed changed in the database after the draw no longer matches its commitment.
    with Session(engine) as s:
        s.execute(update(DrawCommitment).where(DrawCommitment.id == second["commitment_id"])
                  .values(seed_sha256="0" * 64))
        s.commit()
    status, replay = await api.call("GET", f"/draws/{drawn['draw_id']}/replay")
    assert status == 200 and replay["matches"] and replay["seed_matches_commitment"] is False
