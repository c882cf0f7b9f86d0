"""`showdown bench`: the technician's bench from the command line (docs/operations/bench.md):
the same actions as the bench page, on a running simulated table's bench API.

    showdown bench --config config/table-sim.toml state
    showdown bench --bench-url http://127.0.0.1:8091/ deal As
    showdown bench --config FILE place 1 ante R25 [--from tray]
    showdown bench --config FILE take 1 ante [R25]
    showdown bench --config FILE tap 6009123412341234 [--form track2]
    showdown bench --config FILE unplug shoe | plug shoe | fault rfid silent true
    showdown bench --config FILE shoe-state jam | power-cycle | unknown-chip 1 ante

Prints the bench's answer in one line. Exit 0 done, 2 a bad argument or config, 3 refused
by the bench (its reason printed), 69 no bench answers. Only the standard library's HTTP
client: it runs on a table PC's install.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Final

from cli.errors import CommandError, CommandRefused, CommandUnavailable
from game.money import InvalidAmount, parse_amount

__all__ = ["register", "run"]

DEVICES: Final = ("shoe", "rfid", "id_reader")
_TIMEOUT_S: Final = 10.0


def register(sub: Any) -> None:
    """Add the `bench` command and its actions."""
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="drive a simulated table's devices: deal, place and take chips, tap"
        " cards, unplug, faults",
        description="The technician's bench of a running simulated table ([bench] enabled in"
        " its config): the bench page's actions from the command line. Prints the bench's"
        " answer in one line; exit 3 when the bench refuses, 69 when no bench answers.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", dest="table_config", metavar="FILE", type=Path,
                       help="the table's config: the bench's address from its [bench]")
    where.add_argument("--bench-url", dest="url", metavar="URL", help="the bench's address,"
                       " e.g. http://127.0.0.1:8091/")
    # The names of the first draft of the interface (bench-interface.md), kept working.
    where.add_argument("--table-config", dest="table_config", type=Path, help=argparse.SUPPRESS)
    where.add_argument("--url", dest="url", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the bench's whole JSON answer")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("state", help="the simulated devices now (one line of JSON)",
                       description="The simulated devices: plugged or not, their faults,"
                       " the cards dealt in this hand, the chips lying on each spot.")
    deal = actions.add_parser("deal", help="deal a card from the simulated shoe",
                              description="Deal CARD (e.g. As, 10h), or the next card of the"
                              " bench's shuffle when none is given.")
    deal.add_argument("card", nargs="?", metavar="CARD", help="the card, e.g. As or 10h")
    place = actions.add_parser("place", help="place chips on a spot",
                               description="Place AMOUNT (rand: R25 or 25) on the seat's"
                               " spot, from the seat's stack or from the tray.")
    place.add_argument("seat", type=int, metavar="SEAT", help="the seat, 1-6")
    place.add_argument("spot", metavar="SPOT", help="ante, odds, play, trips_plus,"
                       " pocket_bonus, sweet16 or marker")
    place.add_argument("amount", metavar="AMOUNT", help="rand: R25 or 25")
    place.add_argument("--from", dest="source", choices=("stack", "tray"), default="stack",
                       help="the seat's stack (default) or the tray (a starting stack, a"
                       " payout)")
    take = actions.add_parser("take", help="take chips off a spot",
                              description="Take every chip off the seat's spot, or chips"
                              " worth AMOUNT.")
    take.add_argument("seat", type=int, metavar="SEAT", help="the seat, 1-6")
    take.add_argument("spot", metavar="SPOT", help="the spot, e.g. ante")
    take.add_argument("amount", nargs="?", metavar="AMOUNT", help="rand: R25 or 25"
                      " (default: every chip)")
    tap = actions.add_parser("tap", help="tap a rewards or employee card on the ID reader",
                             description="Tap a card: its NUMBER as the reader sends it.")
    tap.add_argument("number", metavar="NUMBER", help="the card's number (a UID in hex for"
                     " --form uid)")
    tap.add_argument("--form", choices=("track2", "uid", "plain"), default="track2",
                     help="how the reader sends it (default track2)")
    state = actions.add_parser("shoe-state", help="put the simulated shoe in a state",
                               description="The shoe reports STATE: jam, cover_open, empty,"
                               " or ready (cleared).")
    state.add_argument("state", choices=("jam", "cover_open", "empty", "ready"),
                       help="the shoe's state")
    actions.add_parser("power-cycle", help="the simulated shoe loses power and comes back",
                       description="The shoe loses power and comes back: what it had not"
                       " sent is lost and a new session starts.")
    odd = actions.add_parser("unknown-chip", help="lay chips the registry does not know",
                             description="Lay COUNT chips the chip registry does not know on"
                             " the seat's spot.")
    odd.add_argument("seat", type=int, metavar="SEAT", help="the seat, 1-6")
    odd.add_argument("spot", metavar="SPOT", help="the spot, e.g. ante")
    odd.add_argument("--count", type=int, default=1, help="how many chips (1-20; default 1)")
    for name, words in (("unplug", "unplug a simulated device"),
                        ("plug", "plug a simulated device back in")):
        one = actions.add_parser(name, help=words, description=words.capitalize() + ".")
        one.add_argument("device", choices=DEVICES, help="the device")
    fault = actions.add_parser("fault", help="switch a fault of a simulated device",
                               description="Switch fault NAME to VALUE (a probability, a"
                               " delay in seconds, true/false for silent; 0 or false: off),"
                               " or without VALUE put the one-shot fault on its next"
                               " message.")
    fault.add_argument("device", choices=DEVICES, help="the device")
    fault.add_argument("name", metavar="NAME", help="silent, delay, corrupt, drop, duplicate,"
                       " garbage, repeat or drop_incoming")
    fault.add_argument("value", nargs="?", metavar="VALUE", help="the fault's value (none:"
                       " once, on the next message)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Send the action to the bench; print its answer."""
    base = args.url if args.url is not None else _url_of(args.table_config)
    path, body = _request(args)
    answer = _call(base, path, body)
    if args.json or args.action == "state":
        print(json.dumps(answer, separators=(",", ":"), ensure_ascii=False))
    else:
        print(answer.get("done", "done"))
    return 0


def _url_of(config_path: Path) -> str:
    """The bench's address from the table config's [bench] (read alone: the daemon that
    serves the bench has checked the rest)."""
    from controller.bench_config import parse_bench  # noqa: PLC0415
    from runtime.settings_files import load_toml  # noqa: PLC0415

    data = load_toml(config_path)
    bench = parse_bench(data.get("bench"), source=str(config_path), simulated=True)
    if not bench.enabled:
        raise CommandUnavailable(f"{config_path}: no bench: [bench] enabled = true is not set"
                                 " (docs/operations/bench.md)")
    if bench.port == 0:
        raise CommandUnavailable(f"{config_path}: bench.port = 0 (any free port): give the"
                                 " address the daemon logged (`bench serving url=...`) with"
                                 " --bench-url")
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1"}  # noqa: S104 (reached on this machine)
    host = wildcard.get(bench.bind, bench.bind)
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{bench.port}/"


def _request(args: argparse.Namespace) -> tuple[str, dict[str, Any] | None]:
    """The API path and JSON body of the action (None: a GET)."""
    action = args.action
    if action == "state":
        return "api/state", None
    if action == "deal":
        return "api/shoe/deal", {} if args.card is None else {"card": args.card}
    if action == "place":
        return "api/chips/place", {"seat": args.seat, "spot": args.spot,
                                   "cents": _cents(args.amount), "from": args.source}
    if action == "take":
        body: dict[str, Any] = {"seat": args.seat, "spot": args.spot}
        if args.amount is not None:
            body["cents"] = _cents(args.amount)
        return "api/chips/take", body
    if action == "tap":
        return "api/ids/tap", {"number": args.number, "form": args.form}
    if action == "shoe-state":
        return "api/shoe/state", {"state": args.state}
    if action == "power-cycle":
        return "api/shoe/power", {}
    if action == "unknown-chip":
        return "api/chips/unknown", {"seat": args.seat, "spot": args.spot, "count": args.count}
    if action in ("unplug", "plug"):
        return f"api/{args.device}/{action}", {}
    body = {"name": args.name}
    if args.value is not None:
        body["value"] = _value(args.value)
    return f"api/{args.device}/fault", body


def _cents(text: str) -> int:
    try:
        return parse_amount(text)
    except InvalidAmount as exc:
        raise CommandError(f"AMOUNT: {exc}") from None


def _value(text: str) -> float | bool:
    lowered = text.strip().lower()
    if lowered in ("true", "on", "yes"):
        return True
    if lowered in ("false", "off", "no"):
        return False
    try:
        return float(text)
    except ValueError:
        raise CommandError(f"VALUE {text!r}: a number (a probability, seconds of delay) or"
                           " true/false") from None


def _call(base: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
    """One request to the bench: its JSON answer; a refusal is CommandRefused (exit 3), no
    answer CommandUnavailable (exit 69)."""
    if not base.startswith(("http://", "https://")):
        raise CommandError(f"--bench-url {base}: the bench's address, e.g."
                           " http://127.0.0.1:8091/")
    url = base.rstrip("/") + "/" + path
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 (http or https, checked above)
        url, data=data, method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:  # noqa: S310
            return _json(response.read(), url)
    except urllib.error.HTTPError as exc:
        answer = _json(exc.read(), url)
        raise CommandRefused(f"refused: {answer.get('error') or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CommandUnavailable(f"no bench answers at {base}: {reason} (is the table daemon"
                                 " running with [bench] enabled?)") from None
    except ValueError as exc:  # an address that is not a URL
        raise CommandError(f"--bench-url {base}: {exc}") from None


def _json(raw: bytes, url: str) -> dict[str, Any]:
    try:
        answer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CommandUnavailable(f"{url} did not answer as the bench does (not JSON): is it"
                                 " the bench's address?") from None
    if not isinstance(answer, dict):
        raise CommandUnavailable(f"{url} did not answer as the bench does")
    return answer
