"""The running service signs the audit chain's head at start and at shutdown with its own key
(`showdown leaderboard serve`, on SQLite with the embedded broker), so after a desk sign-in
over HTTP and a clean stop the whole chain is signed and verifies; and the ``[audit]``
settings are checked, a bad value naming its key."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from game.errors import ConfigError
from leaderboard.audit import verify_trail
from leaderboard.audit_trail.settings import AuditSettings, parse_audit_settings
from leaderboard.db import make_engine
from leaderboard.desk.auth import init_first_manager
from leaderboard.models import AuditEntry, AuditHead
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import desk_sign_in, finish, shifted_clock, start

PHRASE = "the manager's long phrase"


def first_manager(engine: Engine) -> None:
    with Session(engine) as s:
        init_first_manager(s, shifted_clock(), staff_id="M1", name="Mpho Manager",
                           passphrase_text=PHRASE)


async def test_the_service_signs_the_head_at_start_and_at_shutdown(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str) -> None:
    run = await start(tmp_path, mqtt_broker, unique_topic, seed=first_manager)
    engine = make_engine(run.service.config.database)
    try:
        with Session(engine) as s:
            at_start = s.scalars(select(AuditHead)).all()
            # Row 1 the first manager's enrolment; row 2 the instance taking the lease (D420).
            assert [h.row_id for h in at_start] == [2]
            assert [r.action for r in s.scalars(select(AuditEntry).order_by(AuditEntry.id))
                    ] == ["staff.enrolled", "central.lease_taken"]
        await desk_sign_in(run.port, "M1", PHRASE)
        assert await finish(run) == 0
        with Session(engine) as s:
            tip = s.scalars(select(AuditEntry).order_by(AuditEntry.id.desc()).limit(1)).one()
            assert tip.action == "desk.signed_in"
            heads = s.scalars(select(AuditHead).order_by(AuditHead.id)).all()
            assert [(h.row_id, h.row_hash) for h in heads][-1] == (tip.id, tip.row_hash)
        report = verify_trail(engine, run.leaderboard_key.public_key)
        assert report.intact and report.findings == []
        assert report.last_signed_row == tip.id
    finally:
        engine.dispose()


def test_the_audit_settings_and_their_errors() -> None:
    assert parse_audit_settings({}, source="lb.toml") == AuditSettings(head_every_rows=100,
                                                                       head_every_s=300)
    assert parse_audit_settings({"head_every_rows": 10, "head_every_s": 60},
                                source="lb.toml") == AuditSettings(head_every_rows=10,
                                                                   head_every_s=60)
    for table, key, reason in (
            ({"head_every_rows": 0}, "audit.head_every_rows", "must be a whole number 1..100000"),
            ({"head_every_s": "5m"}, "audit.head_every_s", "must be a whole number 10..86400"),
            ({"head_every": 5}, "audit.head_every", "unknown key")):
        with pytest.raises(ConfigError) as bad:
            parse_audit_settings(table, source="lb.toml")
        assert (bad.value.source, bad.value.key) == ("lb.toml", key)
        assert reason in str(bad.value)
