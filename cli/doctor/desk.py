"""`showdown doctor --desk`: is the desk workstation ready? Its desk.toml (which names no
database, signing key or broker: the desk is a client of the central service, issue 33), the
central desk API over HTTPS with the venue CA (a real request) and the clock."""

from __future__ import annotations

from pathlib import Path

from cli.doctor.table import FAIL, OK, Finding, Probes, clock_finding
from game.errors import ConfigError
from leaderboard.desk.config import DeskConfig, read_desk_config
from leaderboard.desk_api.client import OPENAPI_PATH, get_json
from runtime.errors import Unavailable

__all__ = ["check_desk"]


def check_desk(path: Path, probes: Probes | None = None) -> list[Finding]:
    """Every check of the desk workstation configured by ``path``."""
    probes = probes or Probes()
    try:
        config = read_desk_config(path)
    except ConfigError as exc:
        return [Finding("config", FAIL, str(exc), "correct the file (docs/desk-config.md)")]
    except OSError as exc:
        return [Finding("config", FAIL, f"{path}: {exc.strerror or exc}",
                        "give --config FILE, or `showdown install desk`")]
    return [Finding("config", OK, f"{path}: terminal {config.terminal}"), _api(config),
            clock_finding(probes)]


def _api(config: DeskConfig) -> Finding:
    if config.api_url is None:
        return Finding("desk api", FAIL, "desk.api_url is not set",
                       "set it to the central service's desk API (`showdown install desk"
                       " --api-url`)")
    try:
        document = get_json(config, OPENAPI_PATH)
    except (Unavailable, ConfigError) as exc:
        fix = ("the service's certificate must come from the venue CA: install the venue CA"
               " (desk.api_ca_file) or reissue the certificate on the central server"
               if "not trusted" in str(exc) else
               "check the central service runs (`showdown doctor --central` there) and the"
               " network reaches it")
        return Finding("desk api", FAIL, str(exc), fix)
    version = document.get("info", {}).get("version", "?") if isinstance(document, dict) else "?"
    scheme = "HTTPS (venue CA)" if config.api_url.startswith("https:") else "HTTP (loopback)"
    return Finding("desk api", OK, f"{config.api_url} answers over {scheme}, API {version}")
