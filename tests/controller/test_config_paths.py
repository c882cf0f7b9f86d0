"""Every path of the table config is relative to the config file, never to the working
directory (docs/table-config.md; issue 31: `[shoe] url = "shoe"` was read against the working
directory): the files, the keys, the socket, the journal, the [mqtt] files (and those the
credentials file names, relative to it), the console's signatures, and every device driver's
device path. Each test reads the file from another working directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from cli.devices.kit import section_of, settings_of
from controller.config import read_table_config
from drivers.registry import find_adapter


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config's folder; the working directory is another one, HOME a third."""
    for name in ("etc", "cwd", "home"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "etc"


def table(**sections: dict[str, Any]) -> dict[str, Any]:
    """A manual table's config with these sections replaced or added."""
    data: dict[str, Any] = {
        "table": {"venue": "v", "id": "t1", "journal": "state/journal.sqlite"},
        "keys": {"table_key": "keys/table.key"}, "api": {"socket": "run/console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}}
    data.update(sections)
    return data


def write(etc: Path, data: dict[str, Any]) -> Path:
    path = etc / "table.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def test_every_file_key_is_relative_to_the_config(etc: Path) -> None:
    (etc / "mqtt.pw").write_text("hunter2\n")
    config = read_table_config(write(etc, table(
        files={"tournament": "settings/tournament.toml", "paytables": "../shared/paytables.toml",
               "chips": "chips.csv"},
        mqtt={"broker": "mqtt1:8883", "username": "t1", "password_file": "mqtt.pw",
              "tls": True, "ca_file": "tls/venue-ca.pem", "cert_file": "tls/t1.pem",
              "key_file": "tls/t1.key"},
        console={"signatures": "signatures"})))
    assert config.journal == etc / "state/journal.sqlite"
    assert config.table_key == etc / "keys/table.key"
    assert config.api.socket == etc / "run/console.sock"
    assert config.tournament == etc / "settings/tournament.toml"
    assert config.paytables == etc / "../shared/paytables.toml"
    assert config.chips == etc / "chips.csv"
    assert config.mqtt.password == "hunter2"  # noqa: S105 (read from etc/, not the cwd)
    assert (config.mqtt.ca_file, config.mqtt.cert_file, config.mqtt.key_file) == (
        etc / "tls/venue-ca.pem", etc / "tls/t1.pem", etc / "tls/t1.key")
    assert config.console.signatures == etc / "signatures"


def test_the_credentials_file_is_relative_to_the_config_and_its_files_to_it(etc: Path) -> None:
    (etc / "credentials").mkdir()
    (etc / "credentials/t1.toml").write_text(
        '[mqtt]\nhost = "mqtt1"\nport = 8883\nusername = "t1"\npassword = "s"\ntls = true\n'
        'ca_file = "venue-ca.pem"\ncert_file = "../tls/t1.pem"\nkey_file = "/etc/tls/t1.key"\n')
    config = read_table_config(write(etc, table(
        mqtt={"credentials_file": "credentials/t1.toml"})))
    assert (config.mqtt.ca_file, config.mqtt.cert_file, config.mqtt.key_file) == (
        etc / "credentials/venue-ca.pem", etc / "credentials/../tls/t1.pem",
        Path("/etc/tls/t1.key"))


def test_absolute_paths_stay_and_tilde_is_the_home_directory(etc: Path) -> None:
    config = read_table_config(write(etc, table(
        table={"venue": "v", "id": "t1", "journal": "/var/lib/showdown/journal.sqlite"},
        keys={"table_key": "~/keys/table.key"})))
    assert config.journal == Path("/var/lib/showdown/journal.sqlite")
    assert config.table_key == etc.parent / "home/keys/table.key"


def test_a_config_named_by_a_relative_path_resolves_against_its_own_folder(
        etc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(etc, table())
    monkeypatch.chdir(etc.parent)
    config = read_table_config(Path("etc/table.toml"))
    assert config.journal == etc / "state/journal.sqlite" and config.journal.is_absolute()


# Every device driver's path key (adapters/*, and the example vendor's), read through the
# table config; sr48 and pcsc name their device by USB ids or a reader name, no path.
DEVICES: list[tuple[str, dict[str, Any], Callable[[Any], Any], str]] = [
    ("shoe", {"driver": "showdown-shoe", "url": "shoe"}, lambda s: s.url, "shoe"),
    ("shoe", {"driver": "text-line", "url": "dev/shoe"}, lambda s: s.url, "dev/shoe"),
    ("id_reader", {"driver": "serial-lines", "port": "id-reader"}, lambda s: s.port,
     "id-reader"),
    ("id_reader", {"driver": "hid-wedge", "device": "by-id/wedge-event-kbd"},
     lambda s: s.device, "by-id/wedge-event-kbd"),
    ("rfid", {"driver": "metratec-quasarmx",
              "readers": [{"url": "quasar-1", "antennas": {"1": "1/ante"}},
                          {"host": "10.0.7.21", "antennas": {"1": "1/odds"}}]},
     lambda s: s.readers[0].url, "quasar-1"),
]


@pytest.mark.parametrize(("role", "section", "get", "relative"), DEVICES,
                         ids=[d[1]["driver"] for d in DEVICES])
def test_each_drivers_device_path_is_relative_to_the_config(
        etc: Path, role: str, section: dict[str, Any], get: Callable[[Any], Any],
        relative: str) -> None:
    extra = {"files": {"chips": "chips.csv"}} if role == "rfid" else {}
    config = read_table_config(write(etc, table(
        **{role: {"kind": "hardware", **section}}, **extra)))
    device = getattr(config, role)
    assert get(device.settings) == str(etc / relative)
    # an absolute device path and a pyserial URL are kept as written; ~ is the home directory
    for given, expected in (("/dev/showdown/x", "/dev/showdown/x"),
                            ("socket://127.0.0.1:7000", "socket://127.0.0.1:7000"),
                            ("~/x", str(etc.parent / "home/x"))):
        written = _with_path(section, given)
        config = read_table_config(write(etc, table(
            **{role: {"kind": "hardware", **written}}, **extra)))
        assert get(getattr(config, role).settings) == expected


def test_the_kits_reading_of_a_table_config_is_relative_to_it_too(etc: Path) -> None:
    # `showdown devices check --config FILE` reads the device's section by itself.
    path = write(etc, table(shoe={"kind": "hardware", "driver": "showdown-shoe", "url": "shoe"}))
    adapter = find_adapter("shoe", "showdown-shoe")
    assert path == etc / "table.toml"
    keys, place = section_of(Path("../etc/table.toml"), "shoe",
                             "showdown-shoe", "hardware")
    assert settings_of(adapter, keys, place).url == str(etc / "shoe")


def test_usb_ids_and_reader_names_are_not_paths(etc: Path) -> None:
    config = read_table_config(write(etc, table(
        rfid={"kind": "hardware", "driver": "sr48", "serial": "SR48-0001"},
        files={"chips": "chips.csv"},
        id_reader={"kind": "hardware", "driver": "pcsc", "reader": "ACS ACR122U"})))
    assert config.rfid.settings.usb.serial == "SR48-0001"
    assert config.id_reader.settings.reader == "ACS ACR122U"


def _with_path(section: dict[str, Any], value: str) -> dict[str, Any]:
    if "readers" in section:
        return {**section, "readers": [{**section["readers"][0], "url": value},
                                       *section["readers"][1:]]}
    key = next(k for k in ("url", "port", "device") if k in section)
    return {**section, key: value}
