"""The simulated chip reader's firmware state (simulators.rfid): what a power-up resets."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from drivers.readings import SpotId
from drivers.rfid_codec import FrameDecoder
from drivers.rfid_messages import DEFAULT_ANTENNA_MAP, AntennaFault

__all__ = ["ReaderFirmware"]


@dataclass(slots=True)
class ReaderFirmware:
    """Device state that a power-up resets."""

    booted_at: float
    seq: int = 0
    configured: bool = False
    claimed: bool = False
    running: bool = False
    antenna_map: dict[int, SpotId] = field(default_factory=lambda: dict(DEFAULT_ANTENNA_MAP))
    report_interval: float = 0.2
    heartbeat_interval: float = 0.5
    watchdog: float = 0.0
    cycle: int = 0
    next_heartbeat: float = 0.0
    next_sweep: float = 0.0
    last_host_frame: float = 0.0
    decoder: FrameDecoder = field(default_factory=FrameDecoder)
    out: deque[tuple[float, bytes]] = field(default_factory=deque)
    out_bytes: int = 0
    pending_faults: list[AntennaFault] = field(default_factory=list)
