"""`showdown simulate <device>`: run a device simulator standalone, for technicians and demos.

`simulate shoe` opens a pseudo-terminal, prints its path (attach a terminal program or the
daemon to it) and deals on a timer or when Enter is pressed; typed commands change its state
and faults while it runs (type ``help``). Each device is one ``_register_<device>`` function
below, listed in DEVICES.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final, TextIO

from cli.errors import CommandError
from cli.simulate import floor as simulate_floor
from cli.simulate.table import register_table
from controller.chip_registry_files import read_registry
from drivers.readings import DeviceAlert, ShoeState, SpotId
from drivers.rfid import UsbChipReader
from drivers.rfid_messages import AntennaFaultCode
from game.chips.registry import format_uid
from game.errors import GameError
from game.money import format_rand, parse_amount
from game.poker.cards import format_cards, parse_cards
from simulators.faults import FAULT_NAMES, Faults
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator, ShoeSimulatorError

__all__ = ["RFID_HELP", "SHOE_HELP", "register", "rfid_command", "run_rfid", "run_shoe",
           "shoe_command"]


def register(sub: Any) -> None:
    """Add the `simulate` command and one subcommand per simulated device."""
    p: argparse.ArgumentParser = sub.add_parser(
        "simulate", help="run a device simulator (card shoe, chip RFID reader) or a whole"
        " simulated table with faults, for technicians",
        description="Run a simulated device that the real drivers can attach to.",
    )
    devices = p.add_subparsers(dest="device", metavar="DEVICE", required=True)
    for register_device in DEVICES:
        register_device(devices)


def _register_shoe(devices: Any) -> None:
    p: argparse.ArgumentParser = devices.add_parser(
        "shoe", help="a card shoe on a pseudo-terminal",
        description="Simulate a card shoe on a pseudo-terminal and print its path. Deals one"
        " card per Enter (or every --interval seconds); type `help` for commands.",
    )
    p.add_argument("--seed", type=int, default=None,
                   help="shuffle seed (printed; random if not given)")
    p.add_argument("--cards", default=None,
                   help='deal exactly these cards in order, e.g. "Ah Kd 5s" (default: shuffle)')
    p.add_argument("--decks", type=int, default=1, help="decks in a shuffled shoe (default 1)")
    p.add_argument("--interval", type=float, default=None,
                   help="deal one card every S seconds (default: on Enter)")
    p.add_argument("--faults", default="",
                   help=f"faults to switch on, e.g. \"corrupt=0.05,drop=0.1,silent\" "
                   f"({', '.join(FAULT_NAMES)})")
    p.add_argument("--link", default=None,
                   help="also keep a stable symlink here pointing at the pty (like by-id)")
    p.add_argument("--serial", default="SIM-000001", help="the shoe's serial number")
    p.add_argument("--heartbeat", type=float, default=1.0,
                   help="heartbeat interval in seconds (default 1.0)")
    p.add_argument("--duration", type=float, default=None,
                   help="stop after S seconds (default: run until `quit` or Ctrl-C)")
    p.set_defaults(handler=run_shoe)


def _register_rfid(devices: Any) -> None:
    p: argparse.ArgumentParser = devices.add_parser(
        "rfid", help="the chip RFID reader, driven by the real USB driver",
        description="Simulate the chip spot reader as a pyusb backend and run the real driver"
        " against it in this process; print what the driver sees. Type `help` for commands.",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for faults and minted chips")
    p.add_argument("--faults", default="",
                   help=f"faults to switch on, e.g. \"corrupt=0.05,drop=0.1\" "
                   f"({', '.join(FAULT_NAMES)})")
    p.add_argument("--registry", type=Path, default=None,
                   help="a chip registry (.csv/.toml) instead of the simulator's own chips")
    p.add_argument("--chip-set", default=None, help="the chip set in play (with --registry)")
    p.add_argument("--entries", default="",
                   help='seat -> entry ids for --registry, e.g. "1=E-17,2=E-4"')
    p.add_argument("--serial", default="SIM-SR48-0001", help="the reader's serial number")
    p.add_argument("--bulk", action="store_true", help="a bulk IN endpoint, not interrupt")
    p.add_argument("--script", type=Path, default=None,
                   help="run these commands (one per line, `sleep S` allowed), then stop")
    p.add_argument("--duration", type=float, default=None,
                   help="stop after S seconds (default: run until `quit` or Ctrl-C)")
    p.set_defaults(handler=run_rfid)


# Devices `simulate` offers.
DEVICES: Final[tuple[Callable[[Any], None], ...]] = (_register_shoe, _register_rfid,
                                                     register_table,
                                                     simulate_floor.register)

SHOE_HELP: Final = """commands (Enter alone deals one card):
  deal [N]              deal N cards (default 1)
  card CARD             deal this exact card (e.g. a second Ah: a genuine duplicate)
  unreadable            the next card leaves unread
  status STATE          ready | cover_open | jam | empty | unreadable_card
  load [CARDS]          load a new shoe (a fresh shuffle, or these cards)
  resend INDEX          the shoe reports read INDEX again (a card read twice)
  faults SPEC           set faults, e.g. "drop=0.2 silent=off" (`faults` alone shows them)
  clear                 every fault off
  unplug | plug         disconnect / reconnect the pty (the path may change)
  replug                re-enumerate: a new pty (new path) appears before the old one closes
  power                 power cycle (new session, unacknowledged reads lost)
  info                  where the shoe stands
  quit"""


def run_shoe(args: argparse.Namespace) -> int:
    """Run the shoe simulator until quit, end of --duration or Ctrl-C."""
    if args.decks < 1:
        raise CommandError(f"--decks {args.decks} must be at least 1")
    if args.interval is not None and args.interval <= 0:
        raise CommandError(f"--interval {args.interval} must be positive")
    if args.heartbeat <= 0:
        raise CommandError(f"--heartbeat {args.heartbeat} must be positive")
    try:
        faults = Faults.parse(args.faults, seed=args.seed)
    except ValueError as exc:
        raise CommandError(f"--faults: {exc}") from exc
    cards = parse_cards(args.cards, distinct=False) if args.cards else None
    sim = ShoeSimulator(seed=args.seed, cards=cards, decks=args.decks, faults=faults,
                        serial=args.serial, heartbeat_interval=args.heartbeat,
                        link_path=args.link)
    with sim:
        print(f"shoe simulator on {sim.path}"
              + (f" (link {args.link})" if args.link else "")
              + f"  seed {sim.seed}  serial {sim.serial}  session {sim.session_id:08x}")
        print("Enter deals one card; type `help` for commands, `quit` to stop.", flush=True)
        _serve(sim, args.interval, args.duration, sys.stdin, sys.stdout)
    return 0


def _serve(sim: ShoeSimulator, interval: float | None, duration: float | None,
           stdin: TextIO, out: TextIO) -> None:
    start = time.monotonic()
    next_deal = start + interval if interval is not None else None
    fd: int | None = stdin.fileno()
    pending = b""
    while True:
        now = time.monotonic()
        if duration is not None and now - start >= duration:
            return
        if next_deal is not None and now >= next_deal:
            next_deal += interval or 0.0
            print(shoe_command(sim, "deal"), file=out, flush=True)
        waits = [0.5]
        if next_deal is not None:
            waits.append(next_deal - now)
        if duration is not None:
            waits.append(start + duration - now)
        timeout = max(0.0, min(waits))
        if fd is None:
            time.sleep(timeout)
            continue
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            continue
        data = os.read(fd, 4096)  # unbuffered, so select() and the data agree
        if not data:  # end of input: keep serving on the timer until Ctrl-C or --duration
            fd = None
        pending += data
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            if line.strip().lower() in ("quit", "exit", "q"):
                return
            print(shoe_command(sim, line), file=out, flush=True)


def shoe_command(sim: ShoeSimulator, line: str) -> str:
    """Carry out one typed console command on the simulator; the reply to print."""
    words = line.split()
    verb, rest = (words[0].lower(), words[1:]) if words else ("deal", [])
    try:
        return _shoe_verb(sim, verb, rest)
    except (ShoeSimulatorError, GameError, ValueError) as exc:
        return f"! {exc}"


def _shoe_verb(sim: ShoeSimulator, verb: str, rest: list[str]) -> str:
    if verb == "deal":
        dealt = sim.deal(int(rest[0]) if rest else 1)
        start = sim.reads - len(dealt)
        return "\n".join(f"read {start + i}: {card}" for i, card in enumerate(dealt)) or (
            "the shoe is empty (`load` a new shoe)")
    if verb == "card" and len(rest) == 1:
        card = sim.deal_card(rest[0])
        return f"read {sim.reads - 1}: {card}"
    if verb == "unreadable":
        unread = sim.unreadable()
        return f"unreadable card left the shoe ({unread})" if unread else "the shoe is empty"
    if verb == "status" and len(rest) == 1:
        sim.set_state(ShoeState(rest[0].lower()))
        return f"state {sim.state.value}"
    if verb == "load":
        sim.load(" ".join(rest) if rest else None)
        return f"new shoe loaded: {sim.remaining()} cards"
    if verb == "resend" and len(rest) == 1:
        sim.resend_read(int(rest[0]))
        return f"read {rest[0]} sent again"
    if verb == "faults":
        for item in " ".join(rest).replace(",", " ").split():
            name, sep, value = item.partition("=")
            sim.faults.set(name, value if sep else "1")
        return "faults: " + ", ".join(f"{n}={getattr(sim.faults, n)}" for n in FAULT_NAMES)
    if verb == "clear":
        sim.faults.clear()
        return "every fault off"
    if verb == "unplug":
        sim.disconnect()
        return "unplugged"
    if verb == "plug":
        return f"plugged in on {sim.reconnect()}"
    if verb == "replug":
        return f"re-enumerated on {sim.replug()}"
    if verb == "power":
        path = sim.power_cycle()
        return f"power cycled: session {sim.session_id:08x} on {path}"
    if verb == "info":
        return (f"{sim.path or 'unplugged'}  state {sim.state.value}  reads {sim.reads}  "
                f"unacked {sim.unacked()}  left {sim.remaining()}  session {sim.session_id:08x}"
                f"\nlast reads: {format_cards([c for _, c in sim.dealt[-10:]])}")
    if verb in ("help", "?"):
        return SHOE_HELP
    raise ValueError(f"unknown command {' '.join([verb, *rest])!r}; type `help`")


# ----------------------------------------------------------------------------- rfid


RFID_HELP: Final = """commands (SEAT is 1..6; SPOT is one of ante odds play trips_plus pocket_bonus
sweet16 marker):
  place SEAT SPOT AMOUNT    put that amount of the seat's chips on the spot (rand: 25, R137.50)
  remove SEAT SPOT          take every chip off the spot
  unknown SEAT SPOT [N]     put N chips the registry does not know on the spot
  foreign SEAT SPOT [N]     put N chips of another chip set on the spot
  clear                     take every chip off the table
  fault NAME [VALUE]        corrupt/drop/duplicate/garbage/drop_incoming/repeat P, delay S,
                            silent on|off; also: fault unplug | plug | reenumerate | clear
  antenna N CODE            antenna fault: open_circuit short_circuit detuned overflow cleared
  show                      the table as simulated and as the driver sees it, and health
  sleep S                   wait (scripts)
  quit"""


def run_rfid(args: argparse.Namespace) -> int:
    """Run the reader simulator and the real driver until quit, --duration or Ctrl-C."""
    try:
        faults = Faults.parse(args.faults, seed=args.seed)
    except ValueError as exc:
        raise CommandError(f"--faults: {exc}") from exc
    registry = None
    if args.registry is not None:
        # what the reader reads, valued chip by chip: no table issues stacks here
        registry = read_registry(args.registry, chip_set=args.chip_set, require_issued=False)
    entries: dict[int, str] = {}
    for item in args.entries.replace(",", " ").split():
        seat, sep, entry = item.partition("=")
        if not sep or not seat.strip().isdigit() or not entry.strip():
            raise CommandError(f"--entries: {item!r} is not SEAT=ENTRY")
        entries[int(seat)] = entry.strip()
    sim = RfidReaderSimulator(
        registry=registry, seat_entries=entries or None, serial=args.serial,
        in_transfer="bulk" if args.bulk else "interrupt", faults=faults, seed=args.seed,
    )
    lines = None
    if args.script is not None:
        try:
            lines = args.script.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CommandError(f"--script: cannot read {args.script}: {exc.strerror}") from exc
    print(f"RFID reader simulator {sim.model} serial {sim.serial} on USB "
          f"{sim.vendor_id:04x}:{sim.product_id:04x} (pyusb backend, in this process);"
          f" chip set {sim.registry.chip_set}, {len(sim.registry)} chips registered", flush=True)
    asyncio.run(_rfid_console(sim, lines, args.duration, sys.stdout))
    return 0


async def _rfid_console(sim: RfidReaderSimulator, script: list[str] | None,
                        duration: float | None, out: TextIO) -> None:
    view: dict[SpotId, frozenset[bytes]] = {}
    reader = UsbChipReader(backend=sim.backend)
    async with reader:
        printer = asyncio.create_task(_rfid_print(reader, sim, view, out))
        try:
            lines = _script_lines(script) if script is not None else _stdin_lines()
            commands = asyncio.create_task(_rfid_commands(lines, sim, reader, view, out))
            done, _ = await asyncio.wait(
                {commands, printer}, timeout=duration, return_when=asyncio.FIRST_COMPLETED
            )
            if commands in done:
                await asyncio.sleep(1.0)  # let the driver report the last changes
            print(_rfid_show(sim, reader, view), file=out, flush=True)
            commands.cancel()
        finally:
            printer.cancel()


async def _script_lines(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def _stdin_lines() -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:  # a daemon thread: a blocked readline never holds up the exit
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="rfid-console-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


async def _rfid_commands(lines: AsyncIterator[str], sim: RfidReaderSimulator,
                         reader: UsbChipReader, view: dict[SpotId, frozenset[bytes]],
                         out: TextIO) -> None:
    async for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0].lower() in ("quit", "exit", "q"):
            return
        if words[0].lower() == "sleep" and len(words) == 2:
            try:
                await asyncio.sleep(float(words[1]))
            except ValueError:
                print(f"! sleep needs seconds, got {words[1]!r}", file=out, flush=True)
            continue
        if words[0].lower() == "show":
            print(_rfid_show(sim, reader, view), file=out, flush=True)
            continue
        print(rfid_command(sim, line), file=out, flush=True)


def rfid_command(sim: RfidReaderSimulator, line: str) -> str:
    """Carry out one typed console command on the reader simulator; the reply to print."""
    words = line.split()
    verb, rest = (words[0].lower(), words[1:]) if words else ("help", [])
    try:
        return _rfid_verb(sim, verb, rest)
    except (GameError, ValueError) as exc:
        return f"! {exc}"


def _rfid_spot(rest: list[str]) -> tuple[int, str]:
    if len(rest) < 2 or not rest[0].isdigit():
        raise ValueError("expected SEAT SPOT, e.g. `1 ante`")
    return int(rest[0]), rest[1].lower()


def _rfid_verb(sim: RfidReaderSimulator, verb: str, rest: list[str]) -> str:
    if verb == "place" and len(rest) == 3:
        seat, spot = _rfid_spot(rest)
        cents = parse_amount(rest[2])
        uids = sim.place(seat, spot, cents)
        return f"placed {len(uids)} chip(s), {format_rand(cents)}, on seat {seat} {spot}"
    if verb == "remove" and len(rest) == 2:
        seat, spot = _rfid_spot(rest)
        return f"took {len(sim.remove(seat, spot))} chip(s) off seat {seat} {spot}"
    if verb in ("unknown", "foreign") and len(rest) in (2, 3):
        seat, spot = _rfid_spot(rest)
        count = int(rest[2]) if len(rest) == 3 else 1
        place = sim.place_unknown if verb == "unknown" else sim.place_foreign
        uids = place(seat, spot, count)
        return f"put {verb} chip(s) {' '.join(format_uid(u) for u in uids)} on seat {seat} {spot}"
    if verb == "clear" and not rest:
        sim.clear()
        return "every chip taken off the table"
    if verb == "fault" and rest:
        return _rfid_fault(sim, rest[0].lower(), rest[1:])
    if verb == "antenna" and len(rest) == 2 and rest[0].isdigit():
        if rest[1].upper() not in AntennaFaultCode.__members__:
            raise ValueError(f"antenna fault codes: {', '.join(AntennaFaultCode.__members__)}")
        code = AntennaFaultCode[rest[1].upper()]
        sim.antenna_fault(int(rest[0]), code)
        return f"antenna {rest[0]}: {code.name.lower()}"
    if verb in ("help", "?"):
        return RFID_HELP
    raise ValueError(f"unknown command {' '.join([verb, *rest])!r}; type `help`")


def _rfid_fault(sim: RfidReaderSimulator, name: str, rest: list[str]) -> str:
    if name == "unplug":
        sim.unplug()
        return "unplugged: the reader left the bus"
    if name == "plug":
        sim.plug()
        return f"plugged in at address {sim.address}"
    if name == "reenumerate":
        sim.reenumerate()
        return f"re-enumerated at address {sim.address}"
    if name == "clear":
        sim.faults.clear()
        return "every fault off"
    sim.faults.set(name, rest[0] if rest else "1")
    return "faults: " + ", ".join(f"{n}={getattr(sim.faults, n)}" for n in FAULT_NAMES)


async def _rfid_print(reader: UsbChipReader, sim: RfidReaderSimulator,
                      view: dict[SpotId, frozenset[bytes]], out: TextIO) -> None:
    async for item in reader:
        if isinstance(item, DeviceAlert):
            print(f"! {item.kind}: {item.detail}", file=out, flush=True)
            continue
        before = view.get(item.spot, frozenset())
        view[item.spot] = item.uids
        if item.uids == before:
            continue  # the first report of each spot after a (re)connection, unchanged
        entry = sim.seat_entries.get(item.spot.seat)
        total, problems = sim.registry.resolve(item.uids, entry=entry, spot=item.spot)
        print(f"seat {item.spot.seat} {item.spot.spot}: {len(item.uids)} chip(s), "
              f"{format_rand(total)} counts (report {item.report_seq})", file=out, flush=True)
        for problem in problems:
            print(f"  ! {problem.kind}: {problem.detail}", file=out, flush=True)


def _rfid_show(sim: RfidReaderSimulator, reader: UsbChipReader,
               view: dict[SpotId, frozenset[bytes]]) -> str:
    rows = []
    for spot, uids in sorted(sim.table().items(), key=lambda kv: (kv[0].seat, kv[0].spot)):
        seen = view.get(spot)
        agree = "driver agrees" if seen == uids else "driver differs"
        value = sim.registry.resolve(uids, entry=sim.seat_entries.get(spot.seat)).total_cents
        rows.append(f"  seat {spot.seat} {spot.spot}: {len(uids)} chip(s) {format_rand(value)}"
                    f"  ({agree})")
    health = reader.health()
    counters = " ".join(f"{k}={v}" for k, v in health.counters.items() if v)
    state = "connected" if health.connected else "NOT connected"
    return "\n".join(["table:", *(rows or ["  no chips"]), f"reader {health.device}: {state}",
                      f"  {counters}"])
