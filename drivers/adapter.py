"""The adapter seam: what a device driver gives the table so that it can be chosen by name in
the table config (``[shoe] driver``, ``[rfid] driver``, ``[id_reader] driver``) and found
through a Python entry point, the project's own drivers and a vendor's alike
(docs/protocols/writing-an-adapter.md).

An adapter is one object registered under one of `ENTRY_POINT_GROUPS`; `drivers.registry`
finds it. It reads its own keys of the config section (`configure`), opens the driver
(`open`), may run the driver against its simulator (`simulate`: a simulated table and the
conformance kit, `showdown devices check`) and says whether the configured device is there
(`probe`: `showdown doctor`). Nothing here imports a simulator: an adapter imports its own
lazily, inside `simulate`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

from drivers.protocols import CardReader, ChipReader, IdReader
from drivers.readings import IdForm, SpotId
from game.chips.registry import ChipRegistry
from game.errors import ConfigError
from runtime.config_paths import config_path

__all__ = ["ENTRY_POINT_GROUPS", "FAULT_NAMES", "ONE_SHOT_FAULTS", "PROBABILITY_FAULTS", "ROLES",
           "ConfigPlace", "DeviceAdapter", "DriverContext", "Probe", "Role", "SimulatedChips",
           "SimulatedDevice", "SimulatedIds", "SimulatedShoe", "SimulatedShoeStates",
           "SimulatedUnknownChips", "Simulation"]

Role = Literal["shoe", "rfid", "id_reader"]  # the table config's section for the device
ROLES: tuple[Role, ...] = ("shoe", "rfid", "id_reader")
# Where each role's adapters register (pyproject: [project.entry-points."showdown.shoe"]).
ENTRY_POINT_GROUPS: Mapping[Role, str] = {
    "shoe": "showdown.shoe",
    "rfid": "showdown.rfid",
    "id_reader": "showdown.id_reader",
}
Device = CardReader | ChipReader | IdReader


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigPlace:
    """Where an adapter's keys were read: the config file, its section, and the folder that
    relative paths in it resolve against."""

    source: str
    section: Role
    base: Path = field(default_factory=Path)
    # The section's ``kind``: "hardware" (a real device: its address is required), "sim" (the
    # driver on its simulator) or "manual"/"none" (the keys are checked, nothing is opened).
    kind: str = "hardware"

    @property
    def real(self) -> bool:
        """True when the table opens a real device (``kind = "hardware"``)."""
        return self.kind == "hardware"

    def error(self, key: str, message: str) -> ConfigError:
        """A config error naming ``section.key`` in the file (raise it)."""
        return ConfigError(self.source, f"{self.section}.{key}", message)

    def path(self, value: str) -> str:
        """A device path or URL: a pyserial URL (``socket://``, ``rfc2217://``) as given, a
        path as `runtime.config_paths.config_path` reads it (relative to the config's folder,
        ``~`` expanded; a symlink is followed when the device is opened, not here)."""
        if "://" in value:
            return value
        return str(config_path(value, self.base))


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverContext:
    """What the table gives a driver besides its settings."""

    name: str  # the device's name in alerts until the device says its own (e.g. "shoe")
    registry: ChipRegistry | None = None  # the chips in play (chip readers)
    seed: int = 0  # a simulator's seed (a simulated table's ``[sim] seed``)
    # A simulated chip reader's sweep interval (None: its device's own, `sim_speed` times
    # faster; a virtual dealer's table asks for a short one), and whether it also sweeps at
    # once when chips move (a run at full speed; a real reader only sweeps on its interval).
    sim_sweep_ms: int | None = None
    sim_sweep_on_change: bool = False
    # How many times faster than the real device a simulator that models the device's timing
    # runs (1: faithful, a technician's rehearsal; a virtual dealer's table runs faster).
    sim_speed: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """What `showdown doctor` says of one configured device: there and readable or not, and
    the model and firmware where the protocol reports them."""

    ok: bool
    detail: str  # one line: what was found, or what is wrong
    fix: str = ""  # what to do when not ok
    model: str | None = None
    firmware: str | None = None
    warn: bool = False  # ok but worth a look (manual entry, an old firmware)


# The faults every simulator switches (`SimulatedDevice.set_fault`) and the one-shot faults
# it puts on its next message (`SimulatedDevice.inject`); `simulators.faults` implements them.
ONE_SHOT_FAULTS: Final = ("corrupt", "drop", "duplicate", "garbage", "repeat", "drop_incoming")
PROBABILITY_FAULTS: Final = ("corrupt", "drop", "duplicate", "garbage", "drop_incoming",
                             "repeat")
FAULT_NAMES: Final = (*PROBABILITY_FAULTS, "delay", "silent")


@runtime_checkable
class SimulatedDevice(Protocol):
    """The controls every simulator gives the conformance kit (and a technician)."""

    def unplug(self) -> None:
        """The device goes away (USB unplugged, cable cut, power lost)."""
        ...

    def plug(self) -> None:
        """The device comes back."""
        ...

    def set_fault(self, name: str, value: float | bool) -> None:
        """Switch a fault (`simulators.faults.FAULT_NAMES`: "silent" stalls the device,
        "garbage" sends noise between messages, "corrupt", "drop", "delay"...)."""
        ...

    def inject(self, name: str) -> None:
        """One fault on the next message (`simulators.faults.ONE_SHOT`)."""
        ...


@runtime_checkable
class SimulatedShoe(SimulatedDevice, Protocol):
    """A simulated shoe: the kit deals cards through it."""

    def deal_card(self, card: Any) -> Any:
        """Deal this card ("AS", or a `Card`) next."""
        ...


@runtime_checkable
class SimulatedChips(SimulatedDevice, Protocol):
    """A simulated table of chip spots under one or more readers."""

    def spots(self) -> Sequence[SpotId]:
        """The spots its antennas cover, in antenna order."""
        ...

    def chips_on(self, seat: int, spot: str) -> frozenset[bytes]:
        """The UIDs lying on one spot now."""
        ...

    def place(self, seat: int, spot: str, cents: int | None = None, *,
              uids: Any = ()) -> tuple[bytes, ...]:
        """Put chips (these UIDs, or ``cents`` of the seat's chips) on a spot."""
        ...

    def remove(self, seat: int, spot: str, uids: Any = None) -> tuple[bytes, ...]:
        """Take chips (all of them by default) off a spot."""
        ...

    def clear(self) -> None:
        """Take every chip off the table."""
        ...


@runtime_checkable
class SimulatedShoeStates(Protocol):
    """A simulated shoe that also puts itself in a state (jam, cover open, empty, ready) and
    loses power (optional: the technician's bench offers them when the simulator has them)."""

    def set_state(self, state: Any) -> None:
        """Report this state ("jam", "cover_open", "empty", "ready")."""
        ...

    def power_cycle(self) -> Any:
        """Power lost and back: unacknowledged events lost, a new session."""
        ...


@runtime_checkable
class SimulatedUnknownChips(Protocol):
    """A simulated chip table that also lays chips the registry does not know (optional)."""

    def place_unknown(self, seat: int, spot: str, count: int = 1) -> tuple[bytes, ...]:
        """Put ``count`` unregistered chips on a spot."""
        ...


@runtime_checkable
class SimulatedIds(SimulatedDevice, Protocol):
    """A simulated ID reader: the kit taps cards on it."""

    def tap(self, number: str, form: IdForm = "track2") -> None:
        """A card tapped or swiped."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Simulation:
    """A driver connected to its simulator: ``device`` is the real driver (not yet entered),
    ``simulator`` the simulated device it talks to (a `SimulatedDevice` of the role)."""

    device: Device
    simulator: Any


class DeviceAdapter(Protocol):
    """One driver as the table chooses it by name (``[rfid] driver = "NAME"``)."""

    role: Role
    name: str  # the entry point's name, as the config writes it
    summary: str  # one line for `showdown devices list`
    # The keys it reads from its section besides ``kind`` and ``driver``, each with its help
    # line: any other key in the section is refused by name.
    keys: Mapping[str, str]

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> Any:
        """Its settings from its keys of the section (``kind`` and ``driver`` left out);
        a bad or missing value raises ``place.error(key, message)``."""
        ...

    def open(self, settings: Any, context: DriverContext) -> Device:
        """The driver for a real device (not yet entered: the daemon enters it)."""
        ...

    def simulate(self, settings: Any, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation | None:
        """The real driver on its simulator, started (anything to stop goes on ``stack``);
        None when the driver has no simulator."""
        ...

    def probe(self, settings: Any) -> Probe:
        """Whether the configured device is there and readable (`showdown doctor`): opens
        and closes it, never changes its settings."""
        ...
