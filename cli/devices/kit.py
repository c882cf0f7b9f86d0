"""The conformance kit's driver side: find the adapter asked for (by name, in any role),
read its section of a table config, and run its suite against the driver's simulator.

Everything the user can get wrong (a driver nobody installed, a config that does not parse,
a section or key the adapter refuses) is a `CommandError` or the adapter's `ConfigError`:
one line, exit 2. A simulator or a check that breaks is a FAIL row, never a traceback.
"""

from __future__ import annotations

import tomllib
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Final

from cli.devices.bench import Bench
from cli.devices.observe import Observer
from cli.devices.report import Report, Row, fail
from cli.devices.suite_chips import kit_registry, run_chips
from cli.devices.suite_ids import run_ids
from cli.devices.suite_shoe import run_shoe
from cli.errors import CommandError
from drivers.adapter import ROLES, ConfigPlace, DeviceAdapter, DriverContext, Role
from drivers.registry import DriverLookupError, find_adapter, installed

__all__ = ["SUITES", "Chosen", "check_on_simulator", "choose", "settings_of"]

SUITES: Final[Mapping[Role, Callable[[Bench], Awaitable[list[Row]]]]] = {
    "shoe": run_shoe, "rfid": run_chips, "id_reader": run_ids}
_ROLE_WORDS: Final = {"shoe": "card shoe", "rfid": "chip reader", "id_reader": "ID reader"}


class Chosen:
    """The adapter asked for and its settings, ready to run."""

    def __init__(self, adapter: DeviceAdapter, settings: Any, options: Mapping[str, Any],
                 place: ConfigPlace) -> None:
        self.adapter, self.settings, self.options, self.place = adapter, settings, options, place

    @property
    def role(self) -> Role:
        """The adapter's role."""
        return self.adapter.role


def find(driver: str, role: Role | None) -> DeviceAdapter:
    """The adapter named ``driver`` (of ``role``, or of whichever role registers it)."""
    roles = [role] if role is not None else [
        r for r in ROLES if any(d.name == driver for d in installed(r))]
    if not roles:
        names = "; ".join(f"{r}: {', '.join(d.name for d in installed(r)) or 'none'}"
                          for r in ROLES)
        raise CommandError(f"no driver named {driver!r} is installed ({names});"
                           " `showdown devices list` shows them")
    if len(roles) > 1:
        raise CommandError(f"drivers named {driver!r} are installed for {', '.join(roles)}:"
                           " say which with --role")
    try:
        return find_adapter(roles[0], driver)
    except DriverLookupError as exc:
        raise CommandError(str(exc)) from None


def section_of(config: Path | None, role: Role, driver: str, kind: str
               ) -> tuple[dict[str, Any], ConfigPlace]:
    """The driver's keys from the ``[role]`` section of a table config (none without one),
    read as for a device of ``kind`` ("sim": the kit runs the driver on its simulator, so
    the device's address is not required; "hardware": a real device, or a replay)."""
    if config is None:
        return {}, ConfigPlace(source="(no config)", section=role, kind=kind)
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read the config {config}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CommandError(f"{config}: not a TOML file: {exc}") from None
    table = data.get(role)
    if not isinstance(table, dict):
        raise CommandError(f"{config}: no [{role}] section (the {_ROLE_WORDS[role]}'s driver"
                           " and its keys)")
    named = table.get("driver")
    if named is not None and named != driver:
        raise CommandError(f"{config}: [{role}] driver is {named!r}, not {driver!r}")
    place = ConfigPlace(source=str(config), section=role, base=config.parent.resolve(),
                        kind=kind)
    return {k: v for k, v in table.items() if k not in ("kind", "driver")}, place


def settings_of(adapter: DeviceAdapter, options: Mapping[str, Any], place: ConfigPlace) -> Any:
    """The adapter's settings from its keys; a key it does not know is refused by name."""
    for key in options:
        if key not in adapter.keys:
            known = ", ".join(sorted(adapter.keys)) or "none"
            raise place.error(key, f"the {adapter.name} driver has no such key (its keys:"
                                   f" {known})")
    return adapter.configure(options, place)


def choose(driver: str, role: Role | None, config: Path | None, *, kind: str = "sim",
           options: Mapping[str, Any] | None = None, source: str = "(capture)") -> Chosen:
    """The adapter, its section of the config (or these ``options``, a capture's) and its
    settings, read as for a device of ``kind`` (`section_of`)."""
    adapter = find(driver, role)
    if options is not None:
        place = ConfigPlace(source=source, section=adapter.role, kind=kind)
        keys = dict(options)
    else:
        keys, place = section_of(config, adapter.role, adapter.name, kind)
    return Chosen(adapter, settings_of(adapter, keys, place), keys, place)


async def check_on_simulator(chosen: Chosen, *, timeout: float, spots: int | None,
                             seed: int = 0, sim_speed: float = 1.0) -> Report:
    """Run the role's suite on the driver connected to its simulator (``sim_speed`` times
    faster than the device, for a simulator that models the device's timing)."""
    adapter = chosen.adapter
    role = adapter.role
    context = DriverContext(name=role, registry=kit_registry() if role == "rfid" else None,
                            seed=seed, sim_speed=sim_speed)
    against = "its simulator" + (f" running {sim_speed:g}x the device's speed (the timings"
                                 " are the simulator's, not the device's)"
                                 if sim_speed != 1 else "")
    async with AsyncExitStack() as stack:
        try:
            simulation = adapter.simulate(chosen.settings, context, stack)
        except Exception as exc:  # the adapter's bug or a simulator that cannot start
            return Report(adapter.name, role, against, [fail(
                "simulator", f"{adapter.name}'s simulate() raised {type(exc).__name__}: {exc}")])
        if simulation is None:
            # An adapter may say why its simulator cannot run here (a service not installed).
            why = getattr(adapter, "simulation_unavailable", None)
            reason = why() if callable(why) else None
            if reason:
                raise CommandError(f"the {adapter.name} driver's simulator cannot run on this"
                                   f" machine: {reason}")
            raise CommandError(f"the {adapter.name} driver has no simulator: check it on a"
                               " recording with --capture FILE (`showdown devices record`)")
        try:
            async with Observer(simulation.device) as seen:
                bench = Bench(seen, simulation.simulator, timeout=timeout, spots=spots)
                rows = await SUITES[role](bench)
        except Exception as exc:  # entering or leaving the driver broke
            return Report(adapter.name, role, against, [fail(
                "driver", f"the driver broke: {type(exc).__name__}: {exc}")])
    return Report(adapter.name, role, against, rows)
