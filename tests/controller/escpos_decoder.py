"""A small ESC/POS decoder for the tests: a receipt printer's job read back as a printer would
read it, the text lines between the commands (in the code page ``ESC t`` chose), the QR codes
stored with ``GS ( k`` (function 180: store data), the status requests (``DLE EOT n``) and the
cuts. A command it does not know fails the test rather than being skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Receipt", "decode_escpos"]

ESC, GS, DLE, LF = 0x1B, 0x1D, 0x10, 0x0A
# ESC commands and how many parameter bytes follow
_ESC_ARGS = {ord("@"): 0, ord("!"): 1, ord("E"): 1, ord("-"): 1, ord("a"): 1, ord("t"): 1,
             ord("M"): 1, ord("d"): 1, ord("G"): 1, ord("{"): 1, ord("J"): 1}
_GS_ARGS = {ord("!"): 1, ord("B"): 1, ord("b"): 1, ord("|"): 1}
# ESC t n -> the code page (python-escpos's default profile: the ones a slip may use)
_CODE_PAGES = {0: "cp437", 2: "cp850", 16: "cp1252", 19: "cp858"}


@dataclass(slots=True)
class Receipt:
    """What a job prints, in order."""

    lines: list[str] = field(default_factory=list)
    qr: list[str] = field(default_factory=list)  # each QR code's stored data
    qr_printed: int = 0  # GS ( k function 181: print the stored symbol
    status_requests: list[int] = field(default_factory=list)
    cuts: int = 0
    inits: int = 0
    bold_lines: list[str] = field(default_factory=list)


def decode_escpos(data: bytes) -> Receipt:
    """The receipt ``data`` prints; ValueError on a byte sequence it cannot read."""
    out = Receipt()
    text = bytearray()
    page = "cp437"
    bold = False
    line_bold = False
    i = 0

    def end_line() -> None:
        nonlocal line_bold
        line = text.decode(page)
        out.lines.append(line)
        if line_bold:
            out.bold_lines.append(line)
        text.clear()
        line_bold = bold

    while i < len(data):
        b = data[i]
        if b == LF:
            end_line()
            i += 1
        elif b == ESC:
            cmd = data[i + 1]
            if cmd not in _ESC_ARGS:
                raise ValueError(f"unknown command ESC {cmd:#x} at byte {i}")
            args = data[i + 2:i + 2 + _ESC_ARGS[cmd]]
            if cmd == ord("@"):
                out.inits += 1
                bold = False
            elif cmd == ord("t"):
                if args[0] not in _CODE_PAGES:
                    raise ValueError(f"code page {args[0]} not known to the decoder")
                page = _CODE_PAGES[args[0]]
            elif cmd == ord("E"):
                bold = bool(args[0] & 1)
                line_bold = line_bold or bold
            i += 2 + _ESC_ARGS[cmd]
        elif b == GS and data[i + 1] == ord("("):
            if data[i + 2] != ord("k"):
                raise ValueError(f"unknown command GS ( {data[i + 2]:#x} at byte {i}")
            size = data[i + 3] | data[i + 4] << 8
            body = data[i + 5:i + 5 + size]
            cn, fn = body[0], body[1]
            if cn != ord("1"):
                raise ValueError(f"a 2D code other than QR (cn {cn}) at byte {i}")
            if fn == ord("P"):  # function 180: store the data (m = '0')
                out.qr.append(body[3:].decode("utf-8"))
            elif fn == ord("Q"):
                out.qr_printed += 1
            i += 5 + size
        elif b == GS and data[i + 1] == ord("V"):
            out.cuts += 1
            mode = data[i + 2]
            i += 3 + (1 if mode in (65, 66) else 0)
        elif b == GS:
            cmd = data[i + 1]
            if cmd not in _GS_ARGS:
                raise ValueError(f"unknown command GS {cmd:#x} at byte {i}")
            i += 2 + _GS_ARGS[cmd]
        elif b == DLE and data[i + 1] == 0x04:
            out.status_requests.append(data[i + 2])
            i += 3
        elif b < 0x20:
            raise ValueError(f"unknown control byte {b:#x} at byte {i}")
        else:
            text.append(b)
            i += 1
    if text:
        end_line()
    return out
