"""`showdown simulate table --config FILE`: one table daemon in simulator mode, played with
scripted faults, for a technician to rehearse a table before it goes live or reproduce a
reported problem (docs/simulate-table.md). The command: its options, the config read with
them (floor.rehearsal_config), the rehearsal (floor.rehearsal) and its report printed; exit 1
when anything unexpected happened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from floor.rehearsal import RehearsalError, fault_schedule, rehearse_table
from floor.rehearsal_config import DECK_CHOICES, SimTableConfig, read_sim_table

__all__ = ["register_table", "run_table_rehearsal"]


def register_table(devices: Any) -> None:
    """Add `simulate table`."""
    p: argparse.ArgumentParser = devices.add_parser(
        "table", help="one table daemon on simulated devices, played with scripted faults",
        description="Run one table daemon in simulator mode (the real drivers on the"
        " simulated shoe and chip reader), played by the virtual dealer with the deck,"
        " players and faults of --config and the options; print a run report"
        " (docs/simulate-table.md). Exit 1 when anything unexpected happened.")
    p.add_argument("--config", type=Path, default=None,
                   help="the rehearsal's config (config/simulate-table.example.toml);"
                   " default: a random deck, random players, no faults")
    p.add_argument("--fault", action="append", default=[], metavar="SPEC",
                   help="add a fault, e.g. shoe.corrupt=0.05 or rfid.unplug@hand3"
                   " (repeatable; see docs/simulate-table.md)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the cards, players and fault draws (default: drawn, printed)")
    p.add_argument("--hands", type=int, default=None,
                   help="stop after this many hands (default: play the heat out)")
    p.add_argument("--players", type=int, default=None, choices=range(1, 7), metavar="1-6",
                   help="seated entries (default 2)")
    p.add_argument("--deck", choices=DECK_CHOICES, default=None,
                   help="random (seeded), scripted (the config's cards) or an unshuffled"
                   " mode: factory, riffle, repeated")
    p.add_argument("--broker", default=None,
                   help="HOST:PORT of a broker (default: an embedded one)")
    p.add_argument("--dir", type=Path, default=None,
                   help="keep the journal, keys and table config here (default: a temp dir)")
    p.add_argument("--no-dealer", action="store_true",
                   help="no virtual dealer: the virtual desk seats a heat and a person deals"
                   " on the console (runs until Ctrl-C or --duration)")
    p.add_argument("--duration", type=float, default=None,
                   help="with --no-dealer: stop after S seconds")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=run_table_rehearsal)


def run_table_rehearsal(args: argparse.Namespace) -> int:
    """Run the rehearsal; 0 when everything went as a real table's would, 1 otherwise."""
    from runtime.logs import configure_logging  # noqa: PLC0415

    cfg = read_sim_table(args.config) if args.config is not None else SimTableConfig()
    if args.hands is not None and args.hands < 1:
        raise CommandError("--hands: at least 1")
    cfg = cfg.with_overrides(seed=args.seed, hands=args.hands, players=args.players,
                             deck=args.deck, broker=args.broker, directory=args.dir,
                             extra_faults=args.fault,
                             virtual_dealer=False if args.no_dealer else None)
    if cfg.deck == "scripted" and not cfg.deck_hands:
        raise CommandError("--deck scripted: the config lists no cards ([deck] hands)")
    seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(2**31)
    try:
        fault_schedule(cfg, seed)  # refused before anything starts
        configure_logging(fmt="console", level=cfg.log_level, table=cfg.table)
        report = asyncio.run(rehearse_table(cfg, seed=seed, duration=args.duration,
                                            announce=print))
    except RehearsalError as exc:
        raise CommandError(str(exc)) from None
    if report is None:
        return 0
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        print("\n".join(report.lines()))
    return 1 if report.problems else 0
