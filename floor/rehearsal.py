"""The rehearsal of one table (`showdown simulate table --config FILE`), the floor's third
composition beside the demo's tournament (floor.tournament) and the load floor (floor.run):
one table daemon in simulator mode, for a technician to rehearse a table before it goes live
or reproduce a reported problem (docs/simulate-table.md).

The real daemon (controller.wiring, on the machine's own clock: a rehearsal runs on the table
PC it rehearses) with the real shoe driver on a simulated shoe (a pty), the real chip reader
driver on the simulated reader (a pyusb backend), its journal and its broker (embedded, or
the one given), played by the virtual dealer (simulators.rehearsal) and the table's virtual
desk (controller.wiring: the desk `showdown table run` starts when `[sim]` names it) with the
deck, the players' scripts and the faults the plan names (floor.plan.RehearsalPlan, made from
floor.rehearsal_config). At the end: a report of the hands, every fault and the alert the
table raised for it, how it was put right, and anything unexpected
(simulators.rehearsal_report). Without the virtual dealer, the virtual desk seats a heat and
a person deals on the console.

It runs on a table PC's install: nothing here imports the central service or an extra.
"""

from __future__ import annotations

import asyncio
import random
import signal
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from controller.app import TableDaemon
from controller.config import TableConfig, read_table_config
from controller.wiring import (
    DaemonHandle,
    WiredTable,
    desk_sender,
    desk_signer,
    virtual_desk_task,
    wire_table,
)
from floor.plan import RehearsalPlan
from floor.rehearsal_config import SimTableConfig
from game.errors import ConfigError
from runtime.errors import Unavailable
from simulators.decks import DeckSource
from simulators.players import PlayerStyle, VirtualPlayer
from simulators.rehearsal import RehearsalTable, rehearsal_registry
from simulators.rehearsal_report import RunReport, TableMessage
from simulators.scripted_play import Decks, ScriptedDeck, ScriptedPlayer, SeatPlayer
from simulators.table_faults import FaultSchedule
from simulators.table_toml import desk_key_file, simulated_table_toml, table_key_file

__all__ = ["RehearsalError", "fault_schedule", "rehearse_table"]

_SOCKET_ROOM: Final = 100  # a Unix socket path has ~107 bytes


class RehearsalError(Exception):
    """The rehearsal cannot run as asked (a bad fault, an unusable directory, a journal in
    the error state); the message says what to change."""


def fault_schedule(cfg: SimTableConfig, seed: int) -> FaultSchedule:
    """The faults the config and the command line name, drawn with `seed` (RehearsalError
    naming the bad one)."""
    try:
        return FaultSchedule.parse(cfg.faults, seed=seed)
    except ValueError as exc:
        raise RehearsalError(f"--fault: {exc}") from None


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


def _plan(cfg: SimTableConfig, seed: int) -> RehearsalPlan:
    """The rehearsal's plan: its directory made (a fresh temporary one unless given)."""
    directory = cfg.directory or Path(tempfile.mkdtemp(prefix="showdown-simtable-"))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RehearsalError(f"--dir: cannot use {directory}: {exc.strerror or exc}") from None
    try:
        return RehearsalPlan.of(cfg, seed=seed, directory=directory)
    except ValueError as exc:
        raise RehearsalError(str(exc)) from None


def _table_config(plan: RehearsalPlan) -> TableConfig:
    """Write the daemon's table config into the run's directory and read it back."""
    cfg = plan.settings
    api = plan.directory.resolve() / "console.sock"
    if len(str(api)) > _SOCKET_ROOM:
        api = Path(tempfile.mkdtemp(prefix="sd-", dir="/tmp")) / "console.sock"
    files = {"tournament": plan.tournament_file, "paytables": plan.paytables_file}
    for name, given in files.items():
        if given is None or not given.is_file():
            raise ConfigError(cfg.source, f"table.{name}", f"no such file {given}")
    assert plan.tournament_file is not None
    assert plan.paytables_file is not None
    # The rehearsal names its virtual desk: it makes the table's key and the desk's (kept in
    # a reused --dir) and enrols the desk's in the config it writes.
    table_key_file(plan.directory, plan.table)
    desk_key, desk_keys = desk_key_file(plan.directory)
    text = simulated_table_toml(
        venue=plan.venue, table=plan.table, broker=plan.broker or "embedded",
        tournament=plan.tournament_file.resolve(), paytables=plan.paytables_file.resolve(),
        socket=api, seed=plan.seed, players=plan.players, stage=cfg.stage, heats=cfg.heats,
        hand_pause=cfg.pause, desk_keys=desk_keys, desk_key=desk_key.name,
        virtual_dealer=cfg.virtual_dealer, log_level=cfg.log_level,
        acknowledge_with=cfg.acknowledge_with, stall_seconds=cfg.stall_seconds)
    path = plan.directory / "table.toml"
    path.write_text(text, encoding="utf-8")
    return read_table_config(path)


async def rehearse_table(cfg: SimTableConfig, *, seed: int, duration: float | None = None,
                         announce: Callable[[str], None] | None = None) -> RunReport | None:
    """Run one rehearsal: the report, or None without a virtual dealer (``duration``: how
    long the desk-only table runs; ``announce``: where the opening line goes)."""
    schedule = fault_schedule(cfg, seed)
    _broker_answers(cfg)
    plan = _plan(cfg, seed)
    table_config = _table_config(plan)
    if announce is not None:
        announce(f"simulate table: {plan.venue}/{plan.table} in {table_config.journal.parent};"
                 f" seed {seed}; deck {cfg.deck}; faults: {', '.join(cfg.faults) or 'none'}")
    desk = desk_signer(table_config)
    wired = wire_table(table_config, registry=rehearsal_registry())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    out: list[RunReport] = []

    async def rehearse(daemon: TableDaemon) -> None:
        try:
            table = _rehearsal(plan, wired, desk_sender(daemon, desk), schedule)
            table.flush_recoveries = daemon.flush_recoveries
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
        raise RehearsalError(f"the table's journal is in the error state"
                             f" ({'; '.join(wired.daemon.faults)}): use a fresh --dir, or"
                             " `showdown journal replace` (docs/journal.md)")
    return out[0] if out else None


def _rehearsal(plan: RehearsalPlan, wired: WiredTable, send: Any,
               schedule: FaultSchedule) -> RehearsalTable:
    """The virtual dealer at the wired table, with the plan's deck, players and faults."""
    cfg, seed = plan.settings, plan.seed
    devices = wired.devices
    if devices.shoe_sim is None or devices.rfid_sim is None:
        raise RehearsalError("the table's shoe and chip reader are not simulators")
    daemon = wired.daemon
    deck_seed = devices.dealer_seed(seed)  # a resumed rehearsal deals new decks (D406)
    rng = random.Random(deck_seed)
    decks: Decks = DeckSource("shuffled" if cfg.deck in ("random", "scripted") else
                              cfg.deck, rng=rng, seed=deck_seed)  # type: ignore[arg-type]
    if cfg.deck == "scripted":
        decks = ScriptedDeck(cfg.deck_hands, rng=random.Random(f"{deck_seed}:script"),
                             after=decks)

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
                          players=plan.players, heats=cfg.heats, hand_pause=cfg.pause,
                          timeout=cfg.timeout, overpay_fix=cfg.overpay_fix, decks=decks,
                          player_for=player_for, schedule=schedule, messages=messages,
                          hands=cfg.hands, deck_label=_deck_label(cfg, deck_seed),
                          unshuffled=None if cfg.deck in ("random", "scripted") else cfg.deck)


def _deck_label(cfg: SimTableConfig, seed: int) -> str:
    if cfg.deck == "scripted":
        return f"scripted ({len(cfg.deck_hands)} hands), then random with seed {seed}"
    if cfg.deck == "random":
        return f"random, seed {seed}"
    return f"{cfg.deck} (an unshuffled deck)"
