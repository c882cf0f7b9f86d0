"""The latency benchmark's Mosquitto (given, the machine's, or a private one) and the
machine's own figures (fsync, versions)."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from runtime.net import answers
from support.latency_figures import MACHINE_MOSQUITTO, BenchError, Series


@contextlib.contextmanager
def private_mosquitto(scratch: Path) -> Any:
    """A `mosquitto` process of our own on a free port; yields "host:port"."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = scratch / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
    process = subprocess.Popen([binary, "-c", str(conf)],  # noqa: S603
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not answers("127.0.0.1", port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError("the private mosquitto did not start")
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def choose_mosquitto(given: str | None, stack: contextlib.ExitStack, scratch: Path
                     ) -> tuple[str | None, str]:
    """Which Mosquitto to use: ("host:port" or None, a description)."""
    if given:
        return given, f"Mosquitto {given} (given)"
    if answers(*MACHINE_MOSQUITTO):
        where = "{}:{}".format(*MACHINE_MOSQUITTO)
        return where, f"the machine's Mosquitto {where}"
    if shutil.which("mosquitto") or os.access("/usr/sbin/mosquitto", os.X_OK):
        where = stack.enter_context(private_mosquitto(scratch))
        return where, f"a private mosquitto process on {where}"
    return None, "none: no Mosquitto answers on 127.0.0.1:1883 and no mosquitto binary"


def mosquitto_version() -> str:
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    try:
        run = subprocess.run([binary, "-h"], capture_output=True, text=True,  # noqa: S603
                             timeout=10, check=False)
    except OSError:
        return "?"
    first = (run.stdout or run.stderr).splitlines()
    return first[0].strip() if first else "?"


def fsync_baseline(scratch: Path, count: int) -> Series:
    """The disk under the journal: 1 KiB appended and fsynced, `count` times."""
    series = Series("fsync")
    path = scratch / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(count):
            start = time.monotonic_ns()
            os.write(fd, b"x" * 1024)
            os.fsync(fd)
            series.values.append(time.monotonic_ns() - start)
    finally:
        os.close(fd)
        path.unlink()
    return series




def machine_lines() -> list[str]:
    """The machine, the Python and the libraries the figures were taken with."""
    import importlib.metadata as md  # noqa: PLC0415

    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="ascii",
                                            errors="replace") as info:
        cpu = next((ln.split(":", 1)[1].strip() for ln in info
                    if ln.startswith("model name")), cpu)
    versions = ", ".join(f"{name} {md.version(name)}" for name in ("aiomqtt", "paho-mqtt",
                                                                   "amqtt", "SQLAlchemy"))
    return [
        f"machine : {platform.platform()}; {cpu}; {os.cpu_count()} cpus",
        f"python  : {platform.python_implementation()} {platform.python_version()}; {versions}",
    ]
