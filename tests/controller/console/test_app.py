"""The console's web app against a real table daemon: bad input of every kind is refused with
a clear reason and changes nothing (no journal record of the console's kinds); the
session cookie is HttpOnly and SameSite=Strict and its token never appears in an answer; a
forged or ended session is refused; requests from another address, another site or another
host name are refused; the pages carry a strict CSP; the event stream sends the document at
once, after each input and a keep-alive between, and ends when the daemon stops.

Requests a socket cannot fake (another client address, a body in chunks) go straight to the
ASGI app (tests/controller/console/support.py `asgi_call`); the rest use the daemon's own
console on its port.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from controller.console import app as console_app
from controller.console.app import COOKIE, create_console_app
from controller.console.guard import MAX_BODY
from tests.controller.console.support import (
    DEALER,
    SUPERVISOR,
    Answer,
    ConsoleTable,
    asgi_call,
    console_table,
)
from tests.leaderboard.support import SseClient, http_get

JSON = {"content-type": "application/json"}


_CONSOLE_KINDS = frozenset({"dealer", "staff", "participant", "manual_wager", "desk"})


def _unchanged(table: ConsoleTable) -> list[tuple[int, str]]:
    """The journal's records a console request could cause (the simulated devices report
    on their own meanwhile: their records, and the version they move, are not ours)."""
    assert table.daemon.journal is not None
    return [(r.seq, r.kind) for r in table.daemon.journal.records()
            if r.kind in _CONSOLE_KINDS or (r.kind == "card"
                                           and r.payload.get("source") == "manual")]


async def post(table: ConsoleTable, path: str, body: bytes | Sequence[bytes], *,
               headers: Mapping[str, str] | None = None,
               client: tuple[str, int] = ("127.0.0.1", 50000),
               host: str = "127.0.0.1:8080") -> Answer:
    app = create_console_app(table.daemon, table.daemon.config.console).app
    return await asgi_call(app, "POST", path, body=body,
                           headers=JSON if headers is None else headers,
                           client=client, host=host)


def _nested(depth: int) -> bytes:
    return ('{"action": "settle", "x": ' + '{"a": ' * depth + "1" + "}" * depth + "}").encode()


BAD_BODIES: list[tuple[str, bytes | list[bytes], dict[str, str], int, str]] = [
    ("malformed JSON", b'{"action": "settle",', JSON, 400, "the body is not valid JSON"),
    ("not UTF-8", b'{"action": "\xff"}', JSON, 400, "not UTF-8"),
    ("a JSON array", b'["settle"]', JSON, 400, "must be a JSON object, not list"),
    ("NaN", b'{"action": "manual_wager", "amount": NaN}', JSON, 400, "NaN is not a number"),
    ("no body", b"", JSON, 400, "has no body"),
    ("deep nesting", _nested(25), JSON, 400, "nests deeper than 20 levels"),
    ("very deep nesting", b"[" * 250_000 + b"]" * 250_000, JSON, 400,
     "nests deeper than 20 levels"),
    ("deep arrays", b'{"a":' + b"[" * 25 + b"]" * 25 + b"}", JSON, 400,
     "nests deeper than 20 levels"),
    ("wrong content type", b'{"action": "settle"}', {"content-type": "text/plain"}, 415,
     "send JSON (Content-Type: application/json), not text/plain"),
    ("no content type", b'{"action": "settle"}', {}, 415, "not no content type"),
    ("oversized, by Content-Length", b'{"action": "settle"}',
     {**JSON, "content-length": str(MAX_BODY + 1)}, 413, "over 512 KiB"),
    ("oversized, while reading", [b'{"action": "settle", "pad": "' + b"x" * 65536] * 9
     + [b'"}'], JSON, 413, "over 512 KiB"),
    ("a bad Content-Length", b'{"action": "settle"}', {**JSON, "content-length": "12abc"},
     400, "Content-Length header is not a number"),
    ("unknown action", b'{"action": "open_the_safe"}', JSON, 400,
     "unknown console action 'open_the_safe'"),
    ("no action", b'{"entry_id": "E1"}', JSON, 400, "a request names its action"),
    ("a gate action by the back door", b'{"action": "sign_in", "staff_id": "D-0042",'
     b' "pin": "4321"}', JSON, 400, "unknown console action 'sign_in'"),
    ("a staff action with no session", b'{"action": "void", "reason": "x"}', JSON, 401,
     "'void' needs a signed-in dealer or supervisor"),
    ("a session claimed in the body", b'{"action": "void", "reason": "x", "session": "abc"}',
     JSON, 401, "needs a signed-in dealer or supervisor"),
    ("a forged session cookie", b'{"action": "no_more_bets"}',
     {**JSON, "cookie": f"{COOKIE}=forged-token-0123456789"}, 401,
     "your session has ended or was never valid"),
]


async def test_bad_input_is_refused_with_its_reason_and_changes_nothing(tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        before = _unchanged(table)
        for what, body, headers, status, reason in BAD_BODIES:
            answer = await post(table, "/api/action", body, headers=headers)
            assert answer.status == status, (what, answer)
            assert answer.json()["ok"] is False, what
            assert reason in answer.json()["error"], (what, answer.json())
            assert "traceback" not in answer.body.decode("utf-8", "replace").lower()
        # The same for sign-in: a wrong PIN is the table's refusal (journaled, as it must
        # be for the lock-out), everything else never reaches the table.
        for what, body, headers, status, reason in BAD_BODIES[:13]:
            answer = await post(table, "/api/sign-in", body, headers=headers)
            assert (answer.status, reason in answer.json()["error"]) == (status, True), what
        assert _unchanged(table) == before


async def test_requests_from_elsewhere_are_refused_before_anything_is_read(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        app = create_console_app(table.daemon, table.daemon.config.console).app
        before = _unchanged(table)
        sign_in = json.dumps({"staff_id": DEALER["staff_id"], "pin": DEALER["pin"]}).encode()
        cases: list[tuple[str, dict[str, Any], int, str]] = [
            ("another address", {"client": ("10.1.2.3", 40000)}, 403,
             "the console does not serve 10.1.2.3"),
            ("another address, IPv6", {"client": ("fe80::1", 40000)}, 403,
             "does not serve fe80::1"),
            ("another site", {"headers": {**JSON, "origin": "http://evil.example"}}, 403,
             "a request from another site (http://evil.example) is refused"),
            ("our address, another port", {"headers": {**JSON,
                                                       "origin": "http://127.0.0.1:9"}},
             403, "another site"),
            ("cross-site fetch", {"headers": {**JSON, "sec-fetch-site": "cross-site"}}, 403,
             "a cross-site request is refused"),
            ("a host name (DNS rebinding)", {"host": "console.evil.example:8080"}, 421,
             "answers to its address, not to the name 'console.evil.example'"),
        ]
        for what, options, status, reason in cases:
            for method, path in (("POST", "/api/sign-in"), ("GET", "/"), ("GET", "/api/view"),
                                 ("GET", "/events")):
                sent = {"headers": JSON, **options}
                answer = await asgi_call(app, method, path,
                                         body=sign_in if method == "POST" else b"", **sent)
                assert answer.status == status, (what, path, answer)
                assert reason in answer.json()["error"], (what, answer.json())
                assert answer.headers["x-frame-options"] == "DENY"
        ok = await asgi_call(app, "GET", "/api/view", client=("::ffff:127.0.0.1", 1),
                             headers={"origin": "http://127.0.0.1:8080"})
        assert ok.status == 200  # an IPv4-mapped loopback, and our own origin
        assert _unchanged(table) == before
        assert table.daemon.gate is not None and table.daemon.gate.sessions == {}


async def test_the_session_cookie_is_httponly_and_an_ended_session_is_refused(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        body = json.dumps({"staff_id": DEALER["staff_id"], "pin": DEALER["pin"]}).encode()
        answer = await post(table, "/api/sign-in", body)
        assert answer.status == 200 and answer.json()["ok"] is True
        assert answer.json()["detail"] == {"staff_id": "D-0042", "name": "Dana Dealer",
                                           "role": "dealer"}
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        token = cookie.split(";", 1)[0].split("=", 1)[1]
        assert table.daemon.gate is not None and token in table.daemon.gate.sessions
        assert token not in answer.body.decode()
        auth = {**JSON, "cookie": f"{COOKIE}={token}"}

        # The view names the person; the token appears nowhere in what a page reads.
        app = create_console_app(table.daemon, table.daemon.config.console).app
        view = await asgi_call(app, "GET", "/api/view", headers=auth)
        assert view.json()["me"]["staff_id"] == "D-0042"
        assert token not in view.body.decode()
        assert view.headers["cache-control"] == "no-store"

        # A dealer's supervisor action is the table's refusal: answered, journaled, not done.
        refused = await post(table, "/api/action", b'{"action": "void", "reason": "x"}',
                             headers=auth)
        assert refused.status == 200
        assert refused.json() == {"ok": False, "error": "no hand is open for 'void'"} or \
            "supervisor's action" in refused.json()["error"]

        # Signed out: the cookie is cleared and the old token is refused from now on.
        out = await post(table, "/api/sign-out", b"{}", headers=auth)
        assert out.json()["ok"] is True
        assert f'{COOKIE}="";' in out.headers["set-cookie"] or \
            "Max-Age=0" in out.headers["set-cookie"]
        before = _unchanged(table)
        stale = await post(table, "/api/action", b'{"action": "no_more_bets"}', headers=auth)
        assert stale.status == 401
        assert "your session has ended" in stale.json()["error"]
        assert _unchanged(table) == before

        # A new sign-in at the same screen ends the screen's previous session.
        first = await post(table, "/api/sign-in", body)
        token1 = first.headers["set-cookie"].split(";", 1)[0].split("=", 1)[1]
        other = json.dumps({"staff_id": SUPERVISOR["staff_id"],
                            "pin": SUPERVISOR["pin"]}).encode()
        second = await post(table, "/api/sign-in", other,
                            headers={**JSON, "cookie": f"{COOKIE}={token1}"})
        assert second.json()["detail"]["role"] == "supervisor"
        assert [s.staff_id for s in table.daemon.gate.sessions.values()] == ["S-0007"]

        wrong = await post(table, "/api/sign-in", json.dumps(
            {"staff_id": DEALER["staff_id"], "pin": "0000"}).encode())
        assert (wrong.status, wrong.json()) == (200, {"ok": False,
                                                      "error": "wrong staff id or PIN"})
        assert "set-cookie" not in wrong.headers


async def test_pages_carry_a_strict_policy_and_bad_paths_are_clear(tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        for path in ("/", "/player", "/static/console.js", "/static/dealer.js",
                     "/static/player.js", "/static/console.css"):
            answer = await http_get(table.port, path)
            assert answer.status == 200, path
            csp = answer.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "script-src 'self'" in csp
            assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
            assert answer.headers["x-frame-options"] == "DENY"
        page = (await http_get(table.port, "/")).body.decode()
        assert "<script>" not in page and "http://" not in page and "https://" not in page
        missing = await http_get(table.port, "/static/../../table.key")
        assert missing.status == 404
        assert (await http_get(table.port, "/static/secrets.txt")).json()["error"] == \
            "no such file: secrets.txt"
        assert (await http_get(table.port, "/nowhere")).json()["error"] == \
            "no such page: /nowhere"
        not_allowed = await http_get(table.port, "/api/action")
        assert not_allowed.status == 405
        assert "GET is not allowed on /api/action" in not_allowed.json()["error"]
        slip = await http_get(table.port, "/slip/E-NOBODY")
        assert slip.status == 404
        assert "Entry E-NOBODY has no score recorded at this table." in slip.body.decode()


async def test_the_event_stream_follows_the_table_and_ends_when_the_daemon_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_app, "KEEPALIVE_SECONDS", 0.05)
    async with console_table(tmp_path) as table:
        async with SseClient(table.port) as sse:
            assert sse.status == 200
            assert sse.headers["content-type"].startswith("text/event-stream")

            async def next_view() -> dict[str, Any]:
                while True:
                    event = await asyncio.wait_for(sse.next(), 30)
                    if event.event == "view":
                        return dict(json.loads(event.data))

            first = await next_view()
            assert first["me"] is None and first["view"]["heat"] is None
            await table.open_heat((1, 2))
            seen = first["view"]["version"]
            while True:
                doc = await next_view()
                assert doc["view"]["version"] > seen
                seen = doc["view"]["version"]
                if len(doc["view"]["seats"]) == 2:
                    break
            assert [s["entry_id"] for s in doc["view"]["seats"]] == ["E-H1-1", "E-H1-2"]
            comments = []
            for _ in range(500):  # the devices' own reports may come in between
                event = await asyncio.wait_for(sse.next(), 30)
                if event.comment is not None:
                    comments.append(event.comment.strip())
                    break
            assert comments == ["keep-alive"]
            await table.daemon.ingest("desk", {"command": "stop_everything", "signer": "x"})
            assert (await next_view())["view"]["version"] > seen
        # A second stream, open while the daemon stops, ends cleanly.
        sse2 = SseClient(table.port)
        await sse2.__aenter__()
        await asyncio.wait_for(sse2.next(), 30)
    # (console_table stopped the daemon: the stream's chunks ended)
    ended = False
    for _ in range(100):
        try:
            await asyncio.wait_for(sse2.next(), 10)
        except (StopAsyncIteration, asyncio.IncompleteReadError, ConnectionError):
            ended = True
            break
    assert ended, "the stream did not end when the daemon stopped"
    await sse2.__aexit__(None, None, None)
