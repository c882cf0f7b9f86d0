"""The demo's narrator: readable lines (and ordinals), and progress bars (rich) for the long parts.

On a terminal the bars are live (hands played of the total, elapsed time) and the narrative
lines print above them; otherwise (tests, CI logs, a pipe) each bar is one line when it starts
and one when it ends, never a flood of updates.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final

__all__ = ["Bar", "Narrator", "ordinal"]

_ORDINAL: Final = {1: "st", 2: "nd", 3: "rd"}


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th ... 11th, 12th."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else _ORDINAL.get(n % 10, 'th')}"


class Bar:
    """One long part: `advance` as hands are played, `finish` when it is over."""

    def __init__(self, narrator: Narrator, label: str, total: int, task: Any) -> None:
        self._narrator = narrator
        self.label = label
        self.total = max(total, 1)
        self.done = 0
        self._task = task
        self._started = time.monotonic()
        self.finished = False

    def advance(self, hands: int = 1) -> None:
        """`hands` more hands played (never past the total)."""
        self.done = min(self.total, self.done + hands)
        self._narrator._update(self)

    def finish(self, note: str = "") -> None:
        """The part is over (entries that ended early leave hands unplayed: the bar fills)."""
        if self.finished:
            return
        self.finished = True
        self.done = self.total
        self._narrator._finish(self, note, time.monotonic() - self._started)


class Narrator:
    """Prints the demo's lines through `out`; bars are rich's when `live` (a terminal)."""

    def __init__(self, out: Callable[[str], None] = print, *, live: bool | None = None) -> None:
        self._out = out
        self.live = (sys.stdout.isatty() and out is print) if live is None else live
        self._progress: Any = None

    def __enter__(self) -> Narrator:
        if self.live:
            from rich.console import Console  # noqa: PLC0415
            from rich.progress import (  # noqa: PLC0415
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("hands"), TimeElapsedColumn(),
                console=Console(highlight=False, soft_wrap=True), transient=False)
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def say(self, text: str) -> None:
        """One narrative line (above the bars on a terminal)."""
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            self._out(text)

    def bar(self, label: str, total: int) -> Bar:
        """A new bar of `total` hands."""
        task = None
        if self._progress is not None:
            task = self._progress.add_task(label, total=max(total, 1))
        else:
            self._out(f"{label}: {total} hands ...")
        return Bar(self, label, total, task)

    def _update(self, bar: Bar) -> None:
        if self._progress is not None:
            self._progress.update(bar._task, completed=bar.done)

    def _finish(self, bar: Bar, note: str, seconds: float) -> None:
        if self._progress is not None:
            self._progress.update(bar._task, completed=bar.total)
            if note:
                self.say(f"{bar.label}: {note}")
        else:
            self._out(f"{bar.label}: done in {seconds:.1f} s" + (f"; {note}" if note else ""))
