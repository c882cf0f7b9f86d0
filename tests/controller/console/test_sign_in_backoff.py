"""Sign-in back-off over HTTP against a real table daemon (D344, D345): a stranger typing
wrong PINs at one terminal cannot stop a supervisor signing in at another; the wait grows
and each refusal says how long; the back-off survives a restart (rebuilt from the journal);
a manager lifts it from the console and the record names them.

Requests come from two client addresses the console admits (terminals A and B), through
the daemon's own console app (`asgi_call`: a socket cannot fake another address). The
daemon's clock is a `FakeClockSource` moved on by hand, so no test waits in real time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.clock import FakeClockSource
from controller.console.app import COOKIE, create_console_app
from game.messages.console import StaffEvent
from tests.controller.console.support import (
    DEALER,
    MANAGER,
    SUPERVISOR,
    Answer,
    ConsoleTable,
    asgi_call,
    console_table,
    roster_body,
)

A, B = "10.20.0.11", "10.20.0.12"
ALLOWED = ("127.0.0.1", "::1", A, B)
# two free failures, then 10 s doubled up to 40 s
RULES = ("signin_free_failures = 2\nsignin_backoff_seconds = 10\n"
         "signin_backoff_max_seconds = 40\n")
JSON = {"content-type": "application/json"}
S = SUPERVISOR["staff_id"]


async def call(table: ConsoleTable, method: str, path: str, terminal: str, *,
               body: Mapping[str, Any] | None = None, token: str | None = None) -> Answer:
    """One request from ``terminal`` to the daemon's console app."""
    app = create_console_app(table.daemon, table.daemon.config.console).app
    headers = dict(JSON)
    if token:
        headers["cookie"] = f"{COOKIE}={token}"
    return await asgi_call(app, method, path, client=(terminal, 51000), headers=headers,
                           body=b"" if body is None else json.dumps(body).encode())


async def sign_in(table: ConsoleTable, terminal: str, person: Mapping[str, str],
                  pin: str | None = None) -> tuple[dict[str, Any], str | None]:
    """A PIN sign-in from ``terminal``: the answer and the session cookie it set."""
    answer = await call(table, "POST", "/api/sign-in", terminal,
                        body={"staff_id": person["staff_id"], "pin": pin or person["pin"]})
    assert answer.status == 200, answer
    cookie = answer.headers.get("set-cookie", "")
    token = cookie.split(";")[0].partition("=")[2] if cookie.startswith(COOKIE) else None
    return answer.json(), token


def staff_records(table: ConsoleTable) -> list[dict[str, Any]]:
    """The journal's staff records, oldest first."""
    assert table.daemon.journal is not None
    return [dict(r.payload) for r in table.daemon.journal.records() if r.kind == "staff"]


def staff_messages(table: ConsoleTable) -> list[dict[str, Any]]:
    """The staff.session messages the table published, oldest first (each one a message the
    central service reads: decoded as it decodes them)."""
    assert table.daemon.journal is not None
    found = table.daemon.journal.latest_messages([StaffEvent.TYPE], 200)
    bodies = [dict(m.body) for m in found if m.body is not None]
    for body in bodies:
        StaffEvent.decode(body)
    return bodies


async def send_roster_with_manager(table: ConsoleTable) -> None:
    await table.desk("staff_roster", **{k: v for k, v in roster_body(
        2, people=(DEALER, SUPERVISOR, MANAGER)).items() if k not in ("command", "signer")})


async def test_a_stranger_at_one_terminal_cannot_keep_a_supervisor_out_and_a_manager_lifts_it(
        tmp_path: Path) -> None:
    clock = FakeClockSource(start=datetime.now(UTC).replace(microsecond=0))
    async with console_table(tmp_path, allowed=ALLOWED, clock=clock, console=RULES) as table:
        await table.open_heat((1,))
        await send_roster_with_manager(table)
        # A stranger at terminal A guesses S's PIN: the second failure starts the back-off
        first, _ = await sign_in(table, A, SUPERVISOR, pin="0000")
        assert first == {"ok": False, "error": "wrong staff id or PIN"}
        second, _ = await sign_in(table, A, SUPERVISOR, pin="0000")
        assert second["error"] == ("wrong staff id or PIN; too many failed sign-ins from this"
                                   " screen: the next attempt waits 10 s")
        # even the right PIN waits at A, unchecked; the refusal says how long
        held, token = await sign_in(table, A, SUPERVISOR)
        assert token is None and held["error"].startswith(
            f"too many failed sign-ins from this screen for {S}: wait 10 s")
        # S signs in at terminal B as usual
        at_b, token_b = await sign_in(table, B, SUPERVISOR)
        assert at_b["ok"] and token_b, at_b
        # each further failure at A waits twice as long, up to the cap, and is announced
        waits = []
        for seconds in (10, 20, 40):
            clock.advance(seconds * 1_000_000_000)
            wrong, _ = await sign_in(table, A, SUPERVISOR, pin="1111")
            waits.append(wrong["error"].rpartition("waits ")[2])
        assert waits == ["20 s", "40 s", "40 s"]
        announced = [m["detail"] for m in staff_messages(table) if m["event"] == "locked"]
        assert [d.split(": ")[1].split(",")[0] for d in announced] == [
            f"the next attempt there waits {w}" for w in ("10 s", "20 s", "40 s", "40 s")]
        assert all(f"at {A}" in d for d in announced)
        # every failure is journaled with its terminal (the waited one marked, not counted)
        failed = [(r["terminal"], r.get("waited", False)) for r in staff_records(table)
                  if r["event"] == "sign_in_failed"]
        assert failed == [(A, False), (A, False), (A, True), (A, False), (A, False),
                          (A, False)]
        # the screen of a signed-in person lists the back-off; a participant's view does not
        view = (await call(table, "GET", "/api/view", B, token=token_b)).json()["view"]
        assert [(x["staff_id"], x["terminal"], x["failures"]) for x in view["lockouts"]] == [
            (S, A, 5)]
        assert "lockouts" not in (await call(table, "GET", "/api/view", B)).json()["view"]
    # A restart keeps the back-off: it is rebuilt from the journal
    async with console_table(tmp_path, clock=clock) as table:
        still, _ = await sign_in(table, A, SUPERVISOR)
        assert still["error"].startswith(f"too many failed sign-ins from this screen for {S}:"
                                         " wait 40 s")
        # a supervisor may not lift it; a manager may, and the record names them
        _, supervisor = await sign_in(table, B, SUPERVISOR)
        lift = {"action": "unlock_staff", "staff_id": S, "terminal": A,
                "reason": "S showed their badge; the guesser was escorted out"}
        refused = (await call(table, "POST", "/api/action", B, body=lift, token=supervisor)).json()
        assert refused == {"ok": False, "error": (
            f"'unlock_staff' is a manager's action; {S} is signed in as supervisor: call a"
            " manager to sign in")}
        signed, manager = await sign_in(table, B, MANAGER)
        assert signed["detail"]["role"] == "manager"
        lifted = (await call(table, "POST", "/api/action", B, body=lift, token=manager)).json()
        assert lifted["ok"], lifted
        record = staff_records(table)[-1]
        assert record == {"event": "unlocked", "method": "console", "by": MANAGER["staff_id"],
                          "staff_id": S, "terminal": A, "detail": lift["reason"]}
        message = staff_messages(table)[-1]
        assert (message["event"], message["staff_id"]) == ("unlocked", S)
        assert message["detail"] == f"back-off lifted by {MANAGER['staff_id']} at {A}: " + (
            lift["reason"])
        view = (await call(table, "GET", "/api/view", B, token=manager)).json()["view"]
        assert view["lockouts"] == []
        # nothing is locked any more: a second lift is refused with the reason
        again = (await call(table, "POST", "/api/action", B, body=lift, token=manager)).json()
        assert again == {"ok": False, "error": f"nothing is locked for {S} at {A}: no sign-in"
                                               " back-off is on record there"}
        # and S signs in at A at once
        back, token = await sign_in(table, A, SUPERVISOR)
        assert back["ok"] and token, back


async def test_a_dealer_cannot_lift_a_back_off_and_a_lift_needs_a_session(
        tmp_path: Path) -> None:
    async with console_table(tmp_path, allowed=ALLOWED, console=RULES) as table:
        await table.open_heat((1,))
        for _ in range(2):
            await sign_in(table, A, SUPERVISOR, pin="0000")
        lift = {"action": "unlock_staff", "staff_id": S, "reason": "let them in"}
        nobody = await call(table, "POST", "/api/action", B, body=lift)
        assert nobody.status == 401 and "needs a signed-in" in nobody.json()["error"]
        _, dealer = await sign_in(table, B, DEALER)
        answer = (await call(table, "POST", "/api/action", B, body=lift, token=dealer)).json()
        assert answer == {"ok": False, "error": (
            f"'unlock_staff' is a manager's action; {DEALER['staff_id']} is signed in as"
            " dealer: call a manager to sign in")}
        # the refused attempt is on record under the dealer's name, and nothing was lifted
        assert staff_records(table)[-1]["by"] == DEALER["staff_id"]
        held, _ = await sign_in(table, A, SUPERVISOR)
        assert not held["ok"] and "wait" in held["error"]
