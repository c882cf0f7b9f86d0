"""The files under systemd/: unit files checked by systemd-analyze, udev rules by a small matcher.

`systemd-analyze verify` and `systemd-analyze security --offline` need no running systemd;
the tests skip when the tool is absent. udevadm cannot evaluate rules against devices that
are not plugged in, so the rules are checked with a minimal udev matcher that implements
exactly the keys the file uses (``udevadm verify`` runs too where it exists, systemd >= 254).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SYSTEMD = Path(__file__).resolve().parents[2] / "systemd"
TABLE = SYSTEMD / "showdown-table.service"
LEADERBOARD = SYSTEMD / "showdown-leaderboard.service"
BACKUP = SYSTEMD / "showdown-leaderboard-backup.service"
BACKUP_TIMER = SYSTEMD / "showdown-leaderboard-backup.timer"
RULES = SYSTEMD / "99-showdown-readers.rules"
INSTALLED_BINARY = "/opt/showdown/venv/bin/showdown"
# The exposure `systemd-analyze security` reports (0 = fully locked down, 10 = nothing).
EXPOSURE_LIMIT = {TABLE.name: 2.5, LEADERBOARD.name: 2.0, BACKUP.name: 1.0}


def unit_settings(path: Path) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values in order]}} (units may repeat a key)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not a key=value line: {raw!r}"
        current.setdefault(key, []).append(value)
    return sections


def one(settings: dict[str, list[str]], key: str) -> str:
    values = settings[key]
    assert len(values) == 1, f"{key} is set {len(values)} times"
    return values[0]


# --- unit files: what the deployment brief asks for ----------------------------------------


@pytest.mark.parametrize("path", [TABLE, LEADERBOARD], ids=lambda p: p.name)
def test_units_are_supervised_notify_services(path: Path) -> None:
    unit = unit_settings(path)
    u, s = unit["Unit"], unit["Service"]
    assert one(u, "StartLimitIntervalSec") == "0"
    after = " ".join(u["After"]).split()
    assert {"network-online.target", "time-sync.target"} <= set(after)
    assert "network-online.target" in one(u, "Wants").split()
    expected = {"Type": "notify", "NotifyAccess": "main", "WatchdogSec": "10s",
                "Restart": "always", "RestartSec": "2s", "KillSignal": "SIGTERM",
                "User": "showdown", "Group": "showdown", "ConfigurationDirectory": "showdown",
                "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                "PrivateTmp": "yes", "ProtectKernelTunables": "yes",
                "ProtectKernelModules": "yes", "ProtectControlGroups": "yes",
                "RestrictNamespaces": "yes", "LockPersonality": "yes",
                "MemoryDenyWriteExecute": "yes", "DevicePolicy": "closed",
                "CapabilityBoundingSet": ""}
    assert {key: one(s, key) for key in expected} == expected
    assert "TimeoutStopSec" in s
    assert s["SystemCallFilter"] == ["@system-service", "~@privileged", "adjtimex"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_table_unit_runs_the_daemon_with_its_devices() -> None:
    s = unit_settings(TABLE)["Service"]
    assert one(s, "ExecStart") == (
        f"{INSTALLED_BINARY} table run --config /etc/showdown/table.toml")
    assert one(s, "StateDirectory") == "showdown"
    assert one(s, "SupplementaryGroups") == "dialout"
    assert one(s, "PrivateDevices") == "no"
    assert s["DeviceAllow"] == ["char-ttyUSB rw", "char-ttyACM rw", "char-usb_device rw",
                                "/dev/showdown/shoe rw", "char-input r"]
    assert one(s, "RestrictAddressFamilies").split() == [
        "AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]


def test_leaderboard_unit_runs_the_service_without_devices() -> None:
    s = unit_settings(LEADERBOARD)["Service"]
    assert one(s, "ExecStart") == (
        f"{INSTALLED_BINARY} leaderboard serve --config /etc/showdown/leaderboard.toml")
    assert one(s, "PrivateDevices") == "yes"
    assert "DeviceAllow" not in s
    assert one(s, "StateDirectory") == "showdown-leaderboard"


def test_the_backup_copies_the_services_database_on_a_timer() -> None:
    unit = unit_settings(BACKUP)
    s = unit["Service"]
    assert one(s, "Type") == "oneshot"
    config = tomllib.loads((SYSTEMD.parent / "config" / "leaderboard.toml").read_text())
    assert one(s, "ExecStart") == (
        f"{INSTALLED_BINARY} leaderboard backup --db {config['service']['database']}"
        " --out /var/lib/showdown-leaderboard-backups --keep-last 30")
    assert one(s, "StateDirectory").split() == ["showdown-leaderboard",
                                                "showdown-leaderboard-backups"]
    assert one(s, "PrivateNetwork") == "yes"
    timer = unit_settings(BACKUP_TIMER)
    assert one(timer["Timer"], "Persistent") == "true"
    assert one(timer["Install"], "WantedBy") == "timers.target"


# --- unit files: systemd's own checks ------------------------------------------------------


def _systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    return tool


def _checkable_copy(path: Path, directory: Path) -> Path:
    """The unit with ExecStart pointing at an executable that exists here (verify checks it)."""
    here = Path(sys.executable).with_name("showdown")
    binary = str(here) if here.exists() else "/bin/true"
    copy = directory / path.name
    copy.write_text(path.read_text().replace(INSTALLED_BINARY, binary))
    return copy


@pytest.mark.parametrize("paths", [[TABLE], [LEADERBOARD], [BACKUP, BACKUP_TIMER]],
                         ids=lambda p: p[-1].name)
def test_systemd_analyze_verify_is_silent(paths: list[Path], tmp_path: Path) -> None:
    tool = _systemd_analyze()
    copies = [str(_checkable_copy(path, tmp_path)) for path in paths]  # a timer needs its unit
    result = subprocess.run([tool, "verify", *copies], capture_output=True, text=True,
                            check=False)
    # verify exits 0 even for unknown keys and unparsable values; it only warns.
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("path", [TABLE, LEADERBOARD, BACKUP], ids=lambda p: p.name)
def test_systemd_analyze_security_exposure(path: Path, tmp_path: Path) -> None:
    tool = _systemd_analyze()
    result = subprocess.run(
        [tool, "security", "--offline=yes", "--no-pager", str(_checkable_copy(path, tmp_path))],
        capture_output=True, text=True, check=False,
    )
    if "--offline" in result.stderr and "unrecognized" in result.stderr:
        pytest.skip("systemd-analyze security --offline needs systemd >= 250")
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    assert float(found.group(1)) <= EXPOSURE_LIMIT[path.name]


# --- MemoryDenyWriteExecute=yes on this code base ------------------------------------------

MDWE_PROBE = """
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:   # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN (Linux >= 6.3)
    sys.exit(77)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    sys.exit("write+execute memory was allowed: the probe is not under MDWE")
except OSError:
    pass
import sqlite3, numpy, serial, usb.core, aiomqtt, sqlalchemy, structlog
from runtime import sd_notify
from wire import signing
import nacl.signing
key = nacl.signing.SigningKey.generate()
key.verify_key.verify(key.sign(b"hand 1"))
callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)
assert callback(1) == 2
db = sqlite3.connect(":memory:")
db.execute("create table t (x)")
print("ok")
"""


def test_daemon_imports_and_signs_under_memory_deny_write_execute() -> None:
    # The kernel's PR_SET_MDWE refuses what systemd's MemoryDenyWriteExecute= filters:
    # writable+executable mappings and making memory executable later.
    result = subprocess.run([sys.executable, "-c", MDWE_PROBE], capture_output=True,
                            text=True, check=False, cwd=Path(__file__).resolve().parents[2])
    if result.returncode == 77:
        pytest.skip("this kernel has no PR_SET_MDWE (Linux < 6.3)")
    assert (result.returncode, result.stdout.strip()) == (0, "ok"), result.stderr


# --- udev rules ----------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*([A-Z_]+)(?:\{([^}]+)\})?\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(,|$)')
_MATCH_KEYS = {"ACTION", "SUBSYSTEM", "ATTRS", "ATTR", "ENV", "KERNELS", "KERNEL"}
_ASSIGN_KEYS = {"ENV", "SYMLINK", "GROUP", "MODE", "RUN"}


@dataclass(frozen=True, slots=True)
class Token:
    key: str
    attr: str | None
    op: str
    value: str


def parse_rules(text: str) -> list[list[Token]]:
    """Every rule line as tokens; fails on anything this file should not contain."""
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        tokens, pos = [], 0
        while pos < len(line):
            m = _TOKEN.match(line, pos)
            assert m, f"line {number}: cannot parse at {line[pos:]!r}"
            key, attr, op, value, _ = m.groups()
            if op in ("==", "!="):
                assert key in _MATCH_KEYS, f"line {number}: unexpected match key {key}"
            else:
                assert key in _ASSIGN_KEYS, f"line {number}: unexpected assignment key {key}"
            tokens.append(Token(key, attr, op, value))
            pos = m.end()
        rules.append(tokens)
    return rules


@dataclass
class Device:
    """A device event as udev sees it: its own and its parents' attributes."""

    subsystem: str
    kernel: str
    attrs: dict[str, str] = field(default_factory=dict)  # own ATTR{}
    parent_attrs: dict[str, str] = field(default_factory=dict)  # ATTRS{} found on a parent
    env: dict[str, str] = field(default_factory=dict)
    symlinks: list[str] = field(default_factory=list)
    group: str = "root"
    mode: str = "0600"
    action: str = "add"
    runs: list[str] = field(default_factory=list)


def apply_rules(rules: list[list[Token]], dev: Device) -> Device:
    """Evaluate the rules in order, as udev does for one event (only the keys used here)."""
    for rule in rules:
        if all(_matches(t, dev) for t in rule if t.op in ("==", "!=")):
            for t in rule:
                if t.op in ("==", "!="):
                    continue
                if t.key == "ENV":
                    dev.env[str(t.attr)] = t.value
                elif t.key == "SYMLINK":
                    dev.symlinks.append(t.value)
                elif t.key == "GROUP":
                    dev.group = t.value
                elif t.key == "MODE":
                    dev.mode = t.value
                elif t.key == "RUN":
                    dev.runs.append(t.value)
    return dev


def _matches(t: Token, dev: Device) -> bool:
    actual = {
        "ACTION": dev.action, "SUBSYSTEM": dev.subsystem, "KERNEL": dev.kernel,
        "ATTR": dev.attrs.get(str(t.attr)), "ENV": dev.env.get(str(t.attr)),
        "ATTRS": dev.parent_attrs.get(str(t.attr), dev.attrs.get(str(t.attr))),
        "KERNELS": dev.kernel,
    }[t.key]
    hit = actual is not None and fnmatch.fnmatchcase(actual, t.value)
    return hit if t.op == "==" else not hit


def _tty(vendor: str, product: str, kernel: str = "ttyUSB0") -> Device:
    return Device("tty", kernel, parent_attrs={"idVendor": vendor, "idProduct": product})


def _usb(vendor: str, product: str, devtype: str = "usb_device") -> Device:
    return Device("usb", "1-1.3", attrs={"idVendor": vendor, "idProduct": product},
                  env={"DEVTYPE": devtype})


def test_rules_parse() -> None:
    assert len(parse_rules(RULES.read_text())) == 7


def test_a_quasarmx_gets_ftdi_sio_and_a_name_by_its_serial_number() -> None:
    rules = parse_rules(RULES.read_text())
    for product in ("b000", "b003"):
        usb = apply_rules(rules, _usb("0403", product))
        assert any("ftdi_sio/new_id" in run for run in usb.runs)
        tty = apply_rules(rules, _tty("0403", product))
        assert tty.symlinks == ["showdown/quasarmx-$env{ID_SERIAL_SHORT}"]
        assert (tty.group, tty.mode, tty.env["ID_MM_DEVICE_IGNORE"]) == ("showdown", "0660", "1")
    assert apply_rules(rules, _usb("0403", "6001")).runs == []  # a shoe's FTDI: untouched
    assert apply_rules(rules, _tty("0403", "b004")).symlinks == []


def test_ftdi_shoe_gets_the_stable_name_and_modemmanager_keeps_off() -> None:
    dev = apply_rules(parse_rules(RULES.read_text()), _tty("0403", "6001"))
    assert dev.symlinks == ["showdown/shoe"]
    assert (dev.group, dev.mode) == ("showdown", "0660")
    assert dev.env["ID_MM_DEVICE_IGNORE"] == "1"


def test_other_serial_adapters_are_left_alone() -> None:
    rules = parse_rules(RULES.read_text())
    for dev in (_tty("10c4", "ea60"), _tty("1209", "0001", "ttyACM0"), _usb("0403", "6001")):
        out = apply_rules(rules, dev)
        assert (out.symlinks, out.group, out.mode) == ([], "root", "0600")
        assert "ID_MM_DEVICE_IGNORE" not in out.env


def test_chip_reader_placeholder_ids_get_the_showdown_group() -> None:
    rules = parse_rules(RULES.read_text())
    dev = apply_rules(rules, _usb("1209", "0001"))
    assert (dev.group, dev.mode, dev.symlinks) == ("showdown", "0660", ["showdown/chip-reader"])
    # Its interface events are not device nodes: untouched.
    interface = apply_rules(rules, _usb("1209", "0001", devtype="usb_interface"))
    assert (interface.group, interface.symlinks) == ("root", [])


def test_a_wedge_marked_by_its_ids_gets_its_name_and_libinput_leaves_it_alone() -> None:
    text = RULES.read_text()
    example = next(line for line in text.splitlines() if 'SHOWDOWN_DEVICE}="id-wedge"' in line)
    assert example.startswith("#SUBSYSTEM")  # shipped commented: the casino puts its ids in
    marked = text.replace(example, example[1:].replace("xxxx", "0c2e").replace("yyyy", "0b61"))
    rules = parse_rules(marked)
    wedge = Device("input", "event7", parent_attrs={"idVendor": "0c2e", "idProduct": "0b61"},
                   env={"ID_INPUT_KEYBOARD": "1"})
    out = apply_rules(rules, wedge)
    assert (out.symlinks, out.group, out.mode) == (["showdown/id-wedge"], "showdown", "0640")
    assert out.env["LIBINPUT_IGNORE_DEVICE"] == "1"
    # the same reader's other nodes (its mouse, if any) and other keyboards are left alone
    for other in (Device("input", "mouse2", parent_attrs={"idVendor": "0c2e",
                                                          "idProduct": "0b61"}),
                  Device("input", "event3", parent_attrs={"idVendor": "046d",
                                                          "idProduct": "c31c"},
                         env={"ID_INPUT_KEYBOARD": "1"})):
        untouched = apply_rules(rules, other)
        assert (untouched.symlinks, untouched.group) == ([], "root")


def test_placeholder_is_marked_for_editing() -> None:
    text = RULES.read_text()
    assert 'ATTR{idVendor}=="1209", ATTR{idProduct}=="0001"' in text
    assert "PLACEHOLDER" in text
    assert text.count("EDIT HERE") == 2


def test_udevadm_verify_where_available() -> None:
    tool = shutil.which("udevadm")
    if tool is None:
        pytest.skip("udevadm is not installed")
    result = subprocess.run([tool, "verify", str(RULES)], capture_output=True, text=True,
                            check=False)
    if "Unknown command" in result.stderr or "unknown command" in result.stderr.lower():
        pytest.skip("udevadm verify needs systemd >= 254")
    assert result.returncode == 0, result.stderr
