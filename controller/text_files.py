"""Reading settings files: every failure is one ConfigError naming the file and what is wrong.

The pure validators (game.tournament_schema, game.paytable_schema, controller.config, ...)
take what these return; nothing here knows any key.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import controller
from game.errors import ConfigError

__all__ = ["load_toml", "read_text", "shipped_or_configured"]


def read_text(path: Path, *, encoding: str = "utf-8") -> str:
    """The file's text; ConfigError if it cannot be read or is not UTF-8."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, "", f"cannot read the file: {exc.strerror or exc}") from exc
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "", f"not UTF-8 text (byte {exc.start})") from exc


def load_toml(path: Path, text: str | None = None) -> dict[str, Any]:
    """The parsed TOML document of `path` (or of `text` read from it already)."""
    try:
        return tomllib.loads(read_text(path) if text is None else text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"TOML syntax error: {exc}") from exc


def shipped_or_configured(env: str, filename: str, *, what: str, flag: str) -> Path:
    """The file named by $`env` if set, else the repository's config/`filename`."""
    configured = os.environ.get(env, "").strip()
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise ConfigError(str(path), "", f"no such {what} file (named by ${env})")
        return path
    path = Path(controller.__file__).resolve().parents[1] / "config" / filename
    if not path.is_file():
        raise ConfigError(str(path), "", f"the default {what} file is missing; pass {flag}"
                                         f" FILE or set ${env}")
    return path
