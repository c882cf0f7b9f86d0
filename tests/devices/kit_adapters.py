# The adapter methods keep the seam's signatures (drivers.adapter.DeviceAdapter).
# ruff: noqa: ARG002
"""Adapters the conformance kit's tests run, registered by entry point in a throw-away
distribution (tests/devices/conftest.py): the SR-48 driver reporting every spot in every
sweep (``changes_only=False``) on its simulator, and ones made wrong on purpose: a shoe
driver that drops a card, a chip reader driver that loses one chip of a stack, simulators
that lack or refuse a control (the kit must SKIP, never PASS)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.readings import SPOTS, CardReading, ChipInventory, DeviceAlert, SpotId
from drivers.rfid import UsbChipReader
from drivers.rfid_settings import UsbReaderSettings
from simulators.rfid import RfidReaderSimulator


class _ChipControls:
    """The SR-48 simulator's `SimulatedChips` controls."""

    def __init__(self, sim: RfidReaderSimulator, spots: list[SpotId]) -> None:
        self.sim, self._spots = sim, spots

    def spots(self) -> list[SpotId]:
        return list(self._spots)

    def place(self, seat: int, spot: str, cents: int | None = None, *,
              uids: Any = ()) -> tuple[bytes, ...]:
        return self.sim.place(seat, spot, cents, uids=uids)

    def remove(self, seat: int, spot: str, uids: Any = None) -> tuple[bytes, ...]:
        return self.sim.remove(seat, spot, uids)

    def chips_on(self, seat: int, spot: str) -> frozenset[bytes]:
        return self.sim.chips_on(seat, spot)

    def clear(self) -> None:
        self.sim.clear()

    def unplug(self) -> None:
        self.sim.unplug()

    def plug(self) -> None:
        self.sim.plug()

    def set_fault(self, name: str, value: float | bool) -> None:
        self.sim.faults.set(name, value)

    def inject(self, name: str) -> None:
        self.sim.faults.inject(name)


def _sr48_settings(spots: int = 42) -> UsbReaderSettings:
    antennas = {(seat - 1) * len(SPOTS) + i + 1: SpotId(seat, spot)
                for seat in range(1, 7) for i, spot in enumerate(SPOTS)}
    return UsbReaderSettings(
        antenna_map=dict(list(antennas.items())[:spots]), report_interval_ms=50,
        heartbeat_interval_ms=100, stall_timeout=0.5, keepalive_interval=0.2,
        command_timeout=0.3, read_timeout_ms=20, changes_only=False, backoff_initial=0.02,
        backoff_max=0.1, alert_interval=0.5)


class ChipKitAdapter:
    role: Role = "rfid"
    name = "kit-sr48"
    summary = "the SR-48 USB chip reader on its simulator (the kit's own test adapter)"
    keys: Mapping[str, str] = {"spots": "how many spots the reader covers (1..42)"}

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> UsbReaderSettings:
        spots = options.get("spots", 42)
        if not isinstance(spots, int) or not 1 <= spots <= 42:
            raise place.error("spots", "must be 1..42")
        return _sr48_settings(spots)

    def open(self, settings: UsbReaderSettings, context: DriverContext) -> Any:
        return UsbChipReader(settings)

    def simulate(self, settings: UsbReaderSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = RfidReaderSimulator(registry=context.registry, seat_entries={}, seed=context.seed)
        device = UsbChipReader(settings, backend=sim.backend)
        return Simulation(device=device,
                          simulator=_ChipControls(sim, list(settings.antenna_map.values())))

    def probe(self, settings: Any) -> Probe:
        return Probe(ok=False, detail="test adapter")


# ----------------------------------------------------------------------------- broken ones


class _Filtered:
    """A driver whose readings pass through ``keep`` (None drops one)."""

    def __init__(self, inner: Any, keep: Callable[[Any], Any]) -> None:
        self.inner, self.keep = inner, keep

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.inner.__aexit__(et, e, tb)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items()

    async def _items(self) -> AsyncIterator[Any]:
        async for item in self.inner:
            kept = self.keep(item)
            if kept is not None:
                yield kept
            elif hasattr(self.inner, "confirm"):  # lost after the shoe was told it is kept
                await self.inner.confirm(item)

    async def confirm(self, reading: Any) -> None:
        if hasattr(self.inner, "confirm"):
            await self.inner.confirm(reading)

    def health(self) -> Any:
        return self.inner.health()


def _drop_tenth_card() -> Callable[[Any], Any]:
    count = 0

    def keep(item: Any) -> Any:
        nonlocal count
        if isinstance(item, CardReading):
            count += 1
            if count == 10:
                return None
        return item

    return keep


def _lose_one_of_a_stack(item: Any) -> Any:
    if isinstance(item, ChipInventory) and len(item.uids) >= 20:
        return dataclasses.replace(item, uids=item.uids - {min(item.uids)})
    return item


class DroppingShoeAdapter:
    """The project's shoe adapter (adapters/showdown_shoe.py) with a driver that loses the
    tenth card it reads."""

    role: Role = "shoe"
    name = "kit-shoe-drops-a-card"
    summary = "a shoe driver that loses the tenth card it reads (broken on purpose)"

    def __init__(self) -> None:
        from adapters.showdown_shoe import ADAPTER

        self._real = ADAPTER
        self.keys = ADAPTER.keys

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> Any:
        return self._real.configure(options, place)

    def open(self, settings: Any, context: DriverContext) -> Any:
        return _Filtered(self._real.open(settings, context), _drop_tenth_card())

    def simulate(self, settings: Any, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = self._real.simulate(settings, context, stack)
        return Simulation(device=_Filtered(sim.device, _drop_tenth_card()),
                          simulator=sim.simulator)

    def probe(self, settings: Any) -> Probe:
        return self._real.probe(settings)


class LosingChipAdapter(ChipKitAdapter):
    name = "kit-sr48-loses-a-chip"
    summary = "a chip reader driver that loses one chip of a stack of 20 (broken on purpose)"

    def simulate(self, settings: UsbReaderSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = super().simulate(settings, context, stack)
        return Simulation(device=_Filtered(sim.device, _lose_one_of_a_stack),
                          simulator=sim.simulator)


class _NoFaults:
    """A chip simulator's controls without the line faults (set_fault, inject)."""

    def __init__(self, inner: _ChipControls) -> None:
        self.spots, self.place, self.remove = inner.spots, inner.place, inner.remove
        self.clear, self.unplug, self.plug = inner.clear, inner.unplug, inner.plug


class _NeverSilent:
    """A shoe simulator's controls whose line faults are refused (a line that cannot go
    silent on demand)."""

    def __init__(self, inner: Any) -> None:
        self.deal_card, self.unplug, self.plug = inner.deal_card, inner.unplug, inner.plug
        self.inject = inner.inject

    def set_fault(self, name: str, value: float | bool) -> None:
        raise NotImplementedError("this shoe's simulator switches no line fault")


class NeverSilentShoeAdapter(DroppingShoeAdapter):
    name = "kit-shoe-never-silent"
    summary = "the project's shoe on a simulator that refuses set_fault (the kit must SKIP)"

    def simulate(self, settings: Any, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = self._real.simulate(settings, context, stack)
        return Simulation(device=sim.device, simulator=_NeverSilent(sim.simulator))


class NoFaultsChipAdapter(ChipKitAdapter):
    name = "kit-sr48-no-faults"
    summary = "the SR-48 on a simulator without fault switches (the kit must SKIP, not PASS)"

    def simulate(self, settings: UsbReaderSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = super().simulate(settings, context, stack)
        assert isinstance(sim.simulator, _ChipControls)
        return Simulation(device=sim.device, simulator=_NoFaults(sim.simulator))


CHIPS = ChipKitAdapter()
DROPPING_SHOE = DroppingShoeAdapter()
LOSING_CHIPS = LosingChipAdapter()
NO_FAULTS = NoFaultsChipAdapter()
NEVER_SILENT = NeverSilentShoeAdapter()


class SilentLossShoeAdapter:
    """The example text-line shoe (examples/textline-shoe) with a driver that never says it
    lost the cards of an outage (its reads_lost alerts dropped): the loss is a FAIL, not a
    declared limit."""

    role: Role = "shoe"
    name = "kit-text-line-silent-loss"
    summary = "a text-line shoe driver that hides the cards it lost (broken on purpose)"

    def __init__(self) -> None:
        from showdown_textline_shoe.adapter import ADAPTER  # type: ignore[import-not-found]

        self._real = ADAPTER
        self.keys = ADAPTER.keys

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> Any:
        return self._real.configure(options, place)

    def open(self, settings: Any, context: DriverContext) -> Any:
        return _Filtered(self._real.open(settings, context), _hide_reads_lost)

    def simulate(self, settings: Any, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        sim = self._real.simulate(settings, context, stack)
        return Simulation(device=_Filtered(sim.device, _hide_reads_lost),
                          simulator=sim.simulator)

    def probe(self, settings: Any) -> Probe:
        return self._real.probe(settings)


def _hide_reads_lost(item: Any) -> Any:
    return None if isinstance(item, DeviceAlert) and item.kind == "reads_lost" else item


SILENT_LOSS = SilentLossShoeAdapter()
