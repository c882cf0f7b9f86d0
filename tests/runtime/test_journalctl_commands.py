"""The journalctl commands of docs/operations/deployment.md §5, run against what the table
daemon writes to journald.

A real `showdown table run` on the simulated table runs twice as systemd would start it
(``JOURNAL_STREAM`` naming its stderr, the journal socket a datagram socket this test owns):
once playing a heat through its embedded broker, once with its broker unreachable. The test
checks the datagrams itself, then, as journald would, adds the trusted fields and systemd's
own lines ("Started ...", "Scheduled restart ..."), turns the entries into a real journal file
with systemd-journal-remote and runs each documented command on it (``--file``): the output
must be exactly what the daemon wrote at that priority, for that hand, and so on. Without
journalctl, jq or systemd-journal-remote (Debian: `apt-get install systemd-journal-remote jq`)
only that part is skipped (it fails with SHOWDOWN_REQUIRE_SERVICES=1, as in CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.services import require_service
from tests.runtime.journal_wire import JournalReceiver
from wire.signing import Signer, load_private_key, save_private_key

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "operations" / "deployment.md"
UNIT = "showdown-table.service"
HAND = "t01-000003"
HOST = "table-t01"
GUARD_S = 180.0  # a hang guard for the daemon's runs, not a timed assertion
JOURNAL_REMOTE = next((p for p in ("/lib/systemd/systemd-journal-remote",
                                   "/usr/lib/systemd/systemd-journal-remote") if Path(p).exists()),
                      None)
TOOLS = JOURNAL_REMOTE is not None and bool(shutil.which("journalctl")) and bool(
    shutil.which("jq"))

pytestmark = [pytest.mark.slow, pytest.mark.soak]


@dataclass
class Run:
    """One start of the daemon: its pid, what reached the journal socket, what it printed."""

    pid: int
    entries: list[tuple[dict[str, str], bytes, int, int]]  # fields, raw, realtime, monotonic
    printed: bytes


@dataclass
class Written:
    """Both runs, and the journal file made from them (None without the tools)."""

    runs: list[Run]
    journal: Path | None

    def fields(self) -> list[dict[str, str]]:
        """Every entry the daemon sent, in order."""
        return [e[0] for run in self.runs for e in run.entries]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(folder: Path, broker: str) -> Path:
    for name in ("tournament.toml", "paytables.toml"):
        shutil.copy(REPO / "config" / name, folder / name)
    text = (REPO / "config" / "table-sim.toml").read_text()
    text = text.replace('broker = "embedded"', f'broker = "{broker}"')
    text = text.replace("port = 8080", "port = 0").replace("port = 8091", "port = 0")
    text = text.replace("../var/t01/", "var/")
    # The keys its comments say to make, and the virtual desk and dealer it names then.
    (folder / "var").mkdir(exist_ok=True)
    if not (folder / "var" / "table.key").exists():
        save_private_key(Signer.generate("t01"), folder / "var" / "table.key")
        save_private_key(Signer.generate("virtual-desk"), folder / "var" / "desk.key")
    desk = load_private_key(folder / "var" / "desk.key").public_key.base64
    text = text.replace("[keys.desk]\n", f'[keys.desk]\nvirtual-desk = "{desk}"\n')
    for line in ("virtual_desk = true", 'desk_key = "var/desk.key"', "virtual_dealer = true"):
        assert f"# {line}\n" in text, line
        text = text.replace(f"# {line}\n", f"{line}\n")
    assert 'broker = "embedded"' not in text or broker == "embedded"
    path = folder / f"table-{len(list(folder.glob('table-*.toml')))}.toml"
    path.write_text(text)
    return path


def _run_daemon(config: Path, journal: JournalReceiver, until: Callable[[list[dict[str, str]]],
                bool]) -> Run:
    """Start the daemon as systemd would, stop it (SIGTERM) once `until` holds."""
    journal.entries.clear()
    with tempfile.TemporaryFile() as output:
        st = os.fstat(output.fileno())
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "INVOCATION_ID")}
        env.update(PYTHONPATH=str(REPO), JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}",
                   SHOWDOWN_JOURNAL_SOCKET=str(journal.path))
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "table", "run", "--config", str(config)],
            cwd=REPO, env=env, stdout=output, stderr=output)
        try:
            deadline = time.monotonic() + GUARD_S
            while not until(journal.parsed()):
                assert proc.poll() is None, "the daemon stopped by itself"
                assert time.monotonic() < deadline, "the daemon never got there"
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=GUARD_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        time.sleep(0.2)  # the receiver's thread takes the last datagrams
        output.seek(0)
        printed = output.read()
    parsed = journal.parsed()
    entries = [(f, raw, rt, mono) for f, (raw, rt, mono) in zip(parsed, journal.entries,
                                                                   strict=True)]
    return Run(pid=proc.pid, entries=entries, printed=printed)


def _events(name: str, count: int = 1) -> Callable[[list[dict[str, str]]], bool]:
    return lambda entries: sum(e.get("EVENT") == name for e in entries) >= count


def _field(name: str, value: str) -> bytes:
    data = value.encode()
    if b"\n" in data:
        return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    return f"{name}={value}\n".encode()


def _systemd_line(message: str, realtime: int, monotonic: int, boot: str) -> bytes:
    return b"".join(_field(k, v) for k, v in (
        ("__REALTIME_TIMESTAMP", str(realtime)), ("__MONOTONIC_TIMESTAMP", str(monotonic)),
        ("_BOOT_ID", boot), ("_HOSTNAME", HOST), ("_PID", "1"), ("_SYSTEMD_UNIT", "init.scope"),
        ("_TRANSPORT", "journal"), ("SYSLOG_IDENTIFIER", "systemd"), ("PRIORITY", "6"),
        ("UNIT", UNIT), ("MESSAGE", message))) + b"\n"


def _export(runs: list[Run]) -> bytes:
    """The runs in journal export format, with what journald and systemd would add."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
    out = bytearray()
    for number, run in enumerate(runs):
        _, _, realtime, monotonic = run.entries[0]
        if number:
            out += _systemd_line(f"{UNIT}: Scheduled restart job, restart counter is at"
                                 f" {number}.", realtime - 2, monotonic - 2, boot)
        out += _systemd_line(f"Started {UNIT} - Heads Up Poker Showdown table.",
                             realtime - 1, monotonic - 1, boot)
        for _, raw, realtime, monotonic in run.entries:
            out += b"".join(_field(k, v) for k, v in (
                ("__REALTIME_TIMESTAMP", str(realtime)),
                ("__MONOTONIC_TIMESTAMP", str(monotonic)), ("_BOOT_ID", boot),
                ("_PID", str(run.pid)), ("_SYSTEMD_UNIT", UNIT), ("_TRANSPORT", "journal"),
                ("_HOSTNAME", HOST)))
            out += raw + b"\n"
    return bytes(out)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """The daemon's two runs, and their journal file."""
    folder = tmp_path_factory.mktemp("journalctl")
    (folder / "var").mkdir()
    with tempfile.TemporaryDirectory(prefix="jctl-", dir="/tmp") as short:
        journal = JournalReceiver(Path(short) / "socket").start()
        try:
            played = _run_daemon(_config(folder, "embedded"), journal,
                                 _events("hand.settled", 4))  # HAND and one more
            unreachable = _run_daemon(_config(folder, f"127.0.0.1:{_free_port()}"), journal,
                                      _events("mqtt_connect_failed", 2))
        finally:
            journal.stop()
    runs = [played, unreachable]
    path = None
    if TOOLS:
        assert JOURNAL_REMOTE is not None
        path = folder / "daemon.journal"
        subprocess.run([JOURNAL_REMOTE, "-o", str(path), "-"], input=_export(runs),
                       check=True, capture_output=True)
    return Written(runs=runs, journal=path)


def test_the_daemon_wrote_every_event_natively(written: Written) -> None:
    for run in written.runs:
        assert run.printed == b""  # nothing on stdout/stderr: no fallback, no stray prints
        assert run.entries
        for fields, _, _, _ in run.entries:
            assert fields["PRIORITY"] in {"2", "3", "4", "6", "7"}
            assert fields["SYSLOG_IDENTIFIER"] == "showdown" and fields["MESSAGE"]
            assert fields["TABLE"] == "t01", fields  # every line, uvicorn's too
            assert fields["CODE_FILE"].endswith(".py") and fields["CODE_LINE"].isdigit()
    settled = [f for f in written.fields() if f.get("EVENT") == "hand.settled"]
    assert [f["HAND_ID"] for f in settled] == [f"t01-{n:06d}" for n in range(1, len(settled) + 1)]
    assert len(settled) >= 4
    assert any(f.get("LOGGER_NAME", "").startswith("uvicorn") for f in written.fields())


def test_a_normal_heat_writes_no_warnings_and_a_lost_broker_does(written: Written) -> None:
    played, unreachable = written.runs
    assert [f for f, *_ in played.entries if int(f["PRIORITY"]) <= 4] == []
    alerts = [f for f, *_ in played.entries if f.get("EVENT") in ("shoe alert",
                                                                  "id reader alert")]
    assert {(f["KIND"], f["PRIORITY"]) for f in alerts} == {("connected", "6")}
    warned = [f for f, *_ in unreachable.entries if f["PRIORITY"] == "4"]
    assert {f["EVENT"] for f in warned} >= {"mqtt_connect_failed"}
    assert all(f["HOST"] == "127.0.0.1" for f in warned if f["EVENT"] == "mqtt_connect_failed")


def _documented() -> list[str]:
    """The journalctl commands of deployment.md §5 for showdown-table, as written there."""
    text = DOC.read_text()
    section = text[text.index("## 5. Logs"):text.index("## 6.")]
    block = section[section.index("```sh") + 5:section.index("```", section.index("```sh") + 5)]
    commands = []
    for line in block.strip().splitlines():
        command = re.sub(r"\s+#[^'\"]*$", "", line).strip()  # the trailing comment
        if "-u showdown-table" in command and " -f" not in command:
            commands.append(command)
    return commands


def _expected(written: Written) -> dict[str, list[str]]:
    """What each documented command must print, from the daemon's own entries."""
    entries = written.fields()
    warnings = [e["MESSAGE"] for e in entries if int(e["PRIORITY"]) <= 4]
    hand = [e["MESSAGE"] for e in entries if e.get("HAND_ID") == HAND]
    summary = [json.dumps({k: e.get(k) for k in ("EVENT", "PRIORITY", "HAND_ID", "SEAT")},
                          separators=(",", ":"), ensure_ascii=False) for e in entries]
    return {
        "journalctl -u showdown-table -p warning -b": warnings,  # after the short prefix
        "journalctl -u showdown-table -p warning -o cat": warnings,
        f"journalctl -u showdown-table TABLE=t01 HAND_ID={HAND} -o cat": hand,
        "journalctl -u showdown-table -o json | jq -r 'select(.HAND_ID == \"t01-000003\")"
        " | .MESSAGE'": hand,
        "journalctl -u showdown-table -o json | jq -c 'select(.TABLE) | {EVENT, PRIORITY,"
        " HAND_ID, SEAT}'": summary,
        "journalctl -u showdown-table | grep -E 'watchdog|Scheduled restart'":
            [f"{UNIT}: Scheduled restart job, restart counter is at 1."],
    }


def _lines(messages: list[str]) -> list[str]:
    return [line for message in messages for line in message.splitlines()]


def test_every_documented_command_has_its_expectation(written: Written) -> None:
    assert sorted(_documented()) == sorted(_expected(written))
    assert _expected(written)[f"journalctl -u showdown-table TABLE=t01 HAND_ID={HAND} -o cat"]


@pytest.fixture
def tools() -> None:
    """Skip without the tools (fail instead with SHOWDOWN_REQUIRE_SERVICES, as in CI)."""
    require_service("journalctl, jq and systemd-journal-remote", TOOLS,
                    "this machine (Debian: apt-get install systemd-journal-remote jq)")


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("command", _documented())
def test_documented_command_shows_what_the_daemon_wrote(written: Written, command: str) -> None:
    assert written.journal is not None
    run = command.replace("journalctl ", f"journalctl --file {written.journal} ", 1)
    done = subprocess.run(["bash", "-o", "pipefail", "-c", run],
                          capture_output=True, text=True, check=False, timeout=GUARD_S)
    assert done.returncode == 0, done.stderr
    expected = _lines(_expected(written)[command])
    shown = done.stdout.splitlines()
    if " -o " not in command:  # the short format: "Dec 01 22:41:14 table-t01 showdown[pid]: ..."
        prefix = re.compile(rf"^\w{{3}} \d\d \d\d:\d\d:\d\d {HOST} \S+: ")
        shown = [prefix.sub("", line) for line in shown if prefix.match(line)]
        expected = [m.splitlines()[0] for m in _expected(written)[command]]  # no tracebacks
    assert shown == expected


@pytest.mark.usefixtures("tools")
def test_the_old_pipe_broke_on_systemds_own_lines(written: Written) -> None:
    """`-o cat | jq` parsed every line as JSON: systemd's "Started ..." stopped it."""
    assert written.journal is not None
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"journalctl --file {written.journal} -u "
         "showdown-table -o cat | jq 'select(.hand_id == \"t01-000003\")'"],
        capture_output=True, text=True, check=False, timeout=GUARD_S)
    assert done.returncode != 0 and "parse error" in done.stderr
