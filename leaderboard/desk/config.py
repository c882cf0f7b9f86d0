"""The registration desk's configuration file, ``desk.toml``: where the central service's desk
API is (``desk.api_url``, ``desk.api_ca_file``), this terminal's name (``desk.terminal``) and
the tournament settings times are shown in. A workstation holds no database URL, signing key
or broker account: an old desk.toml naming one is refused, saying why (D353,
docs/desk-config.md).

Found by ``--config FILE``, else ``$SHOWDOWN_DESK_CONFIG``, else the repository's
``config/desk.toml`` (development defaults). Validated when read: every error is one
`ConfigError` naming the file and the key; unknown sections and keys are refused. Relative
paths are relative to the file (`runtime.config_paths`).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from game.errors import ConfigError
from leaderboard.config import is_loopback
from runtime.config_paths import config_path
from runtime.settings_files import load_toml, shipped_or_configured

__all__ = ["DESK_CONFIG_ENV", "DeskConfig", "default_desk_config_path", "read_desk_config"]

DESK_CONFIG_ENV: Final = "SHOWDOWN_DESK_CONFIG"
_SECTIONS: Final[dict[str, set[str]]] = {
    "desk": {"api_url", "api_ca_file", "terminal", "tournament"},
}
_MOVED: Final = ("the desk now goes through the central service's desk API (desk.api_url):"
                 " a workstation holds no database URL, signing key or broker account;"
                 " remove the key (docs/desk-config.md)")
# Keys a desk.toml held before the desk became a client of the central service (D353).
_RETIRED: Final = {"desk.database", "desk.signing_key", "desk.venue", "desk.topic_root",
                   "desk.names", "mqtt", "auth"}
_TERMINAL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskConfig:
    """Everything the desk's commands need besides their own arguments: where the central
    service's desk API is, the CA its certificate must chain to and this terminal's name."""

    source: str
    api_url: str | None = None  # the central service's desk API (https off the loopback)
    api_ca_file: Path | None = None  # the venue CA its certificate must chain to
    terminal: str = "desk"  # this workstation's name, recorded with each session
    tournament: Path | None = None  # the settings shown times are read in (their time zone)


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str, base: Path) -> None:
        self.source, self.base = source, base
        for name, value in data.items():
            if name in _RETIRED:
                raise self.fail(name, f"a [{name}] section is not a desk's any more: {_MOVED}")
            if isinstance(value, dict):
                for key in value:
                    if f"{name}.{key}" in _RETIRED:
                        raise self.fail(f"{name}.{key}", _MOVED)
        unknown = sorted(set(data) - set(_SECTIONS))
        if unknown:
            raise self.fail(unknown[0], f"unknown section (known: {', '.join(_SECTIONS)})")
        self.tables: dict[str, dict[str, Any]] = {}
        for name, keys in _SECTIONS.items():
            table = data.get(name, {})
            if not isinstance(table, dict):
                raise self.fail(name, f"must be a table [{name}]")
            extra = sorted(set(table) - keys)
            if extra:
                raise self.fail(f"{name}.{extra[0]}",
                                f"unknown key (known: {', '.join(sorted(keys))})")
            self.tables[name] = table

    def fail(self, key: str, reason: str) -> ConfigError:
        return ConfigError(self.source, key, reason)

    def text(self, key: str) -> str | None:
        section, name = key.split(".")
        value = self.tables[section].get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty text (leave the key out instead)")
        return value.strip()

    def path(self, key: str, *, must_exist: bool = True) -> Path | None:
        text = self.text(key)
        if text is None:
            return None
        path = config_path(text, self.base)
        if must_exist and not path.is_file():
            raise self.fail(key, f"no such file {path}")
        return path


def _api(r: _Reader) -> tuple[str, Path | None]:
    """desk.api_url and desk.api_ca_file: https (checked against the venue CA) unless the
    service is on this machine, since a session token must not cross the LAN in clear."""
    url, ca = r.text("desk.api_url"), r.path("desk.api_ca_file")
    if url is None:
        raise r.fail("desk.api_url", "missing: the central service's desk API, e.g."
                     " \"https://leaderboard.casino.lan:8443/\" (every desk command goes"
                     " through it)")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        raise r.fail("desk.api_url", f"{url!r} is not an http(s) URL such as"
                     " \"https://leaderboard.casino.lan:8443/\"")
    if parts.scheme == "http" and not is_loopback(host):
        raise r.fail("desk.api_url", f"{url!r} would send staff sign-ins across the network in"
                     " clear text: use https:// (and desk.api_ca_file, the venue CA)")
    return url if url.endswith("/") else url + "/", ca


def _terminal(r: _Reader) -> str:
    name = r.text("desk.terminal") or socket.gethostname().split(".")[0] or "desk"
    if not _TERMINAL.fullmatch(name):
        raise r.fail("desk.terminal", f"{name!r}: use 1 to 64 of letters, digits and . _ -"
                     " (the name the central service records with each session)")
    return name


def parse_desk_config(data: Mapping[str, Any], *, source: str, base: Path) -> DeskConfig:
    """Validate a parsed desk.toml; ConfigError names the file and the key."""
    r = _Reader(data, source, base)
    api_url, api_ca = _api(r)
    return DeskConfig(source=source, api_url=api_url, api_ca_file=api_ca,
                      terminal=_terminal(r), tournament=r.path("desk.tournament"))


def default_desk_config_path() -> Path:
    """$SHOWDOWN_DESK_CONFIG if set, else the shipped desk.toml."""
    return shipped_or_configured(DESK_CONFIG_ENV, "desk.toml", what="desk config",
                                 flag="--config")


def read_desk_config(path: Path | None = None) -> DeskConfig:
    """Read and validate a desk config (the default one when ``path`` is None)."""
    path = default_desk_config_path() if path is None else Path(path)
    return parse_desk_config(load_toml(path), source=str(path),
                             base=path.resolve().parent)
