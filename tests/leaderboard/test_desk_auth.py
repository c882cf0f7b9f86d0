"""Desk accounts over the desk API: sign-in and sign-out, expiry and idle timeout, lock-out,
wrong credentials (401 with a reason), role refusals (403 naming the role) and every action
recorded under the signed-in person; on SQLite and PostgreSQL (the engine fixture)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk.auth import token_hash
from leaderboard.desk.sender import NullSender
from leaderboard.models import AuditEntry, DeskSession, Patron
from tests.leaderboard.desk_api_support import PASSPHRASE, Api, enrol_desk_staff
from tests.leaderboard.desk_helpers import FakeClock, local

ADULT = {"name": "Thabo Mokoena", "id_kind": "id_document", "id_number": "8001015009087",
         "birth_date": "1980-01-01"}


def audit(engine: Engine, action: str | None = None) -> list[tuple[str, str, dict[str, object]]]:
    with Session(engine) as s:
        query = select(AuditEntry).order_by(AuditEntry.id)
        if action is not None:
            query = query.where(AuditEntry.action == action)
        return [(a.actor, a.action, dict(a.detail)) for a in s.scalars(query)]


async def test_sign_in_act_as_oneself_and_sign_out(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())  # desk-1, a manager, enrols the clerk
    status, body = await api.call("POST", "/staff", {
        "staff_id": "C07", "name": "Lindiwe Khumalo", "role": "clerk",
        "passphrase": "blue kettle on the third shelf"})
    assert (status, body["role"], body["pin"], body["card"]) == (201, "clerk", False, False)
    assert "kettle" not in str(audit(engine))

    status, signed = await api.call("POST", "/session", {
        "staff_id": "C07", "passphrase": "blue kettle on the third shelf"}, token=None)
    assert status == 201
    assert (signed["staff_id"], signed["name"], signed["role"], signed["idle_minutes"]) == (
        "C07", "Lindiwe Khumalo", "clerk", 30)
    assert datetime.fromisoformat(signed["expires_at"]) == clock.now + timedelta(hours=12)
    token = signed["token"]
    with Session(engine) as s:  # only the token's hash is stored
        row = s.get(DeskSession, token_hash(token))
        assert row is not None and row.staff_id == "C07" and row.client == "api"
        assert token not in str(s.scalars(select(DeskSession.token_hash)).all())

    status, who = await api.call("GET", "/session", token=token)
    assert (status, who["staff_id"], who["role"]) == (200, "C07", "clerk")
    status, patron = await api.call("POST", "/patrons", ADULT, token=token)
    assert status == 201
    # The person recorded is the session's, never one the request names.
    status, body = await api.call("POST", "/patrons", {**ADULT, "id_number": "8101015009087",
                                                       "actor": "desk-1"}, token=token)
    assert (status, body["error"].split(":")[0]) == (400, "field 'actor'")
    with Session(engine) as s:
        assert s.scalars(select(Patron.patron_id)).all() == [patron["patron_id"]]
    assert [a[:2] for a in audit(engine, "patron.registered")] == [("C07", "patron.registered")]

    status, body = await api.call("DELETE", "/session", token=token)
    assert (status, body) == (200, {"signed_out": "C07"})
    status, body = await api.call("GET", "/prizes", token=token)
    assert (status, body["reason"]) == (401, "signed_out")
    assert "sign in again" in body["error"]
    assert [a[:2] for a in audit(engine) if a[1].startswith("desk.")] == [
        ("desk-1", "desk.signed_in"), ("C07", "desk.signed_in"), ("C07", "desk.signed_out")]


async def test_wrong_credentials_are_401_with_the_reason(engine: Engine,
                                                         clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    await api.call("POST", "/staff", {"staff_id": "D12", "name": "Dealer", "role": "dealer",
                                      "pin": "4821"})
    cases = [
        ({"staff_id": "X99", "passphrase": PASSPHRASE}, "unknown_staff_id", "no staff member"),
        ({"staff_id": "D12", "passphrase": PASSPHRASE}, "not_desk_staff", "D12 is a dealer"),
        ({"staff_id": "desk-1", "passphrase": "not the passphrase"}, "wrong_passphrase",
         "4 tries left"),
    ]
    for body, reason, words in cases:
        status, answer = await api.call("POST", "/session", body, token=None)
        assert (status, answer["reason"], words in answer["error"]) == (401, reason, True)
    status, answer = await api.call("POST", "/session", {"staff_id": "desk-1"}, token=None)
    assert (status, answer["error"]) == (400, "field 'passphrase': a non-empty string is"
                                              " required")
    assert [(a[0], a[2]["reason"]) for a in audit(engine, "desk.sign_in_failed")] == [
        ("(unknown staff id)", "unknown_staff_id"), ("D12", "not_desk_staff"),
        ("desk-1", "wrong_passphrase")]
    # A disabled member's open session stops working at once.
    token = api.sign_in("S1", "supervisor")
    assert (await api.call("POST", "/staff/S1/disable", {}))[0] == 200
    status, answer = await api.call("GET", "/prizes", token=token)
    assert (status, answer["reason"]) == (401, "disabled")


async def test_repeated_wrong_passphrases_lock_the_account(engine: Engine,
                                                           clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    wrong = {"staff_id": "desk-1", "passphrase": "guess guess guess"}
    for n in range(1, 5):
        status, answer = await api.call("POST", "/session", wrong, token=None)
        assert (status, answer["reason"]) == (401, "wrong_passphrase"), n
    status, answer = await api.call("POST", "/session", wrong, token=None)
    assert (status, answer["reason"]) == (401, "locked")
    right = {"staff_id": "desk-1", "passphrase": PASSPHRASE}
    clock.advance(14 * 60)
    status, answer = await api.call("POST", "/session", right, token=None)
    assert (status, answer["reason"]) == (401, "locked")  # the right one too, while locked
    assert "locked until" in answer["error"]
    assert [a[1] for a in audit(engine) if a[1].startswith("desk.")][-7:] == [
        *["desk.sign_in_failed"] * 5, "desk.locked", "desk.sign_in_failed"]
    clock.advance(61)
    status, answer = await api.call("POST", "/session", right, token=None)
    assert status == 201
    # A good sign-in starts the count again: four more wrong ones do not lock.
    for _ in range(4):
        status, answer = await api.call("POST", "/session", wrong, token=None)
        assert (status, answer["reason"]) == (401, "wrong_passphrase"), answer


async def test_sessions_expire_and_end_when_idle(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    for _ in range(30):  # used every 29 minutes: never idle, but over after 12 hours
        clock.advance(29 * 60)
        status, answer = await api.call("GET", "/prizes")
        if status != 200:
            break
    assert (status, answer["reason"]) == (401, "expired")
    assert clock.now - local(2026, 7, 3, 14, 0) >= timedelta(hours=12)
    token = api.sign_in("desk-1")
    clock.advance(30 * 60)
    status, answer = await api.call("GET", "/prizes", token=token)
    assert (status, answer["reason"]) == (401, "idle")
    assert "30 minutes without use" in answer["error"]
    status, answer = await api.call("GET", "/prizes", token=token)  # ended for good
    assert (status, answer["reason"]) == (401, "idle")


async def test_roles_are_refused_with_the_role_needed(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    clerk, supervisor = api.sign_in("C1", "clerk"), api.sign_in("S1", "supervisor")
    cases = [
        (clerk, "POST", "/score-voids", {"entry_id": "E-1", "why": "x"}, "supervisor"),
        (clerk, "GET", "/audit", None, "supervisor"),
        (clerk, "POST", "/staff", {"staff_id": "C2", "name": "N", "role": "clerk",
                                   "passphrase": PASSPHRASE}, "manager"),
        (supervisor, "POST", "/draws", {}, "manager"),
        (supervisor, "POST", "/lists", {"kind": "self_exclusion"}, "manager"),
        (supervisor, "POST", "/staff/C1/passphrase", {"passphrase": "x" * 20}, "manager"),
    ]
    for token, method, path, body, needed in cases:
        status, answer = await api.call(method, path, body, token=token)
        assert (status, answer.get("role_needed")) == (403, needed), (path, answer)
        assert needed in answer["error"]
    assert (await api.call("GET", "/audit", token=supervisor))[0] == 200
    assert (await api.call("POST", "/patrons", ADULT, token=clerk))[0] == 201
    assert [a[1] for a in audit(engine)][-1] == "patron.registered"  # the 403s wrote nothing


async def test_a_new_passphrase_ends_the_old_sessions(engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    clerk = api.sign_in("C1", "clerk")
    status, answer = await api.call("POST", "/staff/C1/passphrase", {"passphrase": "short"},
                                    token=clerk)
    assert status == 400 and "at least 12 characters" in answer["error"]
    status, _ = await api.call("POST", "/staff/C1/passphrase",
                               {"passphrase": "a much longer one now"}, token=clerk)
    assert status == 200
    assert (await api.call("GET", "/prizes", token=clerk))[1]["reason"] == "passphrase_changed"
    status, _ = await api.call("POST", "/session", {"staff_id": "C1",
                                                    "passphrase": PASSPHRASE}, token=None)
    assert status == 401
    status, _ = await api.call("POST", "/session", {
        "staff_id": "C1", "passphrase": "a much longer one now"}, token=None)
    assert status == 201
    # A manager sets anyone's; the audit names who did it, never the passphrase.
    status, _ = await api.call("POST", "/staff/C1/passphrase",
                               {"passphrase": "set by the manager 1"})
    assert status == 200
    assert [(a[0], a[2]["staff_id"]) for a in audit(engine, "staff.passphrase_set")] == [
        ("C1", "C1"), ("desk-1", "C1")]
    assert "manager 1" not in str(audit(engine))


def test_a_clerk_needs_a_passphrase_and_a_dealer_gets_none(engine: Engine,
                                                           clock: FakeClock) -> None:
    enrol_desk_staff(engine, clock, "M1", "manager")
    with Session(engine) as s:
        for role, extra, words in (
                ("clerk", {}, "needs a desk passphrase"),
                ("clerk", {"desk_passphrase": PASSPHRASE, "pin": "1234"}, "no PIN"),
                ("dealer", {"desk_passphrase": PASSPHRASE}, "dealers do not sign in"),
                ("clerk", {"desk_passphrase": "too short"}, "at least 12 characters"),
                ("clerk", {"desk_passphrase": "aaaaaaaaaaaaaaaa"}, "4 different")):
            try:
                desk.enrol_staff(s, clock, actor="M1", staff_id="X1", name="X", role=role,
                                 **extra)
            except desk.DeskError as exc:
                assert words in str(exc), (role, extra, exc)
            else:
                raise AssertionError(f"{role} {extra} was enrolled")
