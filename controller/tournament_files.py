"""Read the tournament settings file (TOML, keys in docs/tournament-config.md).

The I/O half: finding and reading the file and looking up the venue's time zone. Validation
is pure and lives in `game.tournament_schema`. Every failure is a `ConfigError` naming the file.
"""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.text_files import load_toml, shipped_or_configured
from game.errors import ConfigError
from game.tournament_schema import TournamentSettings, parse_tournament, timezone_name

__all__ = ["TOURNAMENT_ENV", "default_tournament_path", "read_tournament"]

TOURNAMENT_ENV = "SHOWDOWN_TOURNAMENT"


def default_tournament_path() -> Path:
    """The settings in force: $SHOWDOWN_TOURNAMENT if set, else the repository's config file."""
    return shipped_or_configured(TOURNAMENT_ENV, "tournament.toml",
                                 what="tournament settings", flag="--tournament")


def read_tournament(path: str | Path | None = None) -> TournamentSettings:
    """Read and validate a tournament settings file (the default one when ``path`` is None)."""
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
