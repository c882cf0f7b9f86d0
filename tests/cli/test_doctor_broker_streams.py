"""`showdown doctor --broker-monitor`: the MQTT streams' replica count from NATS's /jsz
(fast: the answers are canned here; the real cluster's: tests/integration/
test_nats_permissions.py, `mqtt_streams_are_on_every_node`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.doctor.broker_streams import MQTT_STREAMS, mqtt_stream_findings
from cli.main import main


def jsz(replicas: dict[str, int], cluster_size: int = 3) -> dict[str, Any]:
    """A /jsz?accounts=true&streams=true&config=true answer of nats-server 2.9."""
    return {"meta_cluster": {"name": "showdown-v", "cluster_size": cluster_size},
            "account_details": [{"name": "$G", "stream_detail": [
                {"name": name, "config": {"name": name, "num_replicas": count},
                 "cluster": {"leader": "n1", "replicas": [{"name": f"n{i + 2}"}
                                                          for i in range(count - 1)]}}
                for name, count in replicas.items()]}]}


def canned(*answers: dict[str, Any] | Exception) -> Any:
    queue = list(answers)

    def fetch(url: str) -> dict[str, Any]:
        assert url.endswith("/jsz?accounts=true&streams=true&config=true")
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    return fetch


def test_streams_on_every_node_are_ok() -> None:
    answer = jsz(dict.fromkeys(MQTT_STREAMS, 3))
    findings = mqtt_stream_findings(["http://n1:8222/"], canned(answer))
    assert [(f.status, f.found) for f in findings] == [
        ("ok", f"{name}: 3 replicas on a cluster of 3") for name in MQTT_STREAMS]


def test_a_stream_with_one_replica_is_named_with_its_count() -> None:
    answer = jsz({"$MQTT_sess": 1, "$MQTT_msgs": 3, "$MQTT_rmsgs": 3})
    findings = mqtt_stream_findings(["http://n1:8222"], canned(answer))
    bad = [f for f in findings if f.status != "ok"]
    assert len(bad) == 1
    assert bad[0].status == "warn"
    assert "$MQTT_sess has 1 replica on a cluster of 3" in bad[0].found
    assert "stream_replicas: 3" in bad[0].fix and "--replicas 3" in bad[0].fix


def test_the_views_of_several_nodes_are_joined() -> None:
    """A one-replica stream is listed only by its own node: the other nodes' answers lack it."""
    findings = mqtt_stream_findings(
        ["http://n1:8222", "http://n2:8222", "http://n3:8222"],
        canned(jsz({"$MQTT_sess": 3, "$MQTT_msgs": 3}), OSError("connection refused"),
               jsz({"$MQTT_sess": 3, "$MQTT_rmsgs": 1})))
    summary = [(f.status, f.found.split(":")[0].split(" ")[0]) for f in findings]
    assert summary == [("warn", "http"), ("ok", "$MQTT_sess"), ("ok", "$MQTT_msgs"),
                       ("warn", "$MQTT_rmsgs")]
    assert "connection refused" in findings[0].found


def test_streams_not_made_yet_and_a_single_node() -> None:
    findings = mqtt_stream_findings(["http://n1:8222"], canned(jsz({}, cluster_size=1)))
    assert {f.status for f in findings} == {"warn"}
    assert all("no MQTT client has connected yet" in f.found for f in findings)
    one = mqtt_stream_findings(["http://n1:8222"],
                               canned(jsz(dict.fromkeys(MQTT_STREAMS, 1), cluster_size=1)))
    assert {f.status for f in one} == {"ok"}


def test_no_monitor_answering_fails() -> None:
    findings = mqtt_stream_findings(["http://n1:8222"], canned(ValueError("not JSON")))
    assert [f.status for f in findings] == ["warn", "fail"]


def test_the_option_adds_the_findings(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    code = main(["doctor", "--config", str(tmp_path / "missing.toml"),
                 "--broker-monitor", "http://127.0.0.1:9"])  # the discard port: refused
    out = capsys.readouterr().out
    assert code == 1
    assert "mqtt streams" in out and "no NATS monitoring endpoint answered" in out
