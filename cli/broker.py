"""`showdown broker config`: write a venue's Mosquitto configuration with per-client credentials.

    showdown broker config --venue casino-1 --tables t01,t02,t03 --out broker/ \\
        --cafile /etc/mosquitto/certs/venue-ca.pem --certfile ... --keyfile ...

writes into OUT:

- ``mosquitto.conf``: the listener, security and persistence settings;
- ``acl``: who may read and write which topics (deploy.broker_config explains the rules);
- ``passwd``: one PBKDF2-SHA512 hash per client (mode 0600);
- ``credentials/<client>.toml``: a new client's username and password (mode 0600), to copy to
  that client's machine. A password exists only there and, with --show-passwords, on stdout.

Run again with more tables and the existing clients keep their passwords (their hashes are
kept from OUT/passwd); new clients get new ones; --rotate gives named clients new ones.

With ``--kind nats --nodes mqtt1=10.0.0.11,...`` it writes a NATS cluster's files instead, from
the same ACL (deploy.broker_acl): ``nats-auth.conf`` (the users, bcrypt hashes and
permissions, included by every node), ``nats-<node>.conf`` per node, and ``nats-passwd`` and
``nats-route-password`` (kept for the next run); the credentials are the same
(docs/operations/broker-cluster.md, D392).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from deploy import broker_config as bc
from deploy import nats_config as nc
from game.errors import ConfigError
from runtime.files import replace_text

__all__ = ["register", "run_config"]

DEFAULT_INSTALL_DIR = "/etc/mosquitto/showdown"
KINDS = ("mosquitto", "nats")
NATS_HASHES_FILE = "nats-passwd"  # the NATS users' bcrypt hashes, kept for the next run
NATS_ROUTE_FILE = "nats-route-password"  # the nodes' shared route password
PASSWORD_BYTES = 32  # 256 bits, URL-safe base64: 43 characters


def register(sub: Any) -> None:
    """Add the `broker` command with `config`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "broker", help="write the venue's broker configuration, ACL and passwords",
        description="Broker set-up for a venue (Mosquitto, or a NATS cluster): listener, ACL"
        " and per-client credentials.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c: argparse.ArgumentParser = actions.add_parser(
        "config", help="write mosquitto.conf, acl, passwd and per-client credentials",
        description="Write mosquitto.conf, acl and passwd for the venue into OUT, and a"
        " credentials file (mode 0600) for each client that gets a new password. Clients are"
        " the tables, 'leaderboard' and 'desk'; each one's username is its client id. With"
        " --kind nats: nats-auth.conf and one nats-NODE.conf per node of --nodes instead.",
    )
    c.add_argument("--venue", required=True, help="venue id (a-z 0-9 '-')")
    c.add_argument("--tables", required=True, metavar="T1,T2,...",
                   help="table ids, comma-separated (a-z 0-9 '-')")
    c.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="directory to write into (created if missing)")
    c.add_argument("--install-dir", default=DEFAULT_INSTALL_DIR, metavar="DIR",
                   help="where acl and passwd will live on the broker's host"
                        f" (default {DEFAULT_INSTALL_DIR})")
    c.add_argument("--persistence-dir", default=bc.DEFAULT_PERSISTENCE_DIR, metavar="DIR",
                   help=f"Mosquitto's persistence_location (default {bc.DEFAULT_PERSISTENCE_DIR})")
    c.add_argument("--port", type=int, default=None,
                   help="listener port (default 8883 with TLS, 1883 without)")
    c.add_argument("--bind", default=None, metavar="ADDRESS",
                   help="listen on this address only (default: every interface)")
    c.add_argument("--host", default=None,
                   help="the broker's address as clients reach it, written to credentials")
    tls = c.add_argument_group("TLS (paths on the broker's host)")
    tls.add_argument("--cafile", default=None, help="CA certificate(s) clients are checked against")
    tls.add_argument("--certfile", default=None, help="the broker's certificate")
    tls.add_argument("--keyfile", default=None, help="the broker's private key")
    tls.add_argument("--require-certificate", action="store_true",
                     help="clients must present a certificate signed by the CA")
    tls.add_argument("--use-identity-as-username", action="store_true",
                     help="the client certificate's CN is the username (no passwords)")
    tls.add_argument("--insecure-plaintext", action="store_true",
                     help="no TLS: passwords and scores cross the network in clear text"
                          " (only for an isolated network or a test)")
    nats = c.add_argument_group("a NATS cluster (--kind nats)")
    nats.add_argument("--kind", choices=KINDS, default="mosquitto",
                      help="the broker to configure: one Mosquitto (default), or a NATS"
                           " cluster with its MQTT interface")
    nats.add_argument("--nodes", default=None, metavar="NAME=HOST,...",
                      help="the NATS nodes and the address each listens on, e.g."
                           " mqtt1=10.0.0.11,mqtt2=10.0.0.12,mqtt3=10.0.0.13")
    nats.add_argument("--store-dir", default=nc.DEFAULT_STORE_DIR, metavar="DIR",
                      help=f"each node's JetStream store (default {nc.DEFAULT_STORE_DIR})")
    nats.add_argument("--monitor-lan", action="store_true",
                      help="serve each node's read-only monitoring (/healthz, /jsz) on its"
                           " address instead of 127.0.0.1, for `showdown doctor"
                           " --broker-monitor` from another machine")
    c.add_argument("--iterations", type=int, default=bc.DEFAULT_ITERATIONS,
                   help=f"PBKDF2 iterations per hash (default {bc.DEFAULT_ITERATIONS})")
    c.add_argument("--rotate", default="", metavar="C1,C2,...",
                   help="give these clients new passwords ('all' for every client)")
    c.add_argument("--show-passwords", action="store_true",
                   help="also print the new passwords once on stdout")
    c.add_argument("--json", action="store_true",
                   help="print what was written as JSON (the passwords with --show-passwords)")
    c.set_defaults(handler=run_config)


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _tls(args: argparse.Namespace) -> bc.TlsSettings | None:
    files = (args.cafile, args.certfile, args.keyfile)
    wants_tls = any(f is not None for f in files) or args.require_certificate \
        or args.use_identity_as_username
    if wants_tls and args.insecure_plaintext:
        raise CommandError("--insecure-plaintext contradicts the TLS options; choose one")
    if not wants_tls:
        if not args.insecure_plaintext:
            raise CommandError(
                "give the TLS files (--cafile, --certfile, --keyfile), or --insecure-plaintext"
                " to accept passwords in clear text"
            )
        return None
    if any(f is None for f in files):
        raise CommandError("TLS needs all of --cafile, --certfile and --keyfile")
    return bc.TlsSettings(
        cafile=args.cafile, certfile=args.certfile, keyfile=args.keyfile,
        require_certificate=args.require_certificate,
        use_identity_as_username=args.use_identity_as_username,
    )


def _settings(args: argparse.Namespace) -> bc.BrokerSettings:
    install = str(args.install_dir).rstrip("/") or "/"
    return bc.BrokerSettings(
        venue=args.venue, tables=_split(args.tables), port=args.port, bind_address=args.bind,
        acl_path=f"{install}/acl", password_path=f"{install}/passwd",
        persistence_dir=args.persistence_dir, tls=_tls(args),
    )


def _write(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` with ``text``; the file never exists with a looser mode."""
    replace_text(path, text, mode)


def _existing_hashes(path: Path, *, nats: bool = False) -> dict[str, str]:
    if not path.exists():
        return {}
    parse = nc.parse_nats_password_file if nats else bc.parse_password_file
    try:
        return parse(path.read_text(encoding="utf-8"))
    except ConfigError as exc:
        raise CommandError(f"{path}: {exc.key}: {exc.reason}") from None


def run_config(args: argparse.Namespace) -> int:
    """Write the broker files and the credentials of clients with new passwords."""
    settings = _settings(args)
    nats = _nats_settings(args, settings) if args.kind == "nats" else None
    if args.iterations < 1:
        raise CommandError(f"--iterations must be at least 1, got {args.iterations}")
    if args.host is not None and (not args.host or any(ch.isspace() for ch in args.host)):
        raise CommandError(f"--host {args.host!r} must be one word")
    everyone = bc.clients(settings)
    rotate = set(_split(args.rotate))
    if rotate == {"all"}:
        rotate = set(everyone)
    unknown = sorted(rotate - set(everyone))
    if unknown:
        raise CommandError(f"--rotate names unknown clients: {', '.join(unknown)}")

    out: Path = args.out
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not out.is_dir():
        raise CommandError(f"{out} is not a directory")

    passwd = out / (NATS_HASHES_FILE if nats else "passwd")
    hashes: dict[str, str] = {}
    new_passwords: dict[str, str] = {}
    kept: list[str] = []
    removed: list[str] = []
    if settings.uses_passwords:
        old = _existing_hashes(passwd, nats=nats is not None)
        removed = sorted(set(old) - set(everyone))
        kept = [c for c in everyone if c in old and c not in rotate]
        hashes = {c: old[c] for c in kept}
        for client in everyone:
            if client not in hashes:
                new_passwords[client] = secrets.token_urlsafe(PASSWORD_BYTES)
                hashes[client] = _hash(new_passwords[client], args.iterations,
                                       nats=nats is not None)
        _write(passwd, (nc.nats_password_file if nats else bc.password_file)(hashes), 0o600)
    if nats is None:
        _write(out / "acl", bc.acl_file(settings), 0o644)
        _write(out / "mosquitto.conf", bc.listener_config(settings), 0o644)
    else:
        _write(out / nc.AUTH_FILE, nc.nats_auth(nats, hashes), 0o640)
        route_password = _route_password(out / NATS_ROUTE_FILE)
        for node in nats.nodes:
            _write(out / f"nats-{node.name}.conf", nc.node_config(nats, node, route_password),
                   0o640)

    creds = out / "credentials"
    creds.mkdir(mode=0o700, exist_ok=True)
    written: list[Path] = []
    for client in everyone:
        path = creds / f"{client}.toml"
        if settings.uses_passwords and client not in new_passwords:
            continue  # its password is unchanged and known only to its old credentials file
        _write(path, bc.credentials_toml(client, new_passwords.get(client), settings, args.host),
               0o600)
        written.append(path)
    for client in removed:
        with contextlib.suppress(FileNotFoundError):
            (creds / f"{client}.toml").unlink()

    _report(args, settings, out=out, written=written, kept=kept, removed=removed,
            new_passwords=new_passwords, nats=nats)
    return 0


def _nats_settings(args: argparse.Namespace, settings: bc.BrokerSettings) -> nc.NatsSettings:
    """The cluster of ``--nodes`` (NAME=HOST,...) for ``--kind nats``."""
    if args.bind is not None:
        raise CommandError("--bind is for Mosquitto: with --kind nats each node listens on its"
                           " address in --nodes")
    if not args.nodes:
        raise CommandError("--kind nats needs --nodes NAME=HOST,... (e.g."
                           " mqtt1=10.0.0.11,mqtt2=10.0.0.12,mqtt3=10.0.0.13)")
    nodes = []
    for item in _split(args.nodes):
        name, sep, host = item.partition("=")
        if not sep or not name.strip() or not host.strip():
            raise CommandError(f"--nodes: {item!r} is not NAME=HOST")
        host = host.strip()
        nodes.append(nc.NatsNode(name=name.strip(), host=host, store_dir=args.store_dir,
                                 monitor=f"{host if args.monitor_lan else '127.0.0.1'}:"
                                         f"{nc.MONITOR_PORT}"))
    return nc.NatsSettings(broker=settings, nodes=tuple(nodes))


def _hash(password: str, iterations: int, *, nats: bool) -> str:
    if nats:
        import bcrypt  # noqa: PLC0415  (a dependency only this kind uses)

        return nc.bcrypt_hash(password, bcrypt.gensalt(nc.BCRYPT_COST, prefix=b"2a"))
    return bc.hash_password(password, salt=secrets.token_bytes(bc.SALT_BYTES),
                            iterations=iterations)


def _route_password(path: Path) -> str:
    """The nodes' route password: the one in ``path`` if there is one, else a new one."""
    if path.exists():
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    _write(path, password + "\n", 0o600)
    return password


def _report(args: argparse.Namespace, settings: bc.BrokerSettings, *, out: Path,
            written: list[Path], kept: list[str], removed: list[str],
            new_passwords: dict[str, str], nats: nc.NatsSettings | None = None) -> None:
    if nats is not None:
        files = [out / nc.AUTH_FILE, *(out / f"nats-{n.name}.conf" for n in nats.nodes),
                 out / NATS_HASHES_FILE, out / NATS_ROUTE_FILE]
    else:
        files = [out / "mosquitto.conf", out / "acl"] + (
            [out / "passwd"] if settings.uses_passwords else [])
    if args.json:
        print(json.dumps({
            "venue": settings.venue, "tables": list(settings.tables), "kind": args.kind,
            "port": settings.listen_port, "tls": settings.tls is not None,
            "files": [str(f) for f in files], "credentials": [str(f) for f in written],
            "kept": kept, "removed": removed,
            **({"passwords": new_passwords} if args.show_passwords else {})}, indent=2))
        return
    tls = "no TLS (clear text)" if settings.tls is None else (
        "TLS, client certificates as identity" if not settings.uses_passwords else "TLS")
    print(f"venue {settings.venue}: {len(settings.tables)} tables, port "
          f"{settings.listen_port}, {tls}")
    print(f"wrote {', '.join(str(f) for f in files)}")
    if kept:
        print(f"kept passwords: {', '.join(kept)}")
    if removed:
        print(f"removed clients: {', '.join(removed)}")
    for path in written:
        print(f"credentials: {path}")
    if args.show_passwords:
        for client, password in new_passwords.items():
            print(f"password {client} {password}")
    if nats is not None:
        print(f"on each node install nats-NODE.conf as its nats-server config and"
              f" {nc.AUTH_FILE} beside it, root:nats mode 0640;"
              " see docs/operations/broker-cluster.md")
        return
    print(f"install acl and passwd in {args.install_dir} as root:mosquitto mode 0640;"
          " see docs/operations/deployment.md")
