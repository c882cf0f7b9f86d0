"""The central records audited again (read only): the stored messages, and the audit trail.

For each row of ``messages``: the payload's SHA-256, the envelope's signature against the
table's enrolled key (or a key the audit log shows it had when the message arrived), and the
stored fields against the signed envelope. ``audit_messages`` returns a ``MessageAudit``;
`showdown leaderboard audit` prints it.

``verify_trail`` checks the audit trail (leaderboard.audit_trail.verify: the hash chain, its
signed heads, the writes made outside the service) and that every staff row has its
enrolment in the chain (leaderboard.desk.enrolment); `showdown leaderboard audit --verify`
prints it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Inspector, select
from sqlalchemy.orm import Session

from leaderboard.audit_trail.verify import ChainReport, verify_chain
from leaderboard.desk.enrolment import enrolment_problem
from leaderboard.eligibility import from_db
from leaderboard.models import AuditEntry, Message, StaffRecord, TableRecord
from wire.envelope import Envelope, EnvelopeError, canonical_json, verify_envelope
from wire.signing import KeyFormatError, KeyRing, PublicKey, parse_public_key

__all__ = ["AuditFailure", "MessageAudit", "audit_messages", "keeps_evidence", "verify_trail"]


def keeps_evidence(inspector: Inspector) -> bool:
    """True if the database's ``messages`` keep the evidence to verify (revision 0002 on)."""
    columns = {c["name"] for c in inspector.get_columns("messages")}
    return {"envelope", "payload_sha256"} <= columns


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditFailure:
    """A stored message that does not verify: its table, seq and why."""

    table: str
    seq: int
    reason: str


@dataclass(slots=True)
class MessageAudit:
    """The outcome of verifying every stored message again."""

    verified: int = 0  # against the table's enrolled key
    former_key: dict[str, int] = field(default_factory=dict)  # table -> verified, replaced key
    legacy: int = 0  # stored before revision 0002: no evidence to verify
    failures: list[AuditFailure] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Every stored message looked at."""
        return self.verified + sum(self.former_key.values()) + self.legacy + len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON document."""
        return {"messages": self.total, "verified": self.verified,
                "verified_former_key": dict(sorted(self.former_key.items())),
                "legacy_without_evidence": self.legacy, "failed": len(self.failures),
                "failures": [{"table": f.table, "seq": f.seq, "reason": f.reason}
                             for f in self.failures]}

    def text(self) -> str:
        """The result for a terminal, one failure per line."""
        former = sum(self.former_key.values())
        lines = [f"messages: {self.total}",
                 f"verified: {self.verified} (against the enrolled key)"]
        if former:
            by_table = ", ".join(f"{t}: {n}" for t, n in sorted(self.former_key.items()))
            lines.append(f"verified with a replaced key: {former} ({by_table}; each key was"
                         " enrolled when the message arrived, as the audit log records)")
        lines.append(f"legacy rows without evidence: {self.legacy} (stored before revision"
                     " 0002; they cannot be verified again)")
        lines.append(f"FAILED: {len(self.failures)}")
        lines.extend(f"FAILED {f.table} seq {f.seq}: {f.reason}" for f in self.failures)
        return "\n".join(lines)


@dataclass(slots=True)
class _TableKeys:
    """A table's enrolled key and venue, and the ones it had before (with when they ended)."""

    current: KeyRing | None
    problem: str | None
    venues: set[str]
    former: list[tuple[KeyRing, datetime]] = field(default_factory=list)


def _ring(table: str, key: str) -> KeyRing:
    return KeyRing([parse_public_key(table, key)])


def _table_keys(engine: Engine) -> dict[str, _TableKeys]:
    """Every enrolled table's keys: the current one and those the audit log says it replaced."""


    keys: dict[str, _TableKeys] = {}
    with Session(engine) as session:
        for record in session.scalars(select(TableRecord)):
            try:
                keys[record.table_id] = _TableKeys(
                    current=_ring(record.table_id, record.public_key), problem=None,
                    venues={record.venue})
            except KeyFormatError as exc:
                keys[record.table_id] = _TableKeys(
                    current=None, problem=f"the enrolled key is malformed ({exc})",
                    venues={record.venue})
        changes = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "table.enrolment_changed").order_by(AuditEntry.id))
        for change in changes:
            detail = change.detail
            table, old_key = detail.get("table"), detail.get("old_key")
            entry = keys.get(str(table))
            if entry is None or not isinstance(old_key, str):
                continue
            if isinstance(detail.get("old_venue"), str):
                entry.venues.add(detail["old_venue"])
            if old_key == detail.get("new_key"):
                continue
            try:
                entry.former.append((_ring(str(table), old_key), from_db(change.at)))
            except KeyFormatError:
                continue
    return keys


def _verify(raw: bytes, current: KeyRing, former: list[tuple[KeyRing, datetime]],
            received: datetime) -> tuple[Envelope, str] | str:
    """(envelope, "verified" | "former_key"), or why it does not verify.

    A signature that fails against the current key is tried against each key the table had
    when the message was received (replaced after that moment).
    """

    try:
        return verify_envelope(raw, current), "verified"
    except EnvelopeError as exc:
        if exc.reason != "bad_signature":
            return str(exc)
        failure = str(exc)
    for ring, retired in former:
        if received < retired:
            try:
                return verify_envelope(raw, ring), "former_key"
            except EnvelopeError:
                continue
    return failure


def _check_message(row: Any, tables: dict[str, _TableKeys]) -> tuple[str, str | None]:
    """("verified" | "former_key" | "legacy" | "failed", why it failed)."""
    if row.envelope is None and row.payload_sha256 is None:
        return "legacy", None
    if row.envelope is None or row.payload_sha256 is None:
        missing = "envelope" if row.envelope is None else "payload_sha256"
        return "failed", f"incomplete evidence: {missing} is missing"
    try:
        raw = row.envelope.encode("utf-8")
    except UnicodeEncodeError:
        return "failed", "the stored envelope is not valid text"
    if hashlib.sha256(raw).hexdigest() != row.payload_sha256:
        return "failed", "payload_sha256 is not the SHA-256 of the stored envelope"
    keys = tables.get(row.table_id)
    if keys is None:
        return "failed", f"table {row.table_id} is not enrolled (no key to verify against)"
    if keys.current is None:
        return "failed", str(keys.problem)
    verified = _verify(raw, keys.current, keys.former, from_db(row.received_at))
    if isinstance(verified, str):
        return "failed", verified
    envelope, outcome = verified
    mismatch = [name for name, stored, signed in (
        ("table", row.table_id, envelope.table), ("seq", int(row.seq), envelope.seq),
        ("type", row.type, envelope.type), ("ts", row.ts, envelope.ts),
    ) if stored != signed]
    if canonical_json(row.body) != canonical_json(envelope.body):
        mismatch.append("body")
    if mismatch:
        return "failed", (f"the stored {', '.join(mismatch)} "
                          f"{'differs' if len(mismatch) == 1 else 'differ'} from the signed"
                          " envelope")
    if envelope.venue not in keys.venues:
        return "failed", (f"signed for venue {envelope.venue}, where table {row.table_id} was"
                          " never enrolled")
    return outcome, None


def _stored_messages(engine: Engine) -> Iterator[Any]:
    query = (select(Message.table_id, Message.seq, Message.type, Message.ts, Message.body,
                    Message.received_at, Message.payload_sha256, Message.envelope)
             .order_by(Message.table_id, Message.seq)
             .execution_options(yield_per=500))
    with engine.connect() as connection:
        yield from connection.execute(query)


def audit_messages(engine: Engine) -> MessageAudit:
    """Verify every stored message again (read only): the payload's SHA-256, the envelope's
    signature against the table's enrolled key, and the row's fields against the envelope.

    A message whose signature fails against the current key is tried against the keys the
    table had before (`table.enrolment_changed` audit rows), each only for messages received
    before it was replaced; one that verifies so is counted apart, not as a failure.
    """
    tables = _table_keys(engine)
    audit = MessageAudit()
    for row in _stored_messages(engine):
        outcome, reason = _check_message(row, tables)
        if outcome == "verified":
            audit.verified += 1
        elif outcome == "former_key":
            audit.former_key[row.table_id] = audit.former_key.get(row.table_id, 0) + 1
        elif outcome == "legacy":
            audit.legacy += 1
        else:
            audit.failures.append(AuditFailure(table=row.table_id, seq=int(row.seq),
                                               reason=str(reason)))
    return audit


def verify_trail(engine: Engine, key: PublicKey) -> ChainReport:
    """The audit trail checked from its first row with the central ``key`` (read only), and
    every staff row without a valid enrolment in it named."""
    with engine.connect() as connection:
        report = verify_chain(connection, key)
        with Session(bind=connection) as session:
            for row in session.scalars(select(StaffRecord).order_by(StaffRecord.staff_id)):
                problem = enrolment_problem(session, row)
                if problem is not None:
                    report.add("staff_not_enrolled", "tampering", f"staff {row.staff_id}"
                               f" ({row.role}): no valid enrolment record: {problem}")
    return report
