"""`showdown simulate floor`: a whole floor at full speed in virtual time, for load and soak
runs (floor.run), then the final report (floor.report):
hands played and hands a second of wall time, per table figures, messages published and
ingested, lost and duplicated messages (checked against the central database), scores,
alerts. Any problem exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import add_renamed
from cli.errors import CommandError
from game.money import format_rand
from runtime.errors import Unavailable

if TYPE_CHECKING:  # the run's modules are imported when it runs, not to build the parser
    from floor.report import FloorReport
    from floor.run import FloorRun

__all__ = ["register", "report_json", "report_lines", "run_floor"]


def register(devices: Any) -> None:
    """Add `simulate floor` beside the device simulators."""
    p: argparse.ArgumentParser = devices.add_parser(
        "floor", help="a whole simulated floor at full speed in virtual time (load, soak)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=8, help="simulated tables (1-20, default 8)")
    p.add_argument("--hands", type=int, default=50,
                   help="hands per table, played in whole heats (default 50)")
    p.add_argument("--players", type=int, default=3, help="players per heat (1-6, default 3)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the shuffles and players (printed; random if not given)")
    p.add_argument("--broker", metavar="HOST:PORT",
                   help="an MQTT broker to use, e.g. Mosquitto (default: an embedded one)")
    add_renamed(p, "--db", was="--database", dest="database", metavar="URL",
                help="an empty central database (default: SQLite in the run's directory)")
    p.add_argument("--hand-seconds", type=float, default=60.0, metavar="S",
                   help="a hand's simulated length at one table (virtual time, default 60)")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="write the run's files (configs, keys, journals, database) here")
    p.add_argument("--one-process", action="store_true",
                   help="run every table in this process (for profiling; default: a process"
                        " a table, as on a real floor)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=run_floor)


def _broker(text: str | None) -> str | None:
    """A checked ``HOST:PORT`` that answers (Unavailable when it does not)."""
    if text is None:
        return None
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise CommandError(f"--broker must be HOST:PORT (e.g. 127.0.0.1:1883), got {text!r}")
    try:
        socket.create_connection((host, int(port)), timeout=3.0).close()
    except OSError as exc:
        raise Unavailable("--broker", text, f"the MQTT broker does not answer: {exc}") from None
    return text


def run_floor(args: argparse.Namespace) -> int:
    """Run the floor; 0 when every hand and message reached the central database intact."""
    from floor.plan import LoadPlan  # noqa: PLC0415
    from floor.run import FloorError, FloorRun  # noqa: PLC0415

    broker = _broker(args.broker)
    seed = args.seed if args.seed is not None else secrets.randbelow(1_000_000)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        if any(args.keep.iterdir()):
            raise CommandError(f"--keep {args.keep}: the directory is not empty")
    with tempfile.TemporaryDirectory(prefix="showdown-floor-") as tmp:
        try:
            options = LoadPlan(
                directory=args.keep or Path(tmp), tables=args.tables, hands=args.hands,
                players=args.players, seed=seed, broker=broker, database=args.database,
                hand_seconds=args.hand_seconds, processes=not args.one_process)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            floor = FloorRun(options, out=lambda _line: None)
        except FloorError as exc:
            raise CommandError(str(exc)) from None
        if not args.json:
            print(f"showdown simulate floor: {options.tables} tables x {options.hands} hands,"
                  f" {options.players} players a heat, seed {seed}"
                  f" ({'broker ' + broker if broker else 'embedded amqtt broker'},"
                  f" {'database given' if args.database else 'SQLite'})")
        report = asyncio.run(_run(floor))
    problems = report.check()
    if args.json:
        print(json.dumps(report_json(report, seed, problems), indent=2))
    else:
        for line in report_lines(report, problems):
            print(line)
    return 1 if problems else 0


async def _run(floor: FloorRun) -> FloorReport:
    from floor.report import build_report  # noqa: PLC0415
    from floor.run import FloorError  # noqa: PLC0415
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level="error")
    try:
        await floor.run()
    except FloorError as exc:
        raise CommandError(str(exc)) from None
    return await asyncio.to_thread(build_report, floor)


def report_lines(report: FloorReport, problems: list[str]) -> list[str]:
    """The report for people, one line each."""
    assert report.virtual_start is not None
    assert report.virtual_end is not None
    tz = report.virtual_start.tzinfo
    lines = [f"{report.hands} hands in {report.wall_s:.1f} s of wall time:"
             f" {report.hands_per_second:.1f} hands/s through the whole stack",
             f"virtual time {report.virtual_start:%Y-%m-%d %H:%M} to"
             f" {report.virtual_end.astimezone(tz):%Y-%m-%d %H:%M} UTC",
             "table  hands heats  hands/s  hands/h(virtual)  published ingested lost dup"
             "  scores  alerts"]
    for t in report.tables:
        rate = t.hands / t.wall_s if t.wall_s > 0 else 0.0
        per_hour = f"{t.hands_per_hour:.0f}" if t.hands_per_hour else "-"
        alerts = sum(t.alerts.values())
        lines.append(f"{t.table:<6} {t.hands:>5} {t.heats:>5} {rate:>8.2f} {per_hour:>17}"
                     f" {t.published:>10} {t.ingested:>8} {len(t.lost):>4} {t.duplicated:>3}"
                     f" {len(t.scores):>7} {alerts:>7}")
    scores = [s for t in report.tables for s in t.scores.values()]
    if scores:
        lines.append(f"scores: {len(scores)} entries, best {format_rand(max(scores))},"
                     f" worst {format_rand(min(scores))},"
                     f" mean {format_rand(sum(scores) // len(scores))}")
    kinds: dict[str, int] = {}
    for t in report.tables:
        for kind, n in t.alerts.items():
            kinds[kind] = kinds.get(kind, 0) + n
    lines.append("alerts: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
                               or "none"))
    published = sum(t.published for t in report.tables)
    ingested = sum(t.ingested for t in report.tables)
    lost = sum(len(t.lost) for t in report.tables)
    dup = sum(t.duplicated for t in report.tables)
    lines.append(f"messages: {published} published, {ingested} in the central database,"
                 f" {lost} lost, {dup} duplicated, {report.rejected} rejected")
    resent = sum(t.resent for t in report.tables)
    if resent:
        lines.append(f"desk commands sent again (a delivery to the table went missing):"
                     f" {resent}")
    lines += [f"  problem: {p}" for p in problems]
    lines.append(f"{len(problems)} problem(s)")
    return lines


def report_json(report: FloorReport, seed: int, problems: list[str]) -> dict[str, Any]:
    """The report as plain JSON (amounts in cents)."""
    return {
        "seed": seed, "hands": report.hands, "wall_s": round(report.wall_s, 3),
        "hands_per_s": round(report.hands_per_second, 3),
        "virtual_start": report.virtual_start.isoformat() if report.virtual_start else None,
        "virtual_end": report.virtual_end.isoformat() if report.virtual_end else None,
        "rejected": report.rejected,
        "tables": [{
            "table": t.table, "hands": t.hands, "heats": t.heats, "wall_s": round(t.wall_s, 3),
            "hands_per_hour_virtual": t.hands_per_hour, "published": t.published,
            "delivered": t.delivered, "ingested": t.ingested, "lost": t.lost,
            "duplicated": t.duplicated, "hands_central": t.hands_central,
            "scores_cents": t.scores, "alerts": dict(t.alerts), "resent": t.resent,
            "problem": t.problem}
            for t in report.tables],
        "problems": problems,
    }
