"""The installation planner (pure): the steps of each role in order, the rendered files read
back by the real config readers, secrets kept out of every description."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import TableConfig
from deploy.plan import (
    CentralRequest,
    DeskRequest,
    TableRequest,
    plan_central,
    plan_desk,
    plan_table,
    render_udev_rules,
)
from deploy.sources import read_templates
from deploy.steps import (
    BrokerFiles,
    Certificate,
    EnableUnit,
    File,
    KeyPair,
    VenueCa,
    describe,
    step_json,
)
from deploy.validate import read_under_root
from drivers.rfid_messages import DEFAULT_PRODUCT_ID, DEFAULT_VENDOR_ID

TEMPLATES = read_templates()
SECRET = "s3cret-password-never-printed"  # noqa: S105 (a test value)
CREDENTIALS = f'[mqtt]\nhost = "broker.casino.lan"\nport = 8883\nusername = "t03"\n' \
              f'password = "{SECRET}"\ntls = true\n'


def _table(**changes: object) -> TableRequest:
    fields: dict[str, object] = {
        "venue": "casino-1", "table": "t03", "brokers": ("broker.casino.lan:8883",),
        "rfid_id": (DEFAULT_VENDOR_ID, DEFAULT_PRODUCT_ID), "shoe_id": (0x0403, 0x6001),
        "credentials": CREDENTIALS, "desk_keys": {"desk": "A" * 43 + "="}}
    fields.update(changes)
    return TableRequest(**fields)  # type: ignore[arg-type]


def _file(steps: list, path: str) -> File:  # type: ignore[type-arg]
    return next(s for s in steps if isinstance(s, File) and s.path == path)


def _read_table(steps: list, root: Path) -> TableConfig:  # type: ignore[type-arg]
    planned = {s.path: s.content for s in steps if isinstance(s, File)}
    config, notes = read_under_root("table", "/etc/showdown/table.toml",
                                    planned["/etc/showdown/table.toml"], root, planned=planned)
    assert notes == []
    assert isinstance(config, TableConfig)
    return config


def test_the_table_config_is_what_the_daemon_reads(tmp_path: Path) -> None:
    steps = plan_table(_table(rfid_id=(0x16C0, 0x27DD)), TEMPLATES)
    config = _read_table(steps, tmp_path)
    assert (config.venue, config.table, config.mqtt.brokers) == (
        "casino-1", "t03", (("broker.casino.lan", 8883),))
    assert (config.mqtt.username, config.mqtt.password) == ("t03", SECRET)
    usb = config.rfid.settings.usb
    assert (usb.vendor_id, usb.product_id) == (0x16C0, 0x27DD)
    assert config.shoe.kind == config.rfid.kind == "hardware"
    assert (config.shoe.driver, config.rfid.driver) == ("showdown-shoe", "sr48")
    assert config.shoe.settings.url == "/dev/showdown/shoe"
    assert config.mqtt.tls and config.mqtt.ca_file == Path("/etc/showdown/venue-ca.pem")
    assert config.table_key == Path("/etc/showdown/t03.key")
    assert dict(config.desk_keys) == {"desk": "A" * 43 + "="}


def test_a_cluster_is_every_node_in_the_order_given(tmp_path: Path) -> None:
    nodes = ("mqtt1.casino.lan:8883", "mqtt2.casino.lan:8883", "[fd00::3]:8883")
    config = _read_table(plan_table(_table(brokers=nodes), TEMPLATES), tmp_path)
    assert config.mqtt.brokers == (("mqtt1.casino.lan", 8883), ("mqtt2.casino.lan", 8883),
                                   ("fd00::3", 8883))
    assert config.mqtt.settings().failover == (("mqtt2.casino.lan", 8883), ("fd00::3", 8883))


def test_a_table_without_credentials_yet_is_checked_without_them(tmp_path: Path) -> None:
    steps = plan_table(_table(credentials=None), TEMPLATES)
    assert not any(isinstance(s, File) and "mqtt" in s.path for s in steps)
    text = _file(steps, "/etc/showdown/table.toml").content
    config, notes = read_under_root("table", "/etc/showdown/table.toml", text, tmp_path)
    assert isinstance(config, TableConfig) and config.mqtt.password is None
    assert notes == ["/etc/showdown/mqtt-table.toml is not there yet: mqtt.credentials_file"
                     " was left out of the check; the service will not start until it is"
                     " installed"]


def test_every_key_of_the_table_template_is_documented() -> None:
    for line in TEMPLATES.table.splitlines():
        if "=" in line and not line.lstrip().startswith("#") and not line.startswith("$"):
            assert "#" in line, f"undocumented: {line}"


def test_the_udev_rules_carry_the_reader_and_shoe_ids() -> None:
    rules = render_udev_rules(TEMPLATES.udev, rfid_id=(0x16C0, 0x27DD), shoe_id=(0x1A86, 0x7523))
    lines = [ln for ln in rules.splitlines() if not ln.startswith("#")]
    reader = next(ln for ln in lines if 'ENV{SHOWDOWN_DEVICE}="chip-reader"' in ln)
    shoe = next(ln for ln in lines if 'ENV{SHOWDOWN_DEVICE}="shoe"' in ln)
    assert 'ATTR{idVendor}=="16c0", ATTR{idProduct}=="27dd"' in reader
    assert 'ATTRS{idVendor}=="1a86", ATTRS{idProduct}=="7523"' in shoe


def test_table_steps_come_in_an_order_that_works() -> None:
    steps = plan_table(_table(), TEMPLATES)
    kinds = [type(s).__name__ for s in steps]
    assert kinds[0] == "SystemUsers"
    key = next(i for i, s in enumerate(steps) if isinstance(s, KeyPair))
    enrol = kinds.index("EnrolmentFile")
    unit = next(i for i, s in enumerate(steps) if isinstance(s, File) and s.what == "unit")
    enable = kinds.index("EnableUnit")
    assert key < enrol and unit < enable == len(steps) - 1
    journald = _file(steps, "/etc/systemd/journald.conf.d/showdown.conf")
    assert "Storage=persistent" in journald.content


def test_a_password_never_appears_in_a_description_or_the_json() -> None:
    steps = plan_table(_table(), TEMPLATES)
    secret = _file(steps, "/etc/showdown/mqtt-table.toml")
    assert secret.secret and secret.mode == 0o640
    for step in steps:
        assert SECRET not in describe(step)
        assert SECRET not in str(step_json(step))
        assert SECRET not in repr(step)


def _central() -> CentralRequest:
    return CentralRequest(venue="casino-1", tables=("t01", "t02"), enrolled={"t01": "B" * 43 + "="},
                          broker_host="broker.casino.lan", broker_names=("broker.casino.lan",
                                                                         "10.20.0.5"),
                          http_host="10.20.0.5", http_port=8443, http_names=("10.20.0.5",))


def test_central_makes_the_ca_before_the_certificates_and_the_broker() -> None:
    steps = plan_central(_central(), TEMPLATES)
    ca = next(i for i, s in enumerate(steps) if isinstance(s, VenueCa))
    certs = [i for i, s in enumerate(steps) if isinstance(s, Certificate)]
    broker = next(i for i, s in enumerate(steps) if isinstance(s, BrokerFiles))
    config = steps.index(_file(steps, "/etc/showdown/leaderboard.toml"))
    assert ca < certs[0] < broker < config
    assert {steps[i].names for i in certs} == {("broker.casino.lan", "10.20.0.5"),  # type: ignore[union-attr]
                                              ("10.20.0.5",)}
    assert _file(steps, "/etc/showdown/tables.pub").content == f"t01 {'B' * 43}=\n"
    units = {s.unit for s in steps if isinstance(s, EnableUnit)}
    assert units == {"showdown-leaderboard.service", "showdown-leaderboard-backup.timer"}


@pytest.mark.parametrize("screen", [None, "https://10.20.0.5:8443/?kiosk=1"])
def test_desk_with_and_without_a_room_screen(screen: str | None) -> None:
    steps = plan_desk(DeskRequest(venue="casino-1", api_url="https://10.20.0.5:8443/",
                                  ca_pem="PEM", ca_source="venue-ca.pem",
                                  screen_url=screen), TEMPLATES)
    paths = {s.path for s in steps if isinstance(s, File)}
    assert "/etc/showdown/desk.toml" in paths and "/etc/showdown/venue-ca.pem" in paths
    # The desk is a client of the central service (issue 33): no key, no broker account.
    assert not any("desk.key" in s.path or "mqtt-desk" in s.path for s in steps
                   if hasattr(s, "path"))
    kiosk = [s for s in steps if isinstance(s, File) and "showdown-screen" in s.path]
    if screen is None:
        assert kiosk == []
    else:
        assert "--kiosk" in kiosk[0].content
        assert kiosk[0].content.count(screen) == 1 and "@SCREEN_URL@" not in kiosk[0].content
