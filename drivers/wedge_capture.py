"""Captures of a keyboard-wedge reader's input events: the file format, reading it (ours, or
what ``evtest`` prints), and recording a real wedge into it. A capture replays through the
same decoder and transport as the live device (`simulators.wedge.CaptureReplay`), the way
Network UPS Tools' ``dummy-ups`` replays a UPS.

The format is JSON lines: a header, then one event a line, as the kernel gave it::

    {"capture": "hid-wedge", "version": 1, "device": "ACME Reader", "path": "...", "layout": "us"}
    {"t": 1733400000.123456, "type": 4, "code": 4, "value": 458783}
    {"t": 1733400000.123456, "type": 1, "code": 3, "value": 1}
    {"t": 1733400000.123456, "type": 0, "code": 0, "value": 0}

``t`` is the kernel's timestamp (seconds), ``type``/``code``/``value`` the event's numbers
(linux/input-event-codes.h). `read_capture` also reads the text ``evtest`` prints for a
device (``Event: time 1733400000.123456, type 1 (EV_KEY), code 3 (KEY_2), value 1`` and its
``SYN_REPORT`` separator lines), so a technician's ``evtest`` log replays as it is.

A capture holds every key typed, so the card numbers swiped in full: record test cards only,
and keep the file as card data.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from drivers.id_wedge import EvdevSource, EventSource
from drivers.wedge_codec import (
    EV_KEY,
    EV_MSC,
    EV_SYN,
    KEY_ENTER,
    KEY_KPENTER,
    MSC_RAW,
    MSC_SCAN,
    InputEvent,
)

__all__ = ["FORMAT", "Capture", "CaptureError", "format_event", "format_header",
           "load_capture", "read_capture", "record_events", "record_wedge", "write_capture"]

FORMAT: Final = "hid-wedge"
VERSION: Final = 1
_EVTEST: Final = re.compile(
    r"^Event: time (?P<t>\d+\.\d+), type (?P<type>\d+) \([^)]*\), code (?P<code>\d+)"
    r" \([^)]*\), value (?P<value>-?[0-9a-fA-F]+)\s*$")
_EVTEST_SYN: Final = re.compile(
    r"^Event: time (?P<t>\d+\.\d+), (?:-+|\++) (?P<what>SYN_\w+) (?:-+|\++)\s*$")
_HEX_VALUES: Final = ((EV_MSC, MSC_RAW), (EV_MSC, MSC_SCAN))  # evtest prints these in hex
_SYN_CODES: Final = {"SYN_REPORT": 0, "SYN_CONFIG": 1, "SYN_MT_REPORT": 2, "SYN_DROPPED": 3}


class CaptureError(ValueError):
    """A capture file that cannot be read (its line number and what is wrong)."""


@dataclass(frozen=True, slots=True)
class Capture:
    """A wedge's recorded events and what its header says of the device."""

    events: tuple[InputEvent, ...]
    header: dict[str, Any] = field(default_factory=dict)


def format_header(*, device: str, path: str, layout: str = "us") -> str:
    """The capture's first line."""
    return json.dumps({"capture": FORMAT, "version": VERSION, "device": device, "path": path,
                       "layout": layout})


def format_event(event: InputEvent) -> str:
    """One event as a capture line."""
    return json.dumps({"t": round(event.sec, 6), "type": event.type, "code": event.code,
                       "value": event.value})


def read_capture(text: str) -> Capture:
    """A capture from its text, ours or evtest's (CaptureError naming the line if neither;
    a line starting with ``#`` is a comment)."""
    events: list[InputEvent] = []
    header: dict[str, Any] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CaptureError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(item, dict):
                raise CaptureError(f"line {number}: a JSON object was expected")
            if "capture" in item:
                if item["capture"] != FORMAT or item.get("version") != VERSION:
                    raise CaptureError(f"line {number}: not a {FORMAT} capture of version"
                                       f" {VERSION}")
                header = item
                continue
            events.append(_event(item, number))
        elif match := _EVTEST.match(line):
            kind, code = int(match["type"]), int(match["code"])
            try:
                value = int(match["value"], 16 if (kind, code) in _HEX_VALUES else 10)
            except ValueError:
                raise CaptureError(f"line {number}: value {match['value']!r} is no"
                                   " number") from None
            events.append(InputEvent(float(match["t"]), kind, code, value))
        elif match := _EVTEST_SYN.match(line):
            syn = _SYN_CODES.get(match["what"])
            if syn is None:
                raise CaptureError(f"line {number}: unknown {match['what']}")
            events.append(InputEvent(float(match["t"]), EV_SYN, syn, 0))
        elif line.startswith("Event:"):
            raise CaptureError(f"line {number}: an evtest event line that does not parse")
        # anything else is evtest's preamble (device name, capabilities): not events
    return Capture(events=tuple(events), header=header)


def _event(item: dict[str, Any], number: int) -> InputEvent:
    try:
        at, kind, code, value = item["t"], item["type"], item["code"], item["value"]
    except KeyError as exc:
        raise CaptureError(f"line {number}: an event without {exc.args[0]!r}") from None
    if not isinstance(at, int | float) or isinstance(at, bool):
        raise CaptureError(f"line {number}: 't' must be a number of seconds")
    for name, number_value in (("type", kind), ("code", code), ("value", value)):
        if not isinstance(number_value, int) or isinstance(number_value, bool):
            raise CaptureError(f"line {number}: {name!r} must be an integer")
    return InputEvent(float(at), kind, code, value)


def load_capture(path: str | Path) -> Capture:
    """A capture file (CaptureError if it does not read)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptureError(f"cannot read {path}: {exc}") from exc
    return read_capture(text)


def write_capture(out: TextIO, events: Iterable[InputEvent], *, device: str, path: str) -> None:
    """Write a capture: its header, then the events."""
    out.write(format_header(device=device, path=path) + "\n")
    for event in events:
        out.write(format_event(event) + "\n")


def record_events(source: EventSource, out: TextIO, *, seconds: float | None = None,
                  lines: int | None = None, device: str = "", path: str = "") -> int:
    """Record what an event source gives into ``out`` (a capture) until ``seconds`` have
    passed or ``lines`` Enter keys were typed; returns the events written. The source is
    opened (and grabbed) here and closed at the end."""
    if seconds is None and lines is None:
        raise ValueError("say when to stop: seconds, lines or both")
    source.open()
    written = enters = 0
    try:
        named = getattr(source, "device_name", None)  # what a real device calls itself
        out.write(format_header(device=device or named or "", path=path) + "\n")
        deadline = None if seconds is None else time.monotonic() + seconds
        while lines is None or enters < lines:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            for event in source.read(0.25 if left is None else min(left, 0.25)):
                out.write(format_event(event) + "\n")
                written += 1
                if event.type == EV_KEY and event.code in (KEY_ENTER, KEY_KPENTER) \
                        and event.value == 1:
                    enters += 1
        out.flush()
    finally:
        source.close()
    return written


def record_wedge(path: str, out: TextIO, *, seconds: float | None = None,
                 lines: int | None = None, grab: bool = True) -> int:
    """Record a real wedge (its evdev device at ``path``) into ``out``: `record_events` on an
    `EvdevSource`, grabbed while recording (the swipes never reach the screen's session)
    unless ``grab`` is False. DeviceNotFound (GrabRefused) when it cannot be opened;
    `drivers.errors.LibraryMissing` without python-evdev."""
    source = EvdevSource(path, grab=grab)
    return record_events(source, out, seconds=seconds, lines=lines, path=path)
