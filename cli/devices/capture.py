"""The capture file of `showdown devices record`, replayed by `devices check --capture`:
JSON lines, one object a line.

- the first line says what was recorded: ``{"capture": "showdown-devices", "version": 1,
  "driver", "role", "options": the driver's keys as configured, "devices": [{"where": the
  keys to the device in the options, "device": its path or ``socket://`` URL}, ...],
  "recorded_at"}``;
- then ``{"t": seconds since the start, "dev": the device's index, "dir": "rx" | "tx",
  "hex": ...}`` for the bytes a device sent (rx) and the host sent it (tx), in time order,
  and ``{"t", "reading": {...}}`` for what the driver made of them (`describe`: cards,
  inventories, taps, shoe states, alerts);
- the last line ``{"t", "end": true}``.

The hex keeps the bytes exact for the vendor; the readings let a replay be checked against
what the driver read at the time. A capture of an ID reader holds card numbers as they were
read: keep it as confidential as the patrons' cards (D309).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal

from cli.devices.relay import DeviceAt
from cli.errors import CommandError
from drivers.adapter import ROLES, Role
from drivers.readings import CardReading, ChipInventory, DeviceAlert, IdTap, ShoeStatus

__all__ = ["FORMAT", "VERSION", "Capture", "CaptureWriter", "Chunk", "describe",
           "read_capture"]

FORMAT: Final = "showdown-devices"
VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes one side sent, ``t`` seconds after the recording started."""

    t: float
    dir: Literal["rx", "tx"]  # rx: the device sent them; tx: the host did
    data: bytes
    dev: int = 0  # which of the capture's devices


@dataclass(slots=True)
class Capture:
    """A capture file read back."""

    driver: str
    role: Role
    options: dict[str, Any]
    devices: list[DeviceAt]
    chunks: list[Chunk] = field(default_factory=list)
    readings: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    seconds: float = 0.0


def describe(item: object) -> dict[str, Any] | None:
    """A reading or alert as the capture keeps it (None for anything else)."""
    if isinstance(item, CardReading):
        return {"kind": "card", "card": str(item.card), "read_index": item.read_index}
    if isinstance(item, ShoeStatus):
        return {"kind": "shoe_state", "state": item.state.value}
    if isinstance(item, ChipInventory):
        return {"kind": "inventory", "seat": item.spot.seat, "spot": item.spot.spot,
                "antenna": item.antenna, "uids": sorted(u.hex().upper() for u in item.uids)}
    if isinstance(item, IdTap):
        return {"kind": "tap", "number": item.number, "form": item.form}
    if isinstance(item, DeviceAlert):
        return {"kind": "alert", "alert": item.kind, "detail": item.detail}
    return None


class CaptureWriter:
    """Writes a capture as it is recorded (each line flushed: a recording cut short by a
    power cut keeps what came before)."""

    def __init__(self, out: IO[str], started: float) -> None:
        self._out, self._started = out, started

    def header(self, *, driver: str, role: Role, options: dict[str, Any],
               devices: list[DeviceAt], recorded_at: str) -> None:
        """The first line."""
        self._line({"capture": FORMAT, "version": VERSION, "driver": driver, "role": role,
                    "options": options,
                    "devices": [{"where": list(d.where), "device": d.device} for d in devices],
                    "recorded_at": recorded_at})

    def chunk(self, now: float, dev: int, direction: Literal["rx", "tx"], data: bytes) -> None:
        """Bytes that crossed the relay of device ``dev``."""
        self._line({"t": round(now - self._started, 6), "dev": dev, "dir": direction,
                    "hex": data.hex()})

    def reading(self, now: float, item: object) -> None:
        """What the driver yielded (readings and alerts)."""
        described = describe(item)
        if described is not None:
            self._line({"t": round(now - self._started, 6), "reading": described})

    def end(self, now: float) -> None:
        """The last line."""
        self._line({"t": round(now - self._started, 6), "end": True})

    def _line(self, obj: dict[str, Any]) -> None:
        self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._out.flush()


def read_capture(path: Path) -> Capture:
    """A capture file, checked line by line; CommandError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read the capture {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not a capture (not text)") from None
    lines = text.splitlines()
    if not lines:
        raise CommandError(f"{path}: empty, not a capture")
    head = _json(path, 1, lines[0])
    if head.get("capture") != FORMAT:
        raise CommandError(f"{path}: not a capture of `showdown devices record`")
    if head.get("version") != VERSION:
        raise CommandError(f"{path}: capture version {head.get('version')!r}; this release"
                           f" reads version {VERSION}")
    try:
        role = head["role"]
        devices = [DeviceAt(tuple(d["where"]), str(d["device"])) for d in head["devices"]]
        capture = Capture(driver=str(head["driver"]), role=role, options=dict(head["options"]),
                          devices=devices)
    except (KeyError, TypeError, ValueError) as exc:
        raise CommandError(f"{path} line 1: the header lacks {exc}") from None
    if role not in ROLES or not devices:
        raise CommandError(f"{path} line 1: unknown role {role!r}, or no device")
    for number, line in enumerate(lines[1:], start=2):
        obj = _json(path, number, line)
        try:
            t = float(obj["t"])
            if "hex" in obj:
                if obj["dir"] not in ("rx", "tx"):
                    raise ValueError(f"dir {obj['dir']!r}")
                dev = int(obj.get("dev", 0))
                if not 0 <= dev < len(devices):
                    raise ValueError(f"dev {dev}")
                capture.chunks.append(Chunk(t, obj["dir"], bytes.fromhex(obj["hex"]), dev))
            elif "reading" in obj:
                capture.readings.append((t, dict(obj["reading"])))
            elif obj.get("end") is True:
                capture.seconds = t
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandError(f"{path} line {number}: not a capture line ({exc})") from None
    return capture


def _json(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} line {number}: not JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise CommandError(f"{path} line {number}: not a JSON object")
    return obj
