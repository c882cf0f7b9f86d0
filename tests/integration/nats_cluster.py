"""A three-node NATS cluster on loopback with its MQTT interface, for the failover tests.

    cluster = NatsCluster(tmp_path / "nats", nodes=3)
    cluster.start()              # every node up, JetStream healthy, MQTT listening
    cluster.mqtt_brokers()       # ["127.0.0.1:P1", "127.0.0.1:P2", "127.0.0.1:P3"]
    cluster.kill(0)              # SIGKILL, as a power cut would
    cluster.restart(0)
    cluster.stop()

Each node has a server_name, JetStream (its store in the test's folder), a cluster block with
routes to the others and an ``mqtt`` block; the MQTT streams and consumers are replicated on
every node (``stream_replicas``/``consumer_replicas`` = nodes), so the sessions, retained
messages and queued QoS 1 messages survive the loss of one node. Every port is a free port of
127.0.0.1 (never the machine's own NATS on 4222). The nats-server binary is /usr/sbin/
nats-server or $SHOWDOWN_TEST_NATS_SERVER.

``NatsCluster(root, config=writer)`` writes each node's file with ``writer(node, nodes)``
instead (e.g. the venue's generated config, tests/integration/test_nats_permissions.py): it
must use the node's ports, its ``http`` port for monitoring and ``root/<name>`` as its store.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.daemon_support import free_port

__all__ = ["NATS_SERVER", "ConfigWriter", "NatsCluster", "NatsNode"]

NATS_SERVER = os.environ.get("SHOWDOWN_TEST_NATS_SERVER", "/usr/sbin/nats-server")
START_GUARD_S = 180.0  # against hangs only (a restarted node took over 60 s once at load 20)
_BIND_TRIES = 3  # a fresh cluster's starts when a port it was given is taken meanwhile
_PORT_TAKEN = "address already in use"


@dataclass(slots=True)
class NatsNode:
    """One node: its name, ports, config file and process (None while down)."""

    name: str
    client: int
    route: int
    http: int
    mqtt: int
    config: Path
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def mqtt_address(self) -> str:
        """host:port of its MQTT listener."""
        return f"127.0.0.1:{self.mqtt}"

    def jetstream(self) -> dict[str, Any] | None:
        """Its /jsz view of every stream and consumer (None if it does not answer)."""
        url = (f"http://127.0.0.1:{self.http}/jsz?accounts=true&streams=true"
               "&consumers=true")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as answer:
                return dict(json.loads(answer.read()))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def lagging(self, running: set[str]) -> list[str]:
        """The groups this node leads whose replicas on running nodes are not current yet."""
        view = self.jetstream()
        if view is None:
            return [f"{self.name}: no answer"]
        behind: list[str] = []
        for account in view.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                groups = [(stream["name"], stream.get("cluster") or {})]
                groups += [(f"{stream['name']} > {c['name']}", c.get("cluster") or {})
                           for c in stream.get("consumer_detail") or []]
                for name, cluster in groups:
                    if cluster.get("leader") != self.name:
                        continue
                    behind += [f"{name} on {r['name']}" for r in cluster.get("replicas") or []
                               if r.get("name") in running and not r.get("current")]
        return behind

    def healthy(self) -> bool:
        """True when its monitoring endpoint says the server and JetStream are healthy."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/healthz",
                                        timeout=1.0) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False


ConfigWriter = Callable[["NatsNode", Sequence["NatsNode"]], str]


class NatsCluster:
    """Starts, kills and restarts the nodes of a loopback NATS cluster (see the module)."""

    def __init__(self, root: Path, *, nodes: int = 3, config: ConfigWriter | None = None
                 ) -> None:
        if shutil.which(NATS_SERVER) is None:
            raise FileNotFoundError(f"{NATS_SERVER} is not installed")
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.nodes = [NatsNode(name=f"n{i + 1}", client=0, route=0, http=0, mqtt=0,
                               config=root / f"n{i + 1}.conf", log=root / f"n{i + 1}.log")
                      for i in range(nodes)]
        self._up = False  # once the cluster has been healthy, its ports are its clients'
        self._writer = config
        self._new_ports()

    def _new_ports(self) -> None:
        """Free ports for every node, and the configs naming them (a fresh cluster only)."""
        for node in self.nodes:
            node.client, node.route, node.http, node.mqtt = (free_port() for _ in range(4))
            shutil.rmtree(self.root / node.name, ignore_errors=True)  # its JetStream store
        for node in self.nodes:
            text = (self._config(node) if self._writer is None
                    else self._writer(node, self.nodes))
            node.config.write_text(text)

    def _config(self, node: NatsNode) -> str:
        routes = ", ".join(f"nats-route://127.0.0.1:{other.route}" for other in self.nodes
                           if other is not node)
        store = self.root / node.name
        replicas = len(self.nodes)
        return f"""\
server_name: {node.name}
listen: 127.0.0.1:{node.client}
http: 127.0.0.1:{node.http}
jetstream {{
  store_dir: "{store}"
  max_mem: 64MB
  max_file: 256MB
}}
cluster {{
  name: showdown-test
  listen: 127.0.0.1:{node.route}
  routes: [{routes}]
}}
mqtt {{
  listen: 127.0.0.1:{node.mqtt}
  stream_replicas: {replicas}
  consumer_replicas: {replicas}
}}
"""

    def mqtt_brokers(self, first: int = 0) -> list[str]:
        """Every node's MQTT address, starting with node ``first`` (then the others in turn)."""
        n = len(self.nodes)
        return [self.nodes[(first + i) % n].mqtt_address for i in range(n)]

    def node_of_port(self, port: int) -> int:
        """The index of the node whose MQTT listener is ``port``."""
        return next(i for i, node in enumerate(self.nodes) if node.mqtt == port)

    def start(self) -> None:
        """Start every node that is down and wait until all are healthy. A fresh cluster
        whose node finds one of its ports taken (another test's server bound it between
        `free_port` and the node's own bind) starts again on new ports, twice at most."""
        for attempt in range(1, _BIND_TRIES + 1):
            for node in self.nodes:
                if node.process is None:
                    self._spawn(node)
            try:
                self.wait_healthy()
            except RuntimeError as exc:
                if self._up or attempt == _BIND_TRIES or _PORT_TAKEN not in str(exc):
                    raise
                self.stop()
                self._new_ports()
                continue
            self._up = True
            return

    def _spawn(self, node: NatsNode) -> None:
        with node.log.open("ab") as log:
            node.process = subprocess.Popen([NATS_SERVER, "-c", str(node.config)],
                                            stdout=log, stderr=subprocess.STDOUT)

    def wait_healthy(self) -> None:
        """Wait until every running node (JetStream included) says it is healthy."""
        deadline = time.monotonic() + START_GUARD_S
        while True:
            running = [n for n in self.nodes if n.process is not None]
            for node in running:
                assert node.process is not None
                if node.process.poll() is not None:
                    raise RuntimeError(f"nats node {node.name} exited: "
                                       f"{node.log.read_text()[-2000:]}")
            if all(n.healthy() for n in running):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the NATS cluster did not become healthy: " + "; ".join(
                    f"{n.name}: {n.log.read_text()[-500:]}" for n in running))
            time.sleep(0.1)

    def kill(self, index: int) -> None:
        """SIGKILL one node (no goodbye to its clients or its peers)."""
        node = self.nodes[index]
        assert node.process is not None, f"{node.name} is not running"
        node.process.send_signal(signal.SIGKILL)
        node.process.wait()
        node.process = None

    def restart(self, index: int) -> None:
        """Start a killed node again (its JetStream store is kept) and wait until it is
        healthy and every replica on it has caught up (only then can another node go)."""
        node = self.nodes[index]
        assert node.process is None, f"{node.name} is running"
        self._spawn(node)
        self.wait_healthy()
        self.wait_current()

    def lagging(self) -> list[str]:
        """The stream and consumer replicas on running nodes that are not current yet."""
        running = {n.name for n in self.nodes if n.process is not None}
        return [b for n in self.nodes if n.process is not None for b in n.lagging(running)]

    def wait_current(self) -> None:
        """Wait until every stream and consumer replica on a running node is current."""
        deadline = time.monotonic() + START_GUARD_S
        while True:
            behind = self.lagging()
            if not behind:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"replicas never caught up: {behind[:10]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL if one does not go)."""
        for node in self.nodes:
            if node.process is None:
                continue
            node.process.terminate()
            try:
                node.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
            node.process = None
