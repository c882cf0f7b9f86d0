"""Reading settings files: every failure is one ConfigError naming the file and what is wrong.

The I/O half of the settings both services read: finding a file (the shipped default or the
one an environment variable names), reading it as UTF-8 TOML, and for the tournament
settings looking up the venue's time zone. Validation is pure and lives in
`game.tournament.schema` and `game.paytables.schema` (and each service's own config module).
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from game.errors import ConfigError
from game.paytables.lines import Paytables
from game.paytables.schema import parse_paytables

if TYPE_CHECKING:  # imported by read_tournament: reading paytables (`showdown settle`) skips it
    from game.tournament.schema import TournamentSettings

__all__ = [
    "PAYTABLES_ENV",
    "SHIPPED_PACKAGE",
    "TOURNAMENT_ENV",
    "default_paytables_path",
    "default_tournament_path",
    "load_toml",
    "read_paytables",
    "read_text",
    "read_tournament",
    "shipped_dir",
    "shipped_or_configured",
]

TOURNAMENT_ENV: Final = "SHOWDOWN_TOURNAMENT"
PAYTABLES_ENV: Final = "SHOWDOWN_PAYTABLES"
# The shipped defaults: the repository's config/ folder, installed as this data-only package
# (pyproject.toml maps it onto config/, so there is one copy of each file).
SHIPPED_PACKAGE: Final = "showdown_config"
# A checkout run without installing it (PYTHONPATH=checkout) has no such package: its own
# config/ folder, beside runtime/, is the same files.
_CHECKOUT_CONFIG: Final = Path(__file__).resolve().parent.parent / "config"


def shipped_dir() -> Path:
    """The folder of the shipped default settings files (package data of `showdown_config`)."""
    try:
        folder = resources.files(SHIPPED_PACKAGE)
    except ModuleNotFoundError:
        return _CHECKOUT_CONFIG
    # A regular package installed from a wheel (never run zipped) is a folder on disk.
    return Path(str(folder))


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
    """The file named by $`env` if set, else the shipped default `filename`."""
    configured = os.environ.get(env, "").strip()
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise ConfigError(str(path), "", f"no such {what} file (named by ${env})")
        return path
    path = shipped_dir() / filename
    if not path.is_file():
        raise ConfigError(str(path), "", f"the default {what} file is not installed; pass"
                                         f" {flag} FILE or set ${env}")
    return path


def default_tournament_path() -> Path:
    """The settings in force: $SHOWDOWN_TOURNAMENT if set, else the shipped tournament.toml."""
    return shipped_or_configured(TOURNAMENT_ENV, "tournament.toml",
                                 what="tournament settings", flag="--tournament")


def read_tournament(path: str | Path | None = None) -> TournamentSettings:
    """Read and validate a tournament settings file (the default one when ``path`` is None)."""
    from game.tournament.schema import parse_tournament, timezone_name  # noqa: PLC0415

    path = default_tournament_path() if path is None else Path(path)
    source = str(path)
    data = load_toml(path)
    name = timezone_name(data, source)
    try:
        tz = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            source, "venue.timezone",
            f"unknown time zone {name!r} (an IANA name such as \"Africa/Johannesburg\"; the"
            " machine needs its time zone data)",
        ) from exc
    return parse_tournament(data, source, tz=tz)


def default_paytables_path() -> Path:
    """The paytables in force: $SHOWDOWN_PAYTABLES if set, else the shipped paytables.toml."""
    return shipped_or_configured(PAYTABLES_ENV, "paytables.toml", what="paytable",
                                 flag="--paytables")


def read_paytables(path: Path | None = None) -> Paytables:
    """Read and validate a paytable file (the default one when ``path`` is None)."""
    path = default_paytables_path() if path is None else path
    return parse_paytables(load_toml(path), str(path))
