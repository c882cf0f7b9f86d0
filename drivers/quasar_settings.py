"""How a table's Metratec QuasarMX readers are reached, wired and timed: `QuasarSettings`
(one `QuasarLink` per reader), validated when made (every error names the setting), for
`drivers.quasar.QuasarChipReader`.

A reader's antenna ports: the four antenna connectors are ports 1..4; behind a multiplexer,
channel C of antenna A is port ``A + 4 * (C - 1)`` (`port_of`), so channel 1 is the antenna
itself and the reader addresses 16 ports at most (docs/protocols/metratec-quasarmx.md, D290).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from drivers.quasar_codec import MAX_PORT
from drivers.readings import SpotId
from game.errors import ConfigError

__all__ = ["ANTENNAS", "CHANNELS", "DEFAULT_TCP_PORT", "QuasarLink", "QuasarSettings",
           "port_name", "port_of"]

ANTENNAS = 4  # antenna connectors on a QuasarMX
CHANNELS = 4  # multiplexer channels per antenna connector, as we address them
DEFAULT_TCP_PORT = 10001  # the QuasarMX's TCP port (Metratec's SDK default)


def port_of(antenna: int, channel: int | None = None) -> int:
    """The reader's port number of an antenna (1..4), or of a multiplexer channel (1..4) on
    it; ValueError when out of range."""
    if not 1 <= antenna <= ANTENNAS:
        raise ValueError(f"antenna {antenna} is not 1..{ANTENNAS}")
    if channel is None:
        return antenna
    if not 1 <= channel <= CHANNELS:
        raise ValueError(f"multiplexer channel {channel} is not 1..{CHANNELS}")
    return antenna + ANTENNAS * (channel - 1)


def port_name(port: int) -> str:
    """A port as the config writes it: "3" for an antenna, "3.2" behind a multiplexer."""
    antenna, channel = (port - 1) % ANTENNAS + 1, (port - 1) // ANTENNAS + 1
    return str(antenna) if channel == 1 else f"{antenna}.{channel}"


@dataclass(frozen=True, slots=True, kw_only=True)
class QuasarLink:
    """One reader: where it is (a serial device path, or a TCP host and port) and which spot
    each of its ports covers."""

    url: str | None = None  # a serial device path (/dev/serial/by-id/...) or pyserial URL
    host: str | None = None
    port: int = DEFAULT_TCP_PORT
    antennas: Mapping[int, SpotId] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        src = "QuasarLink"
        if (self.url is None) == (self.host is None):
            raise ConfigError(src, "url/host", "give a serial url or a host, not both")
        if not 1 <= self.port <= 65535:
            raise ConfigError(src, "port", f"{self.port} is not a TCP port")
        if not self.antennas:
            raise ConfigError(src, "antennas", "maps no antenna")
        bad = [p for p in self.antennas if not 1 <= p <= MAX_PORT]
        if bad:
            raise ConfigError(src, "antennas", f"port {bad[0]} is not 1..{MAX_PORT}")
        spots = list(self.antennas.values())
        if len(set(spots)) != len(spots):
            raise ConfigError(src, "antennas", "two ports under one spot")
        object.__setattr__(self, "antennas", MappingProxyType(dict(sorted(self.antennas.items()))))

    @property
    def where(self) -> str:
        """The reader's address as alerts name it before it says its serial number."""
        return self.url if self.url is not None else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class QuasarSettings:
    """The table's readers, and how fast the driver gives up and retries."""

    readers: tuple[QuasarLink, ...]
    stall_seconds: float = 2.0  # a command unanswered this long: the reader is stalled
    sweep_pause: float = 0.0  # seconds between two sweeps (0: sweep continuously)
    attempts: int = 3  # tries of one antenna's inventory before its spot is skipped a sweep
    min_firmware: tuple[int, int] = (2, 18)  # Metratec's SDK refuses older firmware
    model: str = "QUASAR_MX"
    baudrate: int = 115200
    alert_interval: float = 10.0  # at most one alert of a recurring kind per this long
    backoff_initial: float = 0.2
    backoff_max: float = 5.0
    queue_size: int = 1024

    def __post_init__(self) -> None:
        src = "QuasarSettings"
        if not self.readers:
            raise ConfigError(src, "readers", "no reader")
        spots = [s for r in self.readers for s in r.antennas.values()]
        if len(set(spots)) != len(spots):
            raise ConfigError(src, "readers", "one spot under two readers' antennas")
        where = [r.where for r in self.readers]
        if len(set(where)) != len(where):
            raise ConfigError(src, "readers", "the same reader twice")
        for key in ("stall_seconds", "alert_interval", "backoff_initial", "backoff_max"):
            if not getattr(self, key) > 0:
                raise ConfigError(src, key, "must be positive")
        if self.sweep_pause < 0:
            raise ConfigError(src, "sweep_pause", "must be 0 or more")
        if self.attempts < 1 or self.queue_size < 1:
            raise ConfigError(src, "attempts/queue_size", "must be at least 1")

    @property
    def spots(self) -> tuple[SpotId, ...]:
        """Every mapped spot, reader by reader, in port order."""
        return tuple(s for r in self.readers for s in r.antennas.values())
