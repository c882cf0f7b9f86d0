"""`showdown doctor --broker-monitor URL`: are the NATS cluster's MQTT streams on enough nodes?

NATS keeps MQTT sessions, queued QoS 1 messages and retained messages in the JetStream
streams ``$MQTT_sess``, ``$MQTT_msgs`` and ``$MQTT_rmsgs``. Made with one replica (the
default, or a node config without ``stream_replicas``), losing the node that holds one loses
every session or every retained message. Each node's monitoring endpoint (``http`` in its
config, e.g. http://mqtt1:8222) answers ``/jsz``: this check reads every URL given and wants
each stream on min(3, cluster size) nodes. Fewer is a warning, not a failure (D394):
the service runs, and what a lost node took is sent again from the tables' journals.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Final

from cli.doctor.table import FAIL, OK, WARN, Finding

__all__ = ["CHECK", "MQTT_STREAMS", "mqtt_stream_findings"]

CHECK: Final = "mqtt streams"
MQTT_STREAMS: Final = ("$MQTT_sess", "$MQTT_msgs", "$MQTT_rmsgs")
_QUERY: Final = "/jsz?accounts=true&streams=true&config=true"
_TIMEOUT_S: Final = 3.0

Fetch = Callable[[str], dict[str, Any]]


def mqtt_stream_findings(urls: Sequence[str], fetch: Fetch | None = None) -> list[Finding]:
    """One finding per unanswered monitor and per MQTT stream: ok when it has
    min(3, cluster size) replicas."""
    fetch = fetch or _fetch
    findings: list[Finding] = []
    replicas: dict[str, int] = {}
    cluster_size = 1
    answered = 0
    for url in urls:
        try:
            view = fetch(url.rstrip("/") + _QUERY)
        except (OSError, ValueError) as exc:
            findings.append(Finding(CHECK, WARN, f"{url}: no answer from the NATS monitoring"
                                    f" endpoint ({exc})", "start that node, or correct"
                                    " --broker-monitor (the node config's `http` address)"))
            continue
        answered += 1
        meta = view.get("meta_cluster") or {}
        cluster_size = max(cluster_size, int(meta.get("cluster_size") or 1))
        for name, seen in _streams(view):
            replicas[name] = max(replicas.get(name, 0), seen)
    if not answered:
        return [*findings, Finding(CHECK, FAIL, "no NATS monitoring endpoint answered",
                                   "check the nodes and the --broker-monitor URLs")]
    wanted = min(3, cluster_size)
    for name in MQTT_STREAMS:
        count = replicas.get(name)
        if count is None:
            findings.append(Finding(CHECK, WARN, f"{name} not found: no MQTT client has"
                                    " connected yet (the streams are made then)",
                                    "run the check again once a table has connected"))
        elif count < wanted:
            findings.append(Finding(
                CHECK, WARN, f"{name} has {count} replica{'s' if count != 1 else ''} on a"
                f" cluster of {cluster_size}: losing its node loses every MQTT"
                f" {_what(name)}", f"set `stream_replicas: {wanted}` in every node's mqtt"
                " block (`showdown broker config --kind nats` writes it), then raise the"
                f" existing stream: `nats stream edit '{name}' --replicas {wanted}`"
                " (docs/operations/broker-cluster.md)"))
        else:
            findings.append(Finding(CHECK, OK, f"{name}: {count} replicas on a cluster of"
                                    f" {cluster_size}"))
    return findings


def _streams(view: dict[str, Any]) -> list[tuple[str, int]]:
    found = []
    for account in view.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            config = stream.get("config") or {}
            count = config.get("num_replicas")
            if not count:
                peers = (stream.get("cluster") or {}).get("replicas") or []
                count = 1 + len(peers)
            found.append((str(stream.get("name")), int(count)))
    return found


def _what(name: str) -> str:
    return {"$MQTT_sess": "session on it", "$MQTT_msgs": "queued QoS 1 message on it",
            "$MQTT_rmsgs": "retained message on it"}.get(name, "state on it")


def _fetch(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as answer:  # noqa: S310
            return dict(json.loads(answer.read()))
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None
