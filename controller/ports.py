"""What the running daemon (controller.app's `TableDaemon`) offers its parts, as narrow
Protocols it satisfies structurally: the console and the checkpointer depend on these, never
on controller.app, so no part of the daemon imports the module that composes it.

    ConsoleTable      controller/console/ (the web app, its views, its server)
    CheckpointedTable controller/checkpointing.py

The device pumps (controller/device_pumps.py) take plain callables instead (a submit
function, a logger, the last shoe reads).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from controller.clock import ClockSource
from controller.config import TableConfig
from controller.console_gate import ConsoleGate
from controller.devices import TableDevices
from controller.journal import Journal
from controller.slip_printing import SlipPrinting
from controller.table_service import TableService

__all__ = ["CheckpointedTable", "ConsoleTable"]

_T = TypeVar("_T")


class _Inputs(Protocol):
    """A table whose applied inputs can be counted and waited for."""

    @property
    def version(self) -> int:
        """How many inputs have been applied (the screens and checkpoints wait on it)."""
        ...

    @property
    def faults(self) -> Sequence[str]:
        """Why the table is in the error state (empty: it is running)."""
        ...

    @property
    def service(self) -> TableService | None:
        """The table's state and its decisions (None before start-up loaded it)."""
        ...

    async def changed(self, after: int, timeout: float | None = None) -> int:
        """Wait until an input has been applied since version ``after``; the version now."""
        ...


class CheckpointedTable(_Inputs, Protocol):
    """What the checkpointer needs of the daemon."""

    @property
    def shoe_reads(self) -> Mapping[str, tuple[int, int]]:
        """device -> (session, read_index) of the last shoe read journaled."""
        ...

    async def quiesced(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` in a worker thread between inputs: no input is applied meanwhile."""
        ...


class ConsoleTable(_Inputs, Protocol):
    """What the console (screens, sign-in, actions, slips) needs of the daemon."""

    @property
    def config(self) -> TableConfig:
        """The table's configuration (its id, the console's settings)."""
        ...

    @property
    def clock(self) -> ClockSource:
        """The table's clock."""
        ...

    @property
    def journal(self) -> Journal | None:
        """The open journal (the console reads alerts and scores back from it)."""
        ...

    @property
    def gate(self) -> ConsoleGate | None:
        """Sign-in, sessions and card taps (None before the daemon runs)."""
        ...

    @property
    def devices(self) -> TableDevices | None:
        """The devices, once opened (their health is shown)."""
        ...

    @property
    def slips(self) -> SlipPrinting:
        """The receipt printer's slips (what the dealer's screen offers to print)."""
        ...

    async def on_console(self, request: Mapping[str, Any], *,
                         terminal: str = ...) -> Mapping[str, Any]:
        """A request from a console (``terminal``: the client's address); the answer."""
        ...

    async def read_state(self, read: Callable[[], _T]) -> _T:
        """Run ``read`` between inputs, never while one is being applied."""
        ...
