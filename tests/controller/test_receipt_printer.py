"""The score slip on paper (issue 32 point 6): the real ESC/POS driver
(`controller.receipt_printer.EscposPrinter`, python-escpos's network printer) prints a slip on
the simulated printer (`simulators.receipt_printer`, a TCP port as a real printer has), whose
captured bytes a small ESC/POS decoder reads back: the player's name, the time in the venue's
zone, the verification code and the QR code's payload are the slip's. A printer out of paper,
with its cover open, switched off or mute refuses with the reason and prints nothing. The
HTML slip's QR code, drawn as SVG, is read back by a QR decoder (zxing-cpp) to the same payload.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
import zxingcpp

from controller.console.slip import slip_page
from controller.printer_config import PrinterConfig
from controller.receipt_printer import EscposPrinter, PrinterError, receipt_bytes
from controller.slip_layout import QR_SCHEME, Slip, qr_payload, slip_layout
from simulators.receipt_printer import SimReceiptPrinter
from tests.controller.escpos_decoder import decode_escpos
from wire.verification import grouped

CODE = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
SAST = ZoneInfo("Africa/Johannesburg")


# A slip as the journal gives it: a name with a letter outside ASCII, times in UTC.
SLIP = Slip(entry_id="E-H1-1", table="t-0a1b2c", seat=1, entry_code="K7-42F", name="Zoë M.",
            tz=SAST, stage="qualifying", heat_id="H1", score_cents=190_000, score="R1,900.00",
            hands=2, status="complete", at="2026-07-03T12:05:09.250+00:00", seq=42, code=CODE,
            code_grouped=grouped(CODE), acknowledged="pin",
            acknowledged_at="2026-07-03T12:06:00Z", disputed=None)


def a_slip(**changes: Any) -> Slip:
    """The slip, with ``changes``."""
    return replace(SLIP, **changes)


@pytest.fixture(name="printer")
def _printer(tmp_path: Path) -> Iterator[SimReceiptPrinter]:
    sim = SimReceiptPrinter(capture=tmp_path / "slips.bin")
    sim.start()
    yield sim
    sim.close()


def network(sim: SimReceiptPrinter, **changes: object) -> EscposPrinter:
    """The real driver for a network printer, pointed at the simulated one."""
    host, port = sim.address
    fields: dict[str, object] = {"kind": "escpos-network", "host": host, "port": port,
                                 "timeout": 2.0}
    fields.update(changes)
    return EscposPrinter(PrinterConfig(**fields))  # type: ignore[arg-type]


def test_the_printed_slip_carries_the_name_venue_time_code_and_qr(
        printer: SimReceiptPrinter, tmp_path: Path) -> None:
    slip = a_slip()
    network(printer).print_job(receipt_bytes(slip_layout(slip), columns=42))
    jobs = printer.wait_for_jobs(1)
    assert len(jobs) == 1
    assert (tmp_path / "slips.bin").read_bytes() == jobs[0]  # the capture file holds the job
    receipt = decode_escpos(jobs[0])
    # Asked whether it is online and has paper, before the slip.
    assert receipt.status_requests == [1, 4]
    assert receipt.inits == 1 and receipt.cuts == 1
    lines = [line.rstrip() for line in receipt.lines]
    assert "Heads Up Poker Showdown" in lines and "Score slip" in lines
    assert "Entry         K7-42F" in lines
    assert "Player        Zoë M." in lines  # through the printer's code page
    assert "Score         R1,900.00" in lines
    assert "Time          2026-07-03 14:05:09 SAST" in lines  # the venue's time, not UTC
    assert "Acknowledged  pin at 2026-07-03 14:06:00" in lines
    assert "9F86 D081 884C 7D65" in receipt.bold_lines  # the code, large
    assert "SHA-256, message 42" in lines
    assert "".join(lines[lines.index("SHA-256, message 42") + 1:][:2]) == CODE
    # The QR code by the printer's own command: its payload is the slip's.
    assert receipt.qr == [f"{QR_SCHEME}:t-0a1b2c:42:{CODE}"] == [qr_payload(slip)]
    assert receipt.qr_printed == 1
    assert all(len(line) <= 42 for line in lines)


def test_a_long_acknowledgement_and_a_problem_wrap_within_the_paper(
        printer: SimReceiptPrinter) -> None:
    slip = a_slip(acknowledged=None, disputed="the last hand was mine " * 4,
                  problems=("checksum mismatch",), name=None)
    network(printer).print_job(receipt_bytes(slip_layout(slip), columns=32))
    receipt = decode_escpos(printer.wait_for_jobs(1)[0])
    assert all(len(line) <= 32 for line in receipt.lines)
    assert not any(line.startswith("Player") for line in receipt.lines)
    text = " ".join(line.strip() for line in receipt.lines)
    assert "DISPUTED: the last hand was mine" in text
    assert "The journal reports a problem with this record: checksum mismatch" in text


@pytest.mark.parametrize(("fault", "words"), [
    ("paper", "is out of paper: load a roll and print again"),
    ("cover", "is offline (its cover is open, or it is in error)"),
    ("off", "is offline or not connected"),
    ("mute", "did not answer its status request within 0.5 s"),
])
def test_a_printer_that_cannot_print_refuses_with_the_reason(
        printer: SimReceiptPrinter, fault: str, words: str) -> None:
    driver = network(printer, timeout=0.5)
    if fault == "paper":
        printer.paper = "out"
    elif fault == "cover":
        printer.online = False
    elif fault == "mute":
        printer.answers = False
    else:
        printer.close()
    with pytest.raises(PrinterError) as refused:
        driver.print_job(receipt_bytes(slip_layout(a_slip())))
    host, port = printer_address = (driver.host, driver.port)
    assert f"the printer at {host}:{port} {words}" in refused.value.reason, printer_address
    assert printer.jobs == []


def test_a_printer_low_on_paper_still_prints(printer: SimReceiptPrinter) -> None:
    printer.paper = "low"
    network(printer).print_job(receipt_bytes(slip_layout(a_slip())))
    assert len(printer.wait_for_jobs(1)) == 1


def test_without_a_status_check_the_slip_is_sent_as_it_is(printer: SimReceiptPrinter) -> None:
    network(printer, check_status=False).print_job(receipt_bytes(slip_layout(a_slip())))
    assert decode_escpos(printer.wait_for_jobs(1)[0]).status_requests == []


def test_a_serial_printer_prints_through_pyserial_on_a_pseudo_terminal(tmp_path: Path) -> None:
    sim = SimReceiptPrinter(capture=tmp_path / "serial.bin")
    path = sim.start_serial()
    try:
        driver = EscposPrinter(PrinterConfig(kind="escpos-serial", device=path, baudrate=19200,
                                             timeout=2.0))
        slips = [a_slip(), a_slip(entry_code="K7-43F", seq=43)]
        for slip in slips:  # two jobs on the line, each ending with its cut
            driver.print_job(receipt_bytes(slip_layout(slip)))
        jobs = sim.wait_for_jobs(2)
        receipts = [decode_escpos(job) for job in jobs]
        assert [r.qr for r in receipts] == [[qr_payload(s)] for s in slips]
        assert [r.status_requests for r in receipts] == [[1, 4], [1, 4]]
        assert "Entry         K7-43F" in receipts[1].lines
        sim.paper = "out"
        with pytest.raises(PrinterError, match=f"the printer on {path} is out of paper"):
            driver.print_job(receipt_bytes(slip_layout(slips[0])))
        assert (tmp_path / "serial.bin").read_bytes() == b"".join(jobs)
    finally:
        sim.close()


# ---- the HTML slip's QR code --------------------------------------------------------------

def svg_modules(svg: str) -> np.ndarray:
    """The dark modules of segno's SVG path (``M x y`` / ``m dx dy`` moves, ``h n`` runs)
    as an image, 8 pixels a module, white around."""
    width = int(re.search(r'width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    scale = float(re.search(r"scale\((\d+)\)", svg).group(1))  # type: ignore[union-attr]
    size = int(width / scale)
    dark = np.zeros((size, size), dtype=bool)
    path = re.search(r' d="([^"]+)"', svg).group(1)  # type: ignore[union-attr]
    x = y = 0.0
    for op, a, b in re.findall(r"([MmHhVv])\s*(-?[\d.]+)(?:\s+(-?[\d.]+))?", path):
        if op == "M":
            x, y = float(a), float(b)
        elif op == "m":
            x, y = x + float(a), y + float(b)
        elif op == "h":
            run = int(float(a))
            start = int(x) if run > 0 else int(x) + run
            dark[int(y), start:start + abs(run)] = True
            x += run
        else:
            raise AssertionError(f"path command {op} not expected from segno")
    return np.where(np.kron(dark, np.ones((8, 8), dtype=bool)), 0, 255).astype(np.uint8)


def test_the_html_slip_shows_the_qr_code_of_the_payload_and_the_same_lines() -> None:
    slip = a_slip()
    page = slip_page(slip)
    found = re.search(r'<div class="qr" id="qr" data-payload="([^"]+)">(<svg.*?</svg>)', page)
    assert found is not None
    assert found.group(1) == qr_payload(slip)
    read = zxingcpp.read_barcodes(svg_modules(found.group(2)))
    assert [(r.format, r.text) for r in read] == [(zxingcpp.BarcodeFormat.QRCode,
                                                   qr_payload(slip))]
    assert '<tr class="player"><th>Player</th><td>Zoë M.</td></tr>' in page
    assert '<tr class="time"><th>Time</th><td>2026-07-03 14:05:09 SAST</td></tr>' in page
    assert '<p class="code" id="code">9F86 D081 884C 7D65</p>' in page
    assert f"SHA-256 {CODE} (message 42)" in page
    assert "<script>" not in page and "style=" not in page  # the CSP holds (no inline)
