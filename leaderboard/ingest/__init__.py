"""Ingest: every table's signed messages, verified, stored once, projected (docs/ingest.md).

    ingestor = Ingestor(engine, venue="casino-1", resend=MqttResender(settings, key,
                        venue="casino-1"), on_change=page.changed)
    await ingestor.run(settings, shared_group="leaderboard", stop=stop)   # MQTT
    await ingestor.handle(topic, payload)                                 # or one message

The package, by job: ``receiving`` (the subscription and receive loop, IngestLink),
``screening`` (topic, envelope, sender, against the enrolled keys), ``verifying`` (the
worker-process pool), ``storing`` (messages, rejections and projections in one
transaction), ``gaps`` (each table's progress, resend requests, MqttResender), ``results``
(outcomes, reasons, counters) and ``ingestor`` (the Ingestor that ties them together).
"""

from __future__ import annotations

from leaderboard.ingest.gaps import MqttResender
from leaderboard.ingest.ingestor import Ingestor, OnChange, Resend
from leaderboard.ingest.receiving import Alongside, IngestLink, subscription_filters
from leaderboard.ingest.results import (
    INGEST_REASONS,
    INGEST_SUFFIXES,
    NOTICE_TYPES,
    OUT_OF_WINDOW,
    REPLAYED_SEQ,
    STORE_ERROR,
    TABLE_INACTIVE,
    WRONG_TOPIC,
    WRONG_VENUE,
    IngestCounters,
    IngestResult,
)
from leaderboard.ingest.verifying import verify_chunk
from wire.mqtt import SubscriptionRefused, stopped_within

__all__ = [
    "INGEST_REASONS",
    "INGEST_SUFFIXES",
    "NOTICE_TYPES",
    "OUT_OF_WINDOW",
    "REPLAYED_SEQ",
    "STORE_ERROR",
    "TABLE_INACTIVE",
    "WRONG_TOPIC",
    "WRONG_VENUE",
    "Alongside",
    "IngestCounters",
    "IngestLink",
    "IngestResult",
    "Ingestor",
    "MqttResender",
    "OnChange",
    "Resend",
    "SubscriptionRefused",
    "stopped_within",
    "subscription_filters",
    "verify_chunk",
]
