"""The rehearsal venue's broker files (`showdown venue rehearse`): the venue's own generators,
as `showdown broker config` and `showdown install central` use them (deploy.broker_config
for mosquitto.conf, the ACL, the password file and each client's credentials; deploy.certs
for the venue CA and the broker's certificate), written into the venue directory for a
private Mosquitto on 127.0.0.1. A second run keeps the CA, the certificate and every
password it finds; only the listener's port may change.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Final

from cli.broker import PASSWORD_BYTES
from cli.errors import CommandError
from deploy import broker_config as bc
from deploy import certs
from floor.venue_layout import BrokerFiles
from game.errors import ConfigError
from runtime.files import replace_text

__all__ = ["embedded_broker_files", "mosquitto_files"]

CERT_DAYS: Final = 30  # a rehearsal's certificates: long enough, never a production CA


def _password_of(path: Path) -> str | None:
    """The password a credentials file holds (None if missing or unreadable)."""
    import tomllib  # noqa: PLC0415

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("mqtt", {}).get("password")
    return value if isinstance(value, str) and value else None


def _tls_files(tls: Path, venue: str) -> tuple[Path, Path, Path]:
    tls.mkdir(mode=0o700, exist_ok=True)
    ca, ca_key = tls / "venue-ca.pem", tls / "venue-ca.key"
    cert, key = tls / "broker.pem", tls / "broker.key"
    try:
        if not (ca.exists() and ca_key.exists()):
            certs.make_ca(ca_key, ca, name=f"{venue} rehearsal CA", days=CERT_DAYS)
            cert.unlink(missing_ok=True)
        if not (cert.exists() and key.exists() and certs.verifies(cert, ca)
                and not certs.expires_within(cert, 86400)):
            certs.make_server_certificate(cert=cert, key=key, ca_cert=ca, ca_key=ca_key,
                                          common_name="localhost",
                                          names=("localhost", "127.0.0.1"), days=CERT_DAYS)
    except certs.CertificateError as exc:
        raise CommandError(str(exc)) from None
    return ca, cert, key


def mosquitto_files(directory: Path, *, venue: str, tables: tuple[str, ...],
                    port: int) -> BrokerFiles:
    """mosquitto.conf, acl, passwd and credentials/<client>.toml (each 0600) in
    DIR/broker, with TLS by the venue CA in DIR/tls: what a private Mosquitto needs."""
    directory = directory.resolve()
    ca, cert, key = _tls_files(directory / "tls", venue)
    broker = directory / "broker"
    broker.mkdir(mode=0o700, exist_ok=True)
    (broker / "data").mkdir(mode=0o700, exist_ok=True)
    creds = broker / "credentials"
    creds.mkdir(mode=0o700, exist_ok=True)
    try:
        settings = bc.BrokerSettings(
            venue=venue, tables=tables, port=port, bind_address="127.0.0.1",
            acl_path=str(broker / "acl"), password_path=str(broker / "passwd"),
            persistence_dir=f"{broker / 'data'}/",
            # as root Mosquitto would switch to its own user, who cannot read these files
            run_as_user="root" if os.geteuid() == 0 else None,
            tls=bc.TlsSettings(cafile=str(ca), certfile=str(cert), keyfile=str(key)))
        old: dict[str, str] = {}
        if (broker / "passwd").exists():
            old = bc.parse_password_file((broker / "passwd").read_text(encoding="utf-8"))
        hashes: dict[str, str] = {}
        paths: dict[str, Path] = {}
        for client in bc.clients(settings):
            path = paths[client] = creds / f"{client}.toml"
            password = _password_of(path)
            if password is not None and client in old and bc.verify_password(password,
                                                                              old[client]):
                hashes[client] = old[client]
            else:
                password = secrets.token_urlsafe(PASSWORD_BYTES)
                hashes[client] = bc.hash_password(password,
                                                  salt=secrets.token_bytes(bc.SALT_BYTES))
            replace_text(path, bc.credentials_toml(client, password, settings, "127.0.0.1"),
                         0o600)
        replace_text(broker / "passwd", bc.password_file(hashes), 0o600)
        replace_text(broker / "acl", bc.acl_file(settings), 0o600)
        replace_text(broker / "mosquitto.conf", bc.listener_config(settings), 0o600)
    except ConfigError as exc:
        raise CommandError(f"{exc.key}: {exc.reason}") from None
    return BrokerFiles(config=broker / "mosquitto.conf", tls=True, ca_file=ca,
                       credentials=paths)


def embedded_broker_files(directory: Path, *, venue: str, tables: tuple[str, ...],
                          port: int) -> BrokerFiles:
    """Credentials files for the embedded broker (no TLS, no ACL: it accepts anyone): each
    client still names itself, as on a venue broker."""
    directory = directory.resolve()
    creds = directory / "broker" / "credentials-embedded"
    creds.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        settings = bc.BrokerSettings(venue=venue, tables=tables, port=port,
                                     acl_path="/unused", password_path="/unused")  # noqa: S106
        paths: dict[str, Path] = {}
        for client in bc.clients(settings):
            paths[client] = creds / f"{client}.toml"
            replace_text(paths[client], bc.credentials_toml(client, None, settings, "127.0.0.1"),
                         0o600)
    except ConfigError as exc:
        raise CommandError(f"{exc.key}: {exc.reason}") from None
    return BrokerFiles(config=None, tls=False, ca_file=None, credentials=paths)
