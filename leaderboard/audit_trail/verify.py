"""The check of the audit trail, read only: every row's hash and link from the first row, the
ids without gaps, the tip, every signed head against the central public key, the writes the
triggers recorded as made outside the service, and that the triggers are all there
(docs/audit-trail.md). `verify_chain` returns a `ChainReport`; `showdown leaderboard audit
--verify` prints it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from leaderboard.audit_trail.chain import GENESIS, TIP_ROW, stored_row_hash
from leaderboard.audit_trail.heads import head_verifies
from leaderboard.audit_trail.outside_writes import expected_triggers, present_triggers
from leaderboard.models import AuditEntry, AuditHead, AuditTip, OutsideWrite
from wire.signing import PublicKey

__all__ = ["ALERT_PREFIX", "ChainReport", "Finding", "Severity", "verify_chain"]

Severity = Literal["tampering", "warning", "alert"]
ALERT_PREFIX: Final = "alert."  # audit actions that raise an alert (their detail: severity)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing the check found: its kind, how grave, the audit row it names (if one) and
    the sentence for a person."""

    kind: str
    severity: Severity
    message: str
    row_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON."""
        return {"kind": self.kind, "severity": self.severity, "row": self.row_id,
                "message": self.message}


@dataclass(slots=True)
class ChainReport:
    """What `verify_chain` found."""

    rows: int = 0
    first_row: int | None = None
    last_row: int | None = None
    legacy_until: int = 0  # rows up to here were chained by revision 0018 as found
    heads: int = 0
    heads_verified: int = 0
    last_signed_row: int | None = None
    key_id: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        """True when nothing shows tampering (warnings and alerts aside)."""
        return not any(f.severity == "tampering" for f in self.findings)

    def add(self, kind: str, severity: Severity, message: str, row_id: int | None = None
            ) -> None:
        """Record a finding."""
        self.findings.append(Finding(kind=kind, severity=severity, message=message,
                                     row_id=row_id))

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON document."""
        return {"intact": self.intact, "rows": self.rows, "first_row": self.first_row,
                "last_row": self.last_row, "legacy_until": self.legacy_until,
                "heads": self.heads, "heads_verified": self.heads_verified,
                "last_signed_row": self.last_signed_row, "key_id": self.key_id,
                "tampering": sum(f.severity == "tampering" for f in self.findings),
                "warnings": sum(f.severity == "warning" for f in self.findings),
                "alerts": sum(f.severity == "alert" for f in self.findings),
                "findings": [f.as_dict() for f in self.findings]}

    def text(self) -> str:
        """The report for a terminal: a summary, then one line per finding."""
        signed = ("none" if self.last_signed_row is None
                  else f"up to row {self.last_signed_row}")
        lines = [f"audit rows: {self.rows}" + ("" if self.first_row is None else
                                                f" (ids {self.first_row}..{self.last_row})"),
                 f"signed heads: {self.heads} ({self.heads_verified} verified against key"
                 f" {self.key_id}); signed: {signed}"]
        if self.legacy_until:
            lines.append(f"rows 1..{self.legacy_until} were written before the chain and"
                         " chained as found by revision 0018")
        verdict = ("INTACT" if self.intact else
                   f"TAMPERING: {sum(f.severity == 'tampering' for f in self.findings)}"
                   " finding(s)")
        lines.append(verdict)
        label = {"tampering": "TAMPERED", "warning": "WARNING", "alert": "ALERT"}
        lines.extend(f"{label[f.severity]} {f.kind}: {f.message}" for f in self.findings)
        return "\n".join(lines)


def _rows(connection: Connection) -> Iterator[Any]:
    query = (select(AuditEntry.id, AuditEntry.at, AuditEntry.actor, AuditEntry.action,
                    AuditEntry.detail, AuditEntry.prev_hash, AuditEntry.row_hash)
             .order_by(AuditEntry.id).execution_options(yield_per=1000))
    yield from connection.execute(query)


def _walk(connection: Connection, report: ChainReport) -> dict[int, str]:
    """Check every row's hash, link and id; the stored hash of each row a head names."""
    stored: dict[int, str] = {}
    named = set(connection.execute(select(AuditHead.row_id)).scalars())
    prev_id, prev_hash = 0, GENESIS
    for row in _rows(connection):
        row_id = int(row.id)
        report.rows += 1
        report.first_row = row_id if report.first_row is None else report.first_row
        report.last_row = row_id
        if row_id in named and row.row_hash is not None:
            stored[row_id] = str(row.row_hash)
        if row_id != prev_id + 1:
            missing = (f"row {prev_id + 1}" if row_id == prev_id + 2
                       else f"rows {prev_id + 1}..{row_id - 1}")
            legacy = row_id <= report.legacy_until
            report.add("gap", "warning" if legacy else "tampering",
                       f"ids jump from {prev_id} to {row_id}: {missing} missing"
                       + (" (before the chain: rows a rollback never stored)" if legacy
                          else " (removed)"), row_id)
        if row.prev_hash is None or row.row_hash is None:
            report.add("unchained_row", "tampering", f"audit row {row_id} ({row.action} by"
                       f" {row.actor}) has no chain hash: it was not written by the service",
                       row_id)
        else:
            if stored_row_hash(row, str(row.prev_hash)) != row.row_hash:
                report.add("changed_row", "tampering", f"audit row {row_id} ({row.action} by"
                           f" {row.actor}) does not match its hash: it was changed after it"
                           " was written", row_id)
            if row.prev_hash != prev_hash:
                report.add("broken_link", "tampering", f"audit row {row_id} does not follow"
                           f" row {prev_id}: its prev_hash is not row {prev_id}'s hash (row"
                           f" {prev_id} was changed or replaced, or rows between were"
                           " removed)", row_id)
        if str(row.action).startswith(ALERT_PREFIX):
            detail = row.detail if isinstance(row.detail, dict) else {}
            staff = "" if "staff_id" not in detail else f" [staff {detail['staff_id']}]"
            report.add("alert", "alert", f"audit row {row_id}: {row.action}"
                       f" ({detail.get('severity', 'high')}): {detail.get('problem', '')}"
                       f"{staff}", row_id)
        prev_id, prev_hash = row_id, str(row.row_hash)
    return stored


def _check_tip(connection: Connection, report: ChainReport) -> None:
    tip = connection.execute(select(AuditTip).where(AuditTip.id == TIP_ROW)).first()
    if tip is None:
        report.add("tip_missing", "tampering", "the chain's tip row (audit_tip) is missing")
        return
    report.legacy_until = int(tip.legacy_until)
    last = connection.execute(select(AuditEntry.id, AuditEntry.row_hash)
                              .order_by(AuditEntry.id.desc()).limit(1)).first()
    last_id = 0 if last is None else int(last.id)
    if int(tip.last_id) != last_id or (last is not None and tip.last_hash != last.row_hash):
        what = ("rows after it were removed" if int(tip.last_id) > last_id
                else "rows were added or changed without the service")
        report.add("tip_mismatch", "tampering", f"the chain's tip names row {tip.last_id}, the"
                   f" last row is {last_id}: {what}", last_id or None)


def _check_heads(connection: Connection, report: ChainReport, key: PublicKey,
                 stored: dict[int, str]) -> None:
    report.key_id = key.key_id
    with Session(bind=connection) as session:
        heads = session.scalars(select(AuditHead).order_by(AuditHead.id)).all()
    for head in heads:
        report.heads += 1
        if not head_verifies(head, key):
            report.add("bad_head_signature", "tampering", f"signed head {head.id} (row"
                       f" {head.row_id}): the signature does not verify against the central"
                       f" key {key.key_id}", int(head.row_id))
            continue
        report.heads_verified += 1
        if stored.get(int(head.row_id)) != head.row_hash:
            report.add("head_mismatch", "tampering", f"audit row {head.row_id} is not the row"
                       f" signed head {head.id} covers (changed, replaced or removed)",
                       int(head.row_id))
            continue
        if report.last_signed_row is None or head.row_id > report.last_signed_row:
            report.last_signed_row = int(head.row_id)
    signed = report.last_signed_row or 0
    if report.last_row is not None and report.last_row > signed:
        report.add("unsigned_tail", "warning", f"rows {signed + 1}..{report.last_row} are"
                   " after the last signed head: the chain vouches for them, no signature"
                   " yet", signed + 1)


def _check_outside(connection: Connection, report: ChainReport) -> None:
    for write in connection.execute(select(OutsideWrite).order_by(OutsideWrite.id)):
        who = "" if write.db_user is None else f" by database user {write.db_user}"
        where = "" if write.client_addr is None else f" from {write.client_addr}"
        row_id = (int(write.row_key) if write.table_name == "audit" and write.row_key
                  and write.row_key.isdigit() else None)
        report.add("outside_write", "tampering", f"{write.operation} on {write.table_name}"
                   f" {write.row_key} at {write.at}{who}{where}, outside the service"
                   f" (outside write {write.id})", row_id)
    missing = sorted(expected_triggers(connection) - present_triggers(connection))
    if missing:
        report.add("trigger_missing", "tampering", f"{len(missing)} trigger(s) that record"
                   f" outside writes are missing: {', '.join(missing[:5])}"
                   + (" ..." if len(missing) > 5 else ""))


def verify_chain(connection: Connection, key: PublicKey) -> ChainReport:
    """Check the whole audit trail (read only) with the central service's public key."""
    report = ChainReport()
    _check_tip(connection, report)
    stored = _walk(connection, report)
    _check_heads(connection, report, key, stored)
    _check_outside(connection, report)
    return report
