"""What `showdown install central` leaves to the machine's services, run against real ones:
the PostgreSQL role and database (the printed `psql` command run against the machine's
PostgreSQL, a role and database of the test's own, dropped after) and Mosquitto (the systemd
drop-in's command started as a private broker on a free port, reading the installed files as
user mosquitto would: the tables' and the service's accounts connect over TLS, a wrong
password does not)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.doctor.table import FAIL, OK, Probes, broker_finding
from deploy.plan import MOSQUITTO_DROP_IN
from tests import services
from tests.deploy.test_install import TABLE, showdown
from tests.fixtures.services import require_service
from tests.integration.test_mosquitto_acl import _free_port, _mosquitto_binary, _start, _stop
from wire.mqtt import MqttSettings


def _central(root: Path, enrol: Path, *extra: str) -> list[str]:
    return ["install", "central", "--venue", "casino-1", "--tables", "t03,t04", "--enrol",
            str(enrol), "--broker-host", "127.0.0.1", "--root", str(root), *extra]


@pytest.fixture
def roots() -> Iterator[tuple[Path, Path]]:
    """A table's root (its enrolment file) and the central's, in a folder user mosquitto may
    enter (pytest's tmp_path is 0700)."""
    top = Path(tempfile.mkdtemp(prefix="showdown-install-"))
    try:
        top.chmod(0o755)
        table, central = top / "table", top / "central"
        table.mkdir()
        central.mkdir(mode=0o755)
        assert showdown(*TABLE, "--root", str(table)).returncode == 0
        yield table / "etc/showdown/enrolment/t03.pub", central
    finally:
        shutil.rmtree(top)


@pytest.mark.postgres
def test_the_printed_psql_command_makes_the_services_role_and_database(
        roots: tuple[Path, Path]) -> None:
    host, port = services.POSTGRES
    require_service("PostgreSQL", services.postgres_up(), f"{host}:{port}")
    name = f"showdown_t{secrets.token_hex(4)}"
    url = f"postgresql+psycopg://{name}@{host}:{port}/{name}"
    enrol, central = roots
    done = showdown(*_central(central, enrol, "--db", url, "--dry-run"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("the database: PostgreSQL's administrator creates the service's role"
                     " and database once (then let it sign in: pg_hba.conf, or its password"
                     " in the service's .pgpass):")
    command = lines[at + 1].strip()
    assert command == (f"psql -h {host} -p {port} -U postgres -d postgres -v ON_ERROR_STOP=1"
                       f" -c 'CREATE ROLE \"{name}\" LOGIN'"
                       f" -c 'CREATE DATABASE \"{name}\" OWNER \"{name}\"'")
    admin = sa.create_engine(services.POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        ran = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60,
                             check=False)
        assert ran.returncode == 0, ran.stderr
        # The service's own account owns its database: it can make the tables it migrates.
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE migrated (id integer primary key)"))
            assert conn.execute(sa.text("SELECT current_user")).scalar() == name
        engine.dispose()
        # Once only: a second run says the role exists and stops (exit 1), changing nothing.
        again = subprocess.run(shlex.split(command), capture_output=True, text=True,
                               timeout=60, check=False)
        assert again.returncode == 1 and f'role "{name}" already exists' in again.stderr
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'DROP ROLE IF EXISTS "{name}"'))
        admin.dispose()


def test_sqlite_needs_no_database_command(roots: tuple[Path, Path]) -> None:
    enrol, central = roots
    done = showdown(*_central(central, enrol, "--dry-run"))
    assert done.returncode == 0, done.stderr
    assert "psql" not in done.stdout


def _as_the_machine(central: Path) -> None:
    """The owners the install sets as root on the machine (under --root it leaves them to the
    image): the broker's folder and secrets for group mosquitto (install.md, section 2)."""
    broker = central / "etc/mosquitto/showdown"
    for path in (broker, broker / "acl", broker / "passwd", broker / "broker.key"):
        shutil.chown(path, group="mosquitto")


def test_the_drop_in_runs_mosquitto_on_the_installed_files(roots: tuple[Path, Path]) -> None:
    binary = _mosquitto_binary()
    enrol, central = roots
    done = showdown(*_central(central, enrol))
    assert done.returncode == 0, done.stderr
    assert f"[changed] Mosquitto's systemd drop-in (runs the broker on the venue's" \
           f" configuration) {MOSQUITTO_DROP_IN}" in done.stdout
    drop_in = (central / MOSQUITTO_DROP_IN.lstrip("/")).read_text()
    exec_start = [ln for ln in drop_in.splitlines() if ln.startswith("ExecStart=")]
    assert exec_start[0] == "ExecStart="  # Debian's own command cleared
    argv = shlex.split(exec_start[1].removeprefix("ExecStart="))
    assert argv[:2] == ["/usr/sbin/mosquitto", "-c"]
    conf = argv[2]
    # The broker's files under the root, as the machine has them at /: every path moved under
    # the root, the listener on a free port of the loopback, persistence in the root.
    port = _free_port()
    text = (central / conf.lstrip("/")).read_text()
    text = text.replace(" /etc/", f" {central}/etc/").replace(
        "/var/lib/mosquitto/", f"{central}/var/lib/mosquitto/")
    text = re.sub(r"(?m)^listener 8883$", f"listener {port} 127.0.0.1", text)
    (central / "var/lib/mosquitto").mkdir(parents=True)
    if os.geteuid() == 0:  # started as root, mosquitto reads its files as user mosquitto
        _as_the_machine(central)
        shutil.chown(central / "var/lib/mosquitto", user="mosquitto")
    else:
        text += f"user {os.getlogin()}\n"
    test_conf = central / "etc/mosquitto/showdown/test.conf"
    test_conf.write_text(text)
    proc = _start(binary, test_conf, port, central / "mosquitto.log")
    try:
        creds = central / "etc/showdown/broker/credentials"
        ca = central / "etc/showdown/venue-ca.pem"
        probes = Probes(broker_timeout_s=5.0)
        for client in ("t03", "leaderboard", "desk"):
            mqtt = tomllib.loads((creds / f"{client}.toml").read_text())["mqtt"]
            settings = MqttSettings(host="127.0.0.1", port=port, username=client,
                                    password=mqtt["password"], tls=True, ca_file=ca)
            found = broker_finding(settings, f"{client}-test", probes)
            assert found.status == OK, found
        wrong = MqttSettings(host="127.0.0.1", port=port, username="t03",
                             password=secrets.token_urlsafe(16), tls=True, ca_file=ca)
        refused = broker_finding(wrong, "t03-test", probes)
        assert refused.status == FAIL and "authori" in refused.found.lower()
    finally:
        _stop(proc)
        with contextlib.suppress(OSError):
            print((central / "mosquitto.log").read_text())
