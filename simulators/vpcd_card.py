"""A contactless card in software for a real ``pcscd``: it connects to the virtual reader
driver of Debian's ``vsmartcard-vpcd`` (ifd-vpcd, listening on TCP) as its virtual card
("vicc"), so PC/SC clients see a card on the reader "Virtual PCD 00 00" exactly as a card laid
on a USB NFC reader.

The vicc protocol (vsmartcard's vpcd.c): every message either way is a 2-byte big-endian
length and that many bytes. From the reader, a 1-byte message is a control (0 power off, 1
power on, 2 reset, 4 "your ATR?"), anything longer a command APDU; the card answers the ATR
request with its ATR and each APDU with its response, and says nothing to the other controls.
The reader holds a card present while its vicc is connected and answers the ATR request
(pcscd asks at every presence poll, about 0.4 s): presenting the card is connecting,
withdrawing it is closing the connection.

The card answers PC/SC part 3's GET DATA (``FF CA 00 00 Le``) with its UID and ``90 00``,
``FF CA 01 00 00`` (the ATS) with ``6A 81`` (a storage card has none), any other ``FF``
instruction with ``6D 00`` and any other class with ``6E 00``.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Final

import structlog

from drivers.readings import masked

__all__ = ["CTRL_ATR", "CTRL_OFF", "CTRL_ON", "CTRL_RESET", "VPCD_PORT", "VpcdCard",
           "contactless_atr"]

_log = structlog.get_logger("simulators.vpcd_card")

VPCD_PORT: Final = 35963  # ifd-vpcd's default (/etc/reader.conf.d/vpcd: 0x8C7B)
CTRL_OFF, CTRL_ON, CTRL_RESET, CTRL_ATR = 0, 1, 2, 4
SW_OK: Final = b"\x90\x00"
SW_UNSUPPORTED: Final = b"\x6a\x81"  # function not supported
SW_WRONG_P1P2: Final = b"\x6b\x00"
SW_INS_UNKNOWN: Final = b"\x6d\x00"
SW_CLA_UNKNOWN: Final = b"\x6e\x00"
SW_END_BEFORE_LE: Final = b"\x62\x82"
# PC/SC part 3 (3.1.3.2.3): the card name bytes of a contactless storage card's ATR.
_CARD_NAMES: Final = {4: b"\x00\x01", 7: b"\x00\x03", 10: b"\x00\x03"}  # MIFARE 1K, Ultralight


def contactless_atr(uid_bytes: int) -> bytes:
    """The ATR a PC/SC reader builds for an ISO 14443 A storage card (PC/SC part 3: ``3B 8F
    80 01 80 4F 0C`` RID ``A0 00 00 03 06``, standard 03, card name, RFU, TCK)."""
    name = _CARD_NAMES.get(uid_bytes, b"\x00\x01")
    body = b"\x8f\x80\x01" + b"\x80\x4f\x0c\xa0\x00\x00\x03\x06\x03" + name + b"\x00" * 4
    tck = 0
    for byte in body:
        tck ^= byte
    return b"\x3b" + body + bytes([tck])


def answer(apdu: bytes, uid: bytes, *, get_data: bool = True) -> bytes:
    """The card's response to one command APDU (``get_data=False``: GET DATA unsupported)."""
    if len(apdu) < 4:
        return b"\x67\x00"  # wrong length
    cla, ins, p1, p2 = apdu[:4]
    if cla != 0xFF:
        return SW_CLA_UNKNOWN
    if ins != 0xCA:
        return SW_INS_UNKNOWN
    if p1 == 0x01 or not get_data:  # the ATS: a storage card has none
        return SW_UNSUPPORTED
    if p1 != 0x00 or p2 != 0x00:
        return SW_WRONG_P1P2
    le = apdu[4] if len(apdu) > 4 else 0
    if le == 0 or le == len(uid):
        return uid + SW_OK
    if le < len(uid):
        return b"\x6c" + bytes([len(uid)])  # wrong Le: here is the right one
    return uid + SW_END_BEFORE_LE


class VpcdCard:
    """One contactless card for vpcd: ``present`` lays it on the reader (connects), ``withdraw``
    takes it off. Thread-safe; a served connection runs on its own daemon thread.

    ``faults`` (switch at any time): ``unsupported`` answers GET DATA with ``6A 81``,
    ``garbage`` answers it with one byte and no status word, ``drop`` withdraws the card
    instead of answering (the card leaves the field mid-command), ``silent`` leaves at the
    reader's first ATR request without answering (a card the reader never sees). `once`
    applies one of the first three to the next GET DATA only.
    """

    def __init__(self, uid: str, *, host: str = "127.0.0.1", port: int = VPCD_PORT) -> None:
        self.host, self.port = host, port
        self._uid = self._check_uid(uid)
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.faults: dict[str, bool] = dict.fromkeys(
            ("unsupported", "garbage", "drop", "silent"), False)
        self._once: list[str] = []
        self.stats: dict[str, int] = dict.fromkeys(("presented", "atr", "apdus", "get_data"), 0)
        self.asked = threading.Event()  # set when GET DATA came since the card was presented

    @staticmethod
    def _check_uid(uid: str) -> bytes:
        try:
            raw = bytes.fromhex(uid)
        except ValueError:
            raise ValueError(f"a UID is hex digits, got {len(uid)} characters that are"
                             " not") from None
        if len(raw) not in (4, 7, 10):
            raise ValueError(f"a UID has 4, 7 or 10 bytes, this one {len(raw)}")
        return raw

    @property
    def uid(self) -> str:
        """The card's UID in upper-case hex."""
        return self._uid.hex().upper()

    @uid.setter
    def uid(self, value: str) -> None:
        self._uid = self._check_uid(value)

    @property
    def present_now(self) -> bool:
        """Whether the card is on the reader (its connection to vpcd open)."""
        return self._sock is not None

    def once(self, fault: str) -> None:
        """Apply ``fault`` ("unsupported", "garbage", "drop") to the next GET DATA only."""
        if fault not in self.faults or fault == "silent":
            raise ValueError(f"unknown card fault {fault!r}; one of {', '.join(self.faults)}")
        with self._lock:
            self._once.append(fault)

    def present(self) -> None:
        """Lay the card on the reader: connect to vpcd (ConnectionError if nothing listens)."""
        with self._lock:
            if self._sock is not None:
                return
            sock = socket.create_connection((self.host, self.port), timeout=2.0)
            sock.settimeout(None)
            self._sock = sock
            self.asked.clear()
            self.stats["presented"] += 1
            self._thread = threading.Thread(target=self._serve, args=(sock,), daemon=True,
                                            name=f"vpcd-card[{self.port}]")
            self._thread.start()
        _log.info("vpcd card presented", uid=masked(self.uid), port=self.port)

    def withdraw(self) -> None:
        """Take the card off the reader: close the connection (the reader notices at its next
        presence poll)."""
        with self._lock:
            sock, self._sock = self._sock, None
            thread, self._thread = self._thread, None
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)

    # ------------------------------------------------------------------ the vicc protocol

    def _serve(self, sock: socket.socket) -> None:
        try:
            while (message := _receive(sock)) is not None:
                reply = self._handle(message)
                if reply is _WITHDRAW:
                    break
                if reply is not None:
                    sock.sendall(struct.pack(">H", len(reply)) + reply)
        except OSError:
            pass  # withdrawn: the socket was closed under the read
        finally:
            with self._lock:
                if self._sock is sock:
                    self._sock = None
            with contextlib.suppress(OSError):
                sock.close()

    def _handle(self, message: bytes) -> bytes | None:
        if len(message) == 1:  # a control
            if message[0] == CTRL_ATR:
                self.stats["atr"] += 1
                if self.faults["silent"]:
                    return _WITHDRAW  # no ATR, and gone: the reader never sees a card
                return contactless_atr(len(self._uid))
            return None  # power off/on, reset: nothing to say
        self.stats["apdus"] += 1
        if message[:2] != b"\xff\xca":
            return answer(message, self._uid)
        self.stats["get_data"] += 1
        self.asked.set()
        with self._lock:
            fault = self._once.pop(0) if self._once else None
        if fault == "drop" or self.faults["drop"]:
            return _WITHDRAW
        if fault == "garbage" or self.faults["garbage"]:
            return b"\x5a"
        return answer(message, self._uid,
                      get_data=not (fault == "unsupported" or self.faults["unsupported"]))


_WITHDRAW: Final = b"withdraw"  # a sentinel reply: leave the field instead of answering


def _receive(sock: socket.socket) -> bytes | None:
    """One vicc message, or None when the reader closed the connection."""
    head = _exactly(sock, 2)
    if head is None:
        return None
    (length,) = struct.unpack(">H", head)
    return _exactly(sock, length) if length else b""


def _exactly(sock: socket.socket, count: int) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)
