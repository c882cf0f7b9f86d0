"""Test builds only: stop a process at a named step so the crash tests' SIGKILL lands exactly
there (docs/testing-crash.md). A step pauses only when the environment variable a caller
names holds that step's name; the tests set it, nothing in a deployment does. When it
pauses, it writes the step's name to the file ``<variable>_MARKER`` names (whole, by a
rename), then sleeps until killed."""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["pause_at"]


def pause_at(variable: str, step: str) -> None:
    """Sleep forever here when ``$variable`` is `step` (after writing the marker file)."""
    if os.environ.get(variable) != step:
        return
    marker = os.environ.get(f"{variable}_MARKER")
    if marker:
        # Written aside, then renamed: the test that waits for the file never reads it
        # created and still empty.
        partial = Path(f"{marker}.partial")
        partial.write_text(step)
        partial.replace(marker)
    while True:
        time.sleep(1)
