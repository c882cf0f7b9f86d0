"""A process whose every printed line is kept (read by a thread), and a wait for a line that
matches: how the whole-process tests follow a long-running command's output."""

from __future__ import annotations

import re
import subprocess
import threading
import time

__all__ = ["PrintedLines"]


class PrintedLines:
    """``process``'s standard output (stderr folded in by the caller), line by line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def until(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first printed line matching ``pattern`` (waits for it up to ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found := re.search(pattern, line):
                    return found
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.2)
        raise AssertionError(f"no line matches {pattern!r}:\n" + "\n".join(self.lines))

    def join(self, timeout: float) -> None:
        """Wait for the reader to have read everything the process printed."""
        self._reader.join(timeout=timeout)
