"""runtime.http_serving.BodyDeadline (issue 34 point 5, D407): a request whose body
stops short (its Content-Length larger than what is sent) is answered 408 and closed within
the deadline, logged as one warning line; a large body that keeps arriving slowly is served;
a request without a body, and a stream's wait for its client, are never cut.

A real uvicorn (`InLoopServer`, as the services serve) on 127.0.0.1 and raw sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from runtime.http_serving import BodyDeadline, InLoopServer, listen

WAIT_S = 0.5  # the deadline under test (the services' default is 5 s)
BOUND_S = 10.0  # "quickly": generous, on a loaded machine


async def _echo(request: Request) -> Response:
    return JSONResponse({"bytes": len(await request.body())})


async def _stream(_: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        for n in range(3):
            yield f"part {n}\n".encode()
            await asyncio.sleep(WAIT_S * 1.5)  # longer than the body's deadline
    return StreamingResponse(parts(), media_type="text/plain")


@contextlib.asynccontextmanager
async def _served() -> AsyncIterator[int]:
    app = Starlette(routes=[Route("/echo", _echo, methods=["POST"]),
                            Route("/stream", _stream, methods=["GET"])])
    sock = listen("127.0.0.1", 0, source="test", key="port")
    server = InLoopServer(uvicorn.Config(BodyDeadline(app, seconds=WAIT_S, name="test.http"),
                                         log_config=None, access_log=False, lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


async def _exchange(port: int, head: bytes, parts: list[bytes], pause: float = 0.0
                    ) -> tuple[bytes, float]:
    """Send the head then each part (``pause`` between them); read until the server closes
    (or 30 s); the answer and the seconds from the head to the close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    began = time.monotonic()
    writer.write(head)
    for part in parts:
        await asyncio.sleep(pause)
        writer.write(part)
        await writer.drain()
    try:
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    return answer, time.monotonic() - began


def _post(length: int, *, close: bool = False) -> bytes:
    closing = "Connection: close\r\n" if close else ""
    return (f"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n{closing}\r\n").encode()


async def test_a_body_that_stops_short_is_answered_408_and_closed(
        log_events: list[dict[str, Any]]) -> None:
    async with _served() as port:
        answer, took = await _exchange(port, _post(200), [b'{"staff_id": "M1"'])
    print(f"\nshort body answered and closed after {took:.2f} s (deadline {WAIT_S} s)")
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"connection: close" in answer.lower()
    assert took < BOUND_S
    stalled = [e for e in log_events if e["event"] == "request_body_stalled"]
    assert len(stalled) == 1 and stalled[0]["log_level"] == "warning", stalled
    assert stalled[0]["received"] == 17 and stalled[0]["content_length"] == "200"
    assert stalled[0]["path"] == "/echo" and stalled[0]["server"] == "test.http"


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_a_slow_large_body_that_keeps_coming_is_not_cut(
        log_events: list[dict[str, Any]]) -> None:
    body = b'{"x": "' + b"a" * 60_000 + b'"}'
    parts = [body[i:i + 6_000] for i in range(0, len(body), 6_000)]
    async with _served() as port:
        answer, took = await _exchange(port, _post(len(body), close=True), parts,
                                       pause=WAIT_S * 0.4)
    print(f"\nslow body of {len(parts)} parts served in {took:.2f} s (deadline {WAIT_S} s)")
    assert took > WAIT_S * 2  # far longer in all than one pause may be
    assert answer.startswith(b"HTTP/1.1 200 "), answer
    assert answer.endswith(f'{{"bytes":{len(body)}}}'.encode()), answer
    assert not [e for e in log_events if e["event"] == "request_body_stalled"]


@pytest.mark.soak  # make test under 5 minutes (docs/testing.md)
async def test_no_body_and_a_stream_have_no_deadline() -> None:
    async with _served() as port:
        answer, took = await _exchange(
            port, b"GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", [])
    assert answer.startswith(b"HTTP/1.1 200 "), answer
    assert answer.count(b"part ") == 3 and took > WAIT_S * 3
