"""A table's publishing half in a process of its own, for the kill test of the delivery marks
(tests/integration/test_delivery_marks_kill.py): the journal's outbox feed behind a real
MqttLink, optionally with the journal's writer thread held so that no mark is ever written.

    python -m tests.integration.delivery_marks_child \
        JOURNAL KEY HOST PORT ROOT VENUE COUNT hold|finish

It prints ``acknowledged N`` once the broker has acknowledged (PUBACK) COUNT messages; with
``hold`` it then waits to be killed, with ``finish`` it closes (writing the marks) and prints
``closed``.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

from controller.journal import Journal
from controller.journal.delivery import OutboxFeed
from controller.journal.writer import JournalWriter
from controller.mqtt_link import MqttLink, TableIdentity
from runtime.logs import configure_logging
from wire.envelope import Envelope
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, load_private_key


async def _ignore(_envelope: Envelope) -> None:
    return None


async def main(argv: list[str]) -> int:
    """Publish the journal's pending messages; see the module docstring."""
    journal_path, key, host, port, root, venue, count, mode = argv
    configure_logging(fmt="json", level="critical")  # stdout carries the child's answers
    signer = load_private_key(Path(key))
    journal = Journal.open(Path(journal_path))
    writer = JournalWriter()
    if mode == "hold":  # the writer busy for good: every mark stays unwritten
        writer.submit(threading.Event().wait)
    feed = OutboxFeed(journal, writer)
    settings = MqttSettings(host=host, port=int(port), topic_root=root, timeout_s=10.0,
                            backoff_initial_s=0.02, backoff_max_s=0.2)
    identity = TableIdentity(venue=venue, table=signer.key_id, boot_id="boot-child")
    async with MqttLink(settings, identity, signer, feed, _ignore,
                        command_keys=KeyRing([signer.public_key])) as link:
        async with asyncio.timeout(30):
            while link.delivered < int(count):
                await asyncio.sleep(0.01)
        print(f"acknowledged {link.delivered}", flush=True)
        if mode == "hold":
            await asyncio.Event().wait()
    feed.close()
    writer.close()
    journal.close()
    print("closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
