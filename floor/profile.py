"""A sampling profiler for a simulated floor (bench/floor_rate.py) that sees every thread (the
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
    ("standings", ("/leaderboard/standings/", "/leaderboard/web.py",
                   "/game/tournament/standings")),
    ("desk", ("/leaderboard/desk", "/floor/desk.py")),
    ("mqtt", ("/wire/mqtt.py", "/controller/mqtt_link.py", "/controller/embedded_broker.py",
              "/amqtt/", "/aiomqtt/", "/paho/", "/leaderboard/app.py")),
    ("drivers", ("/drivers/",)),
    ("devices", ("/simulators/shoe.py", "/simulators/rfid", "/simulators/id_reader.py")),
    ("dealer", ("/simulators/",)),
    ("daemon", ("/controller/",)),
    ("event loop", ("/asyncio/",)),  # asyncio's own work, beneath any frame of ours
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


def _cpu_seconds(native_id: int | None) -> float | None:
    """A thread's CPU time so far (Linux: its CPU-time clock from its thread id), or None
    (another system, or the thread has ended)."""
    if native_id is None or not hasattr(time, "clock_gettime"):
        return None
    try:  # the kernel's per-thread CPU clock: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED
        return time.clock_gettime((~native_id << 3) | 6)
    except OSError:
        return None


class FloorSampler:
    """Samples every other thread's stack while entered (or from `start()` to `stop()`);
    `components` and `functions` count the busy samples, `cpu` and `cpu_functions` the CPU
    seconds each thread used since the last sample, given to the stack it is in now, or, if it
    is waiting now, to the one the last sample found it busy in, else to "unseen" (work done
    wholly between two samples); a thread waiting in C, on a lock, a disk or the interpreter
    lock, weighs nothing."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.components: Counter[str] = Counter()
        self.functions: dict[str, Counter[str]] = {}
        self.cpu: dict[str, float] = {}  # component -> CPU seconds
        self.cpu_functions: dict[str, dict[str, float]] = {}
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
                "functions": {c: dict(f) for c, f in self.functions.items()},
                "cpu_functions": {c: dict(f) for c, f in self.cpu_functions.items()}}

    @classmethod
    def of(cls, summary: dict[str, Any]) -> FloorSampler:
        """A stopped sampler holding a `summary()`'s counts (for `lines()`)."""
        sampler = cls()
        sampler.samples, sampler.idle = int(summary.get("samples", 0)), int(
            summary.get("idle", 0))
        for component, functions in summary.get("functions", {}).items():
            sampler.functions[component] = Counter(functions)
            sampler.components[component] = sum(functions.values())
        for component, functions in summary.get("cpu_functions", {}).items():
            sampler.cpu_functions[component] = {f: float(c) for f, c in functions.items()}
            sampler.cpu[component] = sum(sampler.cpu_functions[component].values())
        return sampler

    def _run(self) -> None:
        me = threading.get_ident()
        last: dict[int, float] = {}  # thread ident -> its CPU seconds at the last sample
        busy: dict[int, tuple[str, str]] = {}  # thread ident -> where the last sample found
        # it busy, if it was
        while not self._stop.is_set():
            natives = {t.ident: t.native_id for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                self.samples += 1
                cpu = _cpu_seconds(natives.get(ident))
                used = 0.0 if cpu is None else max(0.0, cpu - last.get(ident, cpu))
                if cpu is not None:
                    last[ident] = cpu
                component, function = _component(frame)
                waiting = _waiting(frame)
                # a thread found waiting spent its CPU where it was last seen busy, if it was
                where = busy.get(ident, ("unseen", "between samples")) if waiting else (
                    component, function)
                busy.pop(ident, None)
                if used:
                    self.cpu[where[0]] = self.cpu.get(where[0], 0.0) + used
                    mine = self.cpu_functions.setdefault(where[0], {})
                    mine[where[1]] = mine.get(where[1], 0.0) + used
                if waiting:
                    self.idle += 1
                    continue
                busy[ident] = (component, function)
                self.components[component] += 1
                self.functions.setdefault(component, Counter())[function] += 1
            time.sleep(self.interval)

    def lines(self, top: int = 3, *, hands: int = 0) -> list[str]:
        """Each component's share of the CPU (milliseconds a hand, given `hands`) and its
        top functions; the share of the busy samples where no CPU time could be read."""
        if self.cpu:
            weights, functions = self.cpu, self.cpu_functions
        else:
            weights = {k: float(v) for k, v in self.components.items()}
            functions = {k: {f: float(n) for f, n in v.items()}
                         for k, v in self.functions.items()}
        whole = sum(weights.values()) or 1.0
        out = []
        for component, weight in sorted(weights.items(), key=lambda kv: -kv[1]):
            best = sorted(functions[component].items(), key=lambda kv: -kv[1])[:top]
            tops = ", ".join(f"{f} {c * 100 / whole:.1f}%" for f, c in best)
            per_hand = f"{weight * 1000 / hands:6.1f} ms" if self.cpu and hands else ""
            out.append(f"  {component:<10} {weight * 100 / whole:5.1f}% {per_hand}  {tops}")
        return out
