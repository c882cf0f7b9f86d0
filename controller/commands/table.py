"""`showdown table ...`: run a table daemon, ask it for its status, press console buttons."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from controller.cli import CommandError
from controller.config import TableConfig, read_table_config
from controller.local_api import call


def register(sub: Any) -> None:
    """Add the `table` subcommand group."""
    p: argparse.ArgumentParser = sub.add_parser(
        "table", help="the table daemon: run it, see its status, press console buttons",
        description="Run and operate the table daemon (docs/table-config.md).")
    tsub = p.add_subparsers(dest="table_command", metavar="ACTION", required=True)
    run = tsub.add_parser("run", help="run the daemon (systemd runs this)")
    run.add_argument("--config", type=Path, required=True, help="table config file (TOML)")
    run.set_defaults(handler=_run)
    st = tsub.add_parser("status", help="the daemon's status, counters and the hand in play")
    _target(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(handler=_status)
    d = tsub.add_parser("dealer", help="a dealer console action")
    _target(d)
    d.add_argument("action", choices=["no_more_bets", "settle", "reveal", "void",
                                      "resolve_alert", "correct_card", "manual_card",
                                      "manual_wager", "acknowledge"])
    d.add_argument("--by", default="console", help="who presses it (logged)")
    d.add_argument("--reason", help="reason (void, resolve_alert, correct_card)")
    d.add_argument("--alert-id", type=int, help="alert to resolve")
    d.add_argument("--position", type=int, help="card position to correct (0-based)")
    d.add_argument("--card", help="card, e.g. Ah")
    d.add_argument("--seat", type=int)
    d.add_argument("--spot", choices=["ante", "odds", "play", "trips_plus", "pocket_bonus",
                                      "sweet16"])
    d.add_argument("--amount", type=int, help="cents")
    d.add_argument("--entry-id", help="entry whose score is acknowledged")
    d.set_defaults(handler=_dealer)


def _target(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--config", type=Path, help="the daemon's config file (for its socket)")
    g.add_argument("--socket", type=Path, help="the daemon's local API socket")


def _socket(args: argparse.Namespace) -> Path:
    if args.socket is not None:
        return Path(args.socket)
    return read_table_config(args.config).api.socket


def _ask(args: argparse.Namespace, request: dict[str, Any]) -> dict[str, Any]:
    path = _socket(args)
    try:
        return asyncio.run(call(path, request))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise CommandError(f"no table daemon answers on {path} ({exc.strerror or exc})") from exc
    except TimeoutError as exc:
        raise CommandError(f"the table daemon on {path} did not answer in time") from exc


def _status(args: argparse.Namespace) -> int:
    answer = _ask(args, {"action": "status"})
    status = answer.get("detail", {})
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    print(f"table {status.get('table')} ({status.get('venue')}): {status.get('state')}")
    for fault in status.get("faults", []):
        print(f"  FAULT {fault}")
    print(f"  heat {status.get('heat')} stage {status.get('stage')}; "
          f"hands opened {status.get('hands_opened')}, alerts {status.get('alerts')}, "
          f"inputs {status.get('inputs')}")
    for seat, info in sorted(status.get("seats", {}).items()):
        print(f"  seat {seat}: {info['entry_id']} balance {info['balance']} cents, "
              f"{info['hands_played']} hands")
    hand = status.get("hand")
    if hand:
        print(f"  hand {hand['hand_id']}: {hand['phase']}{' PAUSED' if hand['paused'] else ''},"
              f" {hand['cards_read']} cards, next {hand['next_target']}")
        for alert in hand.get("open_alerts", []):
            print(f"    alert {alert['id']} {alert['kind']}: {alert['message']}")
    mqtt = status.get("mqtt", {})
    journal = status.get("journal", {})
    print(f"  mqtt connected={mqtt.get('connected')} published={mqtt.get('published')} "
          f"reconnects={mqtt.get('reconnects')}; outbox last seq {journal.get('last_seq')}, "
          f"pending {journal.get('pending')}")
    for device in ("shoe", "rfid"):
        if device in status:
            info = status[device]
            print(f"  {device} {info['device']}: connected={info['connected']}")
    return 0


def _dealer(args: argparse.Namespace) -> int:
    request: dict[str, Any] = {"action": args.action, "by": args.by}
    for key in ("reason", "card", "seat", "spot", "amount"):
        if getattr(args, key) is not None:
            request[key] = getattr(args, key)
    if args.alert_id is not None:
        request["alert_id"] = args.alert_id
    if args.position is not None:
        request["position"] = args.position
    if args.entry_id is not None:
        request["entry_id"] = args.entry_id
    answer = _ask(args, request)
    if not answer.get("ok"):
        raise CommandError(str(answer.get("error")))
    print(json.dumps(answer.get("detail", {}), sort_keys=True))
    return 0


def _run(args: argparse.Namespace) -> int:
    from runtime.logs import configure_logging  # noqa: PLC0415

    config = read_table_config(args.config)
    configure_logging(fmt=config.log_format, level=config.log_level, table=config.table)
    return asyncio.run(_main(config))


async def _main(config: TableConfig) -> int:
    from controller.wiring import run_configured  # noqa: PLC0415

    return await run_configured(config)
