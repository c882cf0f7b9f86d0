"""The rehearsal venue's files (floor.venue_layout, cli.venue_broker): every config is read by
the reader of the service that uses it, the tournament's calendar takes buy-ins today, and a
second run keeps what the first made."""

from __future__ import annotations

import json
import stat
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest

from cli.main import main
from cli.venue_broker import embedded_broker_files, mosquitto_files
from controller.config import read_table_config
from deploy import broker_config as bc
from floor.venue_desk import staff_accounts
from floor.venue_layout import (
    VenueLayout,
    VenuePorts,
    choose_ports,
    lay_out,
    rehearsal_tournament,
    table_ids,
)
from leaderboard.config import read_leaderboard_config
from leaderboard.desk.config import read_desk_config
from runtime.settings_files import read_tournament

TABLES = ("t01", "t02")


def _ports(tables: int = 2) -> VenuePorts:
    return VenuePorts(broker=18883, http=18080, consoles=tuple(range(18101, 18101 + tables)),
                      benches=tuple(range(18201, 18201 + tables)))


@pytest.fixture
def venue(tmp_path: Path) -> VenueLayout:
    broker = mosquitto_files(tmp_path, venue="rehearsal", tables=TABLES, port=18883)
    return lay_out(tmp_path, tables=TABLES, ports=_ports(), database=None, broker=broker)


def test_each_table_config_is_read_by_the_daemons_reader(venue: VenueLayout) -> None:
    for n, table in enumerate(TABLES):
        config = read_table_config(venue.table_configs[table])
        assert config.table == table and config.venue == "rehearsal"
        assert (config.shoe.kind, config.rfid.kind, config.id_reader.kind) == ("sim",) * 3
        assert config.console.port == venue.ports.consoles[n]
        mqtt = config.mqtt
        assert mqtt.brokers == (("127.0.0.1", 18883),)
        assert mqtt.tls and mqtt.ca_file == venue.broker.ca_file
        assert mqtt.username == table and mqtt.password
        # the table's password is the one the broker's password file holds for it
        hashes = bc.parse_password_file((venue.directory / "broker/passwd").read_text())
        assert bc.verify_password(mqtt.password, hashes[table])
        # the desk's and the leaderboard's keys are the ones enrolled at the table
        assert set(config.desk_keys) == {"desk", "leaderboard"}


def test_the_table_config_names_no_virtual_desk_or_dealer(venue: VenueLayout) -> None:
    text = venue.table_configs["t01"].read_text()
    assert "virtual_desk" not in text and "virtual_dealer" not in text and "[sim]" not in text
    assert "[bench]" in text


def test_the_central_and_desk_configs_are_read_by_their_readers(venue: VenueLayout) -> None:
    central = read_leaderboard_config(venue.leaderboard_config)
    assert central.http.port == 18080 and central.http.desk_api
    assert central.database == f"sqlite:///{venue.directory / 'leaderboard.sqlite3'}"
    assert set(central.tables) == set(TABLES)  # each table's key enrolled at the centre
    assert central.mqtt.username == "leaderboard" and central.mqtt.tls
    desk = read_desk_config(venue.desk_config)  # a client of the central desk API (issue 33)
    assert desk.api_url == f"http://127.0.0.1:{central.http.port}/"
    assert desk.terminal == "rehearsal-desk"


def test_the_tournament_passes_check_config_and_takes_buy_ins_today(
        venue: VenueLayout, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "--tournament", str(venue.tournament)]) == 0
    capsys.readouterr()
    settings = read_tournament(venue.tournament)
    schedule = settings.schedule
    now = datetime.now(UTC)
    assert schedule.buy_in_open(now)
    today = now.astimezone(schedule.tz).date()
    assert schedule.first_day == today
    # the whole day but its last second, in the venue's zone, today and tomorrow
    for day in (today, today + timedelta(days=1)):
        for clock in (time(0, 0), time(12, 0), time(23, 59, 59)):
            assert schedule.buy_in_open(datetime.combine(day, clock, schedule.tz))
    assert not schedule.buy_in_open(datetime.combine(today + timedelta(days=2), time(0, 0, 1),
                                                     schedule.tz))


def test_a_calendar_for_a_given_day_in_the_venues_zone(tmp_path: Path) -> None:
    text, zone = rehearsal_tournament(date(2027, 1, 5))
    path = tmp_path / "t.toml"
    path.write_text(text)
    s = read_tournament(path)
    assert str(zone) == "Africa/Johannesburg"
    assert (s.schedule.first_day, s.schedule.last_day) == (date(2027, 1, 5), date(2027, 1, 6))


def test_a_second_run_keeps_the_keys_passwords_and_database(tmp_path: Path) -> None:
    broker = mosquitto_files(tmp_path, venue="rehearsal", tables=TABLES, port=18883)
    first = lay_out(tmp_path, tables=TABLES, ports=_ports(), database=None, broker=broker)
    keys = {p.name: p.read_bytes() for p in (tmp_path / "keys").iterdir()}
    creds = {c: p.read_text() for c, p in broker.credentials.items()}
    ca = (tmp_path / "tls/venue-ca.pem").read_bytes()
    again = mosquitto_files(tmp_path, venue="rehearsal", tables=(*TABLES, "t03"), port=18884)
    second = lay_out(tmp_path, tables=(*TABLES, "t03"), ports=_ports(3), database=None,
                     broker=again)
    assert {p.name: p.read_bytes() for p in (tmp_path / "keys").iterdir()
            if p.name in keys and p.name != "tables.pub"} == {
        k: v for k, v in keys.items() if k != "tables.pub"}
    for client, text in creds.items():  # same passwords, the new port
        assert again.credentials[client].read_text() == text.replace("18883", "18884")
    assert "t03" in again.credentials and (tmp_path / "keys/t03.key").exists()
    assert (tmp_path / "tls/venue-ca.pem").read_bytes() == ca
    assert second.database == first.database
    assert read_leaderboard_config(second.leaderboard_config).tables.keys() == {
        "t01", "t02", "t03"}


def test_secrets_are_owner_only(venue: VenueLayout) -> None:
    accounts = staff_accounts(venue.directory, TABLES)
    assert [a.staff_id for a in accounts] == ["M1", "C1", "S1", "D01", "D02"]
    assert [a.role for a in accounts] == ["manager", "clerk", "supervisor", "dealer", "dealer"]
    secret_files = [*(venue.directory / "staff").iterdir(), *(venue.directory / "keys").glob(
        "*.key"), venue.directory / "broker/passwd", venue.directory / "tls/venue-ca.key",
        *venue.broker.credentials.values()]
    for path in secret_files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for folder in ("staff", "keys", "broker", "tls"):
        assert stat.S_IMODE((venue.directory / folder).stat().st_mode) == 0o700, folder
    assert staff_accounts(venue.directory, TABLES) == accounts  # read back, not drawn again
    dealer = accounts[3]
    assert dealer.pin is not None and len(dealer.pin) == 6 and dealer.card is not None
    assert len(dealer.card) == 16 and dealer.passphrase is None


def test_ports_given_are_used_and_the_last_runs_kept(tmp_path: Path) -> None:
    ports = choose_ports(tmp_path, 3, console_base=19100, bench_base=19200)
    assert ports.consoles == (19100, 19101, 19102) and ports.benches == (19200, 19201, 19202)
    assert len({ports.broker, ports.http, *ports.consoles, *ports.benches}) == 8
    broker = embedded_broker_files(tmp_path, venue="rehearsal", tables=table_ids(3),
                                   port=ports.broker)
    lay_out(tmp_path, tables=table_ids(3), ports=ports, database="postgresql+psycopg://x@h/db",
            broker=broker)
    assert choose_ports(tmp_path, 3) == ports
    state = json.loads((tmp_path / "venue.json").read_text())
    assert state["database"] == "postgresql+psycopg://x@h/db"


def test_the_embedded_brokers_tables_speak_plain_mqtt(tmp_path: Path) -> None:
    broker = embedded_broker_files(tmp_path, venue="rehearsal", tables=TABLES, port=18883)
    layout = lay_out(tmp_path, tables=TABLES, ports=_ports(), database=None, broker=broker)
    config = read_table_config(layout.table_configs["t02"])
    assert not config.mqtt.tls and config.mqtt.username == "t02"


def test_mosquittos_config_is_the_venues_generator_output(venue: VenueLayout) -> None:
    conf = (venue.directory / "broker/mosquitto.conf").read_text()
    assert "allow_anonymous false" in conf and "listener 18883 127.0.0.1" in conf
    assert f"cafile {venue.broker.ca_file}" in conf
    acl = (venue.directory / "broker/acl").read_text()
    assert "pattern write showdown/v1/rehearsal/tables/%u/status" in acl
