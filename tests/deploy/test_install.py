"""`showdown install` into a prefix (--root), run as the command: a dry run changes nothing, a
first run makes the machine, a second run changes nothing and says so, a damaged file is put
right alone; central makes a CA and certificates that verify and a broker that keeps its
passwords; the desk refuses to send sign-ins in clear text."""

from __future__ import annotations

import contextlib
import io
import json
import ssl
import subprocess
from pathlib import Path

import pytest

from cli.main import main
from controller.config import TableConfig
from deploy import certs
from deploy.validate import read_under_root
from leaderboard.config import read_leaderboard_config
from leaderboard.desk.config import read_desk_config
from wire.signing import load_private_key


def showdown(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in this process (as `showdown ARGS` would run; a usage error is exit 2)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(["showdown", *args], code, out.getvalue(),
                                       err.getvalue())


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b""
            for p in sorted(root.rglob("*"))}


TABLE = ("install", "table", "--venue", "casino-1", "--table", "t03",
         "--broker", "broker.casino.lan:8883")


def _installed_table(root: Path) -> TableConfig:
    """The table config installed under ``root``, read as that machine will read it."""
    path = "/etc/showdown/table.toml"
    config, _ = read_under_root("table", path, (root / path.lstrip("/")).read_text(), root)
    assert isinstance(config, TableConfig)
    return config


@pytest.fixture
def table_root(tmp_path: Path) -> Path:
    root = tmp_path / "table"
    root.mkdir()
    return root


def test_dry_run_lists_the_steps_and_changes_nothing(table_root: Path) -> None:
    done = showdown(*TABLE, "--root", str(table_root), "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("  1. [would change] system user showdown")
    assert any("table config /etc/showdown/table.toml" in ln for ln in lines)
    assert lines[-1] == "table: would change 13 of 13 steps"
    assert list(table_root.iterdir()) == []


def test_a_second_run_changes_nothing_and_says_so(table_root: Path) -> None:
    first = showdown(*TABLE, "--root", str(table_root))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == "table: changed 13 of 13 steps"
    before = _tree(table_root)
    second = showdown(*TABLE, "--root", str(table_root))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[-1] == "table: nothing to change; all 13 steps already so"
    assert "[changed]" not in second.stdout
    assert _tree(table_root) == before
    dry = showdown(*TABLE, "--root", str(table_root), "--dry-run")
    assert dry.stdout.splitlines()[-1] == "table: nothing to change; all 13 steps already so"


def test_the_installed_table_is_consistent(table_root: Path) -> None:
    assert showdown(*TABLE, "--root", str(table_root)).returncode == 0
    etc = table_root / "etc/showdown"
    config = _installed_table(table_root)
    assert config.table == "t03" and config.mqtt.brokers == (("broker.casino.lan", 8883),)
    signer = load_private_key(etc / "t03.key")  # mode 0600, or it would not load
    line = signer.public_key.enrolment_line()
    assert (etc / "enrolment/t03.pub").read_text() == line + "\n"
    assert (etc / "t03.key.pub").read_text() == line + "\n"
    assert (etc / "table.toml").stat().st_mode & 0o777 == 0o640
    wants = table_root / "etc/systemd/system/multi-user.target.wants/showdown-table.service"
    assert wants.is_symlink()
    assert str(wants.readlink()) == "/etc/systemd/system/showdown-table.service"


def test_a_changed_file_is_put_right_and_nothing_else(table_root: Path) -> None:
    assert showdown(*TABLE, "--root", str(table_root)).returncode == 0
    rules = table_root / "etc/udev/rules.d/99-showdown-readers.rules"
    rules.write_text("# edited by hand\n")
    (table_root / "etc/showdown").chmod(0o777)
    key = (table_root / "etc/showdown/t03.key").read_bytes()
    done = showdown(*TABLE, "--root", str(table_root), "--json")
    report = json.loads(done.stdout)
    changed = [s["path"] for s in report["steps"] if s["state"] == "changed"]
    assert changed == ["/etc/showdown", "/etc/udev/rules.d/99-showdown-readers.rules"]
    assert report["changed"] == 2
    assert "# edited by hand" not in rules.read_text()
    assert (table_root / "etc/showdown").stat().st_mode & 0o777 == 0o750
    assert (table_root / "etc/showdown/t03.key").read_bytes() == key  # never replaced


def test_a_key_of_another_table_is_never_replaced(table_root: Path) -> None:
    assert showdown(*TABLE, "--root", str(table_root)).returncode == 0
    other = [*TABLE]
    other[other.index("t03")] = "t04"
    (table_root / "etc/showdown/t04.key").write_bytes(
        (table_root / "etc/showdown/t03.key").read_bytes())
    (table_root / "etc/showdown/t04.key").chmod(0o600)
    done = showdown(*other, "--root", str(table_root))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "showdown install: error: /etc/showdown/t04.key holds key 't03', not"
        " 't04': move it away, then run again"]


@pytest.mark.parametrize(("extra", "message"), [
    (("--broker", "nohost"), """--broker 'nohost' is not "host:port" (port 1..65535)"""),
    (("--broker", "broker.casino.lan:8883"), "--broker 'broker.casino.lan:8883' is given twice"),
    (("--reader-id", "12:zz"), "'12:zz' is not a USB id VID:PID in hex"),
    (("--credentials", "/nonexistent/t03.toml"), "/nonexistent/t03.toml"),
])
def test_bad_input_is_one_line(table_root: Path, extra: tuple[str, ...], message: str) -> None:
    done = showdown(*TABLE, *extra, "--root", str(table_root))
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr


def _central(root: Path, enrol: Path) -> subprocess.CompletedProcess[str]:
    return showdown("install", "central", "--venue", "casino-1", "--tables", "t03,t04",
                    "--enrol", str(enrol), "--broker-host", "broker.casino.lan",
                    "--broker-name", "10.20.0.5", "--http-host", "10.20.0.5",
                    "--root", str(root))


def test_central_then_table_then_desk(tmp_path: Path) -> None:
    table, central, desk = (tmp_path / n for n in ("table", "central", "desk"))
    for d in (table, central, desk):
        d.mkdir()
    assert showdown(*TABLE, "--root", str(table)).returncode == 0
    enrol = table / "etc/showdown/enrolment/t03.pub"
    first = _central(central, enrol)
    assert first.returncode == 0, first.stderr
    etc = central / "etc/showdown"
    ca = etc / "venue-ca.pem"
    for cert in (central / "etc/mosquitto/showdown/broker.pem", etc / "tls/desk-api.pem"):
        assert certs.verifies(cert, ca)
    context = ssl.create_default_context(cafile=str(ca))
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "casino-1 showdown CA"),),)
    config = read_leaderboard_config(etc / "leaderboard.toml")
    assert config.http.uses_tls and config.http.host == "10.20.0.5"
    assert dict(config.tables) == {"t03": enrol.read_text().split()[1]}
    passwd = (central / "etc/mosquitto/showdown/passwd").read_text()
    assert sorted(ln.split(":")[0] for ln in passwd.splitlines()) == [
        "desk", "leaderboard", "t03", "t04"]
    second = _central(central, enrol)
    assert second.stdout.splitlines()[-1].startswith("central: nothing to change")
    assert (central / "etc/mosquitto/showdown/passwd").read_text() == passwd
    assert certs.names_of(central / "etc/mosquitto/showdown/broker.pem") == {
        "broker.casino.lan", "10.20.0.5"}

    creds = etc / "broker/credentials"
    with_creds = showdown(*TABLE, "--credentials", str(creds / "t03.toml"), "--ca", str(ca),
                          "--root", str(table))
    assert with_creds.returncode == 0, with_creds.stderr
    assert "[changed] MQTT credentials /etc/showdown/mqtt-table.toml copied from" in \
        with_creds.stdout
    assert "password =" not in with_creds.stdout
    installed = table / "etc/showdown/mqtt-table.toml"
    assert installed.read_text() == (creds / "t03.toml").read_text()
    assert installed.stat().st_mode & 0o777 == 0o640
    table_config = _installed_table(table)
    assert table_config.mqtt.username == "t03"
    assert f'password = "{table_config.mqtt.password}"' in installed.read_text()

    args = ("install", "desk", "--venue", "casino-1", "--ca", str(ca), "--root", str(desk))
    retired = showdown(*args, "--api-url", "https://10.20.0.5:8443/", "--db",
                       "sqlite:////tmp/lb.sqlite3")
    assert retired.returncode == 2 and "--db: a desk workstation holds no database URL" \
        in retired.stderr
    refused = showdown(*args, "--api-url", "http://10.20.0.5:8443/")
    assert refused.returncode == 2
    assert "desk.api_url" in refused.stderr and "clear text" in refused.stderr
    assert not (desk / "etc/showdown/desk.toml").exists()
    made = showdown(*args, "--api-url", "https://10.20.0.5:8443/",
                    "--screen-url", "https://10.20.0.5:8443/?kiosk=1")
    assert made.returncode == 0, made.stderr
    desk_config = read_desk_config(desk / "etc/showdown/desk.toml")
    assert desk_config.api_url == "https://10.20.0.5:8443/"
    assert desk_config.api_ca_file == desk / "etc/showdown/venue-ca.pem"
    assert not (desk / "etc/showdown/desk.key").exists()  # the central service signs
    unit = (desk / "etc/systemd/system/showdown-screen.service").read_text()
    assert "--kiosk" in unit and "https://10.20.0.5:8443/?kiosk=1" in unit


def test_central_needs_an_enrolled_table(tmp_path: Path) -> None:
    done = showdown("install", "central", "--venue", "casino-1", "--tables", "t01",
                    "--broker-host", "b", "--root", str(tmp_path), "--dry-run")
    assert done.returncode == 2 and "--enrol" in done.stderr


def test_a_certificate_is_reissued_when_its_names_change(tmp_path: Path) -> None:
    table = tmp_path / "table"
    table.mkdir()
    assert showdown(*TABLE, "--root", str(table)).returncode == 0
    enrol = table / "etc/showdown/enrolment/t03.pub"
    assert _central(tmp_path, enrol).returncode == 0
    broker = tmp_path / "etc/mosquitto/showdown/broker.pem"
    before = broker.read_bytes()
    done = showdown("install", "central", "--venue", "casino-1", "--tables", "t03,t04",
                    "--enrol", str(enrol), "--broker-host", "broker.casino.lan",
                    "--broker-name", "10.20.0.6", "--http-host", "10.20.0.5",
                    "--root", str(tmp_path), "--json")
    changed = [s["description"] for s in json.loads(done.stdout)["steps"]
               if s["state"] == "changed"]
    assert len(changed) == 1 and changed[0].startswith("certificate /etc/mosquitto/showdown/")
    assert broker.read_bytes() != before
    assert certs.names_of(broker) == {"broker.casino.lan", "10.20.0.6"}
    assert certs.verifies(broker, tmp_path / "etc/showdown/venue-ca.pem")


def _credentials_file(tmp_path: Path, **extra: str) -> Path:
    """A table's credentials file as `showdown broker config` writes it."""
    path = tmp_path / "t03.toml"
    lines = ["[mqtt]", 'host = "broker.casino.lan"', "port = 8883", 'username = "t03"',
             'password = "pw-of-t03"', "tls = true",
             *(f'{key} = "{value}"' for key, value in extra.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_cluster_of_brokers_is_installed_in_the_order_given(tmp_path: Path,
                                                              table_root: Path) -> None:
    creds = _credentials_file(tmp_path)
    done = showdown("install", "table", "--venue", "casino-1", "--table", "t03",
                    "--broker", "mqtt1.casino.lan:8883",
                    "--broker", "mqtt2.casino.lan:8883, mqtt3.casino.lan:8883",
                    "--credentials", str(creds), "--root", str(table_root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "table: changed 14 of 14 steps"
    assert "not there yet" not in done.stdout
    config = _installed_table(table_root)
    assert config.mqtt.brokers == (("mqtt1.casino.lan", 8883), ("mqtt2.casino.lan", 8883),
                                   ("mqtt3.casino.lan", 8883))
    assert (config.mqtt.username, config.mqtt.password) == ("t03", "pw-of-t03")
    text = (table_root / "etc/showdown/table.toml").read_text()
    assert 'brokers = ["mqtt1.casino.lan:8883", "mqtt2.casino.lan:8883",' \
           ' "mqtt3.casino.lan:8883"]' in text


def test_without_credentials_the_table_installs_and_says_what_is_missing(
        table_root: Path) -> None:
    done = showdown(*TABLE, "--root", str(table_root))
    assert done.returncode == 0, done.stderr
    assert "/etc/showdown/mqtt-table.toml is not there yet" in done.stdout
    assert not (table_root / "etc/showdown/mqtt-table.toml").exists()


def test_a_dry_run_checks_the_config_with_the_credentials_it_would_install(
        tmp_path: Path, table_root: Path) -> None:
    good = showdown(*TABLE, "--credentials", str(_credentials_file(tmp_path)),
                    "--root", str(table_root), "--dry-run")
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines()[-1] == "table: would change 14 of 14 steps"
    assert "not there yet" not in good.stdout
    assert list(table_root.iterdir()) == []
    # a credentials file the reader refuses stops even a dry run, before anything is written
    bad = showdown(*TABLE, "--credentials", str(_credentials_file(tmp_path, colour="red")),
                   "--root", str(table_root), "--dry-run")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "showdown install: error: /etc/showdown/table.toml: mqtt.credentials_file:"
        " /etc/showdown/mqtt-table.toml: unknown key mqtt.colour (the rendered config"
        " fails its own reader; it was not written)"]
    assert list(table_root.iterdir()) == []


def _steps(out: str) -> list[str]:
    """Each step line of the listing without its state, in order."""
    return [ln.split("] ", 1)[1] for ln in out.splitlines() if ln[:5].strip().endswith(".")]


def test_a_dry_run_of_central_on_a_fresh_machine_checks_what_the_real_run_makes(
        tmp_path: Path) -> None:
    # The leaderboard config names the desk API's certificate, which the same run makes: a
    # dry run on a fresh machine used to stop at "http.tls_cert_file: no such file".
    table, central = tmp_path / "table", tmp_path / "central"
    table.mkdir()
    central.mkdir()
    assert showdown(*TABLE, "--root", str(table)).returncode == 0
    enrol = table / "etc/showdown/enrolment/t03.pub"
    args = ("install", "central", "--venue", "casino-1", "--tables", "t03,t04", "--enrol",
            str(enrol), "--broker-host", "broker.casino.lan", "--http-host", "10.20.0.5",
            "--root", str(central))
    dry = showdown(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1] == "central: would change 27 of 27 steps"
    assert list(central.iterdir()) == []  # nothing written, not even the scratch copy
    real = showdown(*args)
    assert real.returncode == 0, real.stderr
    assert _steps(dry.stdout) == _steps(real.stdout)
    # once installed, the dry run checks against the machine as it is: nothing to change
    again = showdown(*args, "--dry-run")
    assert again.stdout.splitlines()[-1] == "central: nothing to change; all 27 steps already so"


def test_a_dry_run_refuses_what_the_real_run_refuses_naming_the_machines_paths(
        tmp_path: Path) -> None:
    # The desk API's certificate already there but unreadable as a key pair: the rehearsal
    # keeps it (it verifies) and the reader refuses the pair, as the real run's would.
    table, central = tmp_path / "table", tmp_path / "central"
    table.mkdir()
    central.mkdir()
    assert showdown(*TABLE, "--root", str(table)).returncode == 0
    enrol = table / "etc/showdown/enrolment/t03.pub"
    assert _central(central, enrol).returncode == 0
    key = central / "etc/showdown/tls/desk-api.key"
    other = central / "etc/mosquitto/showdown/broker.key"
    key.write_bytes(other.read_bytes())  # a key of another certificate
    (central / "etc/showdown/leaderboard.toml").write_text("# edited by hand\n")
    dry = showdown(*_central(central, enrol).args[1:], "--dry-run")
    real = showdown(*_central(central, enrol).args[1:])
    assert dry.returncode == real.returncode == 2
    assert dry.stderr == real.stderr
    assert f"cannot load {central}/etc/showdown/tls/desk-api.pem with" in dry.stderr


def test_a_relative_db_is_installed_as_the_file_it_named(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`--db sqlite:///var/lb.sqlite3` names a file under the working directory; the installed
    config reads paths against /etc/showdown (D334), so the install writes it absolute."""
    table, central = tmp_path / "table", tmp_path / "central"
    for d in (table, central):
        d.mkdir()
    assert showdown(*TABLE, "--root", str(table)).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    done = showdown("install", "central", "--venue", "casino-1", "--tables", "t03",
                    "--enrol", str(table / "etc/showdown/enrolment/t03.pub"),
                    "--broker-host", "broker.casino.lan", "--db", "sqlite:///var/lb.sqlite3",
                    "--root", str(central))
    assert done.returncode == 0, done.stderr
    config = read_leaderboard_config(central / "etc/showdown/leaderboard.toml")
    assert config.database == f"sqlite:///{work}/var/lb.sqlite3"
