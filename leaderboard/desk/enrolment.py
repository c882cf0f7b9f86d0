"""Enrolment records: a staff row is valid only if the audit chain holds its enrolment.

`enrol_staff` (leaderboard.desk.staff) writes ``staff.enrolled`` with `enrolment_detail`: the
digest of the row's identity (staff id, name, role, enrolment time) and whether it is the
first manager enrolling themself at install (``bootstrap``). At sign-in,
`enrolment_refusal` looks for that record and refuses a staff row without one (inserted by
hand in the database), with another identity (a role raised by hand), enrolled by the person
themself after the first manager, written outside the service, or whose record is not intact
in the chain; it writes a high-severity alert to the audit trail (docs/audit-trail.md).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.audit_trail.chain import GENESIS, audit_row, canonical_at, stored_row_hash
from leaderboard.models import AuditEntry, OutsideWrite, StaffRecord
from runtime.logs import get_logger

__all__ = [
    "ALERT_NOT_ENROLLED",
    "CARRIED",
    "ENROLLED",
    "enrolment_detail",
    "enrolment_problem",
    "enrolment_refusal",
    "identity_digest",
]

ENROLLED: Final = "staff.enrolled"
CARRIED: Final = "staff.enrolment_carried"  # revision 0018: an enrolment from before the chain
ALERT_NOT_ENROLLED: Final = "alert.staff_not_enrolled"
_CHECKER: Final = "(sign-in enrolment check)"
_log = get_logger("leaderboard.desk.enrolment")


def identity_digest(*, staff_id: str, name: str, role: str, enrolled_at: datetime) -> str:
    """SHA-256 (hex) of a staff row's identity: what its enrolment record vouches for."""
    material = ["showdown.staff.v1", staff_id, name, role, canonical_at(enrolled_at)]
    return hashlib.sha256(json.dumps(material, ensure_ascii=False).encode()).hexdigest()


def _row_digest(row: StaffRecord) -> str:
    return identity_digest(staff_id=row.staff_id, name=row.name, role=row.role,
                           enrolled_at=row.enrolled_at)


def enrolment_detail(session: Session, *, actor: str, staff_id: str, name: str, role: str,
                     enrolled_at: datetime) -> dict[str, Any]:
    """What a ``staff.enrolled`` record adds: the identity digest, and ``bootstrap`` when a
    manager enrols themself while no manager is enrolled (the install's first manager)."""
    bootstrap = (actor == staff_id and role == "manager" and session.scalar(
        select(StaffRecord.staff_id).where(StaffRecord.role == "manager").limit(1)) is None)
    return {"identity": identity_digest(staff_id=staff_id, name=name, role=role,
                                        enrolled_at=enrolled_at), "bootstrap": bootstrap}


def _intact(session: Session, record: AuditEntry) -> bool:
    """The record's hash holds and it follows the row before it in the chain."""
    if record.prev_hash is None or record.row_hash != stored_row_hash(record, record.prev_hash):
        return False
    before = session.scalar(select(AuditEntry.row_hash).where(AuditEntry.id == record.id - 1))
    return record.prev_hash == (GENESIS if before is None and record.id == 1 else before)


def enrolment_problem(session: Session, row: StaffRecord) -> str | None:
    """Why the audit chain does not vouch for the staff row ``row`` (None: it does)."""
    records = [r for r in session.scalars(select(AuditEntry).where(
        AuditEntry.action.in_((ENROLLED, CARRIED))).order_by(AuditEntry.id))
        if isinstance(r.detail, dict) and r.detail.get("staff_id") == row.staff_id]
    if not records:
        return "the audit trail holds no enrolment of it"
    record = records[-1]
    if not _intact(session, record):
        return f"its enrolment (audit row {record.id}) is not intact in the audit chain"
    if record.detail.get("identity") != _row_digest(row):
        return (f"the staff row's name, role or enrolment time is not what its enrolment"
                f" (audit row {record.id}) recorded")
    if record.actor == row.staff_id and record.detail.get("bootstrap") is not True:
        return f"it was enrolled by {row.staff_id} themself (audit row {record.id})"
    if record.detail.get("bootstrap") is True and any(
            r.id < record.id and isinstance(r.detail, dict) and r.detail.get("role") == "manager"
            for r in session.scalars(select(AuditEntry).where(
                AuditEntry.action.in_((ENROLLED, CARRIED))))):
        return (f"it claims to be the install's first manager (audit row {record.id}), but a"
                " manager was enrolled before")
    for table, key, what in (("staff", row.staff_id, "its staff row"),
                             ("audit", str(record.id), f"its enrolment (audit row {record.id})")):
        outside = session.scalar(select(OutsideWrite.id).where(
            OutsideWrite.table_name == table, OutsideWrite.row_key == key).limit(1))
        if outside is not None:
            return f"{what} was written outside the service (outside write {outside})"
    return None


def enrolment_refusal(session: Session, now: datetime, row: StaffRecord, *,
                      client: str) -> str | None:
    """None when the chain vouches for ``row``; else the refusal to give, after writing a
    high-severity alert to the audit trail (in the caller's transaction)."""
    problem = enrolment_problem(session, row)
    if problem is None:
        return None
    audit_row(session, now, _CHECKER, ALERT_NOT_ENROLLED, {
        "severity": "high", "staff_id": row.staff_id, "role": row.role, "client": client,
        "problem": problem})
    _log.warning("staff_not_enrolled", staff_id=row.staff_id, problem=problem)
    return (f"no enrolment record for {row.staff_id}: sign-in refused and the supervisor"
            f" alerted ({problem})")
