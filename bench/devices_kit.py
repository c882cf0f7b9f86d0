"""`showdown devices check`'s table for every installed device driver (issue 30's closing
note): each driver through the conformance kit on its simulator, the QuasarMX on a 16-spot
table (one reader, a multiplexer of 16 ports) and a 42-spot table (three readers of 14 ports,
the third over TCP) at its device's own timing, whose "sweep time" rows are the sweep times
with stacks of 1..20 chips. The SR-48's row is its simulator's report interval (the baseline
of a reader that reports without being polled). Figures only: a driver that fails a check is
reported, and the script exits 1 (a wrong result, not a slow one).

Run: ``.venv/bin/python bench/devices_kit.py [--quick]`` (--quick: the simulators 4x faster,
the QuasarMX's 16-spot table only).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from support.latency_machine import machine_lines

from cli.devices.kit import check_on_simulator, choose
from drivers.adapter import ROLES
from drivers.readings import SPOTS
from drivers.registry import installed
from runtime.logs import configure_logging

# A driver whose section needs keys to run on its simulator: the tables it is checked on.
_SPOTS = [f"{seat}/{spot}" for seat in range(1, 7) for spot in SPOTS]


def _quasar(readers: list[tuple[str, list[str]]]) -> str:
    lines = ["[rfid]", 'driver = "metratec-quasarmx"', ""]
    for where, spots in readers:
        lines += ["[[rfid.readers]]", where, "[rfid.readers.antennas]"]
        lines += [f'"{i // 4 + 1}.{i % 4 + 1}" = "{s}"' for i, s in enumerate(spots)]
        lines.append("")
    return "\n".join(lines)


TABLES = {
    # A text-line shoe watched for stalls: it sends idle lines, and its stall time is set
    # (without both, silence is a quiet shoe, not a stalled one: D305).
    "text-line": {"stall 3 s": '[shoe]\ndriver = "text-line"\nstall_seconds = 3.0\n'},
    "metratec-quasarmx": {
        "16 spots": _quasar([('url = "/dev/showdown/quasarmx-1"', _SPOTS[:16])]),
        "42 spots": _quasar([('url = "/dev/showdown/quasarmx-1"', _SPOTS[:14]),
                             ('url = "/dev/showdown/quasarmx-2"', _SPOTS[14:28]),
                             ('host = "10.0.7.23"', _SPOTS[28:])]),
    },
}


def main() -> int:
    """Check every installed driver; print each table; exit 1 if one does not conform."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="simulators 4x, fewer tables")
    args = parser.parse_args()
    configure_logging(fmt="console", level="critical")
    for line in machine_lines():
        print(line)
    speed = 4.0 if args.quick else 1.0
    summary: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        for role in ROLES:
            for driver in installed(role):
                tables = TABLES.get(driver.name, {"": ""})
                if args.quick:
                    tables = dict(list(tables.items())[:1])
                for label, text in tables.items():
                    config = None
                    if text:
                        config = Path(folder) / f"{driver.name}.toml"
                        config.write_text(text, encoding="utf-8")
                    chosen = choose(driver.name, role, config)
                    report = asyncio.run(check_on_simulator(chosen, timeout=5.0, spots=None,
                                                            sim_speed=speed))
                    print(f"\n{report.table()}" + (f"  [{label}]" if label else ""))
                    sweep = next((r.detail for r in report.rows
                                  if r.check == "sweep time" and r.status == "PASS"), "")
                    limits = [r.check for r in report.rows if r.status == "LIMIT"]
                    verdict = ("FAILS " + ", ".join(report.failed()) if not report.passed
                               else f"conforms (declared limit: {', '.join(limits)})" if limits
                               else "conforms")
                    summary.append((f"{driver.name} {label}".strip(), verdict, sweep))
    print("\ndriver                       | result   | sweep time")
    for name, verdict, sweep in summary:
        print(f"{name:28} | {verdict:8} | {sweep}")
    failed = [name for name, verdict, _ in summary if not verdict.startswith("conforms")]
    print(f"\nresult: {'OK' if not failed else 'NOT CONFORMING: ' + ', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
