"""`showdown doctor --desk`: is the desk workstation ready? Its desk.toml, the central desk API
over HTTPS with the venue CA (a real request), the broker with the desk's credentials, the
database, the desk's signing key and the clock."""

from __future__ import annotations

from pathlib import Path

from cli.doctor.table import FAIL, OK, Finding, Probes, broker_findings, clock_finding
from game.errors import ConfigError, GameError
from leaderboard.db import open_existing
from leaderboard.desk.config import DeskConfig, read_desk_config
from leaderboard.desk_api.client import OPENAPI_PATH, get_json
from runtime.errors import Unavailable
from wire.signing import SigningError, load_private_key

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
    return [Finding("config", OK, f"{path}: venue {config.venue or '?'}"), _api(config),
            *broker_findings(config.mqtt(), "desk-doctor", probes), _database(config),
            _key(config), clock_finding(probes)]


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


def _database(config: DeskConfig) -> Finding:
    try:
        engine = open_existing(config.database, create_with="showdown desk init",
                               source=config.source, key="desk.database")
    except GameError as exc:
        return Finding("database", FAIL, str(exc), "`showdown desk init` creates or migrates"
                       " it; check the URL and the desk's database account")
    except Unavailable as exc:
        return Finding("database", FAIL, str(exc), "start the database and check the URL")
    engine.dispose()
    return Finding("database", OK, "reachable and at this software's schema revision")


def _key(config: DeskConfig) -> Finding:
    if config.signing_key is None:
        return Finding("key", FAIL, "desk.signing_key is not set",
                       "`showdown install desk` makes /etc/showdown/desk.key")
    try:
        signer = load_private_key(config.signing_key)
    except SigningError as exc:
        return Finding("key", FAIL, str(exc), "the desk's key must be mode 0600 and owned by"
                       " the account that runs `showdown desk`")
    return Finding("key", OK, f"signing key {signer.key_id!r} loads")
