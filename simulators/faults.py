"""Switchable line and device faults shared by the device simulators (shoe, RFID reader).

A `Faults` is a small mutable set of probabilities and switches plus a seeded RNG. Change any
attribute at run time (from any thread) and the simulator applies it from its next frame on.
`inject` queues one-shot faults for deterministic tests ("corrupt the next frame carrying a
reading"). `Faults.parse("corrupt=0.05,drop=0.1,silent")` reads the command-line form.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from drivers.adapter import FAULT_NAMES, ONE_SHOT_FAULTS, PROBABILITY_FAULTS

__all__ = ["FAULT_NAMES", "ONE_SHOT", "Faults"]

# One-shot faults that `inject` accepts; each acts on one outgoing frame (``lose_incoming`` on
# one incoming frame, ``repeat`` on one reading).
# (the names are the simulated devices' protocol's: drivers.adapter)
ONE_SHOT: Final = ONE_SHOT_FAULTS
_PROBABILITIES: Final = PROBABILITY_FAULTS


@dataclass(slots=True, eq=False)
class Faults:
    """Faults of one simulated device; probabilities apply per frame, independently."""

    corrupt: float = 0.0  # an outgoing frame has one byte (after its first) XORed with noise
    drop: float = 0.0  # an outgoing frame is lost
    duplicate: float = 0.0  # an outgoing frame is sent twice, byte for byte
    garbage: float = 0.0  # 1..16 random noise bytes go out before a frame
    drop_incoming: float = 0.0  # a frame from the host is lost (its ACK or command)
    repeat: float = 0.0  # the device reports a reading twice (a firmware double read)
    delay: float = 0.0  # seconds every outgoing frame is held back (slow responses)
    silent: bool = False  # the device neither sends nor listens (hung firmware)
    seed: int | None = None
    rng: random.Random = field(init=False, repr=False)
    _once: deque[tuple[str, bool]] = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in _PROBABILITIES:
            _check_probability(name, getattr(self, name))
        _check_delay(self.delay)
        self.rng = random.Random(self.seed)
        self._once = deque()
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, spec: str, *, seed: int | None = None) -> Faults:
        """Read "corrupt=0.05,drop=0.1,delay=0.2,silent" (commas or spaces); ValueError if bad."""
        faults = cls(seed=seed)
        for item in spec.replace(",", " ").split():
            name, sep, value = item.partition("=")
            faults.set(name.strip(), value.strip() if sep else "1")
        return faults

    def set(self, name: str, value: str | float | bool) -> None:
        """Switch one fault by name at run time; ValueError naming the fault if it is wrong."""
        if name not in FAULT_NAMES:
            raise ValueError(f"unknown fault {name!r}; faults are {', '.join(FAULT_NAMES)}")
        if name == "silent":
            setattr(self, name, _truth(value))
            return
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"fault {name} needs a number, got {value!r}") from None
        if name == "delay":
            _check_delay(number)
        else:
            _check_probability(name, number)
        setattr(self, name, number)

    def clear(self) -> None:
        """Back to a perfect device: every fault off, no one-shot pending."""
        for name in _PROBABILITIES:
            setattr(self, name, 0.0)
        self.delay = 0.0
        self.silent = False
        with self._lock:
            self._once.clear()

    def inject(self, fault: str, count: int = 1, *, readings_only: bool = True) -> None:
        """Apply ``fault`` to the next ``count`` frames (by default only frames with readings)."""
        if fault not in ONE_SHOT:
            raise ValueError(f"unknown one-shot fault {fault!r}; one of {', '.join(ONE_SHOT)}")
        if count < 1:
            raise ValueError(f"count {count} must be at least 1")
        with self._lock:
            self._once.extend([(fault, readings_only)] * count)

    def pending(self) -> int:
        """How many one-shot faults are still waiting for a frame."""
        with self._lock:
            return len(self._once)

    def outgoing(self, frame: bytes, *, reading: bool) -> list[bytes]:
        """The byte chunks that actually go out for ``frame`` (empty if silent or dropped)."""
        if self.silent:
            return []
        once = self._take(("corrupt", "drop", "duplicate", "garbage"), reading)
        if once == "drop" or self._roll(self.drop):
            return []
        out = frame
        if once == "corrupt" or self._roll(self.corrupt):
            out = self._corrupted(out)
        chunks = [out]
        if once == "garbage" or self._roll(self.garbage):
            chunks.insert(0, self.rng.randbytes(self.rng.randint(1, 16)))
        if once == "duplicate" or self._roll(self.duplicate):
            chunks.append(out)
        return chunks

    def lose_incoming(self) -> bool:
        """Whether the frame just received from the host is lost (silence loses them all)."""
        if self.silent:
            return True
        return self._take(("drop_incoming",), None) is not None or self._roll(self.drop_incoming)

    def repeat_reading(self) -> bool:
        """Whether the device reports the reading it just sent once more."""
        return self._take(("repeat",), True) is not None or self._roll(self.repeat)

    def _take(self, kinds: tuple[str, ...], reading: bool | None) -> str | None:
        with self._lock:
            if not self._once:
                return None
            fault, readings_only = self._once[0]
            if fault not in kinds or (readings_only and reading is False):
                return None
            self._once.popleft()
            return fault

    def _roll(self, probability: float) -> bool:
        return probability > 0 and self.rng.random() < probability

    def _corrupted(self, frame: bytes) -> bytes:
        if len(frame) < 2:
            return frame
        data = bytearray(frame)
        data[self.rng.randrange(1, len(data))] ^= self.rng.randint(1, 255)
        return bytes(data)


def _check_probability(name: str, value: float) -> None:
    if isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise ValueError(f"fault {name} is a probability within 0..1, got {value!r}")


def _check_delay(value: float) -> None:
    if isinstance(value, bool) or not 0.0 <= value <= 60.0:
        raise ValueError(f"fault delay is seconds within 0..60, got {value!r}")


def _truth(value: str | float | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes", "1.0"):
        return True
    if text in ("0", "false", "off", "no", "0.0"):
        return False
    raise ValueError(f"fault silent is on or off, got {value!r}")

