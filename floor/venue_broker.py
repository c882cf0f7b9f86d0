"""The embedded broker as a process of its own, for `showdown venue rehearse --broker embedded`
on a machine without Mosquitto: `python -m floor.venue_broker PORT` listens on 127.0.0.1:PORT
until SIGTERM or SIGINT. It has no TLS and no ACL and accepts any client (the command says so
loudly): a rehearsal of the software, not of the venue's network security.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from controller.embedded_broker import EmbeddedBroker, EmbeddedBrokerError

__all__ = ["serve"]


async def serve(port: int) -> None:
    """Run the embedded broker on 127.0.0.1:`port` until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with EmbeddedBroker(port=port) as broker:
        print(f"embedded broker listening on 127.0.0.1:{broker.port} (no TLS, no ACL)",
              flush=True)
        await stop.wait()


if __name__ == "__main__":  # pragma: no cover - the venue runs it as a process
    try:
        asyncio.run(serve(int(sys.argv[1])))
    except (EmbeddedBrokerError, ValueError, IndexError) as exc:
        print(f"embedded broker: {exc}", file=sys.stderr)
        raise SystemExit(69) from None
