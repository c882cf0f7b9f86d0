"""File helpers the services and tools share: a file's SHA-256 read in blocks, fsync of a file
or directory by path (what makes a written, created or renamed file durable), and a text file
replaced atomically, never existing with a looser mode than asked."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from pathlib import Path

__all__ = ["file_sha256", "fsync_path", "replace_text"]

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


def replace_text(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` with ``text`` (UTF-8) through a new file of ``mode`` beside it, synced
    and renamed over it: a reader sees the old file or the new one, never a looser mode."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed it
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
