"""Issue 34 point 3: the page and desk address follow the active central instance. The HAProxy
configuration of docs/operations/standby-central.md, as written there with only its addresses
made loopback ports, runs in front of two real central instances serving HTTPS (one SQLite
file, the real Mosquitto broker): requests through HAProxy reach the active instance; after
its SIGKILL they reach the one that took over (the time is printed, not asserted)."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests import services
from tests.fixtures.services import require_service
from tests.integration.central_pair import CentralPair, http
from tests.integration.cluster_support import GUARD_S, tournament_now
from tests.integration.daemon_support import REPO, free_port
from wire.signing import Signer

pytestmark = [pytest.mark.slow, pytest.mark.soak, pytest.mark.mosquitto]

DOC = REPO / "docs" / "operations" / "standby-central.md"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def documented_config(front: int, first: int, second: int) -> str:
    """The doc's haproxy.cfg with its three addresses made loopback ports."""
    found = re.search(r"```haproxy\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found is not None, f"{DOC} has no haproxy block"
    text = found[1]
    for address, port in (("10.0.0.10:8443", front), ("10.0.0.21:8443", first),
                          ("10.0.0.22:8443", second)):
        assert address in text, address
        text = text.replace(address, f"127.0.0.1:{port}")
    return text


def test_haproxy_as_documented_follows_the_active_instance(tmp_path: Path) -> None:
    require_service("HAProxy", Path(HAPROXY).exists(), HAPROXY)
    require_service("Mosquitto", services.mosquitto_up(), "{}:{}".format(*services.MOSQUITTO))
    pair = CentralPair.configure(
        tmp_path / "central", venue=f"haproxy-{secrets.token_hex(3)}",
        database=f"sqlite:///{tmp_path / 'leaderboard.sqlite3'}",
        broker="{}:{}".format(*services.MOSQUITTO), tables={"t1": Signer.generate("t1")},
        tournament=tournament_now(tmp_path), tls=True)
    front = free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(documented_config(front, pair.ports["a"], pair.ports["b"]))
    check = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    base = f"https://127.0.0.1:{front}"

    def through(path: str) -> tuple[int, dict[str, object]]:
        return http(base, path, ca=pair.ca, timeout=2.0)

    def wait_for(instance: str) -> float:
        started = time.monotonic()
        while True:
            status, body = through("/healthz")
            if status == 200 and str(body.get("instance", "")).startswith(f"{instance}/"):
                return time.monotonic() - started
            assert time.monotonic() - started < GUARD_S, f"HAProxy never reached {instance}"
            time.sleep(0.05)

    with (tmp_path / "haproxy.log").open("wb") as log:
        proxy = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=log,
                                 stderr=subprocess.STDOUT)
    try:
        pair.start()
        wait_for("a")
        assert through("/api/standings")[0] == 200
        assert through("/api/desk/session")[0] == 401  # the desk API, not signed in
        assert pair.get("b", "/healthz")[0] == 503  # the standby, reached directly

        started = time.monotonic()
        failover = pair.kill_active()
        wait_for("b")
        followed = time.monotonic() - started
        assert through("/api/standings")[0] == 200
        assert through("/api/desk/session")[0] == 401
        print(f"\nHAProxy as documented: {failover.text()}; through HAProxy"
              f" {followed:.1f} s after the loss")
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
        codes = pair.stop()
    assert codes["b"] == 0
