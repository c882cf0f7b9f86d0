"""The table daemon: the journal, the table service, the MQTT link, the local API and the
device pumps, run in one named TaskGroup. Which devices (real, simulated, manual) is decided
by the composition root, controller.wiring, and handed in as a `DeviceSource`.

Start-up order (regulators' R3): verify the journal (after its signed verified head), load
the newest usable checkpoint and replay what follows it (controller/startup.py), self-test;
only then connect devices and the broker and tell systemd READY=1; SQLite's whole-file check
follows in the background, and checkpoints are written at safe points
(controller/checkpointing.py). A damaged journal puts the table in the error
state: it publishes only its availability and the error, answers recall and status, and never
clears itself (`showdown journal clear-faults` / `replace`, docs/journal.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from controller.checkpointing import Checkpointer
from controller.clock import ClockSource, system_clock
from controller.config import TableConfig
from controller.console import serve_console
from controller.console.views import ConsoleViews
from controller.console_gate import GATE_ACTIONS, LOCAL_TERMINAL, ConsoleGate
from controller.device_pumps import RecoveryWatch, pump_ids, pump_rfid, pump_shoe
from controller.devices import DeviceSource, Resume, TableDevices
from controller.journal import CREATED_KIND, OWN_KIND_PREFIX, Journal
from controller.journal.deciding import Entry
from controller.journal.delivery import OutboxFeed
from controller.journal.group_commit import GroupCommit
from controller.journal.verified_head import whole_file_problems
from controller.journal.writer import JournalWriter
from controller.local_api import LocalApi
from controller.mqtt_link import MqttLink, TableIdentity
from controller.receipt_printer import ReceiptPrinter
from controller.slip_layout import local_time
from controller.slip_printing import SlipPrinting
from controller.startup import fold_shoe_reads, start_journal
from controller.table_service import Applied, TableService
from game.chips.registry import ChipRegistry
from game.errors import ConfigError
from game.hand.deal import DEFAULT_DEAL, parse_deal_sequence
from game.staff import ACTIONS, StaffMember
from game.table.console_fields import FieldRefused, check_console_fields
from game.table.inputs import DeviceInput, TableInput, encode_input
from game.table.tally_inputs import VOUCHED_ACTIONS
from runtime.errors import one_line
from runtime.event_loop import loop_name
from runtime.logs import get_logger
from runtime.process_memory import fix_malloc_mmap_threshold
from runtime.sd_notify import Notifier
from runtime.settings_files import read_paytables, read_tournament
from wire.envelope import Envelope
from wire.messages import (
    Alert,
    Availability,
    HandSettled,
    HandVoided,
    Resend,
    ScoreAcknowledged,
    ScoreRecorded,
    ScoreVoided,
)
from wire.mqtt import MqttSettings
from wire.signing import KeyRing, Signer, load_configured_key

if TYPE_CHECKING:  # amqtt is imported only by a table that runs its own broker
    from controller.embedded_broker import EmbeddedBroker

__all__ = ["GIL_SWITCH_INTERVAL_S", "Submission", "TableDaemon", "run_table"]

_log = get_logger("showdown.table")

_T = TypeVar("_T")
# How long a Python thread may hold the GIL while another waits (CPython's default: 5 ms).
# The journal's writer thread gives the GIL up at every SQLite call and waits to get it back
# while the event loop runs Python; 0.5 ms bounds that wait (docs/performance.md).
GIL_SWITCH_INTERVAL_S = 0.0005
_SCORE_TYPES = frozenset({ScoreRecorded.TYPE, ScoreAcknowledged.TYPE, ScoreVoided.TYPE})


@dataclass(frozen=True, slots=True)
class Submission:
    """An input waiting for its transaction: its journal kind and payload, and ``given``,
    the typed input the payload encodes (None: a request journaled as it came, decoded by
    the table service)."""

    kind: str
    payload: Mapping[str, Any]
    given: TableInput | None = None


def _played_through(journal: Journal) -> int:
    """Where the journal stands before this start (`Resume.position`): its last record's
    seq, above its message seq base shifted by 32 bits (a rotated file's records count from
    1 again, its messages do not); 0 for a journal that holds only its own bookkeeping
    (``journal.created``, ``journal.verified``): a new table."""
    base = 0
    for record in journal.records():
        if record.kind == CREATED_KIND:
            base = int(record.payload.get("outbox_seq_base") or 0)
        elif not record.kind.startswith(OWN_KIND_PREFIX):
            return (base << 32) + journal.last_record_seq()
    return 0


class TableDaemon:
    """One table's daemon; `run()` until `stop` is set (or SIGTERM)."""

    def __init__(self, config: TableConfig, *, devices: DeviceSource,
                 clock: ClockSource = system_clock, notify: Notifier | None = None,
                 printer: ReceiptPrinter | None = None) -> None:
        """``printer``: the receipt printer for score slips (controller.wiring; None: none)."""
        self.config = config
        self.device_source = devices
        self.clock = clock
        self.notify = notify or Notifier()
        self.journal: Journal | None = None
        self._first_resendable: int | None = None  # the current journal file's first seq
        self.writer = JournalWriter(f"journal-{config.table}")  # every append runs on it
        # every input goes through it: those arriving together share a transaction
        self.inputs: GroupCommit[Submission, Applied] = GroupCommit(self._commit)
        self.feed: OutboxFeed | None = None  # the outbox the link drains (not in error state)
        self.service: TableService | None = None
        self.link: MqttLink | None = None
        self.broker: EmbeddedBroker | None = None
        self.devices: TableDevices | None = None
        self.recoveries: RecoveryWatch | None = None  # device trouble healed, counted (D347)
        self.faults: list[str] = []
        self.ready = asyncio.Event()
        self.gate: ConsoleGate | None = None
        self.version = 0  # counts applied inputs: the screens wait on it
        self.console_port: int | None = None  # the console's port, once it listens
        self.bench_port: int | None = None  # the technician's bench's, once it listens
        self._waiters: set[asyncio.Future[None]] = set()  # `changed` callers, until an input
        self._lock = asyncio.Lock()
        self._log = _log.bind(table=config.table)
        self._last_work = 0.0
        self._figures: tuple[tuple[int, ...], Mapping[str, int]] | None = None
        self._signer: Signer | None = None
        self._played_through = 0  # the journal's last record before this start (`Resume`)
        # device -> the last (session, index) journaled: kept current by every commit, so a
        # checkpoint copies it (under the lock) rather than reading the journal back
        self.shoe_reads: dict[str, tuple[int, int]] = {}
        self.startup_timings: dict[str, float] = {}
        self.checkpointer: Checkpointer | None = None
        self.slips = SlipPrinting(printer, slip=ConsoleViews(self).slip,
                                  record=self._record_slip)

    # ---- start-up ---------------------------------------------------------------------

    def _load(self) -> tuple[TableService, ChipRegistry]:
        cfg = self.config
        settings = read_tournament(cfg.tournament)
        paytables = read_paytables(cfg.paytables)
        deal = parse_deal_sequence(cfg.deal, source=f"{cfg.source} [deal]") if cfg.deal \
            else DEFAULT_DEAL
        registry = self.device_source.chip_registry()
        console = cfg.console
        lockout = console.backoff()
        service = TableService(table_id=cfg.table, settings=settings, paytables=paytables,
                               deal=deal, registry=registry, marker_set=cfg.marker_set,
                               verify_payouts=console.verify_payouts, lockout=lockout)
        return service, registry

    def _open_journal(self, service: TableService) -> Journal | None:
        """Open, check and load the journal (controller/startup.py); sets the service the
        state is in (a checkpoint's restores into a fresh one), the faults, the shoe reads."""
        settings = self.config.journal_settings
        started = start_journal(
            self.config.journal, service=service, fresh=lambda: self._load()[0],
            signer=self._table_signer(), checkpoints=settings.checkpoints, log=self._log,
            clock=self.clock, rotate=settings.rotate,
            tournament_sha256=_file_digest(self.config.tournament)
            if self.config.tournament else "")
        self.faults = started.faults
        self.service = started.service
        self.shoe_reads = started.shoe_reads
        self.startup_timings = started.timings
        if started.journal is not None:  # before this start's first record
            self._played_through = _played_through(started.journal)
            self._first_resendable = started.journal.first_seq()
        return started.journal

    def _table_signer(self) -> Signer:
        if self._signer is None:
            cfg = self.config
            if not os.path.lexists(cfg.table_key):  # never made here (decision D317)
                raise ConfigError(cfg.source, "keys.table_key",
                                  f"{cfg.table_key} does not exist: make it with `showdown keys"
                                  f" generate --out {cfg.table_key} --name {cfg.table}` and"
                                  " enrol its public key at the leaderboard")
            signer = load_configured_key(cfg.table_key, source=cfg.source,
                                         key="keys.table_key")
            if signer.key_id != cfg.table:  # another table's key: it would sign as that table
                raise ConfigError(cfg.source, "keys.table_key",
                                  f"{cfg.table_key} is the key of table {signer.key_id!r}, not"
                                  f" of this table {cfg.table!r} (table.id): name this table's"
                                  " own key file")
            self._signer = signer
        return self._signer

    async def _open_local_api(self, stack: AsyncExitStack) -> None:
        """The local API on ``[api] socket``, closed with `stack`; a socket that cannot be
        made is a ConfigError naming the key, the path and its folder."""
        path = self.config.api.socket
        try:
            await stack.enter_async_context(LocalApi(path, self.on_console))
        except OSError as exc:
            raise ConfigError(self.config.source, "api.socket",
                              f"cannot make the socket {path} in the folder {path.parent}:"
                              f" {exc.strerror or one_line(exc)}") from exc

    def _resume(self) -> Resume:
        """Where the journal left off, for the devices about to open (`Resume`): its last
        record before this start, and the chips the table last read on the spots."""
        core = self.service.core if self.service is not None else None
        return Resume(position=self._played_through,
                      chips_lying=core.spots.lying() if core is not None else {})

    async def quiesced(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` in a worker thread between inputs: no input is applied meanwhile."""
        async with self._lock:
            return await asyncio.to_thread(work)

    async def _check_whole_file(self, journal: Journal) -> None:
        """After READY: SQLite's own page-by-page check, which start-up leaves out; damage
        found is the error state, as at start-up."""
        problems = await asyncio.to_thread(whole_file_problems, journal)
        if not problems:
            self._log.info("journal whole-file check passed")
            return
        detail = "; ".join(f"{p.code}: {p.detail}" for p in problems)
        self.faults.append(f"journal_integrity: {detail}")
        self._log.critical("journal whole-file check failed; entering the error state",
                        problems=len(problems))
        with contextlib.suppress(Exception):
            await self.quiesced(lambda: journal.record_fault("journal_integrity", detail))

    # ---- the one way in --------------------------------------------------------------

    async def ingest(self, kind: str, payload: Mapping[str, Any]) -> Applied:
        """Journal one request as it came and apply it, in one transaction (with the inputs
        that arrived meanwhile: group commit); wake the publisher."""
        if self.journal is None or self.service is None or self.faults:
            return self._refused_state()
        return await self.inputs.submit(Submission(kind, dict(payload)))

    def submit(self, given: DeviceInput) -> asyncio.Future[Applied]:
        """Queue a device's typed input for the next transaction: journaled as its one
        encoding (`encode_input`), decided on as it is; its `Applied` once committed (not
        awaited, inputs submitted in turn keep their order: the device pumps)."""
        kind, payload = encode_input(given)
        return self.inputs.submit(Submission(kind, payload, given))

    def halted(self) -> bool:
        """True once the table is in the error state: nothing more is journaled."""
        return bool(self.faults)

    def _refused_state(self) -> Applied:
        return Applied(ok=False, error="the table is in the error state: "
                                       + "; ".join(self.faults or ["not started"]))

    async def _commit(self, batch: list[Submission]) -> list[Applied]:
        """Journal a batch of inputs in one transaction, the table service deciding on each
        as it is inserted (`Journal.append_batch` with the service as its `Decider`)."""
        journal, service = self.journal, self.service
        if journal is None or service is None or self.faults:
            return [self._refused_state() for _ in batch]
        async with self._lock:
            entries = [Entry(kind=s.kind, payload=s.payload, clock=self.clock(), given=s.given)
                       for s in batch]
            try:
                stored = await self.writer.call(journal.append_batch, entries, service)
            except Exception as exc:
                # The state may now be ahead of the journal: stop taking input (error state).
                self.faults.append(f"journal write failed: {exc}")
                self._log.critical("journal write failed; entering the error state", error=str(exc))
                with contextlib.suppress(Exception):
                    journal.record_fault("journal_write", str(exc))
                return [Applied(ok=False, error=f"journal write failed: {exc}") for _ in batch]
            fold_shoe_reads(self.shoe_reads, (s.record for s in stored))
            if self.feed is not None:  # committed: the link may publish them now
                for s in stored:
                    self.feed.offer(s.messages)
        self._last_work = asyncio.get_running_loop().time()
        self.version += len(batch)
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        done = [s.decision for s in stored]
        if self.link is not None and any(a.messages for a in done):  # the outbox grew
            self.link.wake()
        for submitted, applied in zip(batch, done, strict=True):
            self._log_applied(submitted.kind, applied)
        return done

    def _log_applied(self, kind: str, applied: Applied) -> None:
        if not applied.ok:
            self._log.warning("input refused", kind=kind, error=applied.error)
        for message in applied.messages:
            if message.type == Alert.TYPE:
                self._log.warning("alert", **{k: v for k, v in message.body.items()
                                              if k in ("kind", "message", "seat", "hand_id")})
            elif message.type in (HandSettled.TYPE, HandVoided.TYPE):
                self._log.info(message.type, hand_id=message.body.get("hand_id"),
                               nets=message.body.get("nets"))
            elif message.type in _SCORE_TYPES:
                self._log.info(message.type, entry_id=message.body.get("entry_id"),
                               score=message.body.get("score"))

    # ---- inputs from the outside ------------------------------------------------------

    async def on_command(self, envelope: Envelope) -> None:
        """A verified desk command from the cmd topic."""
        body = dict(envelope.body)
        body.setdefault("command", envelope.type)
        body["signer"] = envelope.signer
        body["command_seq"] = envelope.seq
        applied = await self.ingest("desk", body)
        if applied.ok and body.get("command") == Resend.NAME and self.journal and self.link:
            # A month is tens of thousands of messages (a central database rebuilt from the
            # journals): read in a worker thread, not on the event loop (D411).
            self.link.resend(await asyncio.to_thread(self.journal.messages,
                                                     int(body["from_seq"])))

    async def changed(self, after: int, timeout: float | None = None) -> int:
        """Wait until an input has been applied since version ``after``; the version now."""
        if self.version <= after:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await waiter
            finally:
                self._waiters.discard(waiter)
        return self.version

    async def on_console(self, request: Mapping[str, Any], *,
                         terminal: str = LOCAL_TERMINAL) -> Mapping[str, Any]:
        """A request from the dealer's or participant's console (screens, local API).

        Staff actions need a live session (``session``: the token sign-in gave); the record
        names the session's person, never a name the request claims. The token and any PIN
        are never journaled. A bad field is refused before anything is journaled, with
        ``field`` naming it (game.table.console_fields). ``terminal``: the console client's
        address (a sign-in's back-off is kept per terminal); the local API's callers are one
        terminal.
        """
        action = request.get("action")
        if not isinstance(action, str):
            return {"ok": False, "error": "a request names its action"}
        if action == "status":
            return {"ok": True, "detail": self.status()}
        if action not in GATE_ACTIONS and action not in ACTIONS:
            return {"ok": False, "error": f"unknown console action {action[:40]!r}"}
        if self.gate is None or self.faults:
            return {"ok": False, "error": "the table is in the error state: "
                                          + "; ".join(self.faults or ["not started"])}
        if action in GATE_ACTIONS:
            answer = dict(await self.gate.handle(action, request, terminal=terminal))
            if action == "acknowledge" and answer.get("ok") and self.slips.auto:
                printed = await self.slips.print_slip(request.get("entry_id"), by=None,
                                                      now=self._venue_now)
                answer["detail"] = {**answer.get("detail", {}), "slip": printed}
            return answer
        found = None if self.gate is None else await self.gate.session(request.get("session"))
        if found is None:
            return {"ok": False, "error": f"{action!r} needs a signed-in dealer or supervisor:"
                                          " sign in first"}
        if action in VOUCHED_ACTIONS:
            return await self._vouched(action, request, found.staff_id, terminal)
        fields = {k: v for k, v in request.items()
                  if k not in ("session", "pin", "id", "by", "action")}
        if action == "rule_hand" and not self.config.console.rule_at_table:
            return {"ok": False, "field": "action",
                    "error": "action: this house rules on settled hands at the desk only"
                             " ([console] rule_at_table = false)"}
        refused = await self.read_state(lambda: self._door(action, fields))
        if refused is not None:  # a bad field: refused at the door, nothing journaled (D341)
            return {"ok": False, "error": str(refused), "field": refused.field}
        if action == "manual_card":
            applied = await self.ingest("card", {"card": fields.get("card"), "source": "manual",
                                                 "device": f"manual:{found.staff_id}",
                                                 "by": found.staff_id})
        elif action == "print_slip":
            return await self.slips.print_slip(fields.get("entry_id"), by=found.staff_id,
                                               now=self._venue_now)
        elif action == "manual_wager":
            applied = await self.ingest("manual_wager", {
                "seat": fields.get("seat"), "spot": fields.get("spot"),
                "amount": fields.get("amount"), "by": found.staff_id})
        else:
            applied = await self.ingest("dealer", {**fields, "action": action,
                                                   "by": found.staff_id})
        return applied.answer()

    async def _vouched(self, action: str, request: Mapping[str, Any], signed_in: str,
                       terminal: str) -> Mapping[str, Any]:
        """A supervisor's confirmation of a chip count, or decks destroyed before a witness:
        the second person's own PIN or card checked first (as at sign-in, failures backing
        off), then journaled naming them (never the secret) and the screen's person."""
        assert self.gate is not None
        fields = {k: v for k, v in request.items() if k not in ("session", "id", "by", "action")}
        refused = await self.read_state(lambda: self._door(action, fields))
        if refused is not None:
            return {"ok": False, "error": str(refused), "field": refused.field}
        purpose = ("confirming a chip count" if action == "confirm_count"
                   else "witnessing decks destroyed")
        person = await self.gate.vouch(request, terminal, purpose)
        if not isinstance(person, StaffMember):
            return dict(person)
        method = "card" if request.get("method") == "card" else "pin"
        payload = {k: v for k, v in fields.items() if k not in ("staff_id", "pin", "wait")}
        payload.update(action=action, method=method)
        if action == "confirm_count":
            payload.update(by=person.staff_id, via=signed_in,
                           tolerance_cents=self.config.count_tolerance_cents)
        else:
            payload.update(by=signed_in, witness=person.staff_id)
        return (await self.ingest("dealer", payload)).answer()

    def _door(self, action: str, fields: Mapping[str, Any]) -> FieldRefused | None:
        """A staff action's fields checked against the table before anything is journaled
        (game.table.console_fields); the refusal, or None."""
        if self.service is None:
            return None
        try:
            check_console_fields(action, fields, self.service.core)
        except FieldRefused as refused:
            return refused
        return None

    async def _record_slip(self, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        """Journal a slip sent to the printer (a ``slip`` input)."""
        return (await self.ingest("slip", payload)).answer()

    def _venue_now(self) -> str:
        tz = UTC if self.service is None else self.service.core.settings.tz
        return local_time(self.clock().wall.isoformat(), tz)

    async def read_state(self, read: Callable[[], _T]) -> _T:
        """Run ``read`` (a read of the table's state, for the screens) between inputs, never
        while one is being applied on the journal's writer thread."""
        async with self._lock:
            return read()

    def status(self, *, counters: bool = True) -> dict[str, Any]:
        """Everything `showdown table status` shows (``counters=False``: without the
        journal's, the broker link's and the devices' counters, for a caller that reads the
        table's state after every input)."""
        out = self.status_head()
        if self.service is not None:
            out.update(self.service.status())
        if not counters:
            return out
        if self.journal is not None:
            out["journal"] = dict(self._journal_figures(self.journal))
        if self.link is not None:
            out["mqtt"] = self.link.counters().as_dict()
        if self.broker is not None:
            out["broker"] = {"embedded": True, "port": self.broker.port}
        if self.devices is not None:
            for name in ("shoe", "rfid"):
                health = getattr(self.devices, name).health()
                out[name] = {"device": health.device, "connected": health.connected,
                             "counters": dict(health.counters)}
        return out

    async def _watch_recoveries(self, every: float) -> None:
        """Journal the play devices' healed trouble as counted notices (D347)."""
        assert self.devices is not None, "started once the devices are open"
        self.recoveries = RecoveryWatch(
            {"shoe": self.devices.shoe.health, "rfid": self.devices.rfid.health},
            submit=self.submit, every=every)
        await self.recoveries.run()

    async def flush_recoveries(self) -> None:
        """Journal now the device trouble healed since the last notice (a rehearsal's end)."""
        if self.recoveries is not None:
            await self.recoveries.flush()

    def status_head(self) -> dict[str, Any]:
        """The status's first part: the table, its venue, its state and faults."""
        return {"table": self.config.table, "venue": self.config.venue,
                "state": "error" if self.faults else "running", "faults": list(self.faults)}

    def _journal_figures(self, journal: Journal) -> Mapping[str, int]:
        """The journal's last seq and undelivered messages, read again only after an input
        was applied or a message delivered (status is read often, by screens and dealers)."""
        key = (self.version, self.link.delivered if self.link is not None else -1,
               self.feed.marks_written if self.feed is not None else -1, len(self.faults))
        if self._figures is None or self._figures[0] != key:
            self._figures = (key, {"last_seq": journal.last_seq(),
                                   "pending": journal.pending_count()})
        return self._figures[1]

    async def _watchdog(self) -> None:
        interval = self.notify.watchdog_interval()
        if interval is None:
            return
        while True:
            await asyncio.sleep(interval / 2)
            # The loop is alive and the ingest lock is not stuck: tell systemd.
            if not self._lock.locked() or (
                    asyncio.get_running_loop().time() - self._last_work < interval):
                self.notify.watchdog()

    async def _mqtt_settings(self, stack: AsyncExitStack) -> MqttSettings:
        m = self.config.mqtt
        if m.embedded:
            from controller.embedded_broker import (  # noqa: PLC0415
                EmbeddedBroker,
                EmbeddedBrokerError,
            )

            try:
                self.broker = await stack.enter_async_context(
                    EmbeddedBroker(port=m.embedded_port))
            except EmbeddedBrokerError as exc:  # its port taken: the setting that names it
                raise ConfigError(self.config.source, "mqtt.embedded_port",
                                  one_line(exc)) from exc
            self._log.info("embedded MQTT broker", port=self.broker.port)
            return MqttSettings(host="127.0.0.1", port=self.broker.port,
                                keepalive_s=m.keepalive_s)
        return m.settings()

    # ---- run -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event,
                  extra: Callable[[TableDaemon], Coroutine[Any, Any, None]] | None = None
                  ) -> int:
        """Run until `stop` is set; returns the process exit code."""
        cfg = self.config
        service, registry = self._load()
        signer = self._table_signer()
        keyring = KeyRing.from_mapping(cfg.desk_keys)  # only the keys the config enrols
        self.writer = JournalWriter(f"journal-{cfg.table}")  # a new thread for every run
        async with AsyncExitStack() as stack:
            self.journal = journal = self._open_journal(service)
            if journal is not None:
                stack.callback(journal.close)
            # after the feed's last marks, before the journal
            stack.push_async_callback(self._close_writer)
            if journal is not None and not self.faults:
                self.feed = OutboxFeed(journal, self.writer, clock=self.clock)
                stack.callback(self.feed.close)
            self.gate = gate = ConsoleGate(
                config=cfg.console, core=lambda: self.service.core if self.service else None,
                ingest=self.ingest, now=lambda: self.clock().wall,
                signatures=cfg.console.signatures or cfg.journal.parent / "signatures",
                simulated=cfg.simulated)
            if not self.faults:
                await self.ingest("start", {"config": cfg.source,
                                            "config_sha256": _file_digest(Path(cfg.source))})
                await self.gate.sign_out_everyone("the table daemon restarted")
            settings = await self._mqtt_settings(stack)
            identity = TableIdentity(venue=cfg.venue, table=cfg.table,
                                     boot_id=self.clock().boot_id)
            self.link = await stack.enter_async_context(MqttLink(
                # In the error state nothing stored is published: only availability + faults.
                settings, identity, signer,
                self.feed if self.feed is not None else _NoOutbox(),
                self.on_command, command_keys=keyring,
                status_extra=self._status_extra))
            await self._open_local_api(stack)
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(self._watchdog(), name=f"table[{cfg.table}].watchdog")]
                if journal is not None and not self.faults \
                        and cfg.journal_settings.checkpoints:
                    self.checkpointer = Checkpointer(
                        self, journal=journal, signer=signer, log=self._log,
                        every=cfg.journal_settings.checkpoint_every)
                    tasks.append(tg.create_task(self.checkpointer.run(),
                                                name=f"table[{cfg.table}].checkpoints"))
                if not self.faults:
                    self.devices = self.device_source.open(stack, registry,
                                                           resume=self._resume())
                    await stack.enter_async_context(self.devices.shoe)
                    await stack.enter_async_context(self.devices.rfid)
                    tasks.append(tg.create_task(
                        pump_shoe(self.devices.shoe, submit=self.submit,
                                  last_reads=self.shoe_reads, halted=self.halted,
                                  log=self._log),
                        name=f"table[{cfg.table}].shoe_pump"))
                    tasks += [tg.create_task(
                        pump_rfid(self.devices.rfid, submit=self.submit,
                                  backlog=lambda: self.inputs.waiting),
                        name=f"table[{cfg.table}].rfid_pump"), tg.create_task(
                        self._watch_recoveries(cfg.console.recovery_notice_seconds),
                        name=f"table[{cfg.table}].recoveries")]
                    if self.devices.ids is not None:
                        await stack.enter_async_context(self.devices.ids)
                        tasks.append(tg.create_task(
                            pump_ids(self.devices.ids, submit=self.submit,
                                     offer_tap=gate.offer_tap),
                            name=f"table[{cfg.table}].id_pump"))
                if cfg.console.enabled and not self.faults:
                    tasks.append(tg.create_task(
                        serve_console(self, cfg.console, on_port=self._console_listening),
                        name=f"table[{cfg.table}].console"))
                self.notify.ready()
                self.notify.status("error state: " + "; ".join(self.faults) if self.faults
                                   else "running")
                self.ready.set()
                self._log.info("ready", state="error" if self.faults else "running",
                               api=str(cfg.api.socket),
                               event_loop=loop_name(asyncio.get_running_loop()))
                if journal is not None and not self.faults \
                        and cfg.journal_settings.checkpoints:
                    tasks.append(tg.create_task(self._check_whole_file(journal),
                                                name=f"table[{cfg.table}].whole_file_check"))
                if extra is not None and not self.faults:
                    tasks.append(tg.create_task(extra(self),
                                                name=f"table[{cfg.table}].virtual_table"))
                await stop.wait()
                self.notify.stopping()
                self._log.info("stopping")
                for task in tasks:
                    task.cancel()
        return 0

    async def _close_writer(self) -> None:
        """The last inputs committed (a slip printing is journaled), then the writer's thread
        stopped; the receipt printer released (a simulated one stops)."""
        await self.inputs.idle()
        self.writer.close()
        self.slips.close()

    def _console_listening(self, port: int) -> None:
        self.console_port = port

    def bench_listening(self, port: int) -> None:
        """The technician's bench listens on this port (`controller.sim_bench`)."""
        self.bench_port = port

    def _status_extra(self) -> Mapping[str, Any]:
        extra: dict[str, Any] = {
            "state": "error" if self.faults else "online", "faults": list(self.faults),
            "inputs": self.service.inputs_applied if self.service else 0,
            "alerts": self.service.alerts_raised if self.service else 0}
        if self._first_resendable is not None:  # what a resend can still reach (D414)
            extra[Availability.FIRST_RESENDABLE] = self._first_resendable
        return extra


class _NoOutbox:
    """The outbox of a table in the error state: it publishes nothing stored."""

    def pending(self, limit: int = 100) -> list[Any]:
        """Nothing to send."""
        del limit
        return []

    def mark_delivered(self, seq: int) -> None:
        """Nothing is ever sent, so nothing is marked."""
        del seq


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


async def run_table(daemon: TableDaemon, *,
                    extra: Callable[[TableDaemon], Coroutine[Any, Any, None]] | None = None
                    ) -> int:
    """Run a table daemon until SIGTERM / SIGINT; the `showdown table run` entry point."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # the process is this daemon's
    fix_malloc_mmap_threshold()  # scrypt's working memory is returned after each call
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return await daemon.run(stop, extra=extra)
