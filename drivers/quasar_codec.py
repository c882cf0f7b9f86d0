"""The Metratec QuasarMX's plain-text protocol, sans-I/O: the commands we send as bytes, and
the reader's bytes back as frames and typed answers (docs/protocols/metratec-quasarmx.md).

No port, no clock. The subset the table uses, from Metratec's ISO 15693 protocol guide and
its MIT-licensed SDK (metratec-rfid 1.4.5):

    host -> reader   one ASCII command a line, ended by CR:  REV, RSN, BRK, EOF, SRI SS 100,
                     SAP <port>, SAP ARP ON, INV
    reader -> host   lines ended by CR; with end-of-frame on (EOF), each whole answer is
                     followed by one LF. An inventory answer is one UID a line (16 hex digits,
                     most significant byte first: E0 04 ... for an NXP ICODE chip), "ARP nn"
                     (the antenna port, with the antenna report on) and "IVF nn" (how many
                     tags) last. A reader error is a three-letter code alone (ERROR_CODES).

`FrameDecoder.feed` never raises on any bytes: a line that is no text (a byte outside
printable ASCII), an overlong line or an overlong answer becomes a `FrameError`. The
``parse_*`` functions read one `Frame` and raise only `QuasarProtocolError` (the codec's own
error type) when it is not the answer expected; a reader error code is a `ReaderError` value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from drivers.errors import DeviceProtocolError

__all__ = [
    "ERROR_CODES",
    "MAX_LINE",
    "MAX_LINES",
    "MAX_PORT",
    "OK",
    "TAG_ERRORS",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "Inventory",
    "QuasarProtocolError",
    "ReaderError",
    "Revision",
    "antenna_report",
    "break_command",
    "encode_command",
    "end_of_frame",
    "inventory",
    "parse_inventory",
    "parse_ok",
    "parse_revision",
    "parse_serial",
    "reader_error",
    "revision",
    "rf_on",
    "select_antenna",
    "serial_number",
]

CR: Final = 0x0D
LF: Final = 0x0A
MAX_LINE: Final = 64  # characters in a line, its CR not counted (a UID line has 16)
MAX_LINES: Final = 512  # lines in one answer (an antenna sees far fewer tags)
MAX_PORT: Final = 16  # 4 antennas, up to 4 multiplexer channels each
OK: Final = "OK!"
# Every error code the reader answers with, and what it means (Metratec's protocol guide,
# as its SDKs list them).
ERROR_CODES: Final[Mapping[str, str]] = {
    "ARH": "antenna reflectivity high (antenna broken, missing or detuned)",
    "BOD": "brown-out detected (supply voltage too low)",
    "BOF": "buffer overflow",
    "CCE": "communication CRC error",
    "CER": "CRC error in a tag's answer",
    "CLD": "collision detected",
    "CRT": "command receive timeout",
    "EDX": "decimal number expected",
    "EHF": "hardware failure",
    "EHX": "hex number expected",
    "FLE": "FIFO length error",
    "NCM": "not in continuous mode",
    "NOR": "number out of range",
    "NOS": "not supported",
    "NRF": "no RF field active",
    "NSS": "no standard selected",
    "PLE": "PLL error",
    "RDL": "read data too long",
    "RXE": "response count error",
    "SRT": "the reader reset itself (watchdog or hardware reset)",
    "TCE": "tag communication error",
    "TOE": "timeout error",
    "UCO": "unknown command",
    "UER": "unknown error",
    "UPA": "unknown parameter",
    "URE": "UART receive error",
    "WDL": "wrong data length",
}
# Errors about one tag inside an inventory answer: that tag's UID is not in it.
TAG_ERRORS: Final = frozenset({"CER", "FLE", "RDL", "RXE", "TCE", "TOE"})
_UID: Final = re.compile(r"[0-9A-F]{16}")
_ARP: Final = re.compile(r"ARP (\d{1,2})")
_IVF: Final = re.compile(r"IVF (\d{1,3})")
_REV: Final = re.compile(r"(.*\S) *(\d{4})(\d{4})")
_TOKEN: Final = re.compile(r"[A-Z0-9]+")
_SERIAL: Final = re.compile(r"[0-9A-Za-z_.\-]{1,32}")


class QuasarProtocolError(DeviceProtocolError):
    """An answer that breaks the protocol (not the answer expected, malformed, inconsistent)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One whole answer: its lines, CRs and LF removed."""

    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FrameError:
    """Bytes that are no answer (noise, a corrupted or overlong line); never a reading."""

    detail: str


@dataclass(frozen=True, slots=True)
class ReaderError:
    """The reader refused a command or failed at it: its code and what the code means."""

    code: str
    meaning: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Revision:
    """REV's answer: the model ("QUASAR_MX"), hardware and firmware revisions."""

    model: str
    hardware: str  # "0200"
    firmware: str  # "0307"

    @property
    def firmware_version(self) -> tuple[int, int]:
        """(major, minor): "0218" is (2, 18)."""
        return int(self.firmware[:2]), int(self.firmware[2:])

    @property
    def firmware_text(self) -> str:
        """The firmware as people write it: "2.18"."""
        major, minor = self.firmware_version
        return f"{major}.{minor:02d}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Inventory:
    """INV's answer: the UIDs (8 bytes each, as the registry keys them) one antenna sees."""

    uids: frozenset[bytes]
    antenna: int | None  # the port the reader reports (antenna report on), else None
    tag_errors: tuple[str, ...] = ()  # per-tag error codes: tags heard but not read


class FrameDecoder:
    """Bytes in, `Frame`s and `FrameError`s out; keeps a partial answer between calls."""

    def __init__(self) -> None:
        self._line = bytearray()
        self._lines: list[str] = []
        self._bad: str | None = None

    @property
    def unfinished(self) -> bool:
        """Whether part of an answer is waiting for the rest."""
        return bool(self._line or self._lines or self._bad)

    def reset(self) -> None:
        """Forget any partial answer (a new connection)."""
        self._line.clear()
        self._lines.clear()
        self._bad = None

    def feed(self, data: bytes) -> list[Frame | FrameError]:
        """Every answer the bytes complete (an LF ends an answer); never raises."""
        out: list[Frame | FrameError] = []
        for byte in data:
            if byte == LF:
                self._end_line()
                out.append(self._end_frame())
            elif byte == CR:
                self._end_line()
            elif 0x20 <= byte <= 0x7E:
                if len(self._line) < MAX_LINE:
                    self._line.append(byte)
                elif self._bad is None:
                    self._bad = f"a line longer than {MAX_LINE} characters"
            elif self._bad is None:
                self._bad = f"byte 0x{byte:02X} in a line (not printable ASCII)"
        return out

    def take_partial(self) -> list[Frame | FrameError]:
        """The lines received without an LF yet, as one answer (for answers a reader sends
        before end-of-frame is on); nothing when no line is complete."""
        if not self._lines and self._bad is None:
            return []
        return [self._end_frame()]

    def _end_line(self) -> None:
        if self._line:
            if len(self._lines) < MAX_LINES:
                self._lines.append(self._line.decode("ascii"))
            elif self._bad is None:
                self._bad = f"an answer longer than {MAX_LINES} lines"
            self._line.clear()

    def _end_frame(self) -> Frame | FrameError:
        bad, lines = self._bad, tuple(self._lines)
        self._lines.clear()
        self._bad = None
        if bad is not None:
            return FrameError(bad)
        if not lines:
            return FrameError("an empty answer (LF alone)")
        return Frame(lines)


# ---------------------------------------------------------------------- commands

def encode_command(name: str, *params: str | int) -> bytes:
    """One command line: ``NAME P1 P2<CR>``; ValueError for a name or parameter that is not
    upper-case letters and digits."""
    words = [name, *(str(p) for p in params)]
    for word in words:
        if not _TOKEN.fullmatch(word):
            raise ValueError(f"a command word is upper-case letters and digits, got {word!r}")
    return (" ".join(words) + "\r").encode("ascii")


def revision() -> bytes:
    """REV: the model, hardware and firmware revisions (`parse_revision`)."""
    return encode_command("REV")


def serial_number() -> bytes:
    """RSN: the reader's serial number (`parse_serial`)."""
    return encode_command("RSN")


def break_command() -> bytes:
    """BRK: stop a continuous inventory left running (answered NCM when none runs)."""
    return encode_command("BRK")


def end_of_frame() -> bytes:
    """EOF: end every answer with an LF, so an answer's end is known (`parse_ok`)."""
    return encode_command("EOF")


def rf_on() -> bytes:
    """SRI SS 100: the RF interface on, single subcarrier, 100 % ASK (`parse_ok`)."""
    return encode_command("SRI", "SS", 100)


def antenna_report(on: bool = True) -> bytes:
    """SAP ARP ON: each inventory answer names its antenna port (`parse_ok`)."""
    return encode_command("SAP", "ARP", "ON" if on else "OFF")


def select_antenna(port: int) -> bytes:
    """SAP <port>: the antenna port (1..16, a multiplexer channel beyond 4) the next
    inventory uses (`parse_ok`)."""
    if not 1 <= port <= MAX_PORT:
        raise ValueError(f"an antenna port is 1..{MAX_PORT}, got {port}")
    return encode_command("SAP", port)


def inventory() -> bytes:
    """INV: one inventory on the selected antenna (`parse_inventory`)."""
    return encode_command("INV")


# ---------------------------------------------------------------------- answers

def reader_error(line: str) -> ReaderError | None:
    """The reader error a line is, or None when it is none."""
    meaning = ERROR_CODES.get(line)
    return None if meaning is None else ReaderError(line, meaning)


def _last(frame: Frame) -> str:
    return frame.lines[-1]


def parse_ok(frame: Frame) -> ReaderError | None:
    """A setting command's answer: None for OK!, the `ReaderError` it refused with."""
    last = _last(frame)
    if last == OK:
        return None
    error = reader_error(last)
    if error is not None:
        return error
    raise QuasarProtocolError(f"expected OK! or an error code, got {last!r}")


def parse_revision(frame: Frame) -> Revision | ReaderError:
    """REV's answer ("QUASAR_MX      02000307"), or the error the reader gave."""
    last = _last(frame)
    error = reader_error(last)
    if error is not None:
        return error
    match = _REV.fullmatch(last)
    if match is None:
        raise QuasarProtocolError(f"expected a revision (a model and 8 digits), got {last!r}")
    return Revision(model=match[1].strip(), hardware=match[2], firmware=match[3])


def parse_serial(frame: Frame) -> str | ReaderError:
    """RSN's answer: the serial number (1..32 letters, digits, ``_.-``)."""
    last = _last(frame)
    error = reader_error(last)
    if error is not None:
        return error
    if not _SERIAL.fullmatch(last):
        raise QuasarProtocolError(f"expected a serial number, got {last!r}")
    return last


def parse_inventory(frame: Frame) -> Inventory | ReaderError:
    """INV's answer: the UIDs, the antenna port reported, the per-tag errors; or the error
    the reader gave instead (no RF field, a broken antenna...)."""
    lines = frame.lines
    if len(lines) == 1:
        error = reader_error(lines[0])
        if error is not None:
            return error
    count = _IVF.fullmatch(lines[-1])
    if count is None:
        raise QuasarProtocolError(f"an inventory ends with IVF <count>, this one {lines[-1]!r}")
    uids: list[bytes] = []
    antenna: int | None = None
    tag_errors: list[str] = []
    for line in lines[:-1]:
        if _UID.fullmatch(line):
            if antenna is not None:
                raise QuasarProtocolError("a UID after the antenna report")
            uids.append(bytes.fromhex(line))
        elif (arp := _ARP.fullmatch(line)) is not None:
            if antenna is not None:
                raise QuasarProtocolError("two antenna reports in one inventory")
            antenna = int(arp[1])
        elif line in TAG_ERRORS:
            tag_errors.append(line)
        else:
            raise QuasarProtocolError(f"not a UID, an antenna report or a tag error: {line!r}")
    if int(count[1]) != len(uids):
        raise QuasarProtocolError(f"IVF says {int(count[1])} tags, {len(uids)} UIDs came")
    if len(set(uids)) != len(uids):
        raise QuasarProtocolError("the same UID twice in one inventory")
    return Inventory(uids=frozenset(uids), antenna=antenna, tag_errors=tuple(tag_errors))
