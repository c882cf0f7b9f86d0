"""Read paytable files (TOML, format in docs/paytables.md) into `Paytables`.

The I/O half of the paytables: finding and reading the file. Validation is pure and lives in
`game.paytable_schema`. Every failure is a `ConfigError` naming the file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import controller
from game.errors import ConfigError
from game.paytable_schema import parse_paytables
from game.paytables import Paytables

__all__ = ["PAYTABLES_ENV", "default_paytables_path", "read_paytables"]

PAYTABLES_ENV = "SHOWDOWN_PAYTABLES"


def default_paytables_path() -> Path:
    """The paytables in force: $SHOWDOWN_PAYTABLES if set, else the repository's config file."""
    configured = os.environ.get(PAYTABLES_ENV, "").strip()
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise ConfigError(str(path), "", f"no such paytable file (named by ${PAYTABLES_ENV})")
        return path
    path = Path(controller.__file__).resolve().parents[1] / "config" / "paytables.toml"
    if not path.is_file():
        raise ConfigError(
            str(path), "", f"the default paytable file is missing; pass --paytables FILE or "
            f"set ${PAYTABLES_ENV}"
        )
    return path


def read_paytables(path: Path | None = None) -> Paytables:
    """Read and validate a paytable file (the default one when ``path`` is None)."""
    path = default_paytables_path() if path is None else path
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, "", f"cannot read the file: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "", f"not UTF-8 text (byte {exc.start})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "", f"TOML syntax error: {exc}") from exc
    return parse_paytables(data, source)
