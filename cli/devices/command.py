"""`showdown devices`: the device adapters installed, the conformance kit, the recorder.

- ``list``: every installed adapter per role (name, summary, the distribution that registers
  it), found through the entry points of `drivers.registry`.
- ``check --driver NAME``: run the driver through the conformance suite of its role against
  its simulator (or, with ``--capture FILE``, replay a recorded device through it) and print
  a table of checks; exit 0 when every check passed (SKIP and LIMIT allowed), 1 when one failed.
- ``record --driver NAME --config TABLE.toml --out FILE``: run the driver on the real device
  through a transparent relay and write both directions of the traffic, timestamped, with
  what the driver read, to a capture file for the vendor and for ``check --capture``.

docs/operations/devices.md is the technician's page.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any, Final

from drivers.adapter import ROLES, Role

__all__ = ["EXIT_NOT_CONFORMING", "register", "run_check", "run_list", "run_record"]

EXIT_NOT_CONFORMING: Final = 1  # a check failed
DEFAULT_TIMEOUT: Final = 5.0


def register(sub: Any) -> None:
    """Add the `devices` command and its actions."""
    p: argparse.ArgumentParser = sub.add_parser(
        "devices",
        help="device drivers: list the installed ones, check one against the conformance"
             " kit, record a device's traffic",
        description="The device adapters (card shoe, chip reader, ID reader) installed, the"
                    " conformance kit that checks a driver against its simulator or a"
                    " recorded capture, and the recorder (docs/operations/devices.md).",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    ls = actions.add_parser("list", help="the installed device adapters, by role",
                            description="Every adapter registered by entry point, per role:"
                                        " its name (what [ROLE] driver = names), its summary"
                                        " and the distribution that installed it.")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    ls.set_defaults(handler=run_list)

    c = actions.add_parser(
        "check", help="run a driver through the conformance kit (exit 1 if a check fails)",
        description="Run the driver through its role's conformance suite against its"
                    " simulator: connect, unplug and reconnect, stall, garbage on the line,"
                    " full sweeps, a moved chip, a stack of 20, a deal, taps, and the"
                    " timings. With --capture, replay a recorded device through it instead."
                    " Exit 0 when every check passed (SKIP and LIMIT allowed), 1 when one failed.")
    _driver_args(c)
    c.add_argument("--config", type=Path, metavar="FILE",
                   help="a table config whose [ROLE] section gives the driver's keys"
                        " (default: the driver's own defaults)")
    c.add_argument("--spots", type=_positive, metavar="N",
                   help="chip readers: check the first N spots only (default: every spot"
                        " the simulator covers)")
    c.add_argument("--capture", type=Path, metavar="FILE",
                   help="replay this capture (`showdown devices record`) through the driver"
                        " instead of running its simulator")
    c.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"the longest any one step may take (default {DEFAULT_TIMEOUT:g})")
    c.add_argument("--sim-speed", type=_speed, default=1.0, metavar="X",
                   help="run a simulator that models its device's timing X times faster"
                        " (default 1: the timings are the device's)")
    c.add_argument("--json", action="store_true", help="print JSON instead of the table")
    c.set_defaults(handler=run_check)

    r = actions.add_parser(
        "record", help="record a real device's traffic to a capture file",
        description="Run the driver on the device of the config through a transparent relay"
                    " (a pseudo-terminal for a serial device, a local port for a TCP one),"
                    " writing both directions, timestamped, and what the driver read to a"
                    " capture file (JSON lines) for the vendor or `devices check --capture`."
                    " USB devices driven through pyusb cannot be recorded this way.")
    _driver_args(r)
    r.add_argument("--config", type=Path, required=True, metavar="FILE",
                   help="the table config whose [ROLE] section names the device")
    r.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="the capture file to write")
    r.add_argument("--seconds", type=_seconds, default=60.0, metavar="S",
                   help="how long to record (default 60; Ctrl-C ends it sooner)")
    r.add_argument("--baudrate", type=_positive, metavar="N",
                   help="the serial device's speed (default: the section's baudrate key,"
                        " else 115200)")
    r.add_argument("--port-key", metavar="KEY",
                   help="record only the device at this key of the section (url,"
                        " readers[2].host); by default every device the section names")
    r.add_argument("--tcp-port", type=_positive, default=10001, metavar="N",
                   help="the TCP port of a device given by host without port (default"
                        " 10001, the QuasarMX's)")
    r.set_defaults(handler=run_record)


def _driver_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--driver", required=True, metavar="NAME",
                   help="the driver's name, as `devices list` shows it")
    p.add_argument("--role", choices=ROLES,
                   help="the driver's role, when drivers of that name exist for several")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("must be more than 0 and at most a day")
    return value


def _quiet() -> None:
    """The drivers' own log lines stay out of the table and the JSON: what they alert, the
    kit reports in its rows."""
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level="critical")


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.1 <= value <= 100:
        raise argparse.ArgumentTypeError("must be 0.1..100")
    return value


def run_list(args: argparse.Namespace) -> int:
    """Print the installed adapters per role."""
    import json  # noqa: PLC0415

    from drivers.registry import DriverLookupError, find_adapter, installed  # noqa: PLC0415

    found: list[dict[str, str]] = []
    for role in ROLES:
        for point in installed(role):
            try:
                summary = find_adapter(role, point.name).summary
            except DriverLookupError as exc:  # listed all the same, with why it is unusable
                summary = f"(unusable: {exc})"
            found.append({"role": role, "name": point.name, "summary": summary,
                          "distribution": point.distribution, "target": point.target})
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for role in ROLES:
        mine = [f for f in found if f["role"] == role]
        print(f"[{role}]" + ("" if mine else "  (none installed)"))
        width = max((len(f["name"]) for f in mine), default=0)
        for f in mine:
            print(f"  {f['name']:{width}}  {f['summary']}  ({f['distribution']})")
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Run the conformance kit; print the table (or JSON); 0 if the driver conforms."""
    from cli.devices.kit import check_on_simulator, choose  # noqa: PLC0415

    _quiet()
    role: Role | None = args.role
    if args.capture is not None:
        from cli.devices.replay import check_capture, read_capture  # noqa: PLC0415

        capture = read_capture(args.capture)
        chosen = choose(args.driver, role or capture.role, args.config, kind="hardware",
                        options=None if args.config is not None else capture.options,
                        source=str(args.capture))
        report = asyncio.run(check_capture(chosen, capture, source=args.capture,
                                           timeout=args.timeout))
    else:
        chosen = choose(args.driver, role, args.config)
        report = asyncio.run(check_on_simulator(chosen, timeout=args.timeout,
                                                spots=args.spots, sim_speed=args.sim_speed))
    print(report.json() if args.json else report.table())
    return 0 if report.passed else EXIT_NOT_CONFORMING


def run_record(args: argparse.Namespace) -> int:
    """Record the device's traffic through a relay while the driver runs on it."""
    from cli.devices.kit import choose  # noqa: PLC0415
    from cli.devices.record import record  # noqa: PLC0415

    _quiet()
    chosen = choose(args.driver, args.role, args.config, kind="hardware")
    summary = asyncio.run(record(chosen, out=args.out, seconds=args.seconds,
                                 port_key=args.port_key, baudrate=args.baudrate,
                                 tcp_port=args.tcp_port))
    print(summary)
    return 0
