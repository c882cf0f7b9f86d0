"""The broker a bench ingest run publishes through (bench/ingest.py, and the recovery bench's
rebuild row): a private Mosquitto configured as production's but queueing the whole run, the
machine's, or the embedded one."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from controller.embedded_broker import EmbeddedBroker
from deploy.broker_config import BrokerSettings
from runtime.net import answers
from support.ingest_tables import MQTT_HOST, MQTT_PORT

__all__ = ["broker_for"]


@contextlib.asynccontextmanager
async def broker_for(choice: str, workdir: Path, *, messages: int = 0
                     ) -> AsyncIterator[tuple[str, int, str, str, int | None]]:
    """(host, port, kind, description, pid if ours) of the broker to use, for the block.

    ``private``: a Mosquitto of our own, configured as production's (max_queued_messages
    from deploy/broker_config.py; a stock Mosquitto drops a slow subscriber's QoS 1
    messages beyond 1,000), but queueing at least ``messages``: the fake tables publish a
    whole run in about a second, a burst no venue makes, and what the broker dropped would
    only be recovered by resend requests after ``resend_after_s``, measuring those instead
    of the ingest. ``system``: the machine's on 127.0.0.1:1883 (drops beyond 1,000 queued:
    the resend path at work). ``embedded``: amqtt. ``auto``: the first of these available.
    """
    binary = shutil.which("mosquitto") or ("/usr/sbin/mosquitto"
                                            if Path("/usr/sbin/mosquitto").exists() else None)
    if choice == "private" or (choice == "auto" and binary):
        if binary is None:
            raise SystemExit("--broker private: mosquitto is not installed")
        production = next(f.default for f in dataclasses.fields(BrokerSettings)
                          if f.name == "max_queued_messages")
        queued = max(int(production), messages)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                        f"max_queued_messages {queued}\n"
                        + ("user root\n" if os.getuid() == 0 else ""))
        process = await asyncio.create_subprocess_exec(
            binary, "-c", str(conf), stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        try:
            async with asyncio.timeout(30):
                while not await asyncio.to_thread(answers, "127.0.0.1", port):
                    await asyncio.sleep(0.05)
            yield ("127.0.0.1", port, "mosquitto",
                   f"a private Mosquitto on 127.0.0.1:{port} (max_queued_messages {queued:,}; "
                   f"production's is {production:,})", process.pid)
        finally:
            process.terminate()
            await process.wait()
    elif choice == "system" or (choice == "auto" and answers(MQTT_HOST, MQTT_PORT)):
        yield (MQTT_HOST, MQTT_PORT, "mosquitto",
               f"the machine's Mosquitto on {MQTT_HOST}:{MQTT_PORT}", None)
    else:
        async with EmbeddedBroker() as embedded:
            yield (embedded.host, embedded.port, "embedded",
                   f"the embedded amqtt broker on {embedded.host}:{embedded.port}", None)
