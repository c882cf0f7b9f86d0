"""Find device adapters by name through their Python entry points (`drivers.adapter`): the
project's own and any installed vendor adapter alike. A name nobody registered, an entry point
that does not load, or an object that is not an adapter of its role is a `DriverLookupError`
saying which, and naming the drivers that are installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from drivers.adapter import ENTRY_POINT_GROUPS, DeviceAdapter, Role

__all__ = ["DriverLookupError", "InstalledDriver", "find_adapter", "installed"]


class DriverLookupError(LookupError):
    """No usable adapter of that name for that role."""


@dataclass(frozen=True, slots=True)
class InstalledDriver:
    """One registered adapter as `showdown devices list` shows it."""

    role: Role
    name: str
    target: str  # "module:object"
    distribution: str  # the distribution that registered it


def _points(role: Role) -> list[EntryPoint]:
    return sorted(entry_points(group=ENTRY_POINT_GROUPS[role]), key=lambda p: p.name)


def installed(role: Role) -> list[InstalledDriver]:
    """The adapters registered for a role, by name (nothing is imported)."""
    return [InstalledDriver(role=role, name=p.name, target=p.value,
                            distribution=p.dist.name if p.dist is not None else "?")
            for p in _points(role)]


def find_adapter(role: Role, name: str) -> DeviceAdapter:
    """The adapter registered as ``name`` for ``role``, loaded."""
    registered = _points(role)  # one scan of the installed distributions' metadata
    points = [p for p in registered if p.name == name]
    names = ", ".join(p.name for p in registered) or "none"
    if not points:
        raise DriverLookupError(f"no {role} driver named {name!r} is installed"
                                f" (installed: {names})")
    if len(points) > 1:
        owners = ", ".join(p.dist.name if p.dist is not None else "?" for p in points)
        raise DriverLookupError(f"{len(points)} distributions register a {role} driver named"
                                f" {name!r} ({owners}): uninstall all but one")
    point = points[0]
    try:
        loaded = point.load()
    except Exception as exc:  # a vendor's package that fails to import: say so, by name
        raise DriverLookupError(f"the {role} driver {name!r} ({point.value}) does not load:"
                                f" {type(exc).__name__}: {exc}") from exc
    adapter = loaded() if isinstance(loaded, type) else loaded
    missing = [attr for attr in ("role", "name", "keys", "configure", "open", "simulate", "probe")
               if not hasattr(adapter, attr)]
    if missing:
        raise DriverLookupError(f"the {role} driver {name!r} ({point.value}) is not an adapter:"
                                f" it lacks {', '.join(missing)}")
    if adapter.role != role:
        raise DriverLookupError(f"the driver {name!r} ({point.value}) is a {adapter.role}"
                                f" driver, registered as a {role} one")
    return adapter  # type: ignore[no-any-return]
