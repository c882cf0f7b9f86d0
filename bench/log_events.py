"""What one log event costs the daemon in each output of runtime/logs.py, in one run.

Run: `.venv/bin/python bench/log_events.py [--events 20000]`.

The same event (a settled hand with table, hand_id and nets) is logged N times: as a JSON
line to /dev/null (stdout outside systemd, the baseline), natively to a journald socket that
another process drains (under systemd), and as a filtered-out debug line (what a disabled
level costs). Each figure is microseconds per event, the fastest of three rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.latency_machine import machine_lines

from runtime.logs import configure_logging, get_logger


def _per_event_us(log: Callable[[], None], events: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(events):
            log()
        best = min(best, time.perf_counter() - start)
    return best / events * 1e6


_DRAIN = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
sock.bind(sys.argv[1])
while True:
    sock.recv(1 << 16)
"""


def main() -> int:
    """Print microseconds per event for each output."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    log = get_logger("showdown.table")

    def settled() -> None:
        log.info("hand.settled", hand_id="t01-000042", nets={"1": -2500, "2": 5000})

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        configure_logging(fmt="json", level="info", table="t01")
        json_us = _per_event_us(settled, args.events)
        disabled_us = _per_event_us(lambda: log.debug("chips counted", seat=2), args.events)
    with tempfile.TemporaryDirectory(prefix="logb-", dir="/tmp") as folder:
        path = Path(folder) / "socket"
        # journald's stand-in reads in a process of its own: no GIL shared with the logger.
        drain = subprocess.Popen([sys.executable, "-c", _DRAIN, str(path)])  # noqa: S603
        try:
            while not path.exists():
                time.sleep(0.01)
            st = os.fstat(2)
            os.environ.update(JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}",
                              SHOWDOWN_JOURNAL_SOCKET=str(path))
            configure_logging(level="info", table="t01")
            journal_us = _per_event_us(settled, args.events)
        finally:
            drain.terminate()
            drain.wait()
    print("\n".join(machine_lines()))
    print(f"load    : {os.getloadavg()[0]:.1f} (1 min)")
    print(f"{args.events} events, fastest of 3 rounds, microseconds per event:")
    print(f"  JSON line to /dev/null (baseline)   {json_us:7.1f}")
    print(f"  native journald entry to a socket   {journal_us:7.1f}")
    print(f"  debug line below the level          {disabled_us:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
