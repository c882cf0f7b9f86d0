"""`showdown broker config` through the real entry point."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import bcrypt
import pytest

from cli.errors import EXIT_ERROR
from cli.main import COMMAND_MODULES, main
from deploy import broker_config as bc
from deploy import nats_config as nc

PLAIN = ["--insecure-plaintext"]
TLS = ["--cafile", "/etc/mosquitto/certs/ca.pem", "--certfile", "/etc/mosquitto/certs/b.pem",
       "--keyfile", "/etc/mosquitto/certs/b.key"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["broker", "config", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def credentials(out: Path, client: str) -> dict[str, object]:
    mqtt = tomllib.loads((out / "credentials" / f"{client}.toml").read_text())["mqtt"]
    assert isinstance(mqtt, dict)
    return mqtt


def test_command_is_registered() -> None:
    assert "cli.broker" in COMMAND_MODULES


def test_writes_the_files_with_private_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "broker"
    code, stdout, _ = run(["--venue", "casino-1", "--tables", "t01, t02", "--out", str(out),
                           "--host", "broker.lan", *TLS], capsys)
    assert code == 0
    assert (out / "mosquitto.conf").read_text() == bc.listener_config(bc.BrokerSettings(
        venue="casino-1", tables=("t01", "t02"), acl_path="/etc/mosquitto/showdown/acl",
        password_path="/etc/mosquitto/showdown/passwd",  # noqa: S106 - a path
        tls=bc.TlsSettings(cafile="/etc/mosquitto/certs/ca.pem",
                           certfile="/etc/mosquitto/certs/b.pem",
                           keyfile="/etc/mosquitto/certs/b.key")))
    assert "pattern write showdown/v1/casino-1/tables/%u/events" in (out / "acl").read_text()
    assert mode(out / "passwd") == 0o600
    hashes = bc.parse_password_file((out / "passwd").read_text())
    assert list(hashes) == ["leaderboard", "desk", "t01", "t02"]
    passwords = set()
    for client, hashed in hashes.items():
        path = out / "credentials" / f"{client}.toml"
        assert mode(path) == 0o600
        mqtt = credentials(out, client)
        assert mqtt["username"] == client
        assert (mqtt["host"], mqtt["port"], mqtt["tls"]) == ("broker.lan", 8883, True)
        password = mqtt["password"]
        assert isinstance(password, str)
        assert len(password) >= 43  # 256 random bits
        assert bc.verify_password(password, hashed)
        passwords.add(password)
    assert len(passwords) == 4
    # Passwords are not printed unless asked for.
    assert not any(p in stdout for p in passwords)
    assert str(out / "credentials" / "t01.toml") in stdout


def test_show_passwords_prints_each_new_one_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, _ = run(["--venue", "v", "--tables", "t01", "--out", str(tmp_path),
                           "--show-passwords", *PLAIN], capsys)
    assert code == 0
    shown = {line.split()[1]: line.split()[2] for line in stdout.splitlines()
             if line.startswith("password ")}
    assert set(shown) == {"leaderboard", "desk", "t01"}
    assert shown["t01"] == credentials(tmp_path, "t01")["password"]


def test_rerun_keeps_passwords_adds_new_tables_and_drops_removed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--venue", "v", "--out", str(tmp_path), *PLAIN]
    assert run([*base, "--tables", "t01,t02"], capsys)[0] == 0
    first = bc.parse_password_file((tmp_path / "passwd").read_text())
    t01_password = credentials(tmp_path, "t01")["password"]

    code, stdout, _ = run([*base, "--tables", "t01,t03"], capsys)
    assert code == 0
    second = bc.parse_password_file((tmp_path / "passwd").read_text())
    assert list(second) == ["leaderboard", "desk", "t01", "t03"]
    for kept in ("leaderboard", "desk", "t01"):
        assert second[kept] == first[kept]
    assert "kept passwords: leaderboard, desk, t01" in stdout
    assert "removed clients: t02" in stdout
    assert not (tmp_path / "credentials" / "t02.toml").exists()
    # The kept client's credentials file is untouched and still works.
    assert credentials(tmp_path, "t01")["password"] == t01_password
    assert bc.verify_password(str(t01_password), second["t01"])
    assert bc.verify_password(str(credentials(tmp_path, "t03")["password"]), second["t03"])


def test_rotate_gives_new_passwords(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--venue", "v", "--tables", "t01,t02", "--out", str(tmp_path), *PLAIN]
    assert run(base, capsys)[0] == 0
    first = bc.parse_password_file((tmp_path / "passwd").read_text())
    assert run([*base, "--rotate", "t02,desk"], capsys)[0] == 0
    second = bc.parse_password_file((tmp_path / "passwd").read_text())
    assert [c for c in first if first[c] != second[c]] == ["desk", "t02"]
    assert bc.verify_password(str(credentials(tmp_path, "t02")["password"]), second["t02"])
    assert run([*base, "--rotate", "all"], capsys)[0] == 0
    third = bc.parse_password_file((tmp_path / "passwd").read_text())
    assert all(third[c] != second[c] for c in third)


def test_certificate_identity_writes_no_passwords(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(["--venue", "v", "--tables", "t01", "--out", str(tmp_path), *TLS,
                      "--require-certificate", "--use-identity-as-username"], capsys)
    assert code == 0
    assert not (tmp_path / "passwd").exists()
    assert "password_file" not in (tmp_path / "mosquitto.conf").read_text()
    assert "password" not in credentials(tmp_path, "t01")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tables", "t01"], "--insecure-plaintext"),
        (["--tables", "t01", *PLAIN, "--cafile", "/ca.pem"], "contradicts"),
        (["--tables", "t01", "--cafile", "/ca.pem"], "all of --cafile"),
        (["--tables", "t01,desk", *PLAIN], "reserved"),
        (["--tables", "t01,t01", *PLAIN], "twice"),
        (["--tables", "", *PLAIN], "at least one table"),
        (["--tables", "Table 1", *PLAIN], "not valid"),
        (["--tables", "t01", *PLAIN, "--rotate", "t09"], "unknown clients: t09"),
        (["--tables", "t01", *PLAIN, "--iterations", "0"], "at least 1"),
        (["--tables", "t01", *TLS, "--use-identity-as-username"], "require_certificate"),
        (["--tables", "t01", *PLAIN, "--kind", "nats"], "--kind nats needs --nodes"),
        (["--tables", "t01", *PLAIN, "--kind", "nats", "--nodes", "mqtt1"], "not NAME=HOST"),
        (["--tables", "t01", *PLAIN, "--kind", "nats", "--nodes", "a=h,a=i"], "same name"),
        (["--tables", "t01", *PLAIN, "--kind", "nats", "--nodes", "a=h", "--bind", "h"],
         "--bind is for Mosquitto"),
        (["--tables", "t01", *TLS, "--require-certificate", "--use-identity-as-username",
          "--kind", "nats", "--nodes", "a=h"], "use_identity_as_username"),
    ],
)
def test_user_errors_are_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["--venue", "v", "--out", str(tmp_path / "o"), *argv], capsys)
    assert code == EXIT_ERROR
    assert err.startswith("showdown broker: error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "passwd").exists()


def test_unreadable_existing_password_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "passwd").write_text("t01:plain\n")
    code, _, err = run(["--venue", "v", "--tables", "t01", "--out", str(tmp_path), *PLAIN],
                       capsys)
    assert code == EXIT_ERROR
    assert "passwd: password file line 1" in err


NODES = ["--kind", "nats", "--nodes", "mqtt1=10.0.0.11,mqtt2=10.0.0.12,mqtt3=10.0.0.13"]


def test_nats_writes_users_nodes_and_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nats"
    code, stdout, _ = run(["--venue", "casino-1", "--tables", "t01,t02", "--out", str(out),
                           *TLS, *NODES, "--monitor-lan"], capsys)
    assert code == 0
    assert not (out / "mosquitto.conf").exists() and not (out / "acl").exists()
    hashes = nc.parse_nats_password_file((out / "nats-passwd").read_text())
    assert list(hashes) == ["leaderboard", "desk", "t01", "t02"]
    assert mode(out / "nats-passwd") == 0o600 and mode(out / "nats-route-password") == 0o600
    auth = (out / nc.AUTH_FILE).read_text()
    assert mode(out / nc.AUTH_FILE) == 0o640
    for client, hashed in hashes.items():
        password = credentials(out, client)["password"]
        assert isinstance(password, str)
        assert bcrypt.checkpw(password.encode(), hashed.encode())
        assert f'password: "{hashed}"' in auth
        assert password not in stdout
    route = (out / "nats-route-password").read_text().strip()
    for name, host in (("mqtt1", "10.0.0.11"), ("mqtt2", "10.0.0.12"), ("mqtt3", "10.0.0.13")):
        node = (out / f"nats-{name}.conf").read_text()
        assert mode(out / f"nats-{name}.conf") == 0o640
        assert f'server_name: "{name}"' in node and f'listen: "{host}:8883"' in node
        assert f'http: "{host}:8222"' in node  # --monitor-lan
        assert f"route:{route}@" in node
    assert "nats-mqtt2.conf" in stdout


def test_nats_rerun_keeps_passwords_and_the_route_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nats"
    base = ["--venue", "v", "--out", str(out), *PLAIN, *NODES]
    assert run([*base, "--tables", "t01"], capsys)[0] == 0
    first = nc.parse_nats_password_file((out / "nats-passwd").read_text())
    route = (out / "nats-route-password").read_text()
    assert run([*base, "--tables", "t01,t02", "--rotate", "desk"], capsys)[0] == 0
    second = nc.parse_nats_password_file((out / "nats-passwd").read_text())
    assert second["t01"] == first["t01"] and second["leaderboard"] == first["leaderboard"]
    assert second["desk"] != first["desk"] and "t02" in second
    assert (out / "nats-route-password").read_text() == route
    assert 'http: "127.0.0.1:8222"' in (out / "nats-mqtt1.conf").read_text()
