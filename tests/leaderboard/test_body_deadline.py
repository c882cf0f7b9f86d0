"""The central service answers a desk API request whose body stops short with 408 and closes
the connection within ``[http] body_wait_s`` (issue 34 point 5, D407), while a slow
body that keeps arriving is read to its end. The whole service (`LeaderboardService`) on
SQLite, raw sockets at its port."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import finish, start

pytestmark = pytest.mark.soak  # the whole service on a broker, about 6 s a broker

BOUND_S = 10.0  # "quickly": generous, on a loaded machine


async def _send(port: int, head: bytes, parts: list[bytes], pause: float) -> tuple[bytes, float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    began = time.monotonic()
    writer.write(head)
    for part in parts:
        await asyncio.sleep(pause)
        writer.write(part)
        await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 30), time.monotonic() - began
    finally:
        writer.close()


def _head(length: int) -> bytes:
    return (f"POST /api/desk/session HTTP/1.1\r\nHost: lb\r\nContent-Type: application/json"
            f"\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n").encode()


async def test_a_desk_request_body_that_stops_short_times_out(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str) -> None:
    run = await start(tmp_path, mqtt_broker, unique_topic, http_extra="body_wait_s = 1")
    try:
        short, short_s = await _send(run.port, _head(500), [b'{"staff_id": "S7", '], 0)
        body = b'{"staff_id": "S7", "passphrase": "' + b"x" * 3_000 + b'"}'
        parts = [body[i:i + 300] for i in range(0, len(body), 300)]
        slow, slow_s = await _send(run.port, _head(len(body)), parts, 0.4)
    finally:
        assert await finish(run) == 0
    print(f"\nshort body: 408 and closed after {short_s:.2f} s; slow body of {len(parts)}"
          f" parts answered after {slow_s:.2f} s (body_wait_s = 1)")
    assert short.startswith(b"HTTP/1.1 408 ") and short_s < BOUND_S, short
    assert not slow.startswith(b"HTTP/1.1 408 ") and slow_s > 2, slow  # read to its end
