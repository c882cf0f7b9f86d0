"""`showdown doctor --central`: may the central service run? Its config, the database
(reachable and at this software's schema revision), the broker (a real CONNECT with the
service's credentials), its signing key, the HTTPS certificate's dates, the clock and disk,
and how long the promotion's records and backups are kept (Consumer Protection Act,
regulation 11: 3 years; D381)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import make_url

from cli.doctor.table import (
    FAIL,
    OK,
    WARN,
    Finding,
    Probes,
    broker_findings,
    clock_finding,
    disk_finding,
)
from deploy import certs
from game.errors import ConfigError, GameError
from leaderboard.central_lease import LeaseView, read_lease
from leaderboard.config import REGULATION_YEARS, LeaderboardConfig, read_leaderboard_config
from leaderboard.db import open_existing
from runtime.errors import Unavailable
from wire.mqtt import MqttSettings
from wire.signing import SigningError, load_private_key

__all__ = ["CERT_WARN_DAYS", "check_central"]

CERT_WARN_DAYS = 30


def check_central(path: Path, probes: Probes | None = None) -> list[Finding]:
    """Every check of the central service configured by ``path``."""
    probes = probes or Probes()
    try:
        config = read_leaderboard_config(path)
    except (ConfigError, Unavailable) as exc:
        return [Finding("config", FAIL, str(exc), "correct the file (docs/leaderboard.md)")]
    except OSError as exc:
        return [Finding("config", FAIL, f"{path}: {exc.strerror or exc}",
                        "give --config FILE, or `showdown install central`")]
    findings = [Finding("config", OK, f"{path}: venue {config.venue},"
                        f" {len(config.tables)} tables enrolled")]
    m = config.mqtt
    settings = MqttSettings(host=m.host, port=m.port, username=m.username, password=m.password,
                            tls=m.tls, ca_file=m.ca_file, cert_file=m.cert_file,
                            key_file=m.key_file, topic_root=config.topic_root,
                            failover=m.failover, keepalive_s=m.keepalive_s)
    findings += [_database(config), *broker_findings(settings, f"{m.client_id}-doctor", probes),
                 _key(config), _https(config), clock_finding(probes),
                 disk_finding(_data_dir(config), "the database", probes), _retention(config)]
    return findings


def _retention(config: LeaderboardConfig) -> Finding:
    """A warning when the records or their backups would be kept less than the regulation's
    3 years, or the backups less long than the records."""
    kept = config.retention
    said = f"records kept {kept.records_years} years, backups {kept.backups_years} years"
    if kept.records_years < REGULATION_YEARS:
        return Finding("retention", WARN, f"{said}: the Consumer Protection Act (regulation 11)"
                       f" asks that a promotion's records be kept {REGULATION_YEARS} years",
                       f"set [retention] records_years = {REGULATION_YEARS} (or more) in"
                       f" {config.source}")
    if kept.backups_years < kept.records_years:
        return Finding("retention", WARN, f"{said}: the backups would be pruned before the"
                       " records they hold may go", f"set [retention] backups_years ="
                       f" {kept.records_years} (or more) in {config.source}")
    return Finding("retention", OK, said)


def _database(config: LeaderboardConfig) -> Finding:
    try:
        engine = open_existing(config.database, create_with="showdown desk init",
                               source=config.source, key="service.database")
    except Unavailable as exc:
        return Finding("database", FAIL, str(exc), "start the database (PostgreSQL:"
                       " `systemctl status postgresql`) and check the URL's host and account")
    except GameError as exc:  # not ready (missing, empty, another revision) or a bad URL
        return Finding("database", FAIL, str(exc), "create or upgrade it: `showdown desk"
                       " init` (it migrates an existing database)")
    try:
        with engine.connect() as connection:
            lease = read_lease(connection)
    finally:
        engine.dispose()
    return Finding("database", OK, "reachable and at this software's schema revision;"
                   f" {_lease_text(lease)}")


def _lease_text(lease: LeaseView) -> str:
    """Which central instance is active, as the lease says (docs/operations/standby-central.md)."""
    if not lease.holder:
        return "central lease: free (no instance has run yet)"
    if lease.expired:
        return (f"central lease: free (last held by {lease.holder}, epoch {lease.epoch}):"
                " no instance is active")
    return (f"central lease: held by {lease.holder} (epoch {lease.epoch}, expires in"
            f" {lease.expires_in_s:.1f} s)")


def _key(config: LeaderboardConfig) -> Finding:
    try:
        signer = load_private_key(config.signing_key)
    except SigningError as exc:
        return Finding("key", FAIL, str(exc), "the service's key must be mode 0600, user"
                       " showdown (`showdown install central` makes it)")
    return Finding("key", OK, f"signing key {signer.key_id!r} loads")


def _https(config: LeaderboardConfig) -> Finding:
    cert = config.http.tls_cert_file
    if cert is None:
        if config.http.desk_api:
            return Finding("https", OK, f"desk API on {config.http.host} (this machine only),"
                           " plain HTTP")
        return Finding("https", OK, "no desk API; the page in plain HTTP")
    if certs.expires_within(cert, 0):
        return Finding("https", FAIL, f"{cert} has expired", "issue a new certificate:"
                       " remove it and its key, then `showdown install central` again")
    if certs.expires_within(cert, CERT_WARN_DAYS * 86400):
        return Finding("https", WARN, f"{cert} expires within {CERT_WARN_DAYS} days",
                       "remove it and its key, then `showdown install central` again")
    return Finding("https", OK, f"{config.http.url} with {cert}")


def _data_dir(config: LeaderboardConfig) -> Path:
    url = make_url(config.database)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(url.database).parent
    return Path("/var/lib")
