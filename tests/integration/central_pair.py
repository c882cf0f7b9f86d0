"""Two real central instances (`showdown leaderboard serve`) on one database, active and
standby by the central lease (issue 34 point 3; docs/operations/standby-central.md), with the
means to lose the active one and time the standby taking over. Used by
tests/integration/test_standby_central.py and meant for bench/recovery.py's "central instance
lost" row:

    pair = CentralPair.configure(tmp_path / "central", venue=venue, database=url,
                                 broker="127.0.0.1:1883", tables={"t1": signer},
                                 tournament=tournament_now(tmp_path))
    pair.start()                        # "a" active (ready), then "b" standby
    failover = pair.kill_active()       # SIGKILL the active one, time the survivor serving
    print(failover.text())              # ingest, page, desk API: seconds after the kill
    ...
    pair.stop()

`kill_active` returns when the survivor serves all three - /healthz 200 with the broker
subscribed (the ingest, resuming the persistent session), /api/standings 200 (the page's
data) and the desk API answering (anything but 503 to a sign-in) - or raises after
GUARD_S. `restart` starts a killed instance again (as a standby). The processes write JSON
logs beside their configs; each instance has its own HTTP port (`port`).
"""

from __future__ import annotations

import json
import signal
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy import certs
from tests.integration.cluster_support import GUARD_S, Service, ServiceLog, wait_until
from tests.integration.daemon_support import free_port
from wire.signing import Signer, save_private_key

__all__ = ["CentralPair", "Failover", "http"]

NAMES = ("a", "b")


def http(base: str, path: str, *, method: str = "GET", body: dict[str, Any] | None = None,
         timeout: float = 5.0, ca: Path | None = None) -> tuple[int, dict[str, Any]]:
    """One request to ``base`` ("https://127.0.0.1:PORT", checked against ``ca``): status
    and JSON body (or {}); status 0 when nothing answers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback, http(s) only
        f"{base}{path}", data=data, method=method,
        headers={"Content-Type": "application/json"} if data else {})
    context = ssl.create_default_context(cafile=str(ca)) if ca is not None else None
    try:
        with urllib.request.urlopen(request, timeout=timeout,  # noqa: S310
                                    context=context) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, TimeoutError):
        return 0, {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = {}
    return status, parsed if isinstance(parsed, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Failover:
    """Seconds from the active instance's loss to the survivor serving each part."""

    lost: str
    survivor: str
    ingest_s: float  # /healthz 200 and subscribed
    page_s: float  # /api/standings 200
    desk_s: float  # the desk API answers (not 503)

    @property
    def serving_s(self) -> float:
        """When all three were served."""
        return max(self.ingest_s, self.page_s, self.desk_s)

    def text(self) -> str:
        """One line for the test's output and the bench."""
        return (f"central instance {self.lost} lost -> {self.survivor} serves ingest"
                f" {self.ingest_s:.1f} s, page {self.page_s:.1f} s, desk API"
                f" {self.desk_s:.1f} s after the loss")


@dataclass
class CentralPair:
    """Instances "a" and "b": one config each, same database, key, venue and broker."""

    directory: Path
    services: dict[str, Service]
    ports: dict[str, int]
    database: str
    configs: dict[str, Path] = field(default_factory=dict)
    ca: Path | None = None  # the venue CA of the instances' certificate (HTTPS), else HTTP

    def base(self, name: str) -> str:
        """The instance's address, as a URL without a path."""
        scheme = "http" if self.ca is None else "https"
        return f"{scheme}://127.0.0.1:{self.ports[name]}"

    def get(self, name: str, path: str, **options: Any) -> tuple[int, dict[str, Any]]:
        """`http` to the instance."""
        return http(self.base(name), path, ca=self.ca, **options)

    @classmethod
    def configure(cls, directory: Path, *, venue: str, database: str, broker: str,
                  tables: dict[str, Signer], tournament: Path, lease_s: float | None = None,
                  tls: bool = False) -> CentralPair:
        """Write both configs (desk API on, JSON logs, `[service] instance` "a" and "b";
        ``[service] lease_s`` when given, else the default; with ``tls`` both serve HTTPS
        with one certificate for 127.0.0.1 from a venue CA made here, ``ca.pem``)."""
        directory.mkdir(parents=True, exist_ok=True)
        https = ""
        if tls:
            certs.make_ca(directory / "ca.key", directory / "ca.pem", name="venue CA", days=2)
            certs.make_server_certificate(
                cert=directory / "central.pem", key=directory / "central.key",
                ca_cert=directory / "ca.pem", ca_key=directory / "ca.key",
                common_name="127.0.0.1", names=("127.0.0.1",), days=2)
            https = 'tls_cert_file = "central.pem"\ntls_key_file = "central.key"\n'
        save_private_key(Signer.generate("leaderboard"), directory / "leaderboard.key")
        enrolled = "".join(f'{t} = "{s.public_key.base64}"\n' for t, s in tables.items())
        services: dict[str, Service] = {}
        ports: dict[str, int] = {}
        configs: dict[str, Path] = {}
        lease = "" if lease_s is None else f"lease_s = {lease_s}\n"
        for name in NAMES:
            ports[name] = free_port()
            path = directory / f"leaderboard-{name}.toml"
            path.write_text(
                f'[service]\nvenue = "{venue}"\ndatabase = "{database}"\n'
                f'tournament = "{tournament}"\ninstance = "{name}"\n{lease}'
                f'[mqtt]\nbrokers = ["{broker}"]\n'
                f'[keys]\nsigning_key = "leaderboard.key"\n[keys.tables]\n{enrolled}'
                f'[http]\nport = {ports[name]}\ndesk_api = true\n{https}'
                '[log]\nformat = "json"\nlevel = "info"\n')
            configs[name] = path
            services[name] = Service(["leaderboard", "serve", "--config", str(path)],
                                     ServiceLog(directory / f"central-{name}.log"))
        return cls(directory=directory, services=services, ports=ports, database=database,
                   configs=configs, ca=directory / "ca.pem" if tls else None)

    def role(self, name: str) -> str:
        """"active", "standby" or "down", as the instance's /healthz says."""
        status, body = self.get(name, "/healthz", timeout=2.0)
        if status == 0:
            return "down"
        return "standby" if body.get("status") == "standby" else "active"

    def active(self) -> str | None:
        """The instance whose /healthz is not standby (None: none answers as active)."""
        found = [n for n in NAMES if self.services[n].alive() and self.role(n) == "active"]
        return found[0] if len(found) == 1 else None

    def start(self) -> None:
        """Start "a", wait until it is active and ready, then "b" until it says standby."""
        a, b = self.services["a"], self.services["b"]
        a.start()
        wait_until("central a ready", lambda: a.log.last("ready") is not None, a)
        b.start()
        wait_until("central b standby", lambda: self.role("b") == "standby", b)

    def restart(self, name: str) -> None:
        """Start an instance that was stopped or killed again; wait until it answers."""
        service = self.services[name]
        service.start()
        wait_until(f"central {name} answering", lambda: self.role(name) != "down", service)

    def kill_active(self) -> Failover:
        """SIGKILL the active instance and time the other serving (see the docstring)."""
        lost = self.active()
        if lost is None:
            raise AssertionError("no single active central instance to kill")
        survivor = next(n for n in NAMES if n != lost)
        process = self.services[lost].process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        started = time.monotonic()
        process.wait()
        return self.time_takeover(lost, survivor, started)

    def time_takeover(self, lost: str, survivor: str, started: float) -> Failover:
        """Seconds (from ``started``, time.monotonic()) until ``survivor`` serves ingest,
        the page and the desk API."""
        seen: dict[str, float] = {}
        deadline = started + GUARD_S
        while len(seen) < 3:
            if time.monotonic() > deadline:
                raise AssertionError(f"central {survivor} never served after losing {lost}:"
                                     f" {seen}")
            if not self.services[survivor].alive():
                tail = self.services[survivor].log.path.read_text(errors="replace")[-3000:]
                raise AssertionError(f"central {survivor} exited: {tail}")
            now = time.monotonic() - started
            if "ingest" not in seen:
                status, body = self.get(survivor, "/healthz", timeout=1.0)
                if status == 200 and body.get("subscribed"):
                    seen["ingest"] = now
            if "page" not in seen and self.get(survivor, "/api/standings",
                                               timeout=1.0)[0] == 200:
                seen["page"] = now
            if "desk" not in seen and self.get(survivor, "/api/desk/session",
                                               timeout=1.0)[0] not in (0, 503):
                seen["desk"] = now
            time.sleep(0.05)
        return Failover(lost=lost, survivor=survivor, ingest_s=seen["ingest"],
                        page_s=seen["page"], desk_s=seen["desk"])

    def stop(self) -> dict[str, int | None]:
        """SIGTERM both (each waited for); their exit codes."""
        return {name: service.stop() for name, service in self.services.items()}
