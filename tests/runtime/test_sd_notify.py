"""runtime.sd_notify against a real AF_UNIX datagram socket standing in for systemd."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import sd_notify

GUARD_S = 10.0  # a hang guard for recv, not a timed assertion


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: AF_UNIX paths are limited to 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="sdn-", dir="/tmp") as name:
        yield Path(name)


@pytest.fixture
def systemd_socket(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A bound datagram socket at a file path, announced in NOTIFY_SOCKET."""
    path = short_dir / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(GUARD_S)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        yield sock


@pytest.fixture
def abstract_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A bound datagram socket in the abstract namespace, announced as ``@name``."""
    name = f"showdown-test-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(GUARD_S)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        yield sock


def received(sock: socket.socket) -> str:
    return sock.recv(4096).decode("utf-8")


def test_ready_watchdog_stopping_reach_the_socket(systemd_socket: socket.socket) -> None:
    assert sd_notify.ready()
    assert received(systemd_socket) == "READY=1"
    assert sd_notify.watchdog()
    assert received(systemd_socket) == "WATCHDOG=1"
    assert sd_notify.stopping()
    assert received(systemd_socket) == "STOPPING=1"


def test_status_lines_are_one_line(systemd_socket: socket.socket) -> None:
    assert sd_notify.ready("journal verified,\n12 hands")
    assert received(systemd_socket) == "READY=1\nSTATUS=journal verified, 12 hands"
    assert sd_notify.status("broker down\nretrying")
    assert received(systemd_socket) == "STATUS=broker down retrying"
    assert sd_notify.stopping("SIGTERM")
    assert received(systemd_socket) == "STOPPING=1\nSTATUS=SIGTERM"


def test_abstract_socket(abstract_socket: socket.socket) -> None:
    assert sd_notify.ready()
    assert received(abstract_socket) == "READY=1"
    assert sd_notify.watchdog()
    assert received(abstract_socket) == "WATCHDOG=1"


def test_a_child_process_notifies_like_the_daemon_will(
    systemd_socket: socket.socket,
) -> None:
    # What a service started by systemd does: the variable is in its environment.
    code = ("from runtime import sd_notify as n; "
            "assert n.ready() and n.watchdog() and n.stopping()")
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
    assert [received(systemd_socket) for _ in range(3)] == ["READY=1", "WATCHDOG=1",
                                                             "STOPPING=1"]


def test_environ_argument_overrides_the_process_environment(
    systemd_socket: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = os.environ["NOTIFY_SOCKET"]
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert not sd_notify.ready()
    assert sd_notify.ready(environ={"NOTIFY_SOCKET": address})
    assert received(systemd_socket) == "READY=1"


@pytest.mark.parametrize("value", [None, "", "relative/notify", "@", "vsock:2:1234"])
def test_no_usable_socket_is_a_no_op(value: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    else:
        monkeypatch.setenv("NOTIFY_SOCKET", value)
    assert sd_notify.socket_address() is None
    assert not sd_notify.ready()
    assert not sd_notify.watchdog()
    assert not sd_notify.stopping()
    assert not sd_notify.status("x")


def test_a_socket_that_is_gone_does_not_raise(short_dir: Path) -> None:
    env = {"NOTIFY_SOCKET": str(short_dir / "nobody-listens")}
    assert sd_notify.socket_address(env) == str(short_dir / "nobody-listens")
    assert not sd_notify.watchdog(env)


def test_socket_address_forms() -> None:
    assert sd_notify.socket_address({"NOTIFY_SOCKET": "/run/systemd/notify"}) == \
        "/run/systemd/notify"
    assert sd_notify.socket_address({"NOTIFY_SOCKET": "@abc"}) == "\0abc"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "10000000"}, 10.0),  # WatchdogSec=10s
        ({"WATCHDOG_USEC": "500000", "WATCHDOG_PID": "4242"}, 0.5),
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "4243"}, None),  # meant for another
        ({}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-5"}, None),
        ({"WATCHDOG_USEC": "ten"}, None),
        ({"WATCHDOG_USEC": "\u00b2"}, None),  # a digit to str.isdigit, not to int()
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "x"}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], expected: float | None) -> None:
    assert sd_notify.watchdog_interval(env, pid=4242) == expected


def test_watchdog_interval_defaults_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "4000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert sd_notify.watchdog_interval() == 4.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert sd_notify.watchdog_interval() is None
