"""QuasarChipReader: a table's Metratec QuasarMX HF readers (ISO 15693) through their published
plain-text protocol (docs/protocols/metratec-quasarmx.md), as one `drivers.protocols.ChipReader`.

A table has one or several readers (each has 4 antenna ports, 16 behind multiplexers), each on
a USB serial port or TCP (`drivers.quasar_link`), the protocol spoken by the sans-I/O
`drivers.quasar_codec`. The driver sweeps continuously: sweep n selects every mapped port of
every connected reader in turn (``SAP``) and inventories it (``INV``), the readers side by
side, and yields one `ChipInventory` per mapped spot with ``report_seq = n``: every spot every
sweep, a full inventory and never a delta (payout checks and clone detection rely on it). A
spot is left out of a sweep only when its reading cannot be trusted (a broken antenna, an
answer that stays corrupt, tags heard but not read): that is alerted.

Each reader's answer names its antenna port (antenna report on), and an answer for another
port than the one selected is discarded and asked again, so a late or duplicated answer can
never put one spot's chips on another. At connect the driver checks the model (QUASAR_MX)
and the firmware (2.18 or newer, as Metratec's SDK does); a wrong one is alerted and not read
(D291). Unplug, a closed connection and a stall (a command unanswered for ``stall_seconds``)
are alerted once per outage; the reader is opened again under jittered backoff and
"reconnected" is alerted when it answers. Nothing leaves the iterator but readings and alerts.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, Self, TypeVar

from drivers import quasar_codec as qc
from drivers.errors import DeviceLost, DeviceNotFound, DeviceProtocolError, DriverError
from drivers.protocols import ChipReading
from drivers.quasar_link import Link, open_serial, open_tcp
from drivers.quasar_settings import QuasarLink, QuasarSettings, port_name
from drivers.readings import ChipInventory, DeviceAlert, DeviceHealth, DeviceIdentity, SpotId
from runtime.backoff import Backoff

__all__ = ["QuasarChipReader"]

_CLOSED: Final = object()
_T = TypeVar("_T")
_COUNTERS: Final = (
    "sweeps", "inventories", "resends", "resyncs", "connects", "reconnects", "disconnects",
    "stalls", "connect_failures", "refused", "bad_frames", "bad_answers", "stale_answers",
    "antenna_mismatches", "antenna_faults", "reader_errors", "tag_errors", "skipped_spots",
    "reader_resets", "uid_order", "not_iso_uids", "errors",
)
_ANTENNA_FAULTS: Final = frozenset({"ARH", "EHF"})  # the antenna (not the reader) is at fault


class _Stalled(DeviceLost):
    """The reader is connected but answers nothing."""


class _Refused(DriverError):
    """A reader we will not read from (wrong model, old firmware); ``kind`` is the alert."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


class _Retry(DeviceProtocolError):
    """This answer is unusable (corrupt, another port's, incomplete): ask again."""


def _is_revision(frame: qc.Frame) -> bool:
    """Whether an answer is REV's (a model and 8 digits)."""
    try:
        return isinstance(qc.parse_revision(frame), qc.Revision)
    except qc.QuasarProtocolError:
        return False


@dataclass(slots=True)
class _Limited:
    last: float = float("-inf")
    suppressed: int = 0


@dataclass(slots=True, eq=False)
class _Reader:
    """One reader's connection and state."""

    link: QuasarLink
    name: str  # its serial number once known, else its address
    conn: Link | None = None
    identity: DeviceIdentity | None = None
    frames: deque[qc.Frame | qc.FrameError] = field(default_factory=deque)
    decoder: qc.FrameDecoder = field(default_factory=qc.FrameDecoder)
    wanted: asyncio.Event = field(default_factory=asyncio.Event)  # set: (re)connect it
    up: bool = False
    ever_up: bool = False
    outage_alerted: bool = False
    down_since: float | None = None
    tried: bool = False  # one connect attempt made
    faulted: set[int] = field(default_factory=set)  # ports with an antenna fault alerted


class QuasarChipReader:
    """The table's QuasarMX readers as one chip reader; reusable, not reentrant."""

    def __init__(
        self,
        settings: QuasarSettings,
        *,
        name: str = "quasarmx",
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.device = name
        self._rng = rng if rng is not None else random.Random()
        self._clock = clock
        self._readers = [_Reader(link=link, name=link.where) for link in settings.readers]
        self._queue: asyncio.Queue[object] = asyncio.Queue(settings.queue_size)
        self._tasks: list[asyncio.Task[None]] = []
        self._any_up = asyncio.Event()
        self._all_tried = asyncio.Event()
        self._sweep = 0
        self._last_seen: float | None = None
        self._limited: dict[tuple[str, str], _Limited] = {}
        self._counts: dict[str, int] = dict.fromkeys(_COUNTERS, 0)

    # ------------------------------------------------------------------ public API

    async def __aenter__(self) -> Self:
        if self._tasks:
            raise RuntimeError("QuasarChipReader is already open (it is not reentrant)")
        self._queue = asyncio.Queue(self.settings.queue_size)
        self._any_up = asyncio.Event()
        self._all_tried = asyncio.Event()
        for reader in self._readers:
            reader.tried = False
            reader.wanted = asyncio.Event()
            reader.wanted.set()
            self._tasks.append(asyncio.create_task(
                self._keep(reader), name=f"quasarmx[{reader.link.where}].connect"))
        self._tasks.append(asyncio.create_task(self._run(), name="quasarmx.sweeps"))
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop sweeping, close every reader's connection, end every iterator."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for reader in self._readers:
            await self._close(reader)
            reader.up = False
        while True:
            try:
                self._queue.put_nowait(_CLOSED)
                break
            except asyncio.QueueFull:
                self._queue.get_nowait()

    def __aiter__(self) -> AsyncIterator[ChipReading]:
        return self._readings()

    async def _readings(self) -> AsyncIterator[ChipReading]:
        if not self._tasks and self._queue.empty():
            raise RuntimeError("use `async with QuasarChipReader(...)` before iterating")
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)  # let other iterators end too
                return
            assert isinstance(item, ChipInventory | DeviceAlert)
            yield item

    def health(self) -> DeviceHealth:
        """Connected (every reader up) or not, the first reader's identity, counters."""
        counters = dict(self._counts)
        counters["readers"] = len(self._readers)
        counters["readers_up"] = sum(r.up for r in self._readers)
        counters["last_sweep"] = self._sweep
        first = self._readers[0].identity
        return DeviceHealth(device=self.device, connected=all(r.up for r in self._readers),
                            identity=first, last_seen_mono=self._last_seen, counters=counters)

    # ------------------------------------------------------------------ connecting

    async def _keep(self, reader: _Reader) -> None:
        """Open the reader whenever it is wanted, under backoff."""
        s = self.settings
        backoff = Backoff(initial=s.backoff_initial, maximum=s.backoff_max, rng=self._rng)
        while True:
            await reader.wanted.wait()
            try:
                try:
                    await self._connect(reader)
                finally:
                    reader.tried = True
                    if all(r.tried for r in self._readers):
                        self._all_tried.set()
            except DriverError as exc:
                await self._close(reader)
                await self._down(reader, exc)
                await asyncio.sleep(backoff.next_delay())
                continue
            except Exception as exc:  # never let a surprise end the reconnects
                self._counts["errors"] += 1
                await self._close(reader)
                await self._down(reader, DriverError(f"{type(exc).__name__}: {exc}"))
                await asyncio.sleep(backoff.next_delay())
                continue
            backoff.reset()
            reader.wanted.clear()
            self._any_up.set()

    async def _connect(self, reader: _Reader) -> None:
        s, link = self.settings, reader.link
        if link.host is not None:
            reader.conn = await open_tcp(link.host, link.port, timeout=s.stall_seconds)
        else:
            assert link.url is not None
            reader.conn = await open_serial(link.url, baudrate=s.baudrate,
                                            write_timeout=s.stall_seconds)
        reader.decoder.reset()
        reader.frames.clear()
        # Stop a continuous inventory left running, then end every answer with an LF. The
        # answer to BRK comes before end-of-frame is on: it may arrive without its LF.
        await self._write(reader, qc.break_command() + qc.end_of_frame())
        await self._answer(reader, lambda f: f.lines[-1] == qc.OK, partial=True)
        rev = await self._ask(reader, qc.revision(), qc.parse_revision)
        if isinstance(rev, qc.ReaderError):
            raise DeviceProtocolError(f"REV refused: {rev.code} ({rev.meaning})")
        serial = await self._ask(reader, qc.serial_number(), qc.parse_serial)
        serial = serial if isinstance(serial, str) else link.where
        if rev.model != s.model:
            raise _Refused("wrong_model", f"{link.where} is a {rev.model} (serial {serial}),"
                           f" not a {s.model}: not read")
        if rev.firmware_version < s.min_firmware:
            need = f"{s.min_firmware[0]}.{s.min_firmware[1]:02d}"
            raise _Refused("old_firmware", f"{rev.model} {serial} runs firmware"
                           f" {rev.firmware_text}, {need} or newer is needed: not read")
        for command in (qc.rf_on(), qc.antenna_report(on=True)):
            refused = await self._ask(reader, command, qc.parse_ok)
            if refused is not None:
                raise DeviceProtocolError(f"{command.decode().strip()} refused:"
                                          f" {refused.code} ({refused.meaning})")
        reader.faulted.clear()
        await self._up(reader, DeviceIdentity(kind="rfid", model=rev.model, serial=serial,
                                              firmware=rev.firmware_text),
                       hardware=rev.hardware)

    # ------------------------------------------------------------------ sweeping

    async def _run(self) -> None:
        # The first sweep waits for every reader's first connect (or its failure).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2 * self.settings.stall_seconds + 1.0):
                await self._all_tried.wait()
        while True:
            live = [r for r in self._readers if r.up and r.conn is not None]
            if not live:
                self._any_up.clear()
                await self._any_up.wait()
                continue
            self._sweep += 1
            self._counts["sweeps"] += 1
            results = await asyncio.gather(*(self._pass(r, self._sweep) for r in live),
                                           return_exceptions=True)
            for reader, result in zip(live, results, strict=True):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                if isinstance(result, DriverError):
                    await self._lost(reader, result)
                elif isinstance(result, BaseException):
                    self._counts["errors"] += 1
                    await self._lost(reader, DriverError(f"{type(result).__name__}: {result}"))
            if self.settings.sweep_pause:
                await asyncio.sleep(self.settings.sweep_pause)

    async def _pass(self, reader: _Reader, sweep: int) -> None:
        """One sweep of one reader: every mapped port in turn."""
        for port, spot in reader.link.antennas.items():
            uids = await self._read_port(reader, port, spot)
            if uids is None:
                self._counts["skipped_spots"] += 1
                continue
            self._counts["inventories"] += 1
            await self._queue.put(ChipInventory(
                reader=reader.name, antenna=port, spot=spot, uids=uids, report_seq=sweep,
                at_mono=self._clock()))

    async def _read_port(self, reader: _Reader, port: int,
                         spot: SpotId) -> frozenset[bytes] | None:
        """One port's chips, or None when they cannot be trusted this sweep (alerted)."""
        where = f"port {port_name(port)} (seat {spot.seat} {spot.spot})"
        problem = ""
        for _ in range(self.settings.attempts):
            try:
                refused = await self._ask(reader, qc.select_antenna(port), qc.parse_ok)
                if refused is not None:
                    await self._reader_error(reader, port, where, refused)
                    return None
                answer = await self._ask(reader, qc.inventory(), qc.parse_inventory)
                if isinstance(answer, qc.ReaderError):
                    if answer.code == "NRF":  # the RF field went off (a reset?): on again
                        await self._ask(reader, qc.rf_on(), qc.parse_ok)
                        raise _Retry(f"{where}: no RF field")
                    await self._reader_error(reader, port, where, answer)
                    return None
                if answer.antenna != port:
                    self._counts["antenna_mismatches"] += 1
                    if answer.antenna is None:  # the antenna report went off (a reset?)
                        await self._ask(reader, qc.antenna_report(on=True), qc.parse_ok)
                    raise _Retry(f"{where}: the answer names port {answer.antenna}")
                if answer.tag_errors:
                    self._counts["tag_errors"] += len(answer.tag_errors)
                    raise _Retry(f"{where}: {len(answer.tag_errors)} tag(s) heard but not read"
                                 f" ({', '.join(sorted(set(answer.tag_errors)))})")
                if not await self._iso_uids(reader, where, answer.uids):
                    return None
            except _Retry as exc:
                problem = str(exc)
                await self._resync(reader)
                continue
            if port in reader.faulted:
                reader.faulted.discard(port)
                await self._alert(reader, "antenna_fault_cleared", f"{where} reads again")
            return answer.uids
        await self._alert_limited(reader, "unreliable_read",
                                  f"{where} not reported this sweep: {problem}")
        return None

    async def _reader_error(self, reader: _Reader, port: int, where: str,
                            error: qc.ReaderError) -> None:
        if error.code in _ANTENNA_FAULTS or (error.code == "NOR"):
            self._counts["antenna_faults"] += 1
            if port not in reader.faulted:
                reader.faulted.add(port)
                await self._alert(reader, "antenna_fault",
                                  f"{where}: {error.code} ({error.meaning})")
            return
        self._counts["reader_errors"] += 1
        await self._alert_limited(reader, "reader_error",
                                  f"{where}: {error.code} ({error.meaning})")

    async def _iso_uids(self, reader: _Reader, where: str, uids: frozenset[bytes]) -> bool:
        """Whether every UID begins with E0, as ISO 15693 has it (D292). UIDs that end in E0
        come from a reader set to reverse them: alerted, the spot not reported (False); any
        other is a damaged answer (_Retry)."""
        odd = sorted(u for u in uids if u[0] != 0xE0)
        if not odd:
            return True
        if all(u[-1] == 0xE0 for u in odd):
            self._counts["uid_order"] += len(odd)
            await self._alert_limited(reader, "uid_order",
                                      f"{where}: UID {odd[0].hex().upper()} ends in E0: the"
                                      " reader reverses UIDs (set it to MSB first)")
            return False
        self._counts["not_iso_uids"] += 1
        raise _Retry(f"{where}: UID {odd[0].hex().upper()} does not begin with E0 (ISO 15693)")

    # ------------------------------------------------------------------ asking

    async def _ask(self, reader: _Reader, command: bytes,
                   parse: Callable[[qc.Frame], _T]) -> _T:
        """Send a command and parse its answer; _Retry if the answer is unusable."""
        self._drop_stale(reader)
        await self._write(reader, command)
        half = self.settings.stall_seconds / 2
        try:
            frame = await self._answer(reader, lambda _: True, wait=half)
        except _Stalled:  # an answer lost on the line: ask once more before giving up
            self._counts["resends"] += 1
            await self._write(reader, command)
            frame = await self._answer(reader, lambda _: True, wait=half)
        try:
            return parse(frame)
        except qc.QuasarProtocolError as exc:
            self._counts["bad_answers"] += 1
            await self._alert_limited(reader, "bad_frame",
                                      f"answer to {command.decode().strip()}: {exc}")
            raise _Retry(str(exc)) from exc

    async def _answer(self, reader: _Reader, wanted: Callable[[qc.Frame], bool], *,
                      partial: bool = False, wait: float | None = None) -> qc.Frame:
        """The next answer ``wanted`` accepts within ``wait`` (default ``stall_seconds``);
        _Retry on a corrupt one, _Stalled on none."""
        wait = self.settings.stall_seconds if wait is None else wait
        deadline = self._clock() + wait
        while True:
            while reader.frames:
                item = reader.frames.popleft()
                if isinstance(item, qc.FrameError):
                    self._counts["bad_frames"] += 1
                    await self._alert_limited(reader, "bad_frame", item.detail)
                    raise _Retry(item.detail)
                if item.lines[-1] == "SRT":
                    self._counts["reader_resets"] += 1
                    raise DeviceLost("the reader reset itself (SRT)")
                if wanted(item):
                    return item
                self._counts["stale_answers"] += 1
            left = deadline - self._clock()
            if left <= 0:
                if partial:
                    reader.frames.extend(reader.decoder.take_partial())
                    partial = False
                    if reader.frames:
                        continue
                raise _Stalled(f"no answer for {self.settings.stall_seconds:g} s")
            assert reader.conn is not None
            data = await reader.conn.read(min(left, 0.25))
            if data:
                self._last_seen = self._clock()
                reader.frames.extend(reader.decoder.feed(data))

    async def _resync(self, reader: _Reader) -> None:
        """After an unusable answer, line the answers up with the commands again: the
        answer to the command asked may still be on its way (noise can split one answer in
        two), and taken for the next command's it would put every later answer one behind.
        Ask REV, whose answer no other command gives, and drop every answer before it."""
        deadline = self._clock() + self.settings.stall_seconds
        self._counts["resyncs"] += 1
        while True:
            self._drop_stale(reader)
            await self._write(reader, qc.revision())
            left = deadline - self._clock()
            try:
                await self._answer(reader, _is_revision,
                                   wait=max(0.05, min(left, self.settings.stall_seconds / 2)))
                return
            except (_Retry, _Stalled):  # noise again, or no answer yet: ask once more
                if self._clock() >= deadline:
                    raise _Stalled("no answer to REV while lining answers up") from None

    def _drop_stale(self, reader: _Reader) -> None:
        """Answers nobody asked for (a duplicate, a late one) go before a new command."""
        while reader.frames:
            item = reader.frames.popleft()
            self._counts["stale_answers"] += 1
            if isinstance(item, qc.Frame) and item.lines[-1] == "SRT":
                reader.frames.appendleft(item)  # _answer raises on it
                return

    async def _write(self, reader: _Reader, data: bytes) -> None:
        if reader.conn is None:
            raise DeviceLost("not connected")
        await reader.conn.write(data)

    async def _close(self, reader: _Reader) -> None:
        conn, reader.conn = reader.conn, None
        if conn is not None:
            await conn.close()

    # ------------------------------------------------------------------ state and alerts

    async def _up(self, reader: _Reader, identity: DeviceIdentity, *, hardware: str) -> None:
        before = reader.identity
        reader.identity = identity
        reader.name = identity.serial
        detail = (f"{identity.model} serial {identity.serial} hardware {hardware} firmware"
                  f" {identity.firmware} at {reader.link.where}")
        self._counts["connects"] += 1
        if reader.ever_up:
            self._counts["reconnects"] += 1
            down = self._clock() - (reader.down_since or self._clock())
            await self._alert(reader, "reconnected", f"{detail}, after {down:.1f} s")
        else:
            await self._alert(reader, "connected", detail)
        if before is not None and before.serial != identity.serial:
            await self._alert(reader, "identity_changed",
                              f"reader {before.serial} was replaced by {identity.serial}")
        reader.up = reader.ever_up = True
        reader.outage_alerted = False
        reader.down_since = None

    async def _lost(self, reader: _Reader, exc: DriverError) -> None:
        """A connected reader failed: close it, alert, and have it reopened."""
        await self._close(reader)
        await self._down(reader, exc)
        reader.wanted.set()

    async def _down(self, reader: _Reader, exc: DriverError) -> None:
        kind = (exc.kind if isinstance(exc, _Refused)
                else "stalled" if isinstance(exc, _Stalled)
                else "disconnected" if isinstance(exc, DeviceLost | DeviceNotFound)
                else "protocol_error" if isinstance(exc, DeviceProtocolError)
                else "driver_error")
        if isinstance(exc, _Refused):
            self._counts["refused"] += 1
        if reader.up:
            reader.up = False
            reader.down_since = self._clock()
            self._counts["stalls" if kind == "stalled" else "disconnects"] += 1
            await self._alert(reader, kind, str(exc) or type(exc).__name__)
            reader.outage_alerted = True
            return
        self._counts["connect_failures"] += 1
        if reader.down_since is None:
            reader.down_since = self._clock()
        if not reader.outage_alerted:
            reader.outage_alerted = True
            await self._alert(reader, kind, str(exc) or type(exc).__name__)

    async def _alert(self, reader: _Reader, kind: str, detail: str) -> None:
        await self._queue.put(DeviceAlert(device=reader.name, kind=kind, detail=detail,
                                          at_mono=self._clock()))

    async def _alert_limited(self, reader: _Reader, kind: str, detail: str) -> None:
        state = self._limited.setdefault((reader.link.where, kind), _Limited())
        now = self._clock()
        if now - state.last < self.settings.alert_interval:
            state.suppressed += 1
            return
        more = f" (+{state.suppressed} more since the last alert)" if state.suppressed else ""
        state.last, state.suppressed = now, 0
        await self._alert(reader, kind, detail + more)
