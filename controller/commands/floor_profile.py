"""A sampling profiler for a simulated floor (bench/floor.py) that sees every thread (the
journal's worker threads, the USB and serial reader threads, the device simulators' threads),
standard library only: a thread reads `sys._current_frames()` every few milliseconds, drops
the samples of threads that are only waiting (in select, a condition, a queue, an idle
worker), and names the component each busy sample belongs to by the innermost frame of ours
(or of a library we own the use of) on its stack. A table process samples its own threads
and sends the counts back in its report (`summary()`); the floor's process samples its own.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from types import FrameType
from typing import Any, Final

__all__ = ["COMPONENTS", "FloorSampler"]

# component -> path fragments of its code, first match from the innermost frame out
COMPONENTS: Final = (
    ("journal", ("/controller/journal/",)),
    ("ingest", ("/leaderboard/ingest/", "/leaderboard/projections/")),
    ("standings", ("/leaderboard/standings_view", "/leaderboard/web.py",
                   "/game/standings")),
    ("desk", ("/leaderboard/desk", "/controller/commands/floor_desk.py")),
    ("mqtt", ("/wire/mqtt.py", "/controller/mqtt_link.py", "/controller/embedded_broker.py",
              "/amqtt/", "/aiomqtt/", "/paho/", "/leaderboard/app.py")),
    ("drivers", ("/drivers/",)),
    ("devices", ("/simulators/shoe.py", "/simulators/rfid", "/simulators/id_reader.py")),
    ("dealer", ("/simulators/",)),
    ("daemon", ("/controller/",)),
    ("game core", ("/game/",)),
    ("signing", ("/wire/",)),
)
# (file fragment, function) of a leaf frame that only waits
_WAITING: Final = (
    ("selectors.py", "select"), ("threading.py", "wait"), ("concurrent/futures/thread.py",
                                                           "_worker"),
    ("serialposix.py", "read"), ("queue.py", "get"), ("simulators/shoe.py", "_loop"),
    ("threading.py", "_wait_for_tstate_lock"), ("base_events.py", "_run_once"),
)


def _component(frame: FrameType | None) -> tuple[str, str]:
    """(component, innermost function of ours) for a stack; ("other", leaf) if none."""
    leaf = frame
    while frame is not None:
        path = frame.f_code.co_filename
        for name, parts in COMPONENTS:
            if any(p in path for p in parts):
                where = path.rsplit("/", 2)
                return name, f"{'/'.join(where[-2:])}:{frame.f_code.co_name}"
        frame = frame.f_back
    assert leaf is not None
    return "other", f"{leaf.f_code.co_filename.rsplit('/', 1)[-1]}:{leaf.f_code.co_name}"


def _waiting(frame: FrameType) -> bool:
    path, name = frame.f_code.co_filename, frame.f_code.co_name
    return any(part in path and name == fn for part, fn in _WAITING)


class FloorSampler:
    """Samples every other thread's stack while entered (or from `start()` to `stop()`);
    `components` and `functions` count the busy samples."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.components: Counter[str] = Counter()
        self.functions: dict[str, Counter[str]] = {}
        self.samples = 0
        self.idle = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="floor-sampler", daemon=True)

    def __enter__(self) -> FloorSampler:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> FloorSampler:
        """Start sampling."""
        self._thread.start()
        return self

    def stop(self) -> FloorSampler:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()
        return self

    def summary(self) -> dict[str, Any]:
        """The counts as plain data (a table process's report carries them)."""
        return {"samples": self.samples, "idle": self.idle,
                "functions": {c: dict(f) for c, f in self.functions.items()}}

    @classmethod
    def of(cls, summary: dict[str, Any]) -> FloorSampler:
        """A stopped sampler holding a `summary()`'s counts (for `lines()`)."""
        sampler = cls()
        sampler.samples, sampler.idle = int(summary.get("samples", 0)), int(
            summary.get("idle", 0))
        for component, functions in summary.get("functions", {}).items():
            sampler.functions[component] = Counter(functions)
            sampler.components[component] = sum(functions.values())
        return sampler

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.is_set():
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                self.samples += 1
                if _waiting(frame):
                    self.idle += 1
                    continue
                component, function = _component(frame)
                self.components[component] += 1
                self.functions.setdefault(component, Counter())[function] += 1
            time.sleep(self.interval)

    def lines(self, top: int = 3) -> list[str]:
        """Each component's share of the busy samples and its top functions."""
        busy = sum(self.components.values()) or 1
        out = []
        for component, n in self.components.most_common():
            tops = ", ".join(f"{f} {c * 100 / busy:.1f}%"
                             for f, c in self.functions[component].most_common(top))
            out.append(f"  {component:<10} {n * 100 / busy:5.1f}%  {tops}")
        return out
