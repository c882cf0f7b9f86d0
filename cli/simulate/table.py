"""`showdown simulate table --config FILE`: one table daemon in simulator mode for a
technician, to rehearse a table before it goes live or reproduce a reported problem.

The real daemon (controller.wiring) with the real shoe driver on a simulated shoe (a pty),
the real chip reader driver on the simulated reader (a pyusb backend), its journal and its
broker (embedded, or the one given), played by the virtual dealer and desk with the deck,
the players' scripts and the faults the config and the command line name
(docs/simulate-table.md). At the end: a report of the hands, every fault and the alert the
table raised for it, how it was put right, and anything unexpected (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from controller.app import TableDaemon
from controller.config import TableConfig, read_table_config
from controller.wiring import (
    DaemonHandle,
    WiredTable,
    desk_sender,
    prepare_sim,
    virtual_desk_task,
    wire_table,
)
from floor.rehearsal_config import (
    DECK_CHOICES,
    SimTableConfig,
    read_sim_table,
)
from game.errors import ConfigError
from runtime.errors import Unavailable
from simulators.decks import DeckSource
from simulators.players import PlayerStyle, VirtualPlayer
from simulators.rehearsal import RehearsalTable, rehearsal_registry
from simulators.rehearsal_report import RunReport, TableMessage
from simulators.scripted_play import Decks, ScriptedDeck, ScriptedPlayer, SeatPlayer
from simulators.table_faults import FaultSchedule
from simulators.table_toml import simulated_table_toml

__all__ = ["register_table", "rehearse_table", "run_table_rehearsal"]

_SOCKET_ROOM = 100  # a Unix socket path has ~107 bytes


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
        FaultSchedule.parse(cfg.faults, seed=seed)  # refused before anything starts
    except ValueError as exc:
        raise CommandError(f"--fault: {exc}") from None
    configure_logging(fmt="console", level=cfg.log_level, table=cfg.table)
    report = asyncio.run(rehearse_table(cfg, seed=seed, duration=args.duration,
                                        announce=print))
    if report is None:
        return 0
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        print("\n".join(report.lines()))
    return 1 if report.problems else 0


def _broker_answers(cfg: SimTableConfig) -> None:
    """A given broker must answer now (exit 69), not after the desk's two minutes of tries."""
    if cfg.broker == "embedded":
        return
    host, _, port = cfg.broker.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as exc:
        where = ("--broker", "") if cfg.source == "(defaults)" else (cfg.source, "run.broker")
        raise Unavailable(*where, f"no MQTT broker answers on {cfg.broker}"
                          f" ({exc.strerror or exc})") from exc


def _table_config(cfg: SimTableConfig, seed: int) -> TableConfig:
    """Write the daemon's table config into the run's directory and read it back."""
    directory = cfg.directory or Path(tempfile.mkdtemp(prefix="showdown-simtable-"))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--dir: cannot use {directory}: {exc.strerror or exc}") from None
    api = directory.resolve() / "console.sock"
    if len(str(api)) > _SOCKET_ROOM:
        api = Path(tempfile.mkdtemp(prefix="sd-", dir="/tmp")) / "console.sock"
    for name in ("tournament", "paytables"):
        path: Path = getattr(cfg, name)
        if not path.is_file():
            raise ConfigError(cfg.source, f"table.{name}", f"no such file {path}")
    text = simulated_table_toml(
        venue=cfg.venue, table=cfg.table, broker=cfg.broker, tournament=cfg.tournament.resolve(),
        paytables=cfg.paytables.resolve(), socket=api, seed=seed, players=cfg.players,
        stage=cfg.stage, heats=cfg.heats, hand_pause=cfg.pause,
        virtual_dealer=cfg.virtual_dealer, log_level=cfg.log_level,
        acknowledge_with=cfg.acknowledge_with, stall_seconds=cfg.stall_seconds)
    path = directory / "table.toml"
    path.write_text(text, encoding="utf-8")
    return read_table_config(path)


async def rehearse_table(cfg: SimTableConfig, *, seed: int, duration: float | None = None,
                         announce: Callable[[str], None] | None = None) -> RunReport | None:
    """Run one rehearsal: the report, or None without a virtual dealer (``duration``: how
    long the desk-only table runs; ``announce``: where the opening line goes)."""
    try:
        schedule = FaultSchedule.parse(cfg.faults, seed=seed)
    except ValueError as exc:
        raise CommandError(f"--fault: {exc}") from None
    _broker_answers(cfg)
    table_config = _table_config(cfg, seed)
    if announce is not None:
        announce(f"simulate table: {cfg.venue}/{cfg.table} in {table_config.journal.parent};"
                 f" seed {seed}; deck {cfg.deck}; faults: {', '.join(cfg.faults) or 'none'}")
    desk_keys, desk = prepare_sim(table_config)
    wired = wire_table(table_config, extra_desk_keys=desk_keys, registry=rehearsal_registry())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    out: list[RunReport] = []

    async def rehearse(daemon: TableDaemon) -> None:
        try:
            table = _rehearsal(cfg, wired, desk_sender(daemon, desk), schedule, seed)
            out.append(await table.rehearse())
        except Exception as exc:  # the report says so; the daemon stops cleanly
            report = RunReport(seed=seed, deck=cfg.deck)
            report.stopped = f"{type(exc).__name__}: {exc}"
            out.append(report)
        finally:
            stop.set()

    async def desk_only(daemon: TableDaemon) -> None:
        def ready(line: str) -> None:
            print(f"the virtual desk has seated the heat: {line}; deal on the console"
                  f" (http://127.0.0.1:{daemon.console_port}/); Ctrl-C stops", flush=True)

        await virtual_desk_task(wired, desk, on_ready=ready)(daemon)
        if duration is not None:
            await asyncio.sleep(duration)
            stop.set()

    async def error_state() -> None:  # a damaged journal in a reused --dir: no extra runs
        await wired.daemon.ready.wait()
        if wired.daemon.faults:
            stop.set()

    watch = asyncio.create_task(error_state())
    try:
        await wired.daemon.run(stop, extra=rehearse if cfg.virtual_dealer else desk_only)
    finally:
        watch.cancel()
    if wired.daemon.faults:
        raise CommandError(f"the table's journal is in the error state"
                           f" ({'; '.join(wired.daemon.faults)}): use a fresh --dir, or"
                           " `showdown journal replace` (docs/journal.md)")
    return out[0] if out else None


def _rehearsal(cfg: SimTableConfig, wired: WiredTable, send: Any, schedule: FaultSchedule,
               seed: int) -> RehearsalTable:
    devices = wired.devices
    if devices.shoe_sim is None or devices.rfid_sim is None:
        raise CommandError("the table's shoe and chip reader are not simulators")
    daemon = wired.daemon
    rng = random.Random(seed)
    decks: Decks = DeckSource("shuffled" if cfg.deck in ("random", "scripted") else
                              cfg.deck, rng=rng, seed=seed)  # type: ignore[arg-type]
    if cfg.deck == "scripted":
        decks = ScriptedDeck(cfg.deck_hands, rng=random.Random(f"{seed}:script"), after=decks)

    def player_for(seat: int) -> SeatPlayer:
        conf = cfg.seats.get(seat)
        style = conf.style if conf else "random"
        bold = seat % 2 == 0 if style == "random" else style == "bold"
        patron = VirtualPlayer(name=f"player {seat}", rng=random.Random(f"{seed}:{seat}"),
                               style=PlayerStyle(bold=bold))
        if conf is None or not conf.hands:
            return patron
        return ScriptedPlayer(seat=seat, script=conf.hands, after=patron)

    def messages(after: int) -> list[TableMessage]:
        journal = daemon.journal
        if journal is None:
            return []
        return [TableMessage.of(m.seq, m.type, m.body) for m in journal.messages(after + 1)
                if m.type in ("alert", "device")]

    return RehearsalTable(DaemonHandle(daemon), shoe=devices.shoe_sim, chips=devices.rfid_sim,
                          ids=devices.id_simulator, desk=send, seed=seed, stage=cfg.stage,
                          players=cfg.players, heats=cfg.heats, hand_pause=cfg.pause,
                          timeout=cfg.timeout, overpay_fix=cfg.overpay_fix, decks=decks,
                          player_for=player_for, schedule=schedule, messages=messages,
                          hands=cfg.hands, deck_label=_deck_label(cfg, seed),
                          unshuffled=None if cfg.deck in ("random", "scripted") else cfg.deck)


def _deck_label(cfg: SimTableConfig, seed: int) -> str:
    if cfg.deck == "scripted":
        return f"scripted ({len(cfg.deck_hands)} hands), then random with seed {seed}"
    if cfg.deck == "random":
        return f"random, seed {seed}"
    return f"{cfg.deck} (an unshuffled deck)"
