"""The local API over a real Unix socket."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.local_api import MAX_LINE, LocalApi, call


async def echo(request: Mapping[str, Any]) -> Mapping[str, Any]:
    if request.get("action") == "boom":
        return {"ok": False, "error": "refused"}
    return {"ok": True, "detail": {"action": request.get("action")}}


async def test_requests_are_answered_in_order(tmp_path: Path) -> None:
    sock = tmp_path / "run" / "t01.sock"
    async with LocalApi(sock, echo):
        assert stat.S_IMODE(sock.stat().st_mode) == 0o660
        assert await call(sock, {"id": 1, "action": "settle"}) == {
            "id": 1, "ok": True, "detail": {"action": "settle"}}
        assert await call(sock, {"action": "boom"}) == {"ok": False, "error": "refused"}
        reader, writer = await asyncio.open_unix_connection(str(sock))
        writer.write(b'{"id":"a","action":"x"}\nnot json\n[1,2]\n{"id":"b","action":"y"}\n')
        await writer.drain()
        answers = [json.loads(await reader.readline()) for _ in range(4)]
        writer.close()
        assert [a.get("id") for a in answers] == ["a", None, None, "b"]
        assert answers[1]["ok"] is False
        assert "not JSON" in answers[1]["error"]
        assert answers[2] == {"ok": False, "error": "a request is a JSON object"}
    assert not sock.exists()


async def test_an_oversized_request_is_refused(tmp_path: Path) -> None:
    sock = tmp_path / "api.sock"
    async with LocalApi(sock, echo):
        reader, writer = await asyncio.open_unix_connection(str(sock))
        writer.write(b"x" * (MAX_LINE + 10) + b"\n")
        await writer.drain()
        answer = json.loads(await reader.readline())
        writer.close()
    assert answer["ok"] is False
    assert "over" in answer["error"]


async def test_a_line_that_stops_short_is_answered_and_closed_an_idle_one_is_not(
        tmp_path: Path, log_events: list[dict[str, Any]]) -> None:
    """D407: waiting idle between requests is allowed; a line once begun must end
    within the deadline, else the client is told so, the connection closed, one warning."""
    sock = tmp_path / "t01.sock"
    async with LocalApi(sock, echo, line_wait_s=0.3):
        reader, writer = await asyncio.open_unix_connection(str(sock))
        await asyncio.sleep(0.6)  # idle, longer than the deadline: still served
        writer.write(b'{"id": 1, "action": "status"}\n{"id": 2, "act')
        await writer.drain()
        first = json.loads(await reader.readline())
        stalled = json.loads(await asyncio.wait_for(reader.readline(), 10))
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed
        writer.close()
    assert first == {"id": 1, "ok": True, "detail": {"action": "status"}}
    assert stalled["ok"] is False and "stopped short" in stalled["error"]
    assert [e["event"] for e in log_events if e["log_level"] == "warning"] == [
        "request_line_stalled"]
