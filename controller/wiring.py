"""The table's composition root: the one place that opens the devices the table config names
(``[shoe]``, ``[rfid]``, ``[id_reader]``: the driver chosen by name through its adapter,
`drivers.adapter`, on the real device or on its simulator, or manual entry) and builds the
daemon with them.

For a simulated table it also starts what the config names, and nothing else: the
technician's bench (``[bench]``), the virtual desk with the key ``[sim] desk_key`` names, and
the virtual dealer that plays at the daemon through a `drivers.protocols.TableHandle` and
typed handles to its own simulated devices (decision D317). It never makes or enrols a key.
Only this module, the command line (`cli`) and the simulated floor (`floor`) import
`simulators/`.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.app import TableDaemon, run_table
from controller.chip_registry_files import read_registry
from controller.clock import ClockSource, system_clock
from controller.config import DeviceConfig, TableConfig
from controller.devices import Resume, TableDevices
from controller.printer_config import PrinterConfig
from controller.receipt_printer import EscposPrinter, ReceiptPrinter
from drivers.adapter import DriverContext
from drivers.manual import ManualCardReader
from drivers.manual_chips import ManualChipReader
from drivers.protocols import CardReader, ChipReader, IdReader
from game.chips.registry import ChipRegistry
from game.errors import ConfigError
from game.hand.deal import Target
from game.table.status import StatusView
from game.wagers.house_limits import HouseRules
from runtime.backoff import Backoff
from runtime.errors import one_line
from runtime.logs import get_logger
from runtime.sd_notify import Notifier
from simulators.receipt_printer import SimReceiptPrinter
from simulators.table_stuck import TableStuck
from wire.mqtt import MqttError
from wire.signing import Signer, load_configured_key

if TYPE_CHECKING:  # the simulators are imported where a simulated table uses them
    from simulators.table_play import VirtualTable

__all__ = ["ConfiguredDevices", "DaemonHandle", "SimTiming", "WiredTable", "bench_task",
           "desk_sender", "desk_signer", "run_configured", "shoe_seed", "virtual_desk_task",
           "virtual_table_task", "wire_table"]
SIM_SWEEP_MS = 50  # a simulated chip reader's report interval (a real SR-48: 200 ms)

_DESK_PATIENCE_S = 300.0  # how long the virtual desk keeps trying an unreachable broker
# (a clustered broker that lost a node took 143 s to take connections again on a loaded
# machine: the desk clerk keeps trying through that, as the daemon does)
_SUBSCRIBED_WAIT_S = 3.0  # then it says it is still waiting for the table
_DEALER_SEED = 2026  # a VirtualTable's own default seed
_log = get_logger("showdown.sim")

DealerTask = Callable[[TableDaemon], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimTiming:
    """How a simulated table's chip reader reports: its sweep interval, whether it also sweeps
    at once when chips move (a run at full speed; a real reader only sweeps), and how much
    faster than the real reader a simulator that models its timing runs."""

    sweep_ms: int = SIM_SWEEP_MS
    sweep_on_change: bool = False
    # How many times faster than the real device a simulator that models the device's timing
    # runs (a QuasarMX's sweep: about 1 s for 4 antennas of 20 chips at 1.0).
    speed: float = 1.0


class ConfiguredDevices:
    """The devices the table config names; keeps typed handles to the simulators it starts."""

    def __init__(self, config: TableConfig, *, registry: ChipRegistry | None = None,
                 timing: SimTiming | None = None) -> None:
        self.config = config
        self.registry = registry  # a simulated table's chips other than the built-in ones
        self.timing = timing or SimTiming()
        # The simulators of the devices that are simulated (`drivers.adapter.Simulation`):
        # the virtual dealer deals, places chips and taps cards on them.
        self.shoe_sim: Any = None
        self.rfid_sim: Any = None
        self.id_simulator: Any = None  # tap cards on it (kind = "sim")
        self.registry_in_play: ChipRegistry | None = None  # the registry the readers use
        self.printer_sim: SimReceiptPrinter | None = None  # [printer] kind = "sim"
        self.resume = Resume()  # where the journal left off when the devices were opened

    def chip_registry(self) -> ChipRegistry:
        """The config's chip registry file; a simulated table without one plays built-in chips."""
        rule = self.config.console.require_issued
        if self.config.chips is not None:
            try:
                return read_registry(self.config.chips, chip_set=self.config.chip_set,
                                     require_issued=True if rule is None else rule)
            except ConfigError as exc:
                raise ConfigError(self.config.source, "files.chips", str(exc)) from None
        if self.config.sim is None:
            raise ConfigError(self.config.source, "files.chips",
                              "a table with real chip readers needs its chip registry file")
        from simulators.table_play import play_registry  # noqa: PLC0415

        return (self.registry or play_registry()).requiring(True if rule is None else rule)

    def open(self, stack: AsyncExitStack, registry: ChipRegistry, *,
             resume: Resume | None = None) -> TableDevices:
        """The shoe, the chip readers and the ID reader (if any): each the driver its config
        names (`drivers.adapter`), on the real device or on its simulator, or manual entry.
        A simulator starts where the journal left off (`resume`; None: a new journal)."""
        self.registry_in_play = registry
        self.resume = resume = resume or Resume()
        return TableDevices(shoe=self._shoe(stack, resume),
                            rfid=self._rfid(stack, registry, resume), ids=self._ids(stack))

    def dealer_seed(self, seed: int) -> int:
        """The seed of a virtual dealer's decks at this start: the configured ``seed``
        advanced with the journal, as the simulated shoe's (`shoe_seed`, D406), so a
        restart never deals the decks dealt before it."""
        dealt = shoe_seed(seed, self.resume.position)
        if dealt != seed:
            _log.info("sim_dealer_seeded", sim_seed=seed,
                      journal_position=self.resume.position, dealer_seed=dealt)
        return dealt

    def printer(self) -> ReceiptPrinter | None:
        """The receipt printer ``[printer]`` names (None: none); for kind = "sim", a
        simulated network printer started on 127.0.0.1, printed to by the real driver."""
        cfg = self.config.printer
        if not cfg.enabled:
            return None
        if cfg.kind != "sim":
            return EscposPrinter(cfg)
        self.printer_sim = sim = SimReceiptPrinter(capture=cfg.capture)
        host, port = sim.start()
        return _SimulatedPrinter(cfg, sim, host, port)

    def _context(self, name: str, registry: ChipRegistry | None = None, *,
                 seed: int | None = None) -> DriverContext:
        if seed is None:
            seed = self.config.sim.seed if self.config.sim is not None else 0
        return DriverContext(name=name, registry=registry, seed=seed,
                             sim_sweep_ms=self.timing.sweep_ms,
                             sim_sweep_on_change=self.timing.sweep_on_change,
                             sim_speed=self.timing.speed)

    def _driver(self, cfg: DeviceConfig, role: str, context: DriverContext,
                stack: AsyncExitStack) -> tuple[Any, Any]:
        """The configured driver, and its simulator for a simulated device (else None)."""
        adapter = cfg.adapter
        if adapter is None:  # the config reader always sets it for a device it opens
            raise ConfigError(self.config.source, f"{role}.driver", "no driver")
        if cfg.kind != "sim":
            return adapter.open(cfg.settings, context), None
        simulation = adapter.simulate(cfg.settings, context, stack)
        if simulation is None:
            raise ConfigError(self.config.source, f"{role}.kind",
                              f"the {cfg.driver} driver has no simulator: kind = \"hardware\"")
        return simulation.device, simulation.simulator

    def _shoe(self, stack: AsyncExitStack, resume: Resume) -> CardReader:
        cfg = self.config.shoe
        if cfg.kind == "manual":
            return ManualCardReader()
        seed = None
        if cfg.kind == "sim":
            configured = self.config.sim.seed if self.config.sim is not None else 0
            seed = shoe_seed(configured, resume.position)
            _log.info("sim_shoe_seeded", sim_seed=configured,
                      journal_position=resume.position, shoe_seed=seed)
        device, self.shoe_sim = self._driver(cfg, "shoe", self._context("shoe", seed=seed),
                                             stack)
        return device  # type: ignore[no-any-return]

    def _rfid(self, stack: AsyncExitStack, registry: ChipRegistry,
              resume: Resume) -> ChipReader:
        cfg = self.config.rfid
        if cfg.kind == "manual":
            return ManualChipReader()
        # a simulated reader: the virtual dealer waits on every sweep (wagers, plays, pays,
        # takes, picks up)
        device, self.rfid_sim = self._driver(cfg, "rfid", self._context("rfid", registry),
                                             stack)
        if self.rfid_sim is not None:  # before its first sweep: the felt the table last read
            from simulators.chip_steps import restore_felt  # noqa: PLC0415

            if restore_felt(self.rfid_sim, resume.chips_lying):
                _log.info("sim_felt_restored", spots=len(resume.chips_lying),
                          chips=sum(len(u) for u in resume.chips_lying.values()))
        return device  # type: ignore[no-any-return]

    def _ids(self, stack: AsyncExitStack) -> IdReader | None:
        cfg = self.config.id_reader
        if cfg.kind == "none":
            return None
        device, self.id_simulator = self._driver(cfg, "id_reader",
                                                 self._context("id-reader"), stack)
        return device  # type: ignore[no-any-return]


def shoe_seed(seed: int, position: int) -> int:
    """A simulated shoe's seed at power-on: the ``[sim] seed`` on a new journal (position
    0), else that seed mixed with the journal's last record before this start, so a restart
    deals new decks, never the ones dealt before it, and the same journal gives the same
    decks again (D406)."""
    if position == 0:
        return seed
    digest = hashlib.sha256(f"showdown-shoe:{seed}:{position}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class _SimulatedPrinter(EscposPrinter):
    """The real driver on a simulated network printer, which it switches off when closed."""

    def __init__(self, config: PrinterConfig, sim: SimReceiptPrinter, host: str,
                 port: int) -> None:
        super().__init__(config, host=host, port=port)
        self.sim = sim

    def close(self) -> None:
        """Switch the simulated printer off."""
        self.sim.close()


class DaemonHandle:
    """A running daemon as a `TableHandle`: what its console and the desk see and press."""

    def __init__(self, daemon: TableDaemon) -> None:
        self.daemon = daemon
        self._status: tuple[tuple[int, int, int], Mapping[str, Any]] | None = None
        self._glance: tuple[tuple[int, int, int], Mapping[str, Any]] | None = None

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.daemon.config.table

    def status(self) -> Mapping[str, Any]:
        """The daemon's status as `showdown table status` shows it, without the journal's,
        the link's and the devices' counters (the virtual dealer reads it after each input).
        It changes only with an input applied or a fault: built again only then (read it,
        never change it)."""
        d = self.daemon
        key = (d.version, len(d.faults), id(d.service))
        if self._status is None or self._status[0] != key:
            self._status = (key, d.status(counters=False))
        return self._status[1]

    def glance(self) -> Mapping[str, Any]:
        """The same status as a view built part by part as it is read (a dealer's check
        reads one or two parts): read it at once, before the next await."""
        d = self.daemon
        key = (d.version, len(d.faults), id(d.service))
        if self._status is not None and self._status[0] == key:
            return self._status[1]
        if self._glance is None or self._glance[0] != key:
            head = d.status_head()
            view = head if d.service is None else StatusView(d.service.core, head)
            self._glance = (key, view)
        return self._glance[1]

    @property
    def version(self) -> int:
        """How many inputs the daemon has applied (see `changed`)."""
        return self.daemon.version

    async def changed(self, after: int, timeout: float | None = None) -> int:
        """Wait until the daemon has applied an input since version `after` (or `timeout`
        seconds); the version now."""
        return await self.daemon.changed(after, timeout)

    async def console(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """A console button, through the local API's handler."""
        return await self.daemon.on_console(request)

    async def desk_input(self, body: Mapping[str, Any]) -> str | None:
        """A desk command journaled and applied as if it came verified from MQTT."""
        applied = await self.daemon.ingest("desk", body)
        return None if applied.ok else (applied.error or "refused")

    def house_rules(self) -> HouseRules:
        """The house rules of the heat in play."""
        service = self.daemon.service
        if service is None or service.session is None:
            raise TableStuck("no heat is open at the table")
        return service.session.rules.house

    def deal_targets(self, seats: Sequence[int]) -> Sequence[Target]:
        """The table's deal sequence for these seats."""
        if self.daemon.service is None:
            raise TableStuck("the table has not started")
        return self.daemon.service.deal.targets(seats)

    def acknowledge_methods(self) -> Sequence[str]:
        """The proofs the table's ``[console] acknowledge_with`` asks a participant for."""
        return self.daemon.config.console.acknowledge_with

    def waiting_for_tap(self) -> str | None:
        """What the console's gate waits for a card tap for, if anything."""
        gate = self.daemon.gate
        return None if gate is None else gate.waiting_for

    def chip_holders(self) -> Mapping[bytes, str]:
        """The table's float: who holds each chip now."""
        if self.daemon.service is None:
            raise TableStuck("the table has not started")
        return self.daemon.service.core.chips.chip_float.holders()

    def chips_lying(self) -> Mapping[tuple[int, str], frozenset[bytes]]:
        """The chips the table last read on each spot."""
        if self.daemon.service is None:
            raise TableStuck("the table has not started")
        return self.daemon.service.core.spots.lying()


@dataclass(frozen=True, slots=True)
class WiredTable:
    """A daemon built from its config, and the device source it was given."""

    daemon: TableDaemon
    devices: ConfiguredDevices

    def virtual_table(self, **options: Any) -> VirtualTable:
        """A virtual dealer at this daemon's simulated devices (once the daemon is ready);
        `options` are VirtualTable's (desk, seed, stage, players, heats, hand_pause...); its
        decks' seed advances with the journal (`ConfiguredDevices.dealer_seed`; the players'
        and their PINs stay the configured seed's)."""
        from simulators.table_play import VirtualTable  # noqa: PLC0415

        shoe, chips = self.devices.shoe_sim, self.devices.rfid_sim
        if shoe is None or chips is None:
            raise TableStuck("the table's shoe and chip reader are not simulators, or not open")
        options.setdefault("ids", self.devices.id_simulator)
        seed = int(options.get("seed", _DEALER_SEED))
        dealt = self.devices.dealer_seed(seed)
        if dealt != seed and options.get("decks") is None:  # a restart: new decks (D406)
            from simulators.decks import DeckSource  # noqa: PLC0415

            options["decks"] = DeckSource(options.get("deck_mode", "shuffled"),
                                          rng=random.Random(dealt), seed=dealt)
        return VirtualTable(DaemonHandle(self.daemon), shoe=shoe, chips=chips, **options)


def wire_table(config: TableConfig, *, clock: ClockSource = system_clock,
               notify: Notifier | None = None,
               registry: ChipRegistry | None = None,
               timing: SimTiming | None = None) -> WiredTable:
    """The table daemon with the devices its config names (``registry``: a simulated
    table's chips when its config names no registry file; `timing`: a simulated chip
    reader's)."""
    devices = ConfiguredDevices(config, registry=registry, timing=timing)
    daemon = TableDaemon(config, devices=devices, clock=clock, notify=notify,
                         printer=devices.printer())
    return WiredTable(daemon=daemon, devices=devices)


async def run_configured(config: TableConfig) -> int:
    """`showdown table run`: the daemon until SIGTERM; with the technician's bench when
    ``[bench] enabled``, and the virtual desk (and dealer) only when ``[sim]`` names them."""
    wired = wire_table(config)
    tasks: list[DealerTask] = []
    sim = config.sim
    if sim is not None and sim.virtual_desk:
        desk = desk_signer(config)
        tasks.append((virtual_table_task if sim.virtual_dealer else virtual_desk_task)(
            wired, desk))
    if config.bench.enabled:
        tasks.append(bench_task(wired))
    try:
        return await run_table(wired.daemon, extra=_together(tasks))
    except ExceptionGroup as group:  # a screen that cannot listen (its port taken): say so
        config_error = _first_config_error(group)
        if config_error is None:
            raise
        raise config_error from None


def _first_config_error(group: BaseExceptionGroup[Any]) -> ConfigError | None:
    """The ConfigError in a task group's failure, however deep (None: none)."""
    for exc in group.exceptions:
        if isinstance(exc, ConfigError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_config_error(exc)
            if found is not None:
                return found
    return None


def _together(tasks: Sequence[DealerTask]) -> DealerTask | None:
    """The daemon's extra tasks as one (None: none)."""
    if not tasks:
        return None
    if len(tasks) == 1:
        return tasks[0]

    async def run(daemon: TableDaemon) -> None:
        async with asyncio.TaskGroup() as tg:
            for task in tasks:
                tg.create_task(task(daemon))

    return run


def bench_task(wired: WiredTable) -> DealerTask:
    """The technician's bench (controller.sim_bench) on the table's simulated devices,
    served beside the console while the daemon runs."""
    from controller.sim_bench import BenchDevices, serve_bench  # noqa: PLC0415

    devices = wired.devices

    async def run(daemon: TableDaemon) -> None:
        sim = daemon.config.sim
        bench = BenchDevices(shoe=devices.shoe_sim, rfid=devices.rfid_sim,
                             id_reader=devices.id_simulator, registry=devices.registry_in_play,
                             seed=0 if sim is None else sim.seed)
        await serve_bench(daemon, bench, daemon.config.bench, on_port=daemon.bench_listening)

    return run


# ---- a simulated table: its virtual desk and dealer, when its config names them ---------


def desk_signer(config: TableConfig) -> Signer:
    """The virtual desk's key: the file ``[sim] desk_key`` names (enrolled under
    [keys.desk], checked when the config was read). Nothing here makes a key: the table's
    and the desk's keys are made beforehand (`showdown keys generate`, or the composer that
    writes the config)."""
    sim = config.sim
    if sim is None or sim.desk_key is None:
        raise ConfigError(config.source, "sim.desk_key",
                          "missing: the virtual desk needs its key file")
    return load_configured_key(sim.desk_key, source=config.source, key="sim.desk_key")


def desk_sender(daemon: TableDaemon, desk_signer: Signer, *,
                subscribed_wait_s: float = _SUBSCRIBED_WAIT_S) -> Callable[..., Any]:
    """The virtual desk of a running simulated table: signed commands over its broker, tried
    again while the broker is away (``subscribed_wait_s``: how long it waits for the table's
    subscription per try)."""
    config = daemon.config
    link = daemon.link
    if link is None:
        raise TableStuck("the table has no MQTT link")
    from simulators.desk import VirtualDesk  # noqa: PLC0415

    # The table's own broker settings: its TLS, CA, client certificate and credentials.
    desk = VirtualDesk(host=link.settings.host, port=link.settings.port,
                       venue=config.venue, signer=desk_signer, settings=link.settings)

    async def send(command: str, **body: Any) -> None:
        # The broker away (restarting, a network cut): try again, as a desk clerk would;
        # the daemon reconnects by itself meanwhile. Give up after _DESK_PATIENCE_S.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _DESK_PATIENCE_S
        backoff = Backoff(initial=0.5, maximum=5.0)
        while True:
            try:
                # A command published before the table ever subscribed would be lost:
                # the broker queues only for a session it knows.
                try:
                    async with asyncio.timeout(subscribed_wait_s):
                        await link.wait_subscribed()
                except TimeoutError:
                    raise OSError("the table is not connected to the broker") from None
                # A cluster: send through the node the table is on (it holds its session).
                desk.host, desk.port = link.broker_address
                await desk.send(config.table, command, **body)
                return
            except (MqttError, OSError) as exc:
                if loop.time() > deadline:
                    raise TableStuck(f"the virtual desk could not send {command}:"
                                     f" {exc}") from exc
                _log.warning("virtual desk: broker unreachable, retrying",
                             command=command, error=str(exc))
                await asyncio.sleep(backoff.next_delay())

    return send


def virtual_table_task(wired: WiredTable, desk_signer: Signer, *,
                       subscribed_wait_s: float = _SUBSCRIBED_WAIT_S) -> DealerTask:
    """The coroutine the daemon runs beside its own tasks: the virtual desk and dealer
    (``subscribed_wait_s``: how long the desk waits for the table's subscription per try).
    Whatever stops the virtual dealer stops only it: the daemon plays on for a real dealer."""
    config = wired.daemon.config
    sim = config.sim
    if sim is None:
        raise ConfigError(config.source, "[sim]", "a virtual dealer needs a simulated table")

    async def run(daemon: TableDaemon) -> None:
        try:
            send = desk_sender(daemon, desk_signer, subscribed_wait_s=subscribed_wait_s)
            table = wired.virtual_table(desk=send, seed=sim.seed, stage=sim.stage,
                                        players=sim.players, heats=sim.heats,
                                        hand_pause=sim.hand_pause)
            await table.run()
        except TableStuck as exc:
            _log.error("virtual dealer stopped", reason=str(exc))
            return
        except Exception as exc:  # a fault the dealer did not foresee: never the daemon's end
            _log.exception("virtual dealer stopped by an error", error=one_line(exc))
            return
        _log.info("virtual dealer finished", heats=sim.heats, hands=table.hands_played)

    return run


def virtual_desk_task(wired: WiredTable, desk_signer: Signer, *,
                      subscribed_wait_s: float = _SUBSCRIBED_WAIT_S,
                      on_ready: Callable[[str], None] | None = None) -> DealerTask:
    """The virtual desk without the virtual dealer: it enrols the virtual staff, opens a
    heat and seats ``[sim] players`` entries, says who may sign in with which PIN (in the
    log, and to ``on_ready``), and leaves the dealing to a person at the console."""
    config = wired.daemon.config
    sim = config.sim
    if sim is None:
        raise ConfigError(config.source, "[sim]", "a virtual desk needs a simulated table")

    async def run(daemon: TableDaemon) -> None:
        try:
            send = desk_sender(daemon, desk_signer, subscribed_wait_s=subscribed_wait_s)
            table = wired.virtual_table(desk=send, seed=sim.seed, stage=sim.stage,
                                        players=sim.players, heats=sim.heats)
            await table.ensure_roster()
            entries = await table.seat_heat() if sim.heats else {}
        except Exception as exc:  # the desk's trouble is never the daemon's end
            _log.error("virtual desk stopped", error=one_line(exc))
            return
        staff = table.staff
        dealer = f"{staff.dealer.staff_id} PIN {staff.dealer.pin}"
        supervisor = f"{staff.supervisor.staff_id} PIN {staff.supervisor.pin}"
        heat = daemon.status().get("heat")
        _log.info("virtual desk ready: deal by hand on the console", heat=heat,
                     seats=entries, dealer=dealer, supervisor=supervisor)
        if on_ready is not None:
            on_ready(f"heat {heat}: {', '.join(f'seat {s} {e}' for s, e in entries.items())};"
                     f" sign in on the console as dealer {dealer} or supervisor {supervisor}")

    return run
