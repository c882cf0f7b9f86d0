"""The table's receipt printer: a score slip (`controller.slip_layout.SlipLayout`) as ESC/POS
bytes, and those bytes sent to an ESC/POS printer on a serial port, USB or the network, through
python-escpos (the optional extra ``printer``; decision D350).

- `receipt_bytes(layout, columns)`: the slip's ESC/POS job, built in memory (python-escpos's
  ``Dummy`` printer: no I/O): initialise, the lines, the code large, the QR code by the
  printer's own command (``GS ( k``: no image is rendered on the table PC), feed and cut.
- `EscposPrinter`: one job at a time, each on a fresh connection (a printer switched off and
  on again between slips is found again): open, ask its status (``DLE EOT 1`` online, ``DLE
  EOT 4`` paper; no answer in ``timeout`` is a refusal too) when ``check_status``, send the
  job, close. Blocking: the daemon calls it in a
  worker thread, and every wait is bounded by ``[printer] timeout``.
- `PrinterError`: why a slip was not printed, in words for the dealer's banner ("the printer
  is out of paper", "the printer at 10.1.4.20:9100 did not answer: ..."). Nothing of python-
  escpos, pyserial, pyusb or the socket leaks past this module.

A simulated printer (`simulators.receipt_printer`) listens where a network printer does, so
the same code runs in tests and on a simulated table (`controller.wiring` opens it for
``kind = "sim"``).
"""

from __future__ import annotations

import contextlib
import textwrap
from typing import TYPE_CHECKING, Any, Final, Protocol

from controller.printer_config import PrinterConfig
from controller.slip_layout import SlipLayout

if TYPE_CHECKING:
    from escpos.escpos import Escpos

__all__ = ["QR_MODULE_DOTS", "EscposPrinter", "PrinterError", "ReceiptPrinter",
           "receipt_bytes"]

QR_MODULE_DOTS: Final = 6  # printer dots a QR module: about 27 mm for a version-6 code
_LABEL: Final = 13  # the labels' column on the receipt
_OFFLINE: Final = 0x08  # DLE EOT 1, bit 3: offline
_PAPER_END: Final = 0x60  # DLE EOT 4, bits 5 and 6: the paper-end sensor


class PrinterError(Exception):
    """A slip the printer did not print; ``reason`` says why, for the dealer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ReceiptPrinter(Protocol):
    """What the daemon prints slips on (`EscposPrinter`)."""

    config: PrinterConfig

    def print_job(self, job: bytes) -> None:
        """Print ``job`` (ESC/POS bytes) or raise PrinterError; blocking, bounded."""
        ...

    def close(self) -> None:
        """Release what the printer holds (a simulated printer stops)."""
        ...


def _fact_lines(label: str, value: str, columns: int) -> list[str]:
    width = max(columns - _LABEL - 1, 8)
    parts = textwrap.wrap(value, width=width, break_long_words=True) or ["-"]
    return [f"{label if i == 0 else '':<{_LABEL}} {part}" for i, part in enumerate(parts)]


def receipt_bytes(layout: SlipLayout, columns: int = 42) -> bytes:
    """The slip as one ESC/POS job (bytes), for a printer of ``columns`` characters a line."""
    from escpos.constants import QR_ECLEVEL_M  # noqa: PLC0415 - the extra, when printing
    from escpos.printer import Dummy  # noqa: PLC0415

    p = Dummy()
    p.hw("INIT")
    p.set(align="center", bold=True, double_height=True)
    for line in textwrap.wrap(layout.title, width=columns):
        p.textln(line)
    p.set(bold=False, normal_textsize=True)
    p.textln(layout.heading)
    p.textln("-" * columns)
    p.set(align="left")
    for label, value, _ in layout.facts:
        for line in _fact_lines(label, value, columns):
            p.textln(line)
    if layout.warning:
        p.set(bold=True)
        for line in textwrap.wrap(layout.warning, width=columns):
            p.textln(line)
        p.set(bold=False)
    p.textln("-" * columns)
    p.set(align="center")
    p.textln("Verification code")
    p.set(bold=True, double_height=True)
    p.textln(layout.code_grouped)
    p.set(bold=False, normal_textsize=True)
    p.textln(f"SHA-256, {layout.message}")
    half = len(layout.code) // 2
    for line in (layout.code[:half], layout.code[half:]):
        p.textln(line)
    p.qr(layout.qr, ec=QR_ECLEVEL_M, size=QR_MODULE_DOTS, native=True)
    p.ln()
    p.set(align="left")
    p.cut()
    return bytes(p.output)


class EscposPrinter:
    """An ESC/POS receipt printer of `PrinterConfig` (serial, USB or network)."""

    def __init__(self, config: PrinterConfig, *, host: str | None = None,
                 port: int | None = None) -> None:
        """``host``/``port``: where a network printer is, when not the config's (a
        simulated printer's address)."""
        self.config = config
        self.host = config.host if host is None else host
        self.port = config.port if port is None else port

    def _where(self) -> str:
        c = self.config
        if c.kind == "escpos-serial":
            return f"the printer on {c.device}"
        if c.kind == "escpos-usb":
            return f"the USB printer {c.vendor_id:04x}:{c.product_id:04x}"
        return f"the printer at {self.host}:{self.port}"

    def _device(self) -> Escpos:
        from escpos import printer  # noqa: PLC0415 - the extra, when printing

        c = self.config
        if c.kind == "escpos-serial":
            return printer.Serial(devfile=c.device, baudrate=c.baudrate, timeout=c.timeout)
        if c.kind == "escpos-usb":
            return printer.Usb(c.vendor_id, c.product_id, timeout=int(c.timeout * 1000))
        return printer.Network(host=self.host, port=self.port, timeout=c.timeout)

    def print_job(self, job: bytes) -> None:
        """Print ``job`` on a fresh connection, after asking the printer's status."""
        from escpos.exceptions import Error as EscposError  # noqa: PLC0415

        where = self._where()
        device = self._device()
        try:
            try:
                device.open()
            except EscposError as exc:
                raise PrinterError(f"{where} is offline or not connected:"
                                   f" {_first_line(exc)}") from exc
            if self.config.check_status:
                self._check(device, where)
            device._raw(job)  # python-escpos's way to send bytes as they are
        except PrinterError:
            raise
        except (OSError, EscposError, ValueError) as exc:  # pyserial's and pyusb's are OSErrors
            raise PrinterError(f"{where} did not take the slip: {_first_line(exc)}") from exc
        finally:
            _close(device)

    def _status(self, device: Any, query: bytes) -> int | None:
        """The printer's one status byte for ``query`` (None: no answer in time). On a serial
        line one byte is read as soon as it comes (python-escpos reads 16, waiting out the
        whole timeout every time)."""
        try:
            if self.config.kind == "escpos-serial":
                device._raw(query)  # python-escpos's way to send bytes as they are
                answer = bytes(device.device.read(1))
            else:
                answer = bytes(device.query_status(query))
        except TimeoutError:
            return None
        return answer[0] if answer else None

    def _check(self, device: Any, where: str) -> None:
        from escpos.constants import RT_STATUS_ONLINE, RT_STATUS_PAPER  # noqa: PLC0415

        mute = (f"{where} did not answer its status request within {self.config.timeout:g} s"
                " (switched off, or wired one way: [printer] check_status = false)")
        online = self._status(device, RT_STATUS_ONLINE)
        if online is None:
            raise PrinterError(mute)
        if online & _OFFLINE:
            raise PrinterError(f"{where} is offline (its cover is open, or it is in error):"
                               " the slip was not printed")
        paper = self._status(device, RT_STATUS_PAPER)
        if paper is None:
            raise PrinterError(mute)
        if paper & _PAPER_END == _PAPER_END:
            raise PrinterError(f"{where} is out of paper: load a roll and print again")

    def close(self) -> None:
        """Nothing held between jobs."""


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def _close(device: Any) -> None:
    with contextlib.suppress(Exception):  # a connection already gone has nothing to close
        device.close()
