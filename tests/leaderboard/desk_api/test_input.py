"""Bad input to the desk API gets a 4xx saying what is wrong, never a 500 or a wrong 503:
body limits while it streams, JSON depth, 64-bit bounds, control characters, database errors
classified, 404/405 in JSON; and the OpenAPI document is true to the routes and the fields."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session
from starlette.routing import Route

from leaderboard.db import make_engine
from leaderboard.desk.sender import NullSender
from leaderboard.desk_api.http import FIELDS_READ
from leaderboard.desk_api.input import MAX_BODY, error_answer
from leaderboard.desk_api.routes import desk_routes
from leaderboard.desk_api.schema import INT64_MAX, OPERATIONS, openapi, spec_of
from leaderboard.models import Patron
from tests.leaderboard.desk_api_support import Api, enrol_desk_staff
from tests.leaderboard.desk_helpers import FakeClock, settings

ADULT = {"name": "Thabo Mokoena", "id_kind": "id_document", "id_number": "8001015009087",
         "birth_date": "1980-01-01"}


async def _stream(api: Api, path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]
                  ) -> tuple[int, dict[str, Any], int]:
    """POST `chunks` as a streamed body; the status, the answer and how many chunks the
    server took before it answered."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": f"/api/desk{path}",
             "raw_path": f"/api/desk{path}".encode(), "query_string": b"", "root_path": "",
             "headers": [(b"authorization", f"Bearer {api.token}".encode()), *headers],
             "client": ("127.0.0.1", 50000), "server": ("desk.test", 80)}
    taken = 0
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal taken
        taken += 1
        if taken > len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[taken - 1],
                "more_body": taken < len(chunks)}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await api.app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), taken


async def test_a_body_over_the_limit_is_refused_while_it_streams(engine: Engine,
                                                                 clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    chunk = b" " * (1024 * 1024)
    chunks = [chunk] * 200  # 200 MB, if it were all read
    status, body, taken = await _stream(api, "/lists", chunks, [])
    assert (status, body["limit_bytes"]) == (413, MAX_BODY)
    assert f"larger than {MAX_BODY} bytes" in body["error"]
    assert taken == MAX_BODY // len(chunk) + 1  # stopped just past the limit, not at 200 MB
    declared = [(b"content-length", str(200 * 1024 * 1024).encode())]
    status, body, taken = await _stream(api, "/lists", chunks, declared)
    assert (status, taken) == (413, 0)  # Content-Length said so: nothing was read
    status, body, _ = await _stream(api, "/lists", [b"{}"], [(b"content-length", b"12x")])
    assert status == 400 and "Content-Length '12x'" in body["error"]


async def test_deep_nesting_and_bodies_that_are_not_objects(engine: Engine,
                                                            clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    status, body = await api.call("POST", "/patrons", raw=b"[" * 100_000)
    assert (status, body["error"]) == (
        400, "the request body is nested 100000 deep; at most 32 is allowed")
    status, body = await api.call("POST", "/patrons", raw=b'{"a": ' * 33 + b"1" + b"}" * 33)
    assert status == 400 and "nested 33 deep" in body["error"]
    brackets_in_text = {**ADULT, "name": "[" * 100}  # inside a string: not nesting
    assert (await api.call("POST", "/patrons", brackets_in_text))[0] == 201
    status, body = await api.call("POST", "/patrons", raw=b"1" * 5000)
    assert status == 400 and "not JSON" in body["error"]
    status, body = await api.call("POST", "/patrons", raw=b"\xff\xfe")
    assert status == 400 and "not JSON" in body["error"]


@pytest.mark.parametrize("path", ["/commands/{}/resend", "/prizes/{}/claim"])
async def test_path_ids_past_64_bits_are_no_such_record(engine: Engine, clock: FakeClock,
                                                        path: str) -> None:
    api = Api(engine, clock, NullSender())
    body = {"id_number": "x"}
    for value, why in ((2**63, "out of range"), (2**64 + 5, "out of range"),
                       (-(2**63) - 1, "out of range"), ("1e3", "a whole number"),
                       ("9" * 5000, "a whole number")):
        status, answer = await api.call("POST", path.format(value), body)
        assert status == 404, (value, answer)
        assert "path field" in answer["error"] and why in answer["error"], answer
    status, answer = await api.call("GET", f"/draws/{2**63}/replay")
    assert status == 404 and "'draw_id'" in answer["error"]
    status, answer = await api.call("POST", f"/commands/{INT64_MAX}/resend", body)
    assert status == 404 and "no desk command" in answer["error"]  # in range: looked up


async def test_numbers_past_64_bits_and_control_characters_name_the_field(
        engine: Engine, clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    fix = {"entry_id": "E-none", "why": "recount"}
    for bad in (2**63, -(2**63) - 1, 10**30):
        status, body = await api.call("POST", "/score-corrections", {**fix, "score_cents": bad})
        assert status == 400 and "field 'score_cents'" in body["error"]
        assert "out of range" in body["error"]
    status, body = await api.call("POST", "/seatings", {**fix, "table": "t01", "seat": 2**64})
    assert status == 400 and "field 'seat'" in body["error"]
    # PostgreSQL's integer is 32 bits: a week past it is refused naming the field, not by
    # the database as "out of range"
    status, body = await api.call("POST", "/prizes", {"kind": "weekly", "week": 2**40})
    assert status == 400 and "field 'week'" in body["error"] and "2147483647" in body["error"]
    for field, value in (("name", "Thabo\x00Mokoena"), ("id_number", "800\x1b101"),
                         ("name", "\ud800"), ("name", "Thabo\nMokoena")):
        status, body = await api.call("POST", "/patrons", {**ADULT, field: value})
        assert status == 400, (field, value, body)
        assert body["error"].startswith(f"field {field!r}: the control character U+")
    status, body = await api.call("POST", "/refunds", {**fix, "why": "two\nlines\ttabbed"})
    assert status == 404  # a reason may hold line breaks: it was read, the entry is unknown
    status, body = await api.call("POST", "/patrons", {**ADULT, "name": "x" * 201})
    assert (status, body["error"]) == (400, "field 'name': at most 200 characters, got 201")
    status, body = await api.call("GET", "/patrons/P\x00x")  # %00, as the server decodes it
    assert status == 404 and "'patron_id'" in body["error"] and "U+0000" in body["error"]
    status, body = await api.call("GET", "/audit?limit=99999999999999999999")
    assert status == 400 and "field 'limit'" in body["error"]
    status, body = await api.call("GET", "/audit?action=a%00b")
    assert status == 400 and "field 'action'" in body["error"]
    with Session(engine) as s:
        assert s.query(Patron).count() == 0  # nothing was stored on the way


async def test_unknown_paths_and_wrong_methods_are_json(engine: Engine,
                                                        clock: FakeClock) -> None:
    api = Api(engine, clock, NullSender())
    status, body = await api.call("GET", "/no/such/thing")
    assert status == 404 and "no desk API path" in body["error"]
    status, body = await api.call("DELETE", "/patrons")
    assert (status, body["allowed"]) == (405, ["POST"])
    assert body["error"] == "DELETE is not allowed on this path; it takes POST"
    status, body = await api.call("PUT", "/prizes")
    assert (status, body["allowed"]) == (405, ["GET", "HEAD", "POST"])


async def test_an_unreachable_database_is_503_and_nothing_else_is(clock: FakeClock) -> None:
    gone = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")
    try:
        api = Api(gone, clock, NullSender(), staff_id=None)
        api.token = "a-session-token-the-database-would-be-asked-about"  # noqa: S105
        status, body = await api.call("POST", "/patrons", ADULT)
        assert status == 503 and "the database did not answer" in body["error"]
        status, body = await api.call("POST", "/session", {"staff_id": "S1",
                                                           "passphrase": "a\x00b"})
        assert status == 400  # bad input is refused before the database is asked
        status, body = await api.call("POST", "/session", {"staff_id": "S1",
                                                           "passphrase": "twelve chars ok"})
        assert status == 503 and "the database did not answer" in body["error"]
    finally:
        gone.dispose()


def test_database_refusals_are_the_callers_4xx(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("CREATE TEMP TABLE once (k integer PRIMARY KEY)"))
        connection.execute(text("INSERT INTO once VALUES (1)"))
        with pytest.raises(IntegrityError) as integrity_error:
            connection.execute(text("INSERT INTO once VALUES (1)"))
        connection.rollback()
        if engine.dialect.name == "postgresql":  # SQLite stores any value in any column
            with pytest.raises(DataError) as data_error:
                connection.execute(text("SELECT CAST(:n AS integer)"), {"n": str(2**40)})
            answer = error_answer(data_error.value, "/x")
            assert answer.status_code == 400 and b"out of range" in bytes(answer.body)
    assert error_answer(integrity_error.value, "/x").status_code == 409
    bug = error_answer(KeyError("oops"), "/x")
    assert bug.status_code == 500 and b"internal error" in bytes(bug.body)


# ---- the OpenAPI document is true ------------------------------------------------------


def test_every_route_is_described_by_its_operation(engine: Engine, clock: FakeClock) -> None:
    routes = [r for r in desk_routes(engine, settings(), NullSender(), clock)
              if isinstance(r, Route)]
    served = {(r.path, m) for r in routes if r.name not in ("_openapi", "not_here")
              for m in r.methods or () if m != "HEAD"}
    for route in routes:
        if route.name in ("_openapi", "not_here"):
            continue
        spec = spec_of(route.name)
        assert spec is not None, f"route {route.path} ({route.name}) has no declaration"
        assert (spec.path, {spec.method}) == (route.path, (route.methods or set()) - {"HEAD"})
    assert served == {(s.path, s.method) for s in OPERATIONS}
    document = openapi()
    described = {(p, m.upper()) for p, ms in document["paths"].items() for m in ms}
    assert described == {("/api/desk" + s.path, s.method) for s in OPERATIONS}


_VALUES = {"name": "Thabo Mokoena", "id_kind": "id_document", "birth_date": "1980-01-01",
           "source_date": "2026-07-01", "csv": "id_number,name\n8001015009087,Thabo M\n",
           "kind": "self_exclusion", "stage": "qualifying",
           "passphrase": "a passphrase long enough to be taken"}


def _value(spec_field: Any) -> Any:
    if spec_field.kind == "integer":
        return 1
    if spec_field.kind == "flag":
        return True
    if spec_field.enum:
        return spec_field.enum[0]
    return _VALUES.get(spec_field.name, "t01")


async def test_every_described_field_is_one_the_operation_reads(engine: Engine,
                                                                clock: FakeClock) -> None:
    """Each operation is called with every declared field (and without each optional one,
    for the operations that read one field or another); what they read is recorded by the
    Body, which refuses to read an undeclared field."""
    api = Api(engine, clock, NullSender())
    enrol_desk_staff(engine, clock, "S-pass", "clerk")
    FIELDS_READ.clear()
    for spec in OPERATIONS:
        path = spec.path
        for f in spec.path_fields:
            value = "S-pass" if spec.name == "passphrase" else _value(f)  # a clerk's
            path = path.replace("{" + f.name + "}", str(value))
        full = {f.name: _value(f) for f in spec.fields}
        for omit in (None, *(f.name for f in spec.fields if not f.required)):
            given = {k: v for k, v in full.items() if k != omit}
            if spec.query:
                query = "&".join(f"{k}={v}" for k, v in given.items())
                status, body = await api.call("GET", f"{path}?{query}" if query else path)
            else:
                status, body = await api.call(spec.method, path, given)
            assert status < 500, (spec.name, body)
            if spec.name == "sign_out":  # that was this test's session: sign in again
                api.token = api.sign_in("desk-1")
        declared = {f.name for f in (*spec.fields, *spec.path_fields)}
        assert FIELDS_READ[spec.name] == declared, spec.name


async def test_an_answer_before_the_body_is_read_ends_the_connection(engine: Engine,
                                                                    clock: FakeClock) -> None:
    """No valid session: 401 before the body is read, so a body still on its way ends the
    connection (a client still sending would otherwise wait for an answer it never reads)."""
    api = Api(engine, clock, NullSender())
    for token, body, closes in (("not-a-session", b"x" * 1000, True),
                                ("not-a-session", b"", False)):
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/api/desk/patrons",
                 "raw_path": b"/api/desk/patrons", "query_string": b"", "root_path": "",
                 "headers": [(b"authorization", f"Bearer {token}".encode()),
                             (b"content-length", str(len(body)).encode())],
                 "client": ("127.0.0.1", 50000), "server": ("desk.test", 80)}
        taken: list[int] = []
        sent: list[MutableMapping[str, Any]] = []

        async def receive(data: bytes = body, taken: list[int] = taken) -> dict[str, Any]:
            taken.append(1)
            return {"type": "http.request", "body": data, "more_body": False}

        async def send(message: MutableMapping[str, Any],
                       sent: list[MutableMapping[str, Any]] = sent) -> None:
            sent.append(message)

        await api.app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        headers = {k.decode(): v.decode() for k, v in start["headers"]}
        assert start["status"] == 401 and not taken  # the body was never read
        assert (headers.get("connection") == "close") is closes, headers
