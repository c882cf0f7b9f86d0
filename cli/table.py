"""`showdown table ...`: run a table daemon, ask it for its status, press console buttons."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.arguments import add_renamed, rand_amount, signed_rand
from cli.errors import CommandError, CommandRefused
from game.money import format_rand
from game.staff import ACTIONS
from game.words import spoken
from runtime.errors import Unavailable

if TYPE_CHECKING:  # each action imports what it runs: `table dealer` never loads the daemon
    from controller.config import TableConfig


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
    d = tsub.add_parser(
        "dealer", help="a console action, signed in under your own staff credential",
        description="Sign in with your staff id and PIN, take one console action, sign out."
                    " Each action is journaled under your staff id; supervisor-only actions"
                    " are refused to a dealer.")
    _target(d)
    d.add_argument("action", choices=sorted(ACTIONS))
    add_renamed(d, "--staff-id", was="--staff", dest="staff", required=True, metavar="ID",
                help="your staff id (as enrolled at the desk)")
    d.add_argument("--pin-file", type=Path,
                   help="read the PIN from this file (else $SHOWDOWN_PIN, else a prompt)")
    add_renamed(d, "--why", was="--reason", dest="reason", metavar="TEXT",
                help="why, in words (void, resolve_alert(s), correct_card, payout_override,"
                     " rule_hand, unlock_staff; the claim of dispute_hand)")
    d.add_argument("--alert-id", type=int, help="alert to resolve")
    d.add_argument("--position", type=int, help="card position to correct (0-based)")
    d.add_argument("--card", help="card, e.g. Ah")
    d.add_argument("--seat", type=int)
    d.add_argument("--spot", choices=["ante", "odds", "play", "trips_plus", "pocket_bonus",
                                      "sweet16"])
    d.add_argument("--amount", type=rand_amount, metavar="AMOUNT",
                   help="amount in rand, e.g. 25, R137.50 or 1,250 (manual_wager)")
    d.add_argument("--hand", dest="hand_id", help="the settled hand disputed (dispute_hand,"
                   " with --seat or --entry and the claim as --reason) or ruled on"
                   " (rule_hand, with --seat and --ruling)")
    d.add_argument("--entry", dest="entry_id", help="the entry whose result is disputed"
                   " (dispute_hand), or whose score slip to print (print_slip)")
    d.add_argument("--alert-ids", metavar="ID,ID,...",
                   help="alerts resolved in one act (resolve_alerts), e.g. 3,4,7")
    d.add_argument("--ruling", choices=["void", "correct"],
                   help="rule_hand: void the settled hand for --seat, or correct its net")
    d.add_argument("--net", metavar="AMOUNT",
                   help="rule_hand --ruling correct: the seat's corrected net for the hand,"
                        " e.g. R100, or --net=-R25 for a loss")
    d.add_argument("--lift-for", dest="lift_for", metavar="ID",
                   help="unlock_staff (a manager's): the staff id whose sign-in wait to lift,"
                        " with --why")
    d.add_argument("--terminal", help="unlock_staff: the terminal (a console client's"
                   " address) whose wait to lift; without it, every terminal's")
    d.add_argument("--stage", choices=["opening", "closing"],
                   help="count_chips, confirm_count: the heat's opening or closing count")
    d.add_argument("--counted", dest="counts", action="append", type=_chip_count,
                   metavar="VALUE=N", help="count_chips: N chips of VALUE counted (rand),"
                   " once per chip value, e.g. --counted R5=40 --counted R100=12")
    d.add_argument("--decks", type=int, metavar="N",
                   help="decks_received, decks_opened, decks_used, decks_destroyed: how many")
    d.add_argument("--seal", dest="seals", action="append", metavar="NUMBER",
                   help="a deck's seal number (once per deck, optional)")
    d.add_argument("--lot", help="decks_received: the lot number")
    d.add_argument("--from", dest="source", metavar="WHERE",
                   help="decks_received: where the decks came from (cage, pit stock)")
    d.add_argument("--confirm-by", dest="vouch", metavar="ID",
                   help="confirm_count: the supervisor who confirms; decks_destroyed: the"
                        " witness (a second person, with their own PIN: --confirm-pin-file"
                        " or $SHOWDOWN_CONFIRM_PIN)")
    d.add_argument("--confirm-pin-file", dest="vouch_pin_file", type=Path, metavar="FILE",
                   help="the --confirm-by person's PIN, read from this file")
    d.add_argument("--json", action="store_true", help="print the table's answer as JSON")
    d.set_defaults(handler=_dealer)


def _chip_count(text: str) -> tuple[int, int]:
    """``--counted R5=40``: (value in cents, how many); a usage error names what is wrong."""
    value, sep, count = text.partition("=")
    if not sep or not count.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give VALUE=N, e.g. R5=40")
    return rand_amount(value.strip()), int(count)


def _target(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--config", type=Path, help="the daemon's config file (for its socket)")
    g.add_argument("--socket", type=Path, help="the daemon's local API socket")


def _socket(args: argparse.Namespace) -> Path:
    if args.socket is not None:
        return Path(args.socket)
    from controller.config import read_table_config  # noqa: PLC0415

    return read_table_config(args.config).api.socket


def _ask(args: argparse.Namespace, request: dict[str, Any]) -> dict[str, Any]:
    import asyncio  # noqa: PLC0415

    from controller.local_api import call  # noqa: PLC0415

    path = _socket(args)
    # Not running, or not answering: a service that is unavailable (exit 69), named by the
    # setting that points at its socket.
    source, key = ("--socket", "") if args.socket is not None else (str(args.config),
                                                                     "api.socket")
    try:
        return asyncio.run(call(path, request))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise Unavailable(source, key, f"no table daemon answers on {path}"
                          f" ({exc.strerror or exc})") from exc
    except TimeoutError as exc:
        raise Unavailable(source, key, f"the table daemon on {path} did not answer in time"
                          ) from exc


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
        shown = info.get("entry_code") or info["entry_id"]  # the code people see (D331)
        print(f"  seat {seat}: {shown} chips {format_rand(info['balance'])}, "
              f"{info['hands_played']} hands")
    for person in status.get("staff", []):
        print(f"  signed in: {person['staff_id']} ({person['role']}) {person['name']}")
    payout = status.get("payout")
    if payout:
        print(f"  payout of {payout['hand_id']} not yet verified:")
        for spot in payout["spots"]:
            print(f"    seat {spot['seat']} {spoken(spot['spot'])}: holds"
                  f" {format_rand(spot['held'])},"
                  f" must hold {format_rand(spot['expected'])} ({spot['state']})")
    hand = status.get("hand")
    if hand:
        print(f"  hand {hand['hand_id']}: {hand['phase']}{' PAUSED' if hand['paused'] else ''},"
              f" {hand['cards_read']} cards, next {hand['next_target']}")
        for alert in hand.get("open_alerts", []):
            print(f"    alert {alert['id']} {alert['kind']}: {alert['message']}")
    _tallies_lines(status.get("tallies") or {})
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


def _tallies_lines(tallies: dict[str, Any]) -> None:
    """The heat's tray counts and the decks at the table, as `table status` prints them."""
    for stage in ("opening", "closing"):
        count = (tallies.get("counts") or {}).get(stage)
        if count:
            waiting = "" if count.get("confirmed") else " (waiting for a supervisor)"
            print(f"  {stage} count: {count.get('say')}{waiting}")
    position = (tallies.get("decks") or {}).get("position") or {}
    if any(position.values()):
        print(f"  decks: {position.get('sealed')} sealed, {position.get('in_play')} in play,"
              f" {position.get('awaiting')} awaiting destruction")


def _secret_pin(path: Path | None, env_name: str, missing: str, who: str) -> str:
    """A PIN from ``path``, else $``env_name``, else typed at a prompt for ``who`` (never
    echoed); ``missing`` is the error when there is no terminal to ask at."""
    if path is not None:
        try:
            return str(path.read_text()).strip()
        except OSError as exc:
            raise CommandError(f"cannot read the PIN file {path}:"
                               f" {exc.strerror or exc}") from exc
    env = os.environ.get(env_name)
    if env:
        return env
    if not sys.stdin.isatty():
        raise CommandError(missing)
    return getpass.getpass(f"PIN for {who}: ")


def _pin(args: argparse.Namespace) -> str:
    return _secret_pin(args.pin_file, "SHOWDOWN_PIN",
                       "no PIN: pass --pin-file FILE or set SHOWDOWN_PIN", args.staff)


def _dealer(args: argparse.Namespace) -> int:
    request: dict[str, Any] = {"action": args.action}
    for key in ("reason", "card", "seat", "spot", "hand_id", "entry_id"):
        if getattr(args, key) is not None:
            request[key] = getattr(args, key)
    if args.amount is not None:
        request["amount"] = args.amount
    if args.alert_id is not None:
        request["alert_id"] = args.alert_id
    if args.position is not None:
        request["position"] = args.position
    if args.alert_ids is not None:
        request["alert_ids"] = _ids(args.alert_ids)
    if args.ruling is not None:
        request["ruling"] = args.ruling
    if args.net is not None:
        request["net"] = signed_rand(args.net)
    _tally_fields(args, request)
    if args.action == "unlock_staff":
        request["staff_id"] = args.lift_for
        if args.terminal is not None:
            request["terminal"] = args.terminal
    signed = _ask(args, {"action": "sign_in", "staff_id": args.staff, "pin": _pin(args)})
    if not signed.get("ok"):
        raise CommandRefused(f"sign-in refused: {signed.get('error')}")
    session = signed["detail"]["session"]
    try:
        answer = _ask(args, {**request, "session": session})
    finally:
        _ask(args, {"action": "sign_out", "session": session})
    if not answer.get("ok"):  # the table's rules or the person's role refuse it
        raise CommandRefused(str(answer.get("error")))
    detail = answer.get("detail", {})
    if args.json:
        print(json.dumps(detail, sort_keys=True))
        return 0
    print(f"{spoken(args.action)}: done")
    for key, value in sorted(detail.items()):
        print(f"  {spoken(key)}: {_shown(key, value)}")
    return 0


def _tally_fields(args: argparse.Namespace, request: dict[str, Any]) -> None:
    """A chip count's and a deck step's fields, and the second person's own credential."""
    if args.stage is not None:
        request["stage"] = args.stage
    if args.counts:
        values = [v for v, _ in args.counts]
        if len(set(values)) != len(values):
            raise CommandError("--counted: give each chip value once")
        request["counted"] = {str(v): n for v, n in args.counts}
    if args.decks is not None:
        request["decks"] = args.decks
    for key in ("seals", "lot", "source"):
        if getattr(args, key) is not None:
            request[key] = getattr(args, key)
    if args.action.startswith("decks_") and "reason" in request:
        request["note"] = request.pop("reason")
    if args.action in ("confirm_count", "decks_destroyed"):
        if args.vouch is None:
            raise CommandError(f"{args.action}: name the second person with --confirm-by ID"
                               " (a supervisor confirms a count; a witness sees decks"
                               " destroyed)")
        request["staff_id"] = args.vouch
        request["pin"] = _vouch_pin(args)


def _vouch_pin(args: argparse.Namespace) -> str:
    """The --confirm-by person's own PIN (file, $SHOWDOWN_CONFIRM_PIN, or a prompt)."""
    return _secret_pin(args.vouch_pin_file, "SHOWDOWN_CONFIRM_PIN",
                       "no PIN for --confirm-by: pass --confirm-pin-file FILE or set"
                       " SHOWDOWN_CONFIRM_PIN", args.vouch)


def _ids(text: str) -> list[int]:
    """``--alert-ids 3,4,7`` as alert ids (a usage error names the option)."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--alert-ids: {text!r} is not a list of alert ids, e.g."
                           " 3,4,7") from None


def _shown(key: str, value: object) -> str:
    """A value of the table's answer as a person reads it (amounts in rand)."""
    amount = key in ("amount", "balance", "held", "expected") or key.endswith("_cents")
    if amount and isinstance(value, int) and not isinstance(value, bool):
        return format_rand(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _run(args: argparse.Namespace) -> int:
    from controller.config import read_table_config  # noqa: PLC0415
    from runtime.event_loop import EventLoopChoiceError, run  # noqa: PLC0415
    from runtime.logs import configure_logging  # noqa: PLC0415

    config = read_table_config(args.config)
    configure_logging(fmt=config.log_format, level=config.log_level, table=config.table)
    try:
        return run(_main(config))
    except EventLoopChoiceError as exc:
        raise CommandError(str(exc)) from None


async def _main(config: TableConfig) -> int:
    from controller.wiring import run_configured  # noqa: PLC0415

    return await run_configured(config)
