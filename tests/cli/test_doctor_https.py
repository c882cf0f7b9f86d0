"""HTTPS for the desk: the central service's [http] TLS keys, its refusal to serve the desk
API beyond the loopback without them, and the desk's client trusting only the venue CA,
against the real leaderboard service serving TLS on 127.0.0.1 with a CA made for the test."""

from __future__ import annotations

import asyncio
import dataclasses
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cli.doctor.desk import check_desk
from cli.doctor.table import FAIL, OK, Probes, may_open
from deploy import certs
from game.errors import ConfigError
from leaderboard.config import read_leaderboard_config
from leaderboard.desk.config import DeskConfig, read_desk_config
from leaderboard.desk_api.client import OPENAPI_PATH, get_json
from runtime.errors import Unavailable
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import Running, finish, start
from tests.leaderboard.test_config import MINIMAL, refusal, write


@dataclasses.dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    certs.make_ca(d / "ca.key", d / "ca.pem", name="venue CA", days=2)
    certs.make_ca(d / "other.key", d / "other.pem", name="some other CA", days=2)
    certs.make_server_certificate(cert=d / "desk-api.pem", key=d / "desk-api.key",
                                  ca_cert=d / "ca.pem", ca_key=d / "ca.key",
                                  common_name="127.0.0.1", names=("127.0.0.1", "localhost"),
                                  days=2)
    return Pki(d / "ca.pem", d / "other.pem", d / "desk-api.pem", d / "desk-api.key")


# ---- the service's [http] -----------------------------------------------------------------


def test_the_desk_api_beyond_the_loopback_needs_tls(tmp_path: Path) -> None:
    error = refusal(tmp_path, MINIMAL + '[http]\nhost = "10.20.0.5"\ndesk_api = true\n')
    assert error.key == "http.host"
    assert "needs HTTPS" in error.reason and "tls_cert_file" in error.reason


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_the_desk_api_on_the_loopback_may_be_plain(tmp_path: Path, host: str) -> None:
    config = read_leaderboard_config(write(tmp_path, MINIMAL + f'[http]\nhost = "{host}"\n'
                                           "desk_api = true\n"))
    assert not config.http.uses_tls and config.http.url.startswith("http://")


def test_the_page_alone_may_be_served_on_the_lan_in_plain(tmp_path: Path) -> None:
    config = read_leaderboard_config(write(tmp_path, MINIMAL + '[http]\nhost = "0.0.0.0"\n'))
    assert config.http.host == "0.0.0.0" and not config.http.desk_api  # noqa: S104


def test_tls_keys_are_checked(tmp_path: Path, pki: Pki) -> None:
    only_cert = refusal(tmp_path, MINIMAL + f'[http]\ntls_cert_file = "{pki.cert}"\n')
    assert only_cert.key == "http.tls_key_file"
    missing = refusal(tmp_path, MINIMAL + '[http]\ntls_cert_file = "nope.pem"\n'
                      'tls_key_file = "nope.key"\n')
    assert missing.key == "http.tls_cert_file" and "no such file" in missing.reason
    mismatched = refusal(tmp_path, MINIMAL + f'[http]\ntls_cert_file = "{pki.cert}"\n'
                         f'tls_key_file = "{pki.ca.with_name("other.key")}"\n')
    assert mismatched.key == "http.tls_cert_file" and "cannot load" in mismatched.reason
    config = read_leaderboard_config(write(tmp_path, MINIMAL + '[http]\nhost = "10.20.0.5"\n'
                                           f'desk_api = true\ntls_cert_file = "{pki.cert}"\n'
                                           f'tls_key_file = "{pki.key}"\n'))
    assert config.http.uses_tls and config.http.url == "https://10.20.0.5:8080/"


# ---- the desk's side ----------------------------------------------------------------------


def _desk(tmp_path: Path, url: str, ca: Path | None) -> Path:
    path = tmp_path / "desk.toml"
    ca_line = f'api_ca_file = "{ca}"\n' if ca else ""
    path.write_text(f'[desk]\napi_url = "{url}"\n{ca_line}')
    return path


def test_the_desk_refuses_a_plain_url_to_another_machine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        read_desk_config(_desk(tmp_path, "http://10.20.0.5:8080/", None))
    assert caught.value.key == "desk.api_url" and "clear text" in caught.value.reason
    ok = read_desk_config(_desk(tmp_path, "http://127.0.0.1:8080", None))
    assert ok.api_url == "http://127.0.0.1:8080/"


@pytest.fixture
async def tls_service(tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str,
                      pki: Pki) -> AsyncIterator[Running]:
    run = await start(tmp_path, mqtt_broker, unique_topic,
                      http_extra=f'tls_cert_file = "{pki.cert}"\ntls_key_file = "{pki.key}"')
    try:
        yield run
    finally:
        assert await finish(run) == 0


async def test_the_desk_reaches_the_service_over_https_with_the_venue_ca(
        tmp_path: Path, tls_service: Running, pki: Pki) -> None:
    url = f"https://127.0.0.1:{tls_service.port}/"
    desk = read_desk_config(_desk(tmp_path, url, pki.ca))
    document = await asyncio.to_thread(get_json, desk, OPENAPI_PATH)
    assert document["openapi"].startswith("3.")
    assert document["paths"]


async def test_the_desk_refuses_a_certificate_from_another_ca(
        tmp_path: Path, tls_service: Running, pki: Pki) -> None:
    url = f"https://127.0.0.1:{tls_service.port}/"
    desk: DeskConfig = dataclasses.replace(read_desk_config(_desk(tmp_path, url, pki.ca)),
                                           api_ca_file=pki.other_ca)
    with pytest.raises(Unavailable) as caught:
        await asyncio.to_thread(get_json, desk, OPENAPI_PATH)
    assert caught.value.key == "desk.api_url"
    assert "not trusted" in caught.value.reason and "venue CA" in caught.value.reason


async def test_the_service_does_not_answer_in_clear_text(tls_service: Running) -> None:
    url = f"http://127.0.0.1:{tls_service.port}/{OPENAPI_PATH}"

    def plain() -> None:
        with urllib.request.urlopen(url, timeout=5):
            pass

    with pytest.raises(OSError) as caught:  # noqa: PT011 (what the socket reports varies)
        await asyncio.to_thread(plain)
    assert not isinstance(caught.value, urllib.error.HTTPError)  # no HTTP answer at all


def _desk_toml(tmp_path: Path, run: Running, ca: Path) -> Path:
    path = tmp_path / "desk.toml"
    path.write_text(f"""
[desk]
api_url = "https://127.0.0.1:{run.port}/"
api_ca_file = "{ca}"
terminal = "desk-1"
""")
    return path


async def test_doctor_desk_over_https(tmp_path: Path, tls_service: Running, pki: Pki) -> None:
    probes = Probes(clock_synced=lambda: True)
    good = await asyncio.to_thread(check_desk, _desk_toml(tmp_path, tls_service, pki.ca), probes)
    # A workstation holds no database, key or broker account (issue 33): nothing else to check.
    assert [(f.check, f.status) for f in good] == [("config", OK), ("desk api", OK),
                                                   ("clock", OK)]
    assert "answers over HTTPS (venue CA)" in good[1].found
    bad = await asyncio.to_thread(check_desk, _desk_toml(tmp_path, tls_service, pki.other_ca),
                                  probes)
    api = {f.check: f for f in bad}["desk api"]
    assert api.status == FAIL and "not trusted" in api.found and "venue CA" in api.fix
    assert not may_open(bad)
