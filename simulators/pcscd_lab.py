"""A private ``pcscd`` with vsmartcard's virtual reader, for tests, the conformance kit and a
simulated table: real PC/SC middleware, a real reader driver (ifd-vpcd), and a software card
(`simulators.vpcd_card.VpcdCard`) on it.

pcscd 1.9 (Debian bookworm) takes its reader configuration from ``-c DIR`` but always puts its
socket and pid file in ``/run/pcscd``; only the client library reads ``PCSCLITE_CSOCK_NAME``.
So that it never clashes with the machine's own pcscd, the lab runs pcscd in a private mount
namespace (``unshare --mount``) where a folder of its own is bind-mounted on ``/run/pcscd``,
and points this process's PC/SC clients at the socket in that folder through
``PCSCLITE_CSOCK_NAME``. The client library reads that variable once per process, at its
first call, so a process has one lab folder (`socket_dir`) and one lab at a time (a child
process that inherited its parent lab's variable starts its own lab over it). Needs root
(a mount namespace), ``pcscd`` and ``vsmartcard-vpcd``: `missing` says what is not there.

The virtual reader listens on a free TCP port of its own (ifd-vpcd opens the configured port
and the next one, for its two slots: "Virtual PCD 00 00" and "Virtual PCD 00 01").
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Final, Self

import structlog

__all__ = ["READER_NAME", "VPCD_DRIVER", "PcscdLab", "PcscdLabError", "missing", "socket_dir"]

_log = structlog.get_logger("simulators.pcscd_lab")

VPCD_DRIVER: Final = Path("/usr/lib/pcsc/drivers/serial/libifdvpcd.so")
READER_NAME: Final = "Virtual PCD 00 00"  # the reader of the lab's first slot, as pcscd names it
_SOCKET_ENV: Final = "PCSCLITE_CSOCK_NAME"
_RUN_DIR: Final = "/run/pcscd"
# Another process's lab socket (a parent's, inherited by a child process): not this one's.
_LAB_SOCKET: Final = re.compile(r".*/showdown-pcscd-\d+/pcscd\.comm")


class PcscdLabError(RuntimeError):
    """The lab cannot start (what is missing, or pcscd did not come up)."""


def socket_dir() -> Path:
    """This process's lab folder (its pcscd socket is ``pcscd.comm`` in it)."""
    return Path(tempfile.gettempdir()) / f"showdown-pcscd-{os.getpid()}"


def missing() -> str | None:
    """Why a lab cannot run on this machine (None when it can)."""
    if shutil.which("pcscd") is None:
        return "pcscd is not installed (apt-get install pcscd)"
    if not VPCD_DRIVER.exists():
        return f"vsmartcard-vpcd is not installed ({VPCD_DRIVER} is missing)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    if os.geteuid() != 0:
        return "a private pcscd needs root (a mount namespace for its /run/pcscd)"
    return None


def _free_port_pair() -> int:
    """A TCP port that is free on every address, and its next one (vpcd binds both)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("0.0.0.0", 0))  # noqa: S104  # vpcd itself binds INADDR_ANY
            port = probe.getsockname()[1]
        if port >= 65535:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("0.0.0.0", port))  # noqa: S104
                b.bind(("0.0.0.0", port + 1))  # noqa: S104
        except OSError:
            continue
        return int(port)
    raise PcscdLabError("no free pair of TCP ports for the virtual reader")


class PcscdLab:
    """A private pcscd with one virtual reader; a context manager. ``stop`` and ``start``
    again is the reader's middleware going away and coming back (same port, same socket).
    One lab runs in a process at a time (its socket's folder is the process's)."""

    _running: PcscdLab | None = None  # the lab whose pcscd runs in this process

    def __init__(self, *, port: int | None = None, debug: bool = False) -> None:
        self.port = port if port is not None else 0
        self.debug = debug
        self.socket_path = socket_dir() / "pcscd.comm"
        self.log_path = socket_dir() / "pcscd.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._conf: Path | None = None

    @property
    def running(self) -> bool:
        """Whether its pcscd is running."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> Self:
        """Start pcscd (PcscdLabError saying why when it cannot) and wait for its socket."""
        if self.running:
            return self
        if (why := missing()) is not None:
            raise PcscdLabError(why)
        other = PcscdLab._running
        if other is not None and other is not self and other.running:
            raise PcscdLabError("another PC/SC lab already runs in this process (one pcscd"
                                " socket per process): stop it first")
        current = os.environ.get(_SOCKET_ENV)
        inherited = current is not None and _LAB_SOCKET.fullmatch(current) is not None
        if current is not None and current != str(self.socket_path) and not inherited:
            raise PcscdLabError(f"{_SOCKET_ENV} already points PC/SC clients at {current}")
        if not self.port:
            self.port = _free_port_pair()
        folder = socket_dir()
        folder.mkdir(mode=0o755, exist_ok=True)
        for leftover in ("pcscd.comm", "pcscd.pid"):
            with contextlib.suppress(FileNotFoundError):
                (folder / leftover).unlink()
        self._conf = Path(tempfile.mkdtemp(prefix="showdown-vpcd-conf-"))
        (self._conf / "vpcd").write_text(
            'FRIENDLYNAME "Virtual PCD"\n'
            f"DEVICENAME   /dev/null:{self.port}\n"
            f"LIBPATH      {VPCD_DRIVER}\n"
            f"CHANNELID    {self.port}\n")
        Path(_RUN_DIR).mkdir(parents=True, exist_ok=True)  # the mount point, outside too
        script = 'mount --bind "$1" /run/pcscd && exec pcscd --foreground -c "$2" "$3"'
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                   str(folder), str(self._conf), "--debug" if self.debug else "--info"]
        os.environ[_SOCKET_ENV] = str(self.socket_path)
        log = self.log_path.open("ab")
        try:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,  # noqa: S603
                                             stdin=subprocess.DEVNULL)
        finally:
            log.close()
        deadline = time.monotonic() + 10.0
        while not self.socket_path.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace")[-400:]
                self.stop()
                raise PcscdLabError(f"pcscd did not start: {tail.strip() or 'no output'}")
            time.sleep(0.02)
        PcscdLab._running = self
        _log.info("pcscd lab on", socket=str(self.socket_path), vpcd_port=self.port)
        return self

    def stop(self) -> None:
        """Stop pcscd (its clients see the service gone) and remove its files."""
        process, self._process = self._process, None
        if PcscdLab._running is self:
            PcscdLab._running = None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._conf is not None:
            shutil.rmtree(self._conf, ignore_errors=True)
            self._conf = None
        if process is not None:  # its socket, pid file and log: made again by `start`
            shutil.rmtree(socket_dir(), ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
