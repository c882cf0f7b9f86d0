"""The steps of an installation plan: plain frozen records, described for people and as JSON.

A step says what the machine should look like afterwards (a directory with an owner and mode,
a file with this content, a key that exists), never how to get there: `deploy.execute` checks
each one and changes only what differs, which is what makes a second run change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BrokerFiles",
    "Certificate",
    "ConfigKind",
    "Directory",
    "EnableUnit",
    "EnrolmentFile",
    "File",
    "KeyPair",
    "Step",
    "SystemUsers",
    "VenueCa",
    "describe",
    "step_json",
]

ConfigKind = Literal["table", "leaderboard", "desk"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemUsers:
    """A sysusers.d file declaring the service user and groups, applied with systemd-sysusers."""

    path: str
    content: str
    user: str
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Directory:
    """A directory with its owner, group and mode."""

    path: str
    owner: str = "root"
    group: str = "root"
    mode: int = 0o755


@dataclass(frozen=True, slots=True, kw_only=True)
class File:
    """A file with exactly this content, owner, group and mode.

    ``what`` names it for people (config, unit, udev rule, journald drop-in...); ``secret``
    keeps its content out of every description; ``validate`` names the real config reader
    the rendered file must pass before it takes its name.
    """

    path: str
    content: str = field(repr=False)
    what: str
    owner: str = "root"
    group: str = "root"
    mode: int = 0o644
    secret: bool = False
    validate: ConfigKind | None = None
    copied_from: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EnableUnit:
    """A unit enabled for its [Install] WantedBy target (the symlink `systemctl enable` makes)."""

    unit: str
    wanted_by: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyPair:
    """An Ed25519 signing key (mode 0600) and PATH.pub beside it, made once and then kept."""

    path: str
    key_id: str
    owner: str = "root"
    group: str = "root"


@dataclass(frozen=True, slots=True, kw_only=True)
class EnrolmentFile:
    """The public key line of ``key`` ("<id> <base64>"), to carry to the machine that enrols it."""

    path: str
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VenueCa:
    """The venue's certificate authority: an ECDSA P-256 key (0600) and a self-signed CA,
    with copies of the certificate (public, 0644) where a service that cannot read
    /etc/showdown needs it (Mosquitto)."""

    key: str
    cert: str
    name: str
    days: int = 3650
    copies: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Certificate:
    """A server certificate signed by the venue CA, with its names, and its key."""

    cert: str
    key: str
    ca_cert: str
    ca_key: str
    common_name: str
    names: tuple[str, ...]
    owner: str = "root"
    group: str = "root"
    days: int = 825
    key_mode: int = 0o600  # 0640 where the key's group reads it (Mosquitto, D326)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerFiles:
    """`showdown broker config` into ``out`` (passwords kept across runs), then mosquitto.conf,
    acl and passwd installed in ``install_dir`` for group mosquitto."""

    out: str
    install_dir: str
    venue: str
    tables: tuple[str, ...]
    host: str
    cafile: str
    certfile: str
    keyfile: str


Step = (SystemUsers | Directory | File | EnableUnit | KeyPair | EnrolmentFile
        | VenueCa | Certificate | BrokerFiles)


def _mode(mode: int) -> str:
    return f"{mode:04o}"


def describe(step: Step) -> str:
    """One line saying what the step makes the machine look like."""
    match step:
        case SystemUsers(path=path, user=user, groups=groups):
            return (f"system user {user} (groups {', '.join(groups)}) declared in {path},"
                    " applied with systemd-sysusers")
        case Directory(path=path, owner=o, group=g, mode=m):
            return f"directory {path} ({o}:{g} {_mode(m)})"
        case File(path=path, what=what, owner=o, group=g, mode=m, validate=v,
                  copied_from=src):
            extra = f", checked by the {v} config reader" if v else ""
            origin = f" copied from {src}" if src else ""
            return f"{what} {path}{origin} ({o}:{g} {_mode(m)}{extra})"
        case EnableUnit(unit=unit, wanted_by=target):
            return f"enable {unit} (wanted by {target})"
        case KeyPair(path=path, key_id=key_id, owner=o, group=g):
            return f"Ed25519 signing key {key_id!r} {path} ({o}:{g} 0600) and {path}.pub"
        case EnrolmentFile(path=path, key=key):
            return (f"enrolment file {path} (the public key line of {key}; carry it to the"
                    " machines that enrol it)")
        case VenueCa(cert=cert, key=key, name=name, copies=copies):
            also = "".join(f", a copy in {c}" for c in copies)
            return (f"venue CA {name!r}: certificate {cert}{also}, key {key} (0600; keep a"
                    " copy offline)")
        case Certificate(cert=cert, key=key, common_name=cn, names=names):
            return f"certificate {cert} for {cn} ({', '.join(names)}), key {key}, signed by" \
                " the venue CA"
        case BrokerFiles(out=out, install_dir=inst, venue=venue, tables=tables):
            return (f"broker config for venue {venue} ({len(tables)} tables) in {out}:"
                    f" mosquitto.conf, acl, passwd installed in {inst}")
    raise TypeError(f"not a step: {step!r}")  # pragma: no cover


def step_json(step: Step) -> dict[str, Any]:
    """The step as a JSON object: its kind, its fields (a secret's content left out)."""
    out: dict[str, Any] = {"step": type(step).__name__, "description": describe(step)}
    for name in step.__slots__:
        value = getattr(step, name)
        if name == "content" and (getattr(step, "secret", False)):
            value = None
        elif name == "mode":
            value = _mode(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out
