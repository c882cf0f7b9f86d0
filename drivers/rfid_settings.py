"""How the table's chip reader is found, wired and timed: `UsbReaderSettings`, validated
when made (every error names the setting), for `drivers.rfid.UsbChipReader`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from drivers.readings import SpotId
from drivers.rfid_codec import encode_frame
from drivers.rfid_messages import (
    DEFAULT_ANTENNA_MAP,
    DEFAULT_PRODUCT_ID,
    DEFAULT_VENDOR_ID,
    MAX_ANTENNAS,
    SetAntennaMap,
    SetTiming,
)
from game.errors import ConfigError

__all__ = ["UsbReaderSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsbReaderSettings:
    """Where the reader is, how it is wired, and how fast the driver gives up and retries."""

    vendor_id: int = DEFAULT_VENDOR_ID
    product_id: int = DEFAULT_PRODUCT_ID
    serial: str | None = None  # pick one reader by its USB serial number string
    antenna_map: Mapping[int, SpotId] = field(
        default_factory=lambda: MappingProxyType(dict(DEFAULT_ANTENNA_MAP))
    )
    report_interval_ms: int = 200
    heartbeat_interval_ms: int = 500
    watchdog_ms: int = 5000  # the reader stops scanning after this long without the host
    stall_timeout: float = 3.0  # seconds without a verified frame: the reader is stalled
    command_timeout: float = 1.0  # seconds to wait for a command's answer
    command_attempts: int = 3
    keepalive_interval: float = 1.0  # seconds between PINGs
    read_timeout_ms: int = 100  # one USB read; bounds how late a close or stall is noticed
    # Pass a report on only when the antenna's chips changed. Off: every antenna every sweep, as
    # the adapter seam promises (drivers/adapter.py); the daemon skips repeats itself (D315).
    changes_only: bool = False
    alert_interval: float = 5.0  # at most one bad-frame / gap alert per this many seconds
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    queue_size: int = 1024

    def __post_init__(self) -> None:
        src = "UsbReaderSettings"
        for key in ("vendor_id", "product_id"):
            if not 0 <= getattr(self, key) <= 0xFFFF:
                raise ConfigError(src, key, "must be 0x0000..0xFFFF")
        if not self.antenna_map:
            raise ConfigError(src, "antenna_map", "maps no antenna")
        spots = list(self.antenna_map.values())
        if len(set(spots)) != len(spots):
            raise ConfigError(src, "antenna_map", "two antennas under one spot")
        bad = [a for a in self.antenna_map if not 1 <= a <= MAX_ANTENNAS]
        if bad:
            raise ConfigError(src, "antenna_map", f"antenna {bad[0]} is not 1..{MAX_ANTENNAS}")
        try:
            SetAntennaMap.from_mapping(self.antenna_map)
            encode_frame(0, self.timing())
        except ValueError as exc:
            raise ConfigError(src, "antenna_map/timing", str(exc)) from None
        for key in ("stall_timeout", "command_timeout", "keepalive_interval", "alert_interval"):
            if not getattr(self, key) > 0:
                raise ConfigError(src, key, "must be positive")
        if self.command_attempts < 1 or self.read_timeout_ms < 1 or self.queue_size < 1:
            raise ConfigError(src, "command_attempts/read_timeout_ms/queue_size", "must be >= 1")

    def timing(self) -> SetTiming:
        """The SET_TIMING command these settings send."""
        return SetTiming(
            report_interval_ms=self.report_interval_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            watchdog_ms=self.watchdog_ms,
        )
