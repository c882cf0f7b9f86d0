"""The table's local API for the dealer's console: JSON lines over a Unix socket.

One request per line, one answer per line, on the same connection:

    -> {"id": "7", "action": "no_more_bets", "by": "dealer D12"}
    <- {"id": "7", "ok": true, "detail": {"hand_id": "t01-000042", "seats": [1, 3]}}
    <- {"id": "8", "ok": false, "error": "no hand is open for 'settle'"}

The socket file is created with mode 0660 (the console's user shares the daemon's group);
anything that is not a JSON object on one line is answered with an error, never dropped. A
connection may wait idle between requests, but a line once begun must end within
`LINE_WAIT_S` (D407): a client that stops mid-line is told so and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["LINE_WAIT_S", "MAX_LINE", "LocalApi", "call"]

Handler = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
MAX_LINE = 64 * 1024
LINE_WAIT_S: Final = 5.0  # a request line begun must end within this


class LocalApi:
    """Serves `handler` on a Unix socket until closed (an async context manager)."""

    def __init__(self, path: Path, handler: Handler, *,
                 line_wait_s: float = LINE_WAIT_S) -> None:
        self.path = path
        self.handler = handler
        self.line_wait_s = line_wait_s
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> LocalApi:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path),
                                                       limit=MAX_LINE)
        os.chmod(self.path, 0o660)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                first = await reader.read(1)  # idle between requests: no deadline
                if not first:
                    break
                try:
                    async with asyncio.timeout(self.line_wait_s):
                        line = first if first == b"\n" else first + await reader.readline()
                except ValueError:  # longer than MAX_LINE
                    await _send(writer, {"ok": False, "error": f"request over {MAX_LINE} bytes"})
                    break
                except TimeoutError:
                    # imported here: the pit's commands use this module's client without
                    # the daemon's logging machinery (tests/cli/test_imports.py)
                    from runtime.logs import get_logger  # noqa: PLC0415
                    get_logger("showdown.local_api").warning(
                        "request_line_stalled", socket=str(self.path), waited_s=self.line_wait_s)
                    await _send(writer, {"ok": False, "error": "the request line stopped short:"
                                         f" not ended within {self.line_wait_s:g} s"})
                    break
                await _send(writer, await self._answer(line))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> Mapping[str, Any]:
        try:
            request = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return {"ok": False, "error": f"not JSON: {exc}"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "a request is a JSON object"}
        answer = dict(await self.handler(request))
        if "id" in request:
            answer["id"] = request["id"]
        return answer


async def _send(writer: asyncio.StreamWriter, answer: Mapping[str, Any]) -> None:
    writer.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    await writer.drain()


async def call(path: Path, request: Mapping[str, Any], *, timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to a daemon's local API and return its answer."""
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_LINE)
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await reader.readline()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    if not line:
        raise ConnectionError(f"the daemon at {path} closed the connection without an answer")
    answer = json.loads(line)
    if not isinstance(answer, dict):
        raise ConnectionError(f"the daemon at {path} answered with something that is not an object")
    return answer
