"""Read the tournament settings file (TOML, keys in docs/tournament-config.md).

The I/O half: finding and reading the file and looking up the venue's time zone. Validation
is pure and lives in `game.tournament_schema`. Every failure is a `ConfigError` naming the file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import controller
from game.errors import ConfigError
from game.tournament_schema import TournamentSettings, parse_tournament, timezone_name

__all__ = ["TOURNAMENT_ENV", "default_tournament_path", "read_tournament"]

TOURNAMENT_ENV = "SHOWDOWN_TOURNAMENT"


def default_tournament_path() -> Path:
    """The settings in force: $SHOWDOWN_TOURNAMENT if set, else the repository's config file."""
    configured = os.environ.get(TOURNAMENT_ENV, "").strip()
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise ConfigError(
                str(path), "", f"no such tournament settings file (named by ${TOURNAMENT_ENV})"
            )
        return path
    path = Path(controller.__file__).resolve().parents[1] / "config" / "tournament.toml"
    if not path.is_file():
        raise ConfigError(
            str(path), "", f"the default tournament settings file is missing; pass --tournament"
            f" FILE or set ${TOURNAMENT_ENV}"
        )
    return path


def read_tournament(path: str | Path | None = None) -> TournamentSettings:
    """Read and validate a tournament settings file (the default one when ``path`` is None)."""
    path = default_tournament_path() if path is None else Path(path)
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
