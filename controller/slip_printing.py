"""A score slip printed on the table's receipt printer: the console's ``print_slip`` action
(a dealer or supervisor presses Print) and, when ``[printer] print_on_acknowledge``, the slip
printed by itself once a participant acknowledges a score (decision D351).

Every attempt that reaches the printer is journaled as a ``slip`` input (`SlipPrinted`: the
entry, the message and code printed, who pressed Print, printed or why not), whatever the
printer answered; a request refused before it (no printer, no such score, the printer busy)
changes nothing. Play never waits on the printer: one job at a time, in a worker thread,
every wait bounded by ``[printer] timeout``; a second press meanwhile is refused ("busy").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from controller.receipt_printer import PrinterError, ReceiptPrinter, receipt_bytes
from controller.slip_layout import Slip, slip_layout
from runtime.logs import get_logger

__all__ = ["MAX_ENTRY_ID", "SlipPrinting"]

MAX_ENTRY_ID: Final = 40
_log = get_logger("showdown.printer")

SlipReader = Callable[[str], Awaitable[Slip | None]]
Recorder = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]


class SlipPrinting:
    """Prints slips on ``printer`` (None: the table has none), reading them with ``slip``
    and journaling each attempt with ``record`` (a ``slip`` input's payload)."""

    def __init__(self, printer: ReceiptPrinter | None, *, slip: SlipReader,
                 record: Recorder) -> None:
        self.printer = printer
        self._slip = slip
        self._record = record
        self._busy = asyncio.Lock()
        self.last: dict[str, dict[str, Any]] = {}  # entry id -> its last attempt, for screens

    @property
    def auto(self) -> bool:
        """True when a slip prints by itself once its score is acknowledged."""
        return self.printer is not None and self.printer.config.print_on_acknowledge

    def close(self) -> None:
        """Release the printer (a simulated one stops)."""
        if self.printer is not None:
            self.printer.close()

    def describe(self) -> dict[str, Any]:
        """The printer as the dealer's screen shows it."""
        if self.printer is None:
            return {"kind": "none", "auto": False}
        config = self.printer.config
        return {"kind": config.kind, "name": config.describe(), "auto": self.auto,
                "busy": self._busy.locked()}

    async def print_slip(self, entry_id: object, *, by: str | None,
                         now: Callable[[], str]) -> dict[str, Any]:
        """Print the entry's slip; the answer the console shows (``ok``, ``error``,
        ``detail``). ``by``: who pressed Print (None: printed on acknowledgement);
        ``now``: the time as the venue reads it, for the screen."""
        if not isinstance(entry_id, str) or not entry_id.strip():
            return {"ok": False, "error": "entry_id: name the entry whose slip to print"}
        if len(entry_id) > MAX_ENTRY_ID:
            return {"ok": False, "error": f"entry_id: at most {MAX_ENTRY_ID} characters"}
        printer = self.printer
        if printer is None:
            return {"ok": False, "error": "this table has no receipt printer ([printer] kind ="
                                          f' "none"): open /slip/{entry_id} and print it from'
                                          " the browser"}
        slip = await self._slip(entry_id)
        if slip is None:
            return {"ok": False, "error": f"entry_id: entry {entry_id} has no score recorded"
                                          " at this table"}
        if self._busy.locked():
            return {"ok": False, "error": "the printer is busy with another slip: press Print"
                                          " again in a moment"}
        async with self._busy:
            layout = slip_layout(slip)
            job = receipt_bytes(layout, printer.config.columns)
            error: str | None = None
            try:
                await asyncio.to_thread(printer.print_job, job)
            except PrinterError as exc:
                error = exc.reason
        who = slip.entry_code or slip.entry_id
        recorded = await self._record({
            "entry_id": slip.entry_id, "seq": slip.seq, "code": slip.code,
            "printed": error is None, "by": by, "error": error,
            "printer": printer.config.describe()})
        self.last[slip.entry_id] = {"printed": error is None, "error": error, "by": by,
                                    "at": now()}
        if not recorded.get("ok"):
            _log.error("slip print not journaled", entry_id=slip.entry_id,
                       error=recorded.get("error"))
        if error is not None:
            _log.warning("slip not printed", entry_id=slip.entry_id, error=error)
            return {"ok": False, "error": f"the slip for {who} was NOT printed: {error}",
                    "detail": {"printed": False, "entry_id": slip.entry_id}}
        _log.info("slip printed", entry_id=slip.entry_id, seq=slip.seq, by=by)
        return {"ok": True, "detail": {"printed": True, "entry_id": slip.entry_id,
                                       "message": f"slip printed for {who}"}}

