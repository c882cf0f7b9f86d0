"""The installation planner: what a table PC, the central server or the desk workstation needs,
as an ordered list of typed steps (deploy.steps). Pure: every file it plans is rendered from
the templates and inputs it is given; nothing here reads or writes the machine.

Paths are the target machine's (``/etc/showdown/...``); the executor puts them under its
``--root``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Template

from deploy.steps import (
    BrokerFiles,
    Certificate,
    Directory,
    EnableUnit,
    EnrolmentFile,
    File,
    KeyPair,
    Step,
    SystemUsers,
    VenueCa,
)

__all__ = ["MOSQUITTO_DROP_IN", "CentralRequest", "DeskRequest", "TableRequest", "Templates",
           "mosquitto_drop_in", "plan_central", "plan_desk", "plan_table", "render_udev_rules"]

USER = "showdown"
ETC = "/etc/showdown"
UNITS = "/etc/systemd/system"
SYSUSERS = "/etc/sysusers.d/showdown.conf"
JOURNALD = "/etc/systemd/journald.conf.d/showdown.conf"
UDEV = "/etc/udev/rules.d/99-showdown-readers.rules"
CA_CERT = f"{ETC}/venue-ca.pem"
TABLE_CREDENTIALS = f"{ETC}/mqtt-table.toml"  # the table template's [mqtt] credentials_file
# The placeholder ids the shipped udev rules carry; the planner writes the configured ones.
_RULE_READER = 'ATTR{idVendor}=="1209", ATTR{idProduct}=="0001"'
_RULE_SHOE = 'ATTRS{idVendor}=="0403", ATTRS{idProduct}=="6001"'
_SCREEN_URL = "@SCREEN_URL@"
MOSQUITTO_DROP_IN = f"{UNITS}/mosquitto.service.d/showdown.conf"


@dataclass(frozen=True, slots=True, kw_only=True)
class Templates:
    """The texts the plans are rendered from (config/templates/ and systemd/)."""

    table: str
    leaderboard: str
    desk: str
    journald: str
    sysusers: str
    udev: str
    table_unit: str
    leaderboard_unit: str
    backup_service: str
    backup_timer: str
    screen_unit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRequest:
    """What `showdown install table` was asked for (files already read by the command)."""

    venue: str
    table: str
    brokers: tuple[str, ...]  # host:port of the broker or of each cluster node, in order
    tls: bool = True
    rfid_id: tuple[int, int]  # USB vendor, product
    shoe_id: tuple[int, int]
    credentials: str | None = field(default=None, repr=False)  # `broker config`'s file
    credentials_source: str | None = None
    ca_pem: str | None = None
    ca_source: str | None = None
    chips: str | None = None
    chips_source: str | None = None
    desk_keys: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CentralRequest:
    """What `showdown install central` was asked for."""

    venue: str
    tables: tuple[str, ...]
    enrolled: Mapping[str, str]  # table id -> base64 public key
    broker_host: str
    broker_names: tuple[str, ...]
    broker_port: int = 8883  # the TLS listener `showdown broker config` writes
    http_host: str
    http_port: int
    http_names: tuple[str, ...]
    database: str = "sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskRequest:
    """What `showdown install desk` was asked for."""

    venue: str
    api_url: str  # the central service's desk API: the desk's only way to the records
    ca_pem: str
    ca_source: str
    terminal: str | None = None  # the desk PC's name (default: its host name, when read)
    screen_url: str | None = None


def render_udev_rules(text: str, *, rfid_id: tuple[int, int], shoe_id: tuple[int, int]) -> str:
    """The shipped udev rules with the chip reader's and the shoe adapter's USB ids put in."""
    if _RULE_READER not in text or _RULE_SHOE not in text:
        raise ValueError("the udev rules template lacks the reader or shoe id line")
    reader = f'ATTR{{idVendor}}=="{rfid_id[0]:04x}", ATTR{{idProduct}}=="{rfid_id[1]:04x}"'
    shoe = f'ATTRS{{idVendor}}=="{shoe_id[0]:04x}", ATTRS{{idProduct}}=="{shoe_id[1]:04x}"'
    return text.replace(_RULE_READER, reader).replace(_RULE_SHOE, shoe)


def _common(t: Templates, groups: Sequence[str] = (USER, "dialout")) -> list[Step]:
    return [
        SystemUsers(path=SYSUSERS, content=t.sysusers, user=USER, groups=tuple(groups)),
        Directory(path=ETC, owner="root", group=USER, mode=0o750),
        Directory(path="/etc/systemd/journald.conf.d"),
        File(path=JOURNALD, content=t.journald, what="journald drop-in (persistent journal)"),
        Directory(path="/var/log/journal", group="systemd-journal", mode=0o2755),
    ]


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml(v) for v in values) + "]"


def plan_table(req: TableRequest, t: Templates) -> list[Step]:
    """Every step that makes a production table PC for ``req.table``."""
    key = f"{ETC}/{req.table}.key"
    desk = "\n".join(f"{name} = {_toml(b64)}" for name, b64 in sorted(req.desk_keys.items()))
    config = Template(t.table).substitute(
        venue=req.venue, table=req.table, brokers=_toml_list(req.brokers), chips=f"{ETC}/chips.csv",
        tls="true" if req.tls else "false", desk_keys=desk or "# (none enrolled yet)",
        rfid_vid=f"{req.rfid_id[0]:04x}", rfid_pid=f"{req.rfid_id[1]:04x}")
    steps = _common(t)
    steps += [
        Directory(path="/var/lib/showdown", owner=USER, group=USER, mode=0o750),
        KeyPair(path=key, key_id=req.table, owner=USER, group=USER),
        Directory(path=f"{ETC}/enrolment", mode=0o755),
        EnrolmentFile(path=f"{ETC}/enrolment/{req.table}.pub", key=key),
    ]
    if req.ca_pem is not None:
        steps.append(File(path=CA_CERT, content=req.ca_pem, what="venue CA certificate",
                          copied_from=req.ca_source))
    if req.credentials is not None:
        steps.append(File(path=TABLE_CREDENTIALS, content=req.credentials,
                          what="MQTT credentials", group=USER, mode=0o640, secret=True,
                          copied_from=req.credentials_source))
    if req.chips is not None:
        steps.append(File(path=f"{ETC}/chips.csv", content=req.chips, what="chip registry",
                          group=USER, mode=0o640, copied_from=req.chips_source))
    steps += [
        File(path=f"{ETC}/table.toml", content=config, what="table config", group=USER,
             mode=0o640, validate="table"),
        File(path=UDEV, content=render_udev_rules(t.udev, rfid_id=req.rfid_id,
                                                  shoe_id=req.shoe_id), what="udev rules"),
        File(path=f"{UNITS}/showdown-table.service", content=t.table_unit, what="unit"),
        EnableUnit(unit="showdown-table.service", wanted_by="multi-user.target"),
    ]
    return steps


def mosquitto_drop_in(conf: str) -> str:
    """Debian's mosquitto.service run on the venue's complete configuration ``conf`` instead
    of /etc/mosquitto/mosquitto.conf (a conf.d file cannot do it: both set
    persistence_location, which Mosquitto refuses twice)."""
    return ("# Written by `showdown install central`: Mosquitto on the venue's configuration"
            " (D326).\n"
            "[Service]\nExecStart=\n"
            f"ExecStart=/usr/sbin/mosquitto -c {conf}\n"
            "Restart=always\nRestartSec=2s\n")


def plan_central(req: CentralRequest, t: Templates) -> list[Step]:
    """Every step that makes the venue's central server: CA, broker, leaderboard service."""
    ca_key = f"{ETC}/ca/venue-ca.key"
    broker_dir = "/etc/mosquitto/showdown"
    broker_ca = f"{broker_dir}/venue-ca.pem"
    tls = f"{ETC}/tls"
    config = Template(t.leaderboard).substitute(
        venue=req.venue, database=req.database, http_host=req.http_host,
        http_port=str(req.http_port),
        brokers=_toml_list([f"{req.broker_host}:{req.broker_port}"]))
    enrolled = "".join(f"{tid} {b64}\n" for tid, b64 in sorted(req.enrolled.items()))
    steps = _common(t)
    steps += [
        Directory(path=f"{ETC}/ca", mode=0o700),
        # Mosquitto reads its files as user mosquitto, which cannot enter /etc/showdown
        # (root:showdown 0750): the broker's copy of the CA is in its own folder (D326).
        Directory(path=broker_dir, group="mosquitto", mode=0o750),
        VenueCa(key=ca_key, cert=CA_CERT, name=f"{req.venue} showdown CA",
                copies=(broker_ca,)),
        Certificate(cert=f"{broker_dir}/broker.pem", key=f"{broker_dir}/broker.key",
                    ca_cert=CA_CERT, ca_key=ca_key, common_name=req.broker_host,
                    names=req.broker_names, group="mosquitto", key_mode=0o640),
        Directory(path=f"{ETC}/broker", mode=0o700),
        BrokerFiles(out=f"{ETC}/broker", install_dir=broker_dir, venue=req.venue,
                    tables=req.tables, host=req.broker_host, cafile=broker_ca,
                    certfile=f"{broker_dir}/broker.pem", keyfile=f"{broker_dir}/broker.key"),
        Directory(path=f"{UNITS}/mosquitto.service.d"),
        File(path=MOSQUITTO_DROP_IN, content=mosquitto_drop_in(f"{broker_dir}/mosquitto.conf"),
             what="Mosquitto's systemd drop-in (runs the broker on the venue's configuration)"),
        Directory(path=tls, owner="root", group=USER, mode=0o750),
        Certificate(cert=f"{tls}/desk-api.pem", key=f"{tls}/desk-api.key", ca_cert=CA_CERT,
                    ca_key=ca_key, common_name=req.http_names[0], names=req.http_names,
                    owner=USER, group=USER),
        KeyPair(path=f"{ETC}/leaderboard.key", key_id="leaderboard", owner=USER, group=USER),
        Directory(path=f"{ETC}/enrolment", mode=0o755),
        EnrolmentFile(path=f"{ETC}/enrolment/leaderboard.pub", key=f"{ETC}/leaderboard.key"),
        File(path=f"{ETC}/tables.pub", content=enrolled, what="enrolled table keys",
             group=USER, mode=0o640),
        Directory(path="/var/lib/showdown-leaderboard", owner=USER, group=USER, mode=0o750),
        Directory(path="/var/lib/showdown-leaderboard-backups", owner=USER, group=USER,
                  mode=0o750),
        File(path=f"{ETC}/leaderboard.toml", content=config, what="leaderboard config",
             group=USER, mode=0o640, validate="leaderboard"),
        File(path=f"{UNITS}/showdown-leaderboard.service", content=t.leaderboard_unit,
             what="unit"),
        File(path=f"{UNITS}/showdown-leaderboard-backup.service", content=t.backup_service,
             what="unit"),
        File(path=f"{UNITS}/showdown-leaderboard-backup.timer", content=t.backup_timer,
             what="unit"),
        EnableUnit(unit="showdown-leaderboard.service", wanted_by="multi-user.target"),
        EnableUnit(unit="showdown-leaderboard-backup.timer", wanted_by="timers.target"),
    ]
    return steps


_SCREEN_USERS = """# The room screen's kiosk user (showdown-screen.service).
u showdown-screen - "Heads Up Poker Showdown room screen" /var/lib/showdown-screen -
m showdown-screen video
m showdown-screen input
m showdown-screen render
"""


def plan_desk(req: DeskRequest, t: Templates) -> list[Step]:
    """Every step that makes the desk workstation (and, with a screen URL, a room screen)."""
    terminal = (f'terminal = "{req.terminal}"' if req.terminal
                else '# terminal = "desk-1"                     # default: the host name')
    config = Template(t.desk).substitute(venue=req.venue, api_url=req.api_url,
                                         terminal=terminal)
    steps = _common(t, groups=(USER,))
    steps += [
        File(path=CA_CERT, content=req.ca_pem, what="venue CA certificate",
             copied_from=req.ca_source),
    ]
    steps.append(File(path=f"{ETC}/desk.toml", content=config, what="desk config", group=USER,
                      mode=0o640, validate="desk"))
    if req.screen_url is not None:
        steps += [
            SystemUsers(path="/etc/sysusers.d/showdown-screen.conf", content=_SCREEN_USERS,
                        user="showdown-screen", groups=("video", "input", "render")),
            File(path=f"{UNITS}/showdown-screen.service",
                 content=t.screen_unit.replace(_SCREEN_URL, req.screen_url),
                 what="unit (room screen kiosk)"),
            EnableUnit(unit="showdown-screen.service", wanted_by="graphical.target"),
        ]
    return steps
