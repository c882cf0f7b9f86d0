"""The table's ID reader over PC/SC: `PcscIdReader` watches one reader of the machine's
``pcscd`` (pyscard's ``smartcard.scard``, the PC/SC API itself), and for each card laid on it
asks the card's UID with PC/SC part 3's GET DATA (``FF CA 00 00 00``). A UID answered with
``90 00`` is ``IdTap(number=<UID upper-case hex>, form="uid")``, the same reading the serial
and keyboard-wedge readers give for the same card.

Every PC/SC call blocks (``SCardGetStatusChange`` waits up to ``poll`` seconds for a change),
so they all run on one `runtime.worker_thread.WorkerThread`, which also keeps the PC/SC
context on the one thread that made it. What goes wrong becomes an alert, never a traceback:

    pcscd not running             not_found / lost  "pcscd is not running (...)"
    no reader, or none matching   not_found / lost  "no PC/SC reader ..." (names those present)
    the reader unplugged          lost              "the reader ... is gone (...)"
    a card without GET DATA       bad_read          "... GET DATA answered 6A 81 (...)"
    a card taken away too soon    bad_read          "the card left the reader before ..."

and the driver reconnects when pcscd or the reader comes back (jittered backoff). A card held
on the reader is read once; it is another tap when it is taken away and laid down again.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final

from drivers.errors import DeviceLost, DeviceNotFound, DriverError, LibraryMissing
from drivers.id_codec import problem
from drivers.id_stream import IdStream
from drivers.readings import IdTap
from runtime.backoff import Backoff
from runtime.worker_thread import WorkerThread

__all__ = ["GET_UID", "PcscIdReader", "load_scard", "reader_list", "survey", "uid_from_response"]

GET_UID: Final = (0xFF, 0xCA, 0x00, 0x00, 0x00)  # PC/SC part 3 GET DATA: the card's UID
_STATUS_WORDS: Final = {
    0x6281: "part of the data may be corrupted",
    0x6282: "end of data before Le bytes",
    0x6700: "wrong length",
    0x6A81: "function not supported",
    0x6A82: "file not found",
    0x6B00: "wrong parameters P1-P2",
    0x6D00: "instruction not supported",
    0x6E00: "class not supported",
}
_SERVICE_GONE: Final = ("SCARD_E_NO_SERVICE", "SCARD_E_SERVICE_STOPPED", "SCARD_E_INVALID_HANDLE",
                        "SCARD_F_COMM_ERROR")
_READER_GONE: Final = ("SCARD_E_UNKNOWN_READER", "SCARD_E_READER_UNAVAILABLE",
                       "SCARD_E_NO_READERS_AVAILABLE")
_CARD_GONE: Final = ("SCARD_W_REMOVED_CARD", "SCARD_E_NO_SMARTCARD", "SCARD_W_RESET_CARD",
                     "SCARD_W_UNPOWERED_CARD")
_REFUSED: Final = "SCARD_W_SECURITY_VIOLATION"  # "Access denied"
_FIX_SERVICE: Final = "start it: systemctl enable --now pcscd.socket"


def load_scard() -> ModuleType:
    """pyscard's PC/SC module (`LibraryMissing` naming the extra when it is not installed)."""
    try:
        return importlib.import_module("smartcard.scard")
    except ImportError as exc:
        raise LibraryMissing("pyscard", "readers", "the PC/SC ID reader") from exc


def uid_from_response(response: Sequence[int]) -> tuple[str | None, str]:
    """The UID in a GET DATA response (``(uid, "")``), or ``(None, why)``: pure, never raises."""
    if not response:
        return None, "the card gave no answer to GET DATA (taken off the reader too soon?)"
    if len(response) < 2:
        return None, f"GET DATA answered {len(response)} bytes, no status word"
    sw = response[-2] << 8 | response[-1]
    if sw != 0x9000:
        meaning = _STATUS_WORDS.get(sw, "an error")
        return None, (f"the card does not give its UID: GET DATA answered "
                      f"{sw >> 8:02X} {sw & 0xFF:02X} ({meaning})")
    uid = bytes(response[:-2]).hex().upper()
    if (why := problem(uid, "uid")) is not None:
        return None, f"GET DATA answered a UID of {len(uid) // 2} bytes: {why}"
    return uid, ""


def reader_list(scard: ModuleType, context: Any) -> list[str]:
    """The readers pcscd knows (empty when none; DeviceLost when pcscd went away)."""
    hr, readers = scard.SCardListReaders(context, [])
    if hr == scard.SCARD_E_NO_READERS_AVAILABLE:
        return []
    _check(scard, hr, "listing the readers")
    return list(readers)


def _name(scard: ModuleType, hr: int) -> str:
    for name in (*_SERVICE_GONE, *_READER_GONE, *_CARD_GONE, _REFUSED, "SCARD_E_TIMEOUT",
                 "SCARD_E_SHARING_VIOLATION", "SCARD_W_UNRESPONSIVE_CARD",
                 "SCARD_E_PROTO_MISMATCH", "SCARD_E_NOT_TRANSACTED"):
        if getattr(scard, name, None) == hr:
            return name
    return f"0x{hr & 0xFFFFFFFF:08X}"


def _check(scard: ModuleType, hr: int, doing: str) -> None:
    """Raise the driver error a PC/SC result means (nothing for success)."""
    if hr == scard.SCARD_S_SUCCESS:
        return
    name = _name(scard, hr)
    message = f"{doing}: {scard.SCardGetErrorMessage(hr).rstrip('.')} ({name})"
    if name in _SERVICE_GONE:
        raise DeviceLost(f"pcscd is not running ({message}); {_FIX_SERVICE}")
    if name in _READER_GONE:
        raise DeviceLost(f"the reader is gone ({message})")
    if name == _REFUSED:  # a pcscd shutting down says so too
        raise DeviceLost(f"pcscd refused access ({message}): it is stopping, or its polkit"
                         " policy denies this user (docs/operations/id-readers.md)")
    raise DriverError(message)


class _CardGone(Exception):
    """The card left before it was read (a bad read, not a lost reader)."""


class PcscIdReader(IdStream):
    """The table's ID reader on PC/SC, satisfying `drivers.protocols.IdReader`.

    ``reader`` picks the reader whose name contains it (case-insensitive; "" for the first
    pcscd lists). ``async with PcscIdReader("ACR122") as ids: async for r in ids: ...``.
    Opening never fails because pcscd or the reader is absent: the driver alerts once per
    outage and keeps trying.
    """

    _kind = "PC/SC reader"

    def __init__(
        self,
        reader: str = "",
        *,
        device_name: str | None = None,
        poll: float = 0.25,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        scard: ModuleType | None = None,
    ) -> None:
        if poll <= 0:
            raise ValueError("poll must be positive")
        super().__init__(device_name if device_name is not None else "id-reader", clock)
        self.reader = reader
        self._scard = scard if scard is not None else load_scard()
        self._poll_ms = max(1, round(poll * 1000))
        self._backoff = backoff if backoff is not None else Backoff(initial=0.2, maximum=5.0)
        self._worker = WorkerThread(f"pcsc[{self.device}]")
        self._context: Any = None
        self.reader_name: str | None = None  # the reader in use, as pcscd names it

    # ------------------------------------------------------------------ the loop (event loop)

    async def _run(self) -> None:
        ever = reported = False
        while True:
            try:
                name = await self._worker.call(self._attach)
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    self._log.exception("PC/SC driver error while connecting")
                if not reported:
                    reported = True
                    self._alert("lost" if ever else "not_found", str(exc))
                await self._worker.call(self._release)
                await asyncio.sleep(self._backoff.next_delay())
                continue
            self._backoff.reset()
            self._up(ever, f"reading on {name}")
            ever, reported = True, False
            try:
                await self._watch(name)
            except Exception as exc:
                if not isinstance(exc, DriverError):
                    self._log.exception("PC/SC driver error while reading")
                self._down()
                reported = True
                self._alert("lost", str(exc) or type(exc).__name__)
                await self._worker.call(self._release)

    async def _watch(self, name: str) -> None:
        scard = self._scard
        state = scard.SCARD_STATE_UNAWARE
        present, insertions = False, -1
        while True:
            event, atr = await self._worker.call(self._wait_change, name, state)
            if event is None:
                continue  # no change within the poll
            self._last_seen = self._clock()
            state = event & ~scard.SCARD_STATE_CHANGED
            if event & (scard.SCARD_STATE_UNKNOWN | scard.SCARD_STATE_UNAVAILABLE):
                raise DeviceLost(f"the reader {name} is gone")
            now = bool(event & scard.SCARD_STATE_PRESENT)
            # pcsc-lite counts a reader's card events in the state's upper 16 bits: a card
            # swapped for another between two waits is present both times, counted twice
            counted = event >> 16
            swapped = present and now and insertions >= 0 and counted != insertions
            insertions = counted
            if now and (not present or swapped):
                if event & scard.SCARD_STATE_MUTE:
                    self._bad_read(f"a card that does not answer (mute; ATR {bytes(atr).hex()})")
                else:
                    await self._read_card(name)
            present = now

    async def _read_card(self, name: str) -> None:
        try:
            response = await self._worker.call(self._get_uid, name)
        except _CardGone as exc:
            self._bad_read(str(exc))
            return
        uid, why = uid_from_response(response)
        if uid is None:
            self._bad_read(why)
            return
        self._tap(IdTap(number=uid, form="uid", device=self.device, at_mono=self._clock()))

    async def _closed(self) -> None:
        try:
            await self._worker.call(self._release)
        finally:
            self._worker.close(wait=False)
            self._connected = False

    # ------------------------------------------------------------------ the worker thread

    def _attach(self) -> str:
        """A context (made when there is none) and the reader to watch, by name."""
        scard = self._scard
        if self._context is None:
            hr, context = scard.SCardEstablishContext(scard.SCARD_SCOPE_USER)
            _check(scard, hr, "opening a PC/SC context")
            self._context = context
        readers = reader_list(scard, self._context)
        if not readers:
            raise DeviceNotFound("no PC/SC reader is connected (pcscd is running and lists"
                                 " none)")
        wanted = self.reader.casefold()
        for name in readers:
            if wanted in name.casefold():
                self.reader_name = name
                return name
        raise DeviceNotFound(f"no PC/SC reader's name contains {self.reader!r}; readers: "
                             + ", ".join(readers))

    def _release(self) -> None:
        context, self._context = self._context, None
        if context is not None:
            self._scard.SCardReleaseContext(context)

    def _wait_change(self, name: str, state: int) -> tuple[int | None, list[int]]:
        scard = self._scard
        hr, states = scard.SCardGetStatusChange(self._context, self._poll_ms, [(name, state)])
        if hr == scard.SCARD_E_TIMEOUT:
            return None, []
        _check(scard, hr, f"watching {name}")
        _, event, atr = states[0]
        return int(event), list(atr)

    def _get_uid(self, name: str) -> list[int]:
        scard = self._scard
        hr, card, protocol = scard.SCardConnect(
            self._context, name, scard.SCARD_SHARE_SHARED,
            scard.SCARD_PROTOCOL_T0 | scard.SCARD_PROTOCOL_T1)
        if _name(scard, hr) in (*_CARD_GONE, "SCARD_W_UNRESPONSIVE_CARD"):
            raise _CardGone(f"the card left the reader before it was read ({_name(scard, hr)})")
        _check(scard, hr, f"connecting to the card on {name}")
        try:
            hr, response = scard.SCardTransmit(card, protocol, list(GET_UID))
            if hr == scard.SCARD_S_SUCCESS and len(response) == 2 and response[0] == 0x6C:
                # the reader wants the exact length: ask again with Le = the UID's length
                hr, response = scard.SCardTransmit(card, protocol, [*GET_UID[:4], response[1]])
            if _name(scard, hr) in _CARD_GONE:
                raise _CardGone("the card left the reader before its UID was read"
                                f" ({_name(scard, hr)})")
            _check(scard, hr, f"asking the card on {name} for its UID")
            return list(response)
        finally:
            scard.SCardDisconnect(card, scard.SCARD_LEAVE_CARD)


def survey(reader: str = "", *, scard: ModuleType | None = None) -> tuple[str, str | None]:
    """Which reader pcscd would give the driver (`showdown doctor`): ``(name, firmware)``,
    the firmware when the reader's driver reports it (SCARD_ATTR_VENDOR_IFD_VERSION, None
    otherwise). Raises what the driver would alert: DeviceLost (pcscd down), DeviceNotFound
    (no reader, none matching), LibraryMissing."""
    scard = scard if scard is not None else load_scard()
    hr, context = scard.SCardEstablishContext(scard.SCARD_SCOPE_USER)
    _check(scard, hr, "opening a PC/SC context")
    try:
        readers = reader_list(scard, context)
        if not readers:
            raise DeviceNotFound("no PC/SC reader is connected (pcscd is running and lists"
                                 " none)")
        matching = [name for name in readers if reader.casefold() in name.casefold()]
        if not matching:
            raise DeviceNotFound(f"no PC/SC reader's name contains {reader!r}; readers: "
                                 + ", ".join(readers))
        return matching[0], _firmware(scard, context, matching[0])
    finally:
        scard.SCardReleaseContext(context)


def _firmware(scard: ModuleType, context: Any, name: str) -> str | None:
    """The reader's firmware version through a direct connection (no card needed)."""
    hr, handle, _ = scard.SCardConnect(context, name, scard.SCARD_SHARE_DIRECT, 0)
    if hr != scard.SCARD_S_SUCCESS:
        return None
    try:
        hr, value = scard.SCardGetAttrib(handle, scard.SCARD_ATTR_VENDOR_IFD_VERSION)
        if hr != scard.SCARD_S_SUCCESS or len(value) < 4:
            return None
        # PC/SC part 3: DWORD 0xMMmmbbbb (major, minor, build), little-endian
        version = int.from_bytes(bytes(value[:4]), "little")
        return f"{version >> 24}.{(version >> 16) & 0xFF}.{version & 0xFFFF}"
    finally:
        scard.SCardDisconnect(handle, scard.SCARD_LEAVE_CARD)
