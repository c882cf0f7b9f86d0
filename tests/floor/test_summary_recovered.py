"""The floor's closing summary totals what the tables' drivers healed by themselves from the
`device_recovered` notices the central database stored (issue 32 point 5, D347)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from floor.summary import _recovered
from leaderboard.models import Message
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import migrated


def _alert(seq: int, kind: str, evidence: object = None) -> Message:
    body = {"kind": kind, "message": "SIM-1: ...", "source": "device",
            **({"evidence": evidence} if evidence is not None else {})}
    return Message(table_id="t01", seq=seq, type="alert", ts="2026-07-03T10:00:00Z",
                   body=body, received_at=datetime(2026, 7, 3, 10, tzinfo=UTC))


def test_the_recovered_counts_of_every_notice_are_totalled(database_url: Database) -> None:
    with migrated(database_url) as engine, Session(engine) as session:
        session.add_all([
            _alert(1, "device_recovered", {"counts": {"bad_frames": 3, "retransmits": 4}}),
            _alert(2, "device_recovered", {"counts": {"retransmits": 1, "reconnects": 1}}),
            _alert(3, "device_stalled"),  # a fault, not a notice
            _alert(4, "unknown_chip", {"counts": {"bad_frames": 99}}),  # not a notice
        ])
        session.commit()
        assert dict(_recovered(session)) == {"bad_frames": 3, "retransmits": 5,
                                             "reconnects": 1}
