"""The page's connection indicator tells the truth, end to end, in a real browser.

The service reaches its broker through a TCP relay the test owns (the table publishes to the
broker directly). The page says "waiting for the tables" until a table sends something,
"live" once one does, and when the relay is cut (the service loses its broker) it says so in
words with the time of the last data, not a green "live"; with the relay back the service
reconnects and the page is live again after the next message. When the service itself stops,
the page says "reconnecting". /healthz carries the same state.

Needs chromium and the playwright package (see test_page_browser.py; skips without them).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from datetime import timedelta
from pathlib import Path

import pytest

from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import START, finish, http_get, start
from tests.leaderboard.test_page_browser import CHROMIUM, CHROMIUM_ARGS, _browser_or_skip


class Relay:
    """A TCP relay on a fixed free port of 127.0.0.1 to the broker: `cut` closes the
    listener and every connection through it, `restore` listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def restore(self) -> None:
        """Listen (again) and relay every connection."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port,
                                                  reuse_address=True)

    async def cut(self) -> None:
        """Stop listening and drop every relayed connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                     ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}


async def _state(page: object, state: str, timeout_ms: int = 40_000) -> str:
    await page.wait_for_selector(f'#live[data-state="{state}"]',  # type: ignore[attr-defined]
                                 timeout=timeout_ms)
    return str(await page.inner_text("#live-text"))  # type: ignore[attr-defined]


@pytest.mark.soak  # the broker and the service stopped and started under a browser: soak
@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_indicator_follows_the_broker_and_the_service(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str) -> None:
    async_playwright = _browser_or_skip()
    relay = Relay((mqtt_broker.host, mqtt_broker.port))
    await relay.restore()
    run = await start(tmp_path, mqtt_broker, unique_topic,
                      broker_address=("127.0.0.1", relay.port))
    stopped = False
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 720})
                await page.goto(f"http://127.0.0.1:{run.port}/")
                assert await _state(page, "waiting") == "waiting for the tables"
                assert await page.locator("#live.on").count() == 0

                await run.table.score("E-LIVE01", 575_000, START - timedelta(minutes=3))
                assert await _state(page, "live") == "live"
                health = (await http_get(run.port, "/healthz")).json()
                assert health["link"]["state"] == "live"
                assert health["link"]["tables_seen"] == 1
                since = health["link"]["since_local"]

                await relay.cut()  # the service loses its broker
                text = await _state(page, "offline")
                assert text == f"no connection to the tables \u00b7 no data since {since}"
                assert await page.locator("#live.on").count() == 0
                health = (await http_get(run.port, "/healthz")).json()
                assert health["status"] == "degraded"
                assert health["link"]["broker_connected"] is False

                await relay.restore()  # back: the service reconnects on its own
                assert await _state(page, "live") == "live"

                assert await finish(run) == 0  # the service stops: the stream drops
                stopped = True
                text = await _state(page, "reconnecting")
                assert text.startswith("reconnecting \u00b7 no data since ")
            finally:
                await browser.close()
    finally:
        if not stopped:
            await finish(run)
        await relay.cut()
