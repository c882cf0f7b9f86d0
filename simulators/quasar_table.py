"""A table whose chip spots are read by simulated Metratec QuasarMX readers: several
`simulators.quasar.QuasarSimulator` on one shared `simulators.felt.Felt`, each port mapped to
a spot. It has the table API of the SR-48 simulator (`simulators.rfid.RfidReaderSimulator`:
place, remove, clear, clear_seat, chips_on, table, owner_of, chips_of, moving, owners...), so
the virtual dealer plays a heat on it unchanged, and the controls of
`drivers.adapter.SimulatedChips` (spots, unplug, plug, set_fault, inject) for the kit.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Self

from drivers.quasar_settings import QuasarLink
from drivers.readings import SpotId
from game.chips.registry import ChipRegistry
from simulators.faults import Faults
from simulators.felt import Felt, OnFelt, spot_id
from simulators.quasar import QuasarSimulator, QuasarTiming, Transport

__all__ = ["QuasarTable", "ReaderPlan"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderPlan:
    """One simulated reader of the table: its ports' spots and how it is reached."""

    ports: Mapping[int, SpotId] = field(default_factory=lambda: MappingProxyType({}))
    transport: Transport = "pty"
    serial: str | None = None
    tcp_port: int = 0  # 0: a free port


class QuasarTable(OnFelt):
    """Simulated QuasarMX readers on one felt; a context manager (start/stop them all)."""

    def __init__(
        self,
        plans: Sequence[ReaderPlan],
        *,
        registry: ChipRegistry | None = None,
        seat_entries: Mapping[int, str] | None = None,
        seed: int = 0,
        speed: float = 1.0,
        timing: QuasarTiming | None = None,
        link_dir: str | Path | None = None,
    ) -> None:
        if not plans:
            raise ValueError("a table needs at least one reader")
        spots = [s for p in plans for s in p.ports.values()]
        if len(set(spots)) != len(spots):
            raise ValueError("one spot under two ports")
        self.felt = Felt(registry=registry, seat_entries=seat_entries, seed=seed)
        # The SR-48 simulator's switch; a QuasarMX is polled, so every sweep reads every spot.
        self.sweep_on_change = False
        self._own_dir = link_dir is None
        self.link_dir = Path(tempfile.mkdtemp(prefix="quasarmx-")) if link_dir is None \
            else Path(link_dir)
        self.readers = [
            QuasarSimulator(
                felt=self.felt, ports=plan.ports, transport=plan.transport,
                serial=plan.serial or f"QMX-SIM-{i + 1:04d}",
                multiplexers=max(plan.ports, default=1) > 4, speed=speed, timing=timing,
                faults=Faults(seed=seed + i), tcp_port=plan.tcp_port,
                link_path=self.link_dir / f"quasarmx-{i + 1}" if plan.transport == "pty"
                else None,
            )
            for i, plan in enumerate(plans)
        ]

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Power every reader on."""
        for reader in self.readers:
            reader.start()
        return self

    def stop(self) -> None:
        """Power every reader off (and remove the link folder made for them)."""
        for reader in self.readers:
            reader.stop()
        if self._own_dir:
            shutil.rmtree(self.link_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def links(self) -> tuple[QuasarLink, ...]:
        """How a driver reaches each reader (after `start`): its pty's link path, or
        127.0.0.1 and its TCP port, with its ports' spots."""
        return tuple(
            QuasarLink(url=str(r.link_path), antennas=r.ports) if r.transport == "pty"
            else QuasarLink(host=r.host, port=r.tcp_port, antennas=r.ports)
            for r in self.readers
        )

    # ------------------------------------------------------------------ SimulatedChips

    def spots(self) -> tuple[SpotId, ...]:
        """The spots the readers' ports cover, reader by reader, in port order."""
        return tuple(s for r in self.readers for _, s in sorted(r.ports.items()))

    def _chosen(self, reader: int | None) -> list[QuasarSimulator]:
        return self.readers if reader is None else [self.readers[reader]]

    def unplug(self, reader: int | None = None) -> None:
        """Unplug every reader (or the one at this index)."""
        for r in self._chosen(reader):
            r.unplug()

    def plug(self, reader: int | None = None) -> None:
        """Plug every reader (or the one at this index) back in."""
        for r in self._chosen(reader):
            r.plug()

    def set_fault(self, name: str, value: float | bool, reader: int | None = None) -> None:
        """Switch a line fault on every reader (or one)."""
        for r in self._chosen(reader):
            r.set_fault(name, value)

    def inject(self, name: str, reader: int | None = None) -> None:
        """One fault on each reader's next answer (or one reader's)."""
        for r in self._chosen(reader):
            r.inject(name)

    def antenna_fault(self, seat: int, spot: str, broken: bool = True) -> None:
        """Break (or mend) the antenna under one spot."""
        where = spot_id(seat, spot)
        for r in self.readers:
            for port, mapped in r.ports.items():
                if mapped == where:
                    r.antenna_fault(port, broken)
                    return
        raise ValueError(f"no reader's port covers seat {seat} {spot}")

    @contextlib.contextmanager
    def moving(self) -> Iterator[None]:
        """Several moves made in one go (the readers read them on their next sweep)."""
        with self.felt.moving():
            yield
