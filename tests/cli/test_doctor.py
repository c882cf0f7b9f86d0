"""`showdown doctor` on a simulated table: the shoe simulator's pty as the shoe's serial port,
the RFID simulator as the pyusb backend, a private Mosquitto with TLS (a CA and certificate
made by deploy.certs) and a password, a real key and a real journal. Each fault gives its own
failing finding; with none the table may open.

The clock's "synchronised" flag is the kernel's (adjtimex); the tests give `Probes` a function
that answers for it, since no test may change the machine's clock.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from cli.doctor.table import FAIL, OK, WARN, Finding, Probes, check_table, may_open
from controller.clock import FakeClockSource
from controller.journal import Journal
from deploy import broker_config as bc
from deploy import certs
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator
from tests.controller.journal.support import T0, add, tamper
from tests.integration.test_mosquitto_acl import (
    _free_port,
    _mosquitto_binary,
    _run_as_user,
    _start,
    _stop,
    _write_files,
)
from wire.signing import Signer, save_private_key

REPO = Path(__file__).resolve().parents[2]
TABLE = "t01"


@dataclass
class Rig:
    """A simulated table's pieces and its config file."""

    dir: Path
    config: Path
    shoe: ShoeSimulator
    rfid: RfidReaderSimulator
    passwords: dict[str, str]
    probes: Probes

    def findings(self) -> dict[str, Finding]:
        return {f.check: f for f in check_table(self.config, self.probes)}


def _config(d: Path, *, shoe: str, port: int) -> str:
    return f"""
[table]
venue = "casino-1"
id = "{TABLE}"
journal = "journal.sqlite"
[files]
chips = "{REPO / 'config' / 'chips.example.csv'}"
chip_set = "showdown-2026"
[keys]
table_key = "{TABLE}.key"
[shoe]
kind = "hardware"
url = "{shoe}"
[rfid]
kind = "hardware"
[mqtt]
broker = "127.0.0.1:{port}"
username = "{TABLE}"
password_file = "mqtt.password"
tls = true
ca_file = "{d / 'venue-ca.pem'}"
[api]
socket = "console.sock"
"""


@dataclass(frozen=True)
class Broker:
    """A private Mosquitto with TLS (the venue CA's certificate) and passwords."""

    dir: Path
    port: int
    passwords: dict[str, str]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    binary = _mosquitto_binary()
    d = tmp_path_factory.mktemp("broker")
    certs.make_ca(d / "ca.key", d / "venue-ca.pem", name="test venue CA", days=2)
    certs.make_server_certificate(cert=d / "broker.pem", key=d / "broker.key",
                                  ca_cert=d / "venue-ca.pem", ca_key=d / "ca.key",
                                  common_name="127.0.0.1", names=("127.0.0.1",), days=2)
    port = _free_port()
    settings = bc.BrokerSettings(
        venue="casino-1", tables=(TABLE,), port=port, bind_address="127.0.0.1",
        acl_path=str(d / "acl"), password_path=str(d / "passwd"), persistence_dir=f"{d}/",
        run_as_user=_run_as_user(),
        tls=bc.TlsSettings(cafile=str(d / "venue-ca.pem"), certfile=str(d / "broker.pem"),
                           keyfile=str(d / "broker.key")))
    passwords = {name: secrets.token_urlsafe(32) for name in bc.clients(settings)}
    conf = _write_files(d, settings, passwords)
    proc = _start(binary, conf, port, d / "mosquitto.log")
    try:
        yield Broker(d, port, passwords)
    finally:
        _stop(proc)


@pytest.fixture
def rig(tmp_path: Path, broker: Broker) -> Iterator[Rig]:
    d = tmp_path
    (d / "venue-ca.pem").write_bytes((broker.dir / "venue-ca.pem").read_bytes())
    (d / "mqtt.password").write_text(broker.passwords[TABLE] + "\n")
    signer = Signer.generate(TABLE)
    save_private_key(signer, d / f"{TABLE}.key")
    (d / f"{TABLE}.key.pub").write_text(signer.public_key.enrolment_line() + "\n")
    fake = FakeClockSource(start=T0, boot_id="boot-a", step_ns=1_000_000)
    with Journal.open(d / "journal.sqlite", clock=fake) as journal:
        add(journal, fake, 5, per_record=1)
    # The shoe by a link, as udev names a real one: an unplugged shoe's pty number may be
    # taken at once by another test's pty, but the link goes with the shoe.
    with ShoeSimulator(seed=3, link_path=d / "shoe") as shoe:
        assert shoe.link_path is not None
        config = d / "table.toml"
        config.write_text(_config(d, shoe=str(shoe.link_path), port=broker.port))
        rfid = RfidReaderSimulator(seed=3)
        yield Rig(d, config, shoe, rfid, broker.passwords,
                  Probes(usb_backend=rfid.backend, clock_synced=lambda: True,
                         fail_below_bytes=0, warn_below_bytes=0))


def test_a_healthy_simulated_table_may_open(rig: Rig) -> None:
    findings = check_table(rig.config, rig.probes)
    assert [(f.check, f.status) for f in findings] == [
        ("config", OK), ("files", OK), ("shoe", OK), ("chip reader", OK), ("ID reader", OK),
        ("clock", OK), ("broker", OK), ("key", OK), ("journal", OK), ("disk", OK)]
    assert may_open(findings)
    by = {f.check: f for f in findings}
    assert "(TLS) accepts t01" in by["broker"].found
    assert "SIM-SR48-0001" in by["chip reader"].found
    # Each device is checked by its driver, which asks the device who it is.
    assert by["shoe"].found.startswith("showdown-shoe driver: ")
    assert f"serial {rig.shoe.serial}" in by["shoe"].found and "firmware" in by["shoe"].found


def test_a_missing_chip_registry_fails_the_files_check(rig: Rig) -> None:
    rig.config.write_text(rig.config.read_text().replace("chips.example.csv", "nowhere.csv"))
    found = rig.findings()["files"]
    assert found.status == FAIL and "nowhere.csv" in found.found
    assert "--chips" in found.fix


def test_an_unplugged_shoe_fails_the_shoe_only(rig: Rig) -> None:
    rig.shoe.disconnect()
    found = rig.findings()
    assert found["shoe"].status == FAIL and "cannot open the shoe's port" in found["shoe"].found
    assert "/dev/showdown/" in found["shoe"].fix
    assert [c for c, f in found.items() if f.status == FAIL] == ["shoe"]


def test_a_missing_chip_reader_is_named_by_its_usb_id(rig: Rig) -> None:
    rig.rfid.unplug()
    found = rig.findings()
    assert found["chip reader"].status == FAIL
    assert found["chip reader"].found == "sr48 driver: no chip reader 1209:0001 on USB"
    assert "lsusb" in found["chip reader"].fix


def test_a_wrong_password_fails_the_broker_check(rig: Rig) -> None:
    (rig.dir / "mqtt.password").write_text(rig.passwords["desk"] + "\n")  # another's password
    found = rig.findings()
    assert found["broker"].status == FAIL
    assert "not authori" in found["broker"].found.lower()
    assert "credentials" in found["broker"].fix
    assert not may_open(list(found.values()))


def test_a_broker_certificate_of_another_ca_is_refused(rig: Rig) -> None:
    certs.make_ca(rig.dir / "other.key", rig.dir / "other-ca.pem", name="other", days=2)
    text = rig.config.read_text().replace(str(rig.dir / "venue-ca.pem"),
                                          str(rig.dir / "other-ca.pem"))
    rig.config.write_text(text)
    found = rig.findings()["broker"]
    assert found.status == FAIL and "certificate" in found.found.lower()
    assert "ca_file" in found.fix


def test_a_key_that_is_not_the_enrolled_one_fails(rig: Rig) -> None:
    key = rig.dir / f"{TABLE}.key"
    key.unlink()
    save_private_key(Signer.generate(TABLE), key)  # a new key; the .pub is the enrolled one
    found = rig.findings()["key"]
    assert found.status == FAIL and "differs from" in found.found
    assert str(rig.dir / f"{TABLE}.key.pub") in found.found


def test_a_key_readable_by_others_fails(rig: Rig) -> None:
    (rig.dir / f"{TABLE}.key").chmod(0o644)
    found = rig.findings()["key"]
    assert found.status == FAIL and "0644" in found.found


def test_the_central_record_is_compared_when_given(rig: Rig) -> None:
    other = Signer.generate(TABLE).public_key.enrolment_line()
    (rig.dir / "tables.pub").write_text(f"t02 AAAA\n{other}\n")
    probes = replace(rig.probes, enrolled=rig.dir / "tables.pub")
    found = {f.check: f for f in check_table(rig.config, probes)}["key"]
    assert found.status == FAIL and str(rig.dir / "tables.pub") in found.found


def test_a_damaged_journal_fails(rig: Rig) -> None:
    tamper(rig.dir / "journal.sqlite", "UPDATE journal SET payload = '{\"n\":99}' WHERE seq = 3")
    found = rig.findings()["journal"]
    assert found.status == FAIL and "journal replace" in found.fix


def test_an_unsynchronised_clock_fails(rig: Rig) -> None:
    found = {f.check: f for f in check_table(rig.config, replace(
        rig.probes, clock_synced=lambda: False))}
    assert found["clock"].status == FAIL and "timedatectl" in found["clock"].fix


def test_low_disk_space_fails(rig: Rig) -> None:
    found = {f.check: f for f in check_table(rig.config, replace(
        rig.probes, fail_below_bytes=1 << 62))}
    assert found["disk"].status == FAIL


def test_the_command_exits_1_with_json_findings(tmp_path: Path) -> None:
    bad = tmp_path / "table.toml"
    bad.write_text("[table]\nvenue = \"casino-1\"\n")
    done = subprocess.run([sys.executable, "-m", "cli", "doctor", "--config", str(bad),
                           "--json"], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["may_open"] is False
    assert report["findings"][0]["check"] == "config"
    assert report["findings"][0]["found"].endswith("table.toml: [keys]: section missing")


def test_the_simulated_demo_config_may_not_open() -> None:
    done = subprocess.run([sys.executable, "-m", "cli", "doctor", "--config",
                           str(REPO / "config" / "table-sim.toml")],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 1
    assert "FAIL  shoe" in done.stdout and "simulated" in done.stdout
    assert "FAIL  broker" in done.stdout and "embedded" in done.stdout
    assert "may NOT open" in done.stdout


def _cluster(rig: Rig, *ports: int, password: str | None = None) -> None:
    """The rig's table on a cluster of these nodes, with a credentials file as `showdown
    broker config` writes it (username and password)."""
    secret = password if password is not None else rig.passwords[TABLE]
    (rig.dir / "mqtt-table.toml").write_text(
        f'[mqtt]\nusername = "{TABLE}"\npassword = "{secret}"\ntls = true\n')
    nodes = ", ".join(f'"127.0.0.1:{port}"' for port in ports)
    text = rig.config.read_text()
    old = text[text.index('broker = "'):text.index("tls = true")]
    rig.config.write_text(text.replace(
        old, f'brokers = [{nodes}]\ncredentials_file = "mqtt-table.toml"\n'))


def test_each_node_of_a_cluster_is_checked_and_one_down_is_a_warning(rig: Rig,
                                                                      broker: Broker) -> None:
    live = broker.port
    down = _free_port()  # nothing listens there: a node that is down
    _cluster(rig, down, live)
    findings = check_table(rig.config, rig.probes)
    by = {f.check: f for f in findings}
    assert [f.check for f in findings if f.check.startswith("broker")] == [
        f"broker 127.0.0.1:{down}", f"broker 127.0.0.1:{live}"]
    assert by[f"broker 127.0.0.1:{live}"].status == OK
    assert "(TLS) accepts t01" in by[f"broker 127.0.0.1:{live}"].found
    node = by[f"broker 127.0.0.1:{down}"]
    assert node.status == WARN and f"fails over to 127.0.0.1:{live}" in node.found
    assert "journalctl -u mosquitto" in node.fix
    assert may_open(findings)


def test_a_cluster_of_which_no_node_answers_may_not_open(rig: Rig) -> None:
    down = (_free_port(), _free_port())
    _cluster(rig, *down)
    findings = check_table(rig.config, rig.probes)
    brokers = [f for f in findings if f.check.startswith("broker")]
    assert [(f.check, f.status) for f in brokers] == [
        (f"broker 127.0.0.1:{port}", FAIL) for port in down]
    assert not may_open(findings)


def test_a_wrong_password_is_no_node_down(rig: Rig, broker: Broker) -> None:
    live = broker.port
    down = _free_port()
    _cluster(rig, live, down, password=rig.passwords["desk"])  # another's password
    findings = check_table(rig.config, rig.probes)
    refused = {f.check: f for f in findings}[f"broker 127.0.0.1:{live}"]
    assert refused.status == FAIL and "not authori" in refused.found.lower()
    assert {f.status for f in findings if f.check.startswith("broker")} == {FAIL}
    assert not may_open(findings)


def _simulated(rig: Rig) -> None:
    """The rig's table on simulated devices (a rehearsal), everything else as in play."""
    text = rig.config.read_text()
    start, end = text.index("[shoe]"), text.index("[mqtt]")
    rig.config.write_text(text[:start] + '[shoe]\nkind = "sim"\n[rfid]\nkind = "sim"\n'
                          + text[end:])


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", "doctor", *args], capture_output=True,
                          text=True, cwd=REPO, check=False, timeout=60)


def test_a_rehearsal_warns_of_simulated_devices_and_the_clock_and_may_open(rig: Rig) -> None:
    _simulated(rig)
    probes = replace(rig.probes, clock_synced=lambda: False)
    in_play = {f.check: f for f in check_table(rig.config, probes)}
    assert {c: f.status for c, f in in_play.items() if f.status != OK} == {
        "shoe": FAIL, "chip reader": FAIL, "clock": FAIL}
    rehearsal = {f.check: f for f in check_table(rig.config, replace(probes, rehearsal=True))}
    assert {c: f.status for c, f in rehearsal.items() if f.status != OK} == {
        "shoe": WARN, "chip reader": WARN, "clock": WARN}
    assert rehearsal["shoe"].found == (
        'the shoe is simulated ([shoe] kind = "sim"): a rehearsal only')
    assert "not evidence" in rehearsal["clock"].found
    assert may_open(list(rehearsal.values())) and not may_open(list(in_play.values()))


def test_the_command_says_may_not_open_in_play_and_may_open_for_a_rehearsal(rig: Rig) -> None:
    _simulated(rig)
    in_play = _doctor("--config", str(rig.config))
    assert in_play.returncode == 1, in_play.stdout + in_play.stderr
    assert "FAIL  shoe         the shoe is simulated" in in_play.stdout
    assert in_play.stdout.splitlines()[-1] == "the table may NOT open: fix every FAIL above"
    rehearsal = _doctor("--rehearsal", "--config", str(rig.config))
    assert rehearsal.returncode == 0, rehearsal.stdout + rehearsal.stderr
    assert "WARN  shoe         the shoe is simulated" in rehearsal.stdout
    assert "WARN  chip reader  the chip reader is simulated" in rehearsal.stdout
    assert "FAIL" not in rehearsal.stdout  # the machine's clock, synchronised or not
    assert rehearsal.stdout.splitlines()[-1] == (
        "the table may open for a rehearsal, not for play: run `showdown doctor` without"
        " --rehearsal before opening")
    # docs/operations/doctor.md quotes the lines the command prints
    doc = " ".join((REPO / "docs/operations/doctor.md").read_text().split())
    assert f"``{rehearsal.stdout.splitlines()[-1]}`` (exit 0)" in doc
    shoe = next(ln for ln in rehearsal.stdout.splitlines() if ln.startswith("WARN  shoe"))
    assert f"`{shoe[len('WARN  shoe         '):]}`" in doc


def test_a_rehearsal_still_fails_what_a_rehearsal_needs_too(rig: Rig) -> None:
    # The same broker, TLS, credentials and key as in play: a wrong password still stops it.
    _simulated(rig)
    (rig.dir / "mqtt.password").write_text(rig.passwords["desk"] + "\n")
    done = _doctor("--rehearsal", "--config", str(rig.config))
    assert done.returncode == 1
    assert "FAIL  broker" in done.stdout
    assert done.stdout.splitlines()[-1] == (
        "the table may NOT open for a rehearsal: fix every FAIL above")
    doc = " ".join((REPO / "docs/operations/doctor.md").read_text().split())
    assert f"`{done.stdout.splitlines()[-1]}` (exit 1)" in doc
