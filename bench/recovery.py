"""The recovery-time table (issue 34 §6): for each failure, the time to serve again and the
messages lost and doubled, beside a baseline or peer measured in the same run.

Rows (``--rows``, comma-separated; default all):

- ``restart``: the table daemon's restart after a SIGKILL on a journal of ``--records``
  (1,000,000) records, exec -> READY=1, beside a small journal's (support/recovery_restart.py);
- ``brokers``: a broker node of a three-node NATS cluster lost under a table and under the
  central service, ``--repeats`` times each, p99 (support/recovery_brokers.py);
- ``database``: the central database's primary lost under the central service and a table
  playing, ``--repeats`` times: a synchronous standby promoted at once, the loss to the first
  write stored again, p99 (support/recovery_failovers.py, tests/integration/pg_pair.py);
- ``central``: the active central instance lost (SIGKILL), ``--repeats`` times, the roles
  alternating: the loss to ingest, the page and the desk API all serving again on the standby,
  p99 (support/recovery_failovers.py, tests/integration/central_pair.py);
- ``rebuild``: the whole central database rebuilt from the tables' journals: an empty
  database, every table re-sends its month (support/recovery_rebuild.py).

Goals (issue 34): restart at 1M records under 2 s; broker failover p99 under 6 s for a
table and 10 s for the centre; database and central failover under 10 s; the rebuild at
10,000 messages a second or more; 0 lost and 0 doubled in every row. A goal is PASS or
MISS and never fails the run (machines vary); the exit status is 1 only when a result is
wrong (a message lost or doubled, a service that never came back).

Run: ``.venv/bin/python bench/recovery.py [--rows restart,rebuild] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the checkout's packages, and tests.integration's helpers
    sys.path.insert(1, str(REPO))

from support.latency_machine import machine_lines  # noqa: E402
from support.recovery_table import Options, Outcome, Row, print_outcomes  # noqa: E402


async def _restart(options: Options) -> list[Outcome]:
    from support.recovery_restart import restart_rows  # noqa: PLC0415 (its imports are heavy)

    return await restart_rows(options)


async def _brokers(options: Options) -> list[Outcome]:
    from support.recovery_brokers import broker_rows  # noqa: PLC0415

    return await broker_rows(options)


async def _rebuild(options: Options) -> list[Outcome]:
    from support.recovery_rebuild import rebuild_rows  # noqa: PLC0415

    return await rebuild_rows(options)


async def _database(options: Options) -> list[Outcome]:
    from support.recovery_failovers import database_rows  # noqa: PLC0415 (its imports are heavy)

    return await database_rows(options)


async def _central(options: Options) -> list[Outcome]:
    from support.recovery_failovers import central_rows  # noqa: PLC0415

    return await central_rows(options)


def _registry() -> dict[str, Row]:
    rows = [
        Row("restart", "the table daemon's restart at 1M journal records", _restart),
        Row("brokers", "a broker node lost under a table and under the centre", _brokers),
        Row("database", "database primary lost", _database),
        Row("central", "active central instance lost", _central),
        Row("rebuild", "the centre rebuilt from the tables' journals", _rebuild),
    ]
    return {row.name: row for row in rows}


ROWS = _registry()


async def main_async(args: argparse.Namespace) -> int:
    """Measure the chosen rows in turn, print the table; 1 if a result is wrong."""
    print(*machine_lines(), sep="\n")
    print(f"load    : {os.getloadavg()[0]:.2f} at the start; rows: {', '.join(args.rows)}"
          f"{' (quick)' if args.quick else ''}")
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as scratch:
        options = Options(quick=args.quick, scratch=Path(scratch), repeats=args.repeats,
                          args=args)
        for name in args.rows:
            row = ROWS[name]
            started = time.perf_counter()
            try:
                got = await row.measure(options)
            except Exception as exc:  # a row that could not finish is a wrong result
                traceback.print_exc()
                got = [Outcome(failure=row.about, wrong=f"the row did not finish: {exc!r}")]
            for outcome in got:
                if (outcome.lost or outcome.doubled) and outcome.wrong is None:
                    outcome.wrong = f"{outcome.lost} lost, {outcome.doubled} doubled"
            outcomes.extend(got)
            print(f"row {name}: measured in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"load    : {os.getloadavg()[0]:.2f} at the end\n")
    print_outcomes(outcomes)
    wrong = [o for o in outcomes if o.wrong]
    print(f"result: {'WRONG' if wrong else 'OK'} ({len(wrong)} rows with a wrong result)")
    return 1 if wrong else 0


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (``--quick`` applied)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS),
                        help=f"which rows, of {', '.join(ROWS)} (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: small journals, 1 kill a node, 2 tables x 2 heats")
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="the restart row's journal (default 1,000,000 records)")
    parser.add_argument("--baseline-records", type=int, default=10_000,
                        help="the restart row's baseline journal (default 10,000 records)")
    parser.add_argument("--repeats", type=int, default=10,
                        help="kills of each broker node role, database primary and active central"
                             " instance (default 10; p99 over them)")
    parser.add_argument("--broker-heats", type=int, default=6,
                        help="heats the broker row's table plays meanwhile (default 6)")
    parser.add_argument("--logs", type=Path, default=None,
                        help="copy the broker row's service and node logs to this folder")
    parser.add_argument("--tables", type=int, default=8, help="the rebuild's tables (default 8)")
    parser.add_argument("--heats", type=int, default=700,
                        help="each table's month in heats of 56 messages (default 700: "
                             "39,200 messages a table)")
    parser.add_argument("--workers", type=int, default=0,
                        help="the rebuild's verification worker processes (default 0, as the "
                             "service)")
    parser.add_argument("--database", choices=["auto", "sqlite", "postgresql"], default="auto",
                        help="the rebuild's and the central row's database (auto: PostgreSQL if it"
                             " answers)")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args(argv)
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in args.rows if r not in ROWS]
    if unknown or not args.rows:
        parser.error(f"--rows takes {', '.join(ROWS)}; not {', '.join(unknown) or 'nothing'}")
    if args.quick:
        args.records, args.baseline_records = 1_500, 1_000
        args.repeats, args.broker_heats = 1, 2
        args.tables, args.heats = 2, 2
    if min(args.records, args.baseline_records, args.repeats, args.tables, args.heats,
           args.broker_heats) < 1 or args.workers < 0:
        parser.error("sizes and counts must be at least 1 (--workers at least 0)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run."""
    args = parse(argv)
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level="error")
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` shows where a run is waiting
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
