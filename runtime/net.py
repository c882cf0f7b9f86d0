"""Small network probes shared by the commands, the benchmarks and the tests."""

from __future__ import annotations

import socket

__all__ = ["answers"]


def answers(host: str, port: int, *, timeout: float = 1.0) -> bool:
    """True if something accepts a TCP connection on ``host:port`` within ``timeout``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
