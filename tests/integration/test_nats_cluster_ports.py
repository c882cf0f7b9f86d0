"""The NATS test cluster (tests/integration/nats_cluster.py) starts even when one of the free
ports it was given is taken before its node binds it (another test's server did, once, in a
CI run): a fresh cluster starts again on new ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.integration.nats_cluster import NATS_SERVER, NatsCluster

pytestmark = pytest.mark.skipif(not Path(NATS_SERVER).exists(),
                                reason=f"{NATS_SERVER} is not installed")


def test_a_port_taken_before_the_first_start_gives_new_ports(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path / "nats", nodes=3)
    taken = cluster.nodes[2].mqtt
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        try:
            cluster.start()
            assert taken not in {n.mqtt for n in cluster.nodes}
            assert all(n.healthy() for n in cluster.nodes)
            assert "address already in use" in cluster.nodes[2].log.read_text()
        finally:
            cluster.stop()
