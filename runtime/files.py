"""File helpers the services share: a file's SHA-256 read in blocks, and fsync of a file or
directory by path (what makes a written, created or renamed file durable)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["file_sha256", "fsync_path"]

_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex, read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (its entries) by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
