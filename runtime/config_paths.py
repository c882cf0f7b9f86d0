"""Paths as a config file writes them: a relative one is relative to the folder of the file that
names it, never to the working directory (a service started by systemd runs from /), an
absolute one stays as it is, and ``~`` is the home directory of the account reading the file.

Written once for every config reader: file and socket keys (`config_path`) and a database URL
whose SQLite file is given relative (`config_database_url`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

__all__ = ["config_database_url", "config_path"]

# sqlite:///FILE, sqlite+pysqlite:///FILE (an absolute FILE starts with a fourth slash).
_SQLITE_URL: Final = re.compile(r"(?s)(sqlite(?:\+[A-Za-z0-9_]+)?:///)(.*)")


def config_path(text: str, base: Path) -> Path:
    """``text`` as a path: ``~`` expanded, an absolute path as it is, a relative one joined to
    ``base`` (the config file's folder, made absolute). Symlinks are left for the opener."""
    path = Path(text).expanduser()
    return path if path.is_absolute() else base.absolute() / path


def config_database_url(url: str, base: Path) -> str:
    """A SQLAlchemy URL with a relative SQLite file made relative to ``base`` (as
    `config_path`); any other URL, an in-memory database or a ``file:`` URI unchanged."""
    match = _SQLITE_URL.fullmatch(url.strip())
    if match is None:
        return url
    prefix, rest = match.groups()
    database, sep, query = rest.partition("?")
    if database in ("", ":memory:") or database.startswith("file:"):
        return url
    return f"{prefix}{config_path(database, base)}{sep}{query}"
