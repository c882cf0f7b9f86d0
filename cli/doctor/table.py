"""`showdown doctor`'s checks of a table PC: may this table open?

Each check gives a `Finding`: ok, warn (the table may open; look at it) or fail (it may not),
what was found and what to fix. Each device is checked by its driver's adapter
(`drivers.adapter.DeviceAdapter.probe`). The machine is reached through `Probes`, so a test
points them at simulated devices: the shoe simulator's pty is a real serial port, the RFID
simulator is a pyusb backend, and the clock's "synchronised" flag is a function (the kernel's
adjtimex flag, the same one every journal event carries).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from controller.chip_registry_files import read_registry
from controller.clock import system_clock
from controller.config import DeviceConfig, TableConfig, read_table_config
from controller.journal.admin import verify_file
from game.errors import ConfigError
from runtime.errors import Unavailable, one_line
from runtime.settings_files import read_paytables, read_tournament
from wire.mqtt import MqttError, MqttSettings, connect
from wire.signing import SigningError, load_private_key

__all__ = ["FAIL", "OK", "WARN", "Finding", "Probes", "broker_finding", "broker_findings",
           "check_table",
           "clock_finding", "disk_finding", "may_open"]

Status = Literal["ok", "warn", "fail"]
OK: Status = "ok"
WARN: Status = "warn"
FAIL: Status = "fail"
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's result: its name, ok/warn/fail, what it found, what to fix."""

    check: str
    status: Status
    found: str
    fix: str = ""


def _kernel_synced() -> bool | None:
    return system_clock().synced


@dataclass(frozen=True, slots=True, kw_only=True)
class Probes:
    """How the checks reach the machine (tests put simulators here)."""

    usb_backend: Any = None  # None: libusb, as the daemon's driver uses
    clock_synced: Callable[[], bool | None] = field(default=_kernel_synced)
    broker_timeout_s: float = 5.0
    fail_below_bytes: int = 1 * GIB  # free space on the journal's file system
    warn_below_bytes: int = 5 * GIB
    enrolled: Path | None = None  # a copy of the central's tables.pub, if given
    # A rehearsal (`doctor --rehearsal`, D325): simulated devices and a clock that is not
    # synchronised are warnings, not reasons not to open; everything else is as in play.
    rehearsal: bool = False


def may_open(findings: list[Finding]) -> bool:
    """True when no check failed (warnings do not stop a table)."""
    return all(f.status != FAIL for f in findings)


def check_table(path: Path, probes: Probes | None = None) -> list[Finding]:
    """Every check of the table configured by ``path``, in the order a technician fixes them."""
    probes = probes or Probes()
    try:
        config = read_table_config(path)
    except ConfigError as exc:
        return [Finding("config", FAIL, f"{exc.source}: {exc.key}: {exc.reason}",
                        "correct the file (docs/table-config.md); `showdown check-config`"
                        " shows the same")]
    except OSError as exc:
        return [Finding("config", FAIL, f"{path}: {exc.strerror or exc}",
                        "give --config FILE, or install the table: `showdown install table`")]
    findings = [Finding("config", OK, f"{path}: table {config.table} at venue {config.venue}")]
    findings += [_files(config), _device(config, "shoe", probes), _device(config, "rfid", probes),
                 _device(config, "id_reader", probes), _clock(probes),
                 *_broker(config, probes), _key(config, probes), _journal(config),
                 _disk(config, probes)]
    return findings


def _files(config: TableConfig) -> Finding:
    """The tournament settings, paytables and chip registry the daemon loads at start."""
    try:
        read_tournament(config.tournament)
        read_paytables(config.paytables)
        if config.chips is None:
            if config.sim is None:
                raise ConfigError(config.source, "files.chips",
                                  "a table with real chip readers needs its chip registry file")
            return Finding("files", OK, "tournament settings and paytables read")
        registry = read_registry(config.chips, chip_set=config.chip_set)
    except ConfigError as exc:
        return Finding("files", FAIL, f"{exc.source}: {exc.key}: {exc.reason}".replace(
            ": : ", ": "), "install the file the key names (`showdown install table --chips`"
            " for the registry), or correct it")
    except OSError as exc:
        return Finding("files", FAIL, str(exc), "install the file")
    return Finding("files", OK, f"tournament settings, paytables and chip registry"
                   f" {config.chips} ({len(registry)} chips) read")


_LABELS: dict[str, str] = {"shoe": "shoe", "rfid": "chip reader", "id_reader": "ID reader"}
_MANUAL: dict[str, tuple[str, str]] = {
    "shoe": ("no shoe: the dealer keys every card",
             "only while the shoe is repaired; kind = \"hardware\" when it is back"),
    "rfid": ("no chip reader: a supervisor keys every wager", "only while the reader is repaired"),
}


def _device(config: TableConfig, role: str, probes: Probes) -> Finding:
    """One configured device through its driver's adapter: simulated (a table in play reads
    real devices), manual, or the driver's probe of the real device (present, readable, and
    its model and firmware where the protocol reports them)."""
    cfg: DeviceConfig = getattr(config, role)
    label = _LABELS[role]
    driver = f"{cfg.driver} driver"
    if cfg.kind == "sim":
        found = f"the {label} is simulated ([{role}] kind = \"sim\")"
        fix = f"a table in play reads a real {label}: kind = \"hardware\""
        if probes.rehearsal:
            return Finding(label, WARN, f"{found}: a rehearsal only", fix)
        return Finding(label, FAIL, found, fix)
    if cfg.kind == "manual":
        found, fix = _MANUAL[role]
        return Finding(label, WARN, found, fix)
    if cfg.kind == "none":
        return Finding(label, OK, "none fitted: participants acknowledge without a card")
    assert cfg.adapter is not None  # the config reader sets it for a device the table opens
    settings = cfg.settings
    if probes.usb_backend is not None and hasattr(settings, "backend"):
        settings = replace(settings, backend=probes.usb_backend)
    try:
        probe = cfg.adapter.probe(settings)
    except Exception as exc:  # a vendor's probe that fails: say which driver, never a traceback
        return Finding(label, FAIL, f"the {driver}'s check failed: {one_line(exc)}",
                       "report it to the driver's vendor; `showdown devices check --driver"
                       f" {cfg.driver}` runs its conformance kit")
    status = FAIL if not probe.ok else WARN if probe.warn else OK
    return Finding(label, status, f"{driver}: {probe.detail}", probe.fix)


def clock_finding(probes: Probes) -> Finding:
    """Whether the kernel reports the wall clock synchronised."""
    return _clock(probes)


def disk_finding(where: Path, what: str, probes: Probes) -> Finding:
    """Free space on the file system holding ``where`` (or its nearest existing parent)."""
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    text = f"{free / GIB:.1f} GiB free for {what} ({where})"
    if free < probes.fail_below_bytes:
        return Finding("disk", FAIL, text, "free space: move old files (journals, backups)"
                       " off the machine")
    if free < probes.warn_below_bytes:
        return Finding("disk", WARN, text, "plan to move old files off the machine")
    return Finding("disk", OK, text)


def _clock(probes: Probes) -> Finding:
    synced = probes.clock_synced()
    if synced is None:
        return Finding("clock", WARN, "cannot tell whether the clock is synchronised",
                       "check `timedatectl` (System clock synchronized: yes)")
    if not synced:
        fix = ("every event carries the wall time: start systemd-timesyncd and wait for"
               " `timedatectl` to say synchronized: yes")
        if probes.rehearsal:
            return Finding("clock", WARN, "the system clock is not synchronised (NTP):"
                           " a rehearsal's times are not evidence", fix)
        return Finding("clock", FAIL, "the system clock is not synchronised (NTP)", fix)
    return Finding("clock", OK, "the system clock is synchronised (NTP)")


async def _connect_once(settings: MqttSettings, client_id: str) -> None:
    async with connect(settings, client_id=client_id, clean_session=True):
        pass


def _broker(config: TableConfig, probes: Probes) -> list[Finding]:
    if config.mqtt.embedded:
        return [Finding("broker", FAIL, "the embedded demo broker is configured",
                        "set [mqtt] brokers = [\"host:8883\", ...] of the venue broker with"
                        " its credentials (`showdown install table --credentials`)")]
    try:
        settings = config.mqtt.settings()
    except ConfigError as exc:
        return [Finding("broker", FAIL, f"{exc.key}: {exc.reason}",
                        "install the credentials from `showdown broker config`"
                        " (docs/operations/doctor.md, broker)")]
    return broker_findings(settings, f"{config.table}-doctor", probes)


def broker_findings(settings: MqttSettings, client_id: str, probes: Probes) -> list[Finding]:
    """One real CONNECT per configured broker node, one finding each ("broker" alone for a
    single broker, "broker HOST:PORT" per node of a cluster).

    The link works when at least one node accepts: then a node that does not answer is a
    warning (the link fails over past it); when none accepts, every node's finding fails.
    """
    nodes = settings.brokers
    if len(nodes) == 1:
        return [broker_finding(settings, client_id, probes)]
    found = [broker_finding(replace(settings, host=host, port=port, failover=()), client_id,
                            probes, check=f"broker {_address(host, port)}")
             for host, port in nodes]
    answered = [f for f in found if f.status != FAIL]
    if not answered:
        return found
    others = ", ".join(f.check.removeprefix("broker ") for f in answered)
    return [f if f.status != FAIL else Finding(
        f.check, WARN, f"{f.found} (the link fails over to {others})",
        f"{f.fix}; the cluster runs on without this node, with less to spare")
        for f in found]


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def broker_finding(settings: MqttSettings, client_id: str, probes: Probes, *,
                   check: str = "broker") -> Finding:
    """A real CONNECT (and DISCONNECT) with ``settings`` (its first broker only): ok, or what
    refused it and the fix."""
    try:
        settings = replace(settings, failover=(), timeout_s=probes.broker_timeout_s)
        settings.ssl_context()
    except ConfigError as exc:
        return Finding(check, FAIL, f"{exc.key}: {exc.reason}",
                       "install the credentials from `showdown broker config`"
                       " (docs/operations/doctor.md, broker)")
    where = _address(settings.host, settings.port)
    tls = "TLS" if settings.uses_tls else "no TLS"
    try:
        asyncio.run(asyncio.wait_for(_connect_once(settings, client_id),
                                     probes.broker_timeout_s * 2))
    except (MqttError, OSError, TimeoutError, Unavailable) as exc:
        why = str(exc) or type(exc).__name__
        fix = ("the password or username is wrong: install this machine's credentials file"
               " again (or `showdown broker config --rotate`)" if "authori" in why.lower() else
               "the broker's certificate must be signed by the CA in [mqtt] ca_file" if
               "certificate" in why.lower() else
               "check the broker runs and the network reaches it (`journalctl -u mosquitto`)")
        return Finding(check, FAIL, f"{where} ({tls}) as {settings.username}: {why}", fix)
    if not settings.uses_tls:
        return Finding(check, WARN, f"{where} accepts {settings.username} without TLS",
                       "a venue network needs TLS: [mqtt] tls = true and ca_file")
    return Finding(check, OK, f"{where} ({tls}) accepts {settings.username}")


def _enrolment_lines(config: TableConfig, probes: Probes) -> list[tuple[Path, str | None]]:
    """(file, the table's line in it or None) for every enrolment record found."""
    key = config.table_key
    candidates = [key.with_name(key.name + ".pub"),
                  key.parent / "enrolment" / f"{config.table}.pub"]
    if probes.enrolled is not None:
        candidates.append(probes.enrolled)
    found: list[tuple[Path, str | None]] = []
    for path in candidates:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            if path == probes.enrolled:
                found.append((path, None))
            continue
        except (OSError, UnicodeDecodeError):
            found.append((path, None))
            continue
        mine = [ln.strip() for ln in lines if ln.split(" ", 1)[0] == config.table]
        found.append((path, mine[0] if mine else None))
    return found


def _key(config: TableConfig, probes: Probes) -> Finding:
    try:
        signer = load_private_key(config.table_key)
    except SigningError as exc:
        return Finding("key", FAIL, str(exc), "the table's key must be mode 0600, user"
                       " showdown; a lost key: `showdown install table` makes a new one, then"
                       " enrol its line at the central server")
    if signer.key_id != config.table:
        return Finding("key", FAIL, f"{config.table_key} is key {signer.key_id!r}, not table"
                       f" {config.table!r}", "the key id must be the table id")
    line = signer.public_key.enrolment_line()
    records = _enrolment_lines(config, probes)
    wrong = [str(p) for p, ln in records if ln != line]
    if wrong:
        return Finding("key", FAIL, f"the table's public key {line.split()[1]} differs from"
                       f" {', '.join(wrong)}", "enrol this key's line (`showdown keys show"
                       " --key ...`) at the central server, or put back the key that was"
                       " enrolled; the leaderboard drops messages signed by any other")
    if not records:
        return Finding("key", WARN, f"key {config.table} loads; no enrolment file to compare",
                       "give --enrolled FILE (a copy of the central's tables.pub)")
    return Finding("key", OK, f"key {config.table} matches {', '.join(str(p) for p, _ in records)}")


def _journal(config: TableConfig) -> Finding:
    path = config.journal
    if not path.exists():
        return Finding("journal", OK, f"no journal yet at {path}; the first start makes it")
    problems = verify_file(path)
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Finding("journal", FAIL, f"{path}: {first.area} {first.code}: {first.detail}"
                       f"{more}", "the table may not open on a damaged journal: `showdown"
                       " journal verify` for details, then `showdown journal replace`"
                       " (docs/journal.md, Recovery)")
    return Finding("journal", OK, f"{path} verifies intact")


def _disk(config: TableConfig, probes: Probes) -> Finding:
    found = disk_finding(config.journal.parent, "the journal", probes)
    if found.status == OK:
        return found
    return Finding(found.check, found.status, found.found, "`showdown journal rotate` and move"
                   " retired journal files off the machine")
