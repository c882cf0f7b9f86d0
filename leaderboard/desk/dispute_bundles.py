"""A table's dispute bundle received by the central service for a dispute, checked against
the enrolled tables' keys, countersigned with the central key (issue 33, D383), stored, and
served again; each countersignature audited under the person who handed the bundle in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.desk.action import begin_action, desk_now, write_audit
from leaderboard.desk.errors import DeskError, NotFound
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import Dispute, DisputeBundleRecord, TableRecord
from runtime.clocks import WallClock
from wire.dispute_bundle import bundle_digest, check, countersign
from wire.signing import KeyFormatError, KeyRing, Signer, parse_public_key

__all__ = ["COUNTERSIGNED", "StoredBundle", "countersign_bundle", "dispute_bundles"]

COUNTERSIGNED: Final = "dispute.bundle_countersigned"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredBundle:
    """A countersigned bundle as stored: its dispute, table, digest, when and by whom."""

    bundle_id: int
    dispute_id: int
    table: str
    bundle_sha256: str
    countersigned_at: datetime
    countersigned_by: str
    bundle: Mapping[str, Any]


def _tables(session: Session) -> KeyRing:
    ring = KeyRing()
    for t in session.scalars(select(TableRecord)):
        try:
            ring.add(parse_public_key(t.table_id, t.public_key))
        except KeyFormatError:
            continue  # a malformed enrolment: that table's bundles do not verify
    return ring


def _stored(row: DisputeBundleRecord) -> StoredBundle:
    return StoredBundle(bundle_id=row.id, dispute_id=row.dispute_id, table=row.table_id,
                        bundle_sha256=row.bundle_sha256,
                        countersigned_at=from_db(row.countersigned_at),
                        countersigned_by=row.countersigned_by, bundle=json.loads(row.bundle))


def countersign_bundle(session: Session, clock: WallClock, *, actor: str, dispute_id: int,
                       bundle_text: str, signer: Signer) -> StoredBundle:
    """Check a table's bundle (whole, signed by an enrolled table, about the dispute's
    entry), countersign it with the central key, store it and audit it under ``actor``."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    dispute = session.get(Dispute, dispute_id)
    if dispute is None:
        raise NotFound(f"no dispute {dispute_id}")
    try:
        bundle = json.loads(bundle_text)
    except ValueError as exc:
        raise DeskError(f"the bundle is not JSON: {exc}") from None
    if not isinstance(bundle, dict):
        raise DeskError("the bundle is not a dispute bundle (not a JSON object)")
    bundle.pop("countersignature", None)  # only this service's own is ever stored
    problems = check(bundle, _tables(session))
    if problems:
        raise DeskError("the bundle does not verify against the enrolled tables' keys: "
                        + "; ".join(problems[:5])
                        + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    manifest = bundle["manifest"]
    if dispute.entry_id not in (manifest.get("entry_ids") or ()):
        raise DeskError(f"the bundle is about entries {manifest.get('entry_ids')}, not"
                        f" dispute {dispute_id}'s entry {dispute.entry_id}")
    signed = countersign(bundle, signer, dispute_id=dispute_id, at=as_utc(now).isoformat())
    row = DisputeBundleRecord(dispute_id=dispute_id, table_id=str(manifest["table"]),
                              bundle_sha256=bundle_digest(bundle),
                              bundle=json.dumps(signed, ensure_ascii=False, sort_keys=True),
                              countersigned_at=as_utc(now), countersigned_by=actor)
    session.add(row)
    session.flush()
    write_audit(session, now, actor, COUNTERSIGNED, detail={
        "dispute_id": dispute_id, "bundle_id": row.id, "table": row.table_id,
        "bundle_sha256": row.bundle_sha256, "key_id": signer.key_id})
    session.commit()
    return _stored(row)


def dispute_bundles(session: Session, dispute_id: int) -> list[StoredBundle]:
    """The countersigned bundles of a dispute, oldest first."""
    if session.get(Dispute, dispute_id) is None:
        raise NotFound(f"no dispute {dispute_id}")
    rows = session.scalars(select(DisputeBundleRecord).where(
        DisputeBundleRecord.dispute_id == dispute_id).order_by(DisputeBundleRecord.id))
    return [_stored(r) for r in rows]
