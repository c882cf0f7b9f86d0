"""Incremental verification: the part of both chains verified once is named by a signed
``journal.verified`` record, so a later check reads only what follows (docs/journal.md,
Verification).

After a clean check the daemon appends a ``journal.verified`` record naming both chains'
heads as they were checked, signed with the table's Ed25519 key. The next check finds the
newest one through the kind index, checks its signature against the table's public key and
that the rows it names still hold its checksums, and verifies the chains only after it. The
record itself lies after the heads it names, so the next check covers it too. Without a
usable mark (none yet, another key, a bad signature) the check is the full one.

SQLite's own whole-file check (`PRAGMA integrity_check`) reads every page, so the
incremental check leaves it out: the daemon runs it after READY in the background
(`whole_file_problems`), and `showdown journal verify --full` runs everything.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Final, Literal

from sqlalchemy import exc

from controller.journal.checkpoints import heads_from_json, heads_json, read_heads
from controller.journal.integrity import ChainHeads, sqlite_problems
from controller.journal.models import JournalRow
from controller.journal.records import (
    OWN_KIND_PREFIX,
    IntegrityProblem,
    JournalError,
    JournalRecord,
)
from controller.journal.rows import json_object
from controller.journal.store import Journal
from wire.signing import PublicKey, Signer

__all__ = ["VERIFIED_KIND", "Verification", "latest_mark", "record_verified", "verify",
           "whole_file_problems"]

VERIFIED_KIND: Final = f"{OWN_KIND_PREFIX}verified"
_DOMAIN: Final = "showdown.verified.v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    """What a check did: its scope, where it began, what it found, and the heads it checked."""

    scope: Literal["full", "incremental"]
    problems: list[IntegrityProblem]
    heads: ChainHeads  # the heads when it ran (what a new mark names)
    start: ChainHeads | None = None  # incremental: the signed mark it began after
    mark_seq: int | None = None  # incremental: that mark's record seq
    note: str = ""  # full: why not incremental

    def describe(self) -> str:
        """One line for the log and the technician."""
        if self.scope == "full":
            return "full: every record and message, and SQLite's whole-file check" + (
                f" ({self.note})" if self.note else "")
        assert self.start is not None
        return (f"incremental: after the signed verified head (journal seq "
                f"{self.start.journal_seq}, message seq {self.start.outbox_seq}, record "
                f"{self.mark_seq}) to journal seq {self.heads.journal_seq}; SQLite's "
                "whole-file check not run (--full runs everything)")


def _signed_text(heads: ChainHeads) -> bytes:
    material = [_DOMAIN, heads.journal_seq, heads.journal_checksum, heads.outbox_seq,
                heads.outbox_checksum]
    return json.dumps(material, separators=(",", ":")).encode("utf-8")


def record_verified(journal: Journal, heads: ChainHeads, signer: Signer,
                    scope: str) -> JournalRecord:
    """Append the signed mark that both chains up to `heads` verified clean."""
    payload = {**heads_json(heads), "scope": scope, "key": signer.key_id,
               "signature": base64.b64encode(signer.sign(_signed_text(heads))).decode("ascii")}
    record, _ = journal._append(VERIFIED_KIND, payload, journal._clock(), lambda _r: ())
    return record


def latest_mark(journal: Journal, key: PublicKey) -> tuple[ChainHeads | None, int | None, str]:
    """The newest verified mark signed by `key`: (its heads, its record seq, "") or
    (None, None, why there is none usable)."""
    with journal._read() as conn:
        row = conn.execute(
            JournalRow.__table__.select().where(JournalRow.kind == VERIFIED_KIND)
            .order_by(JournalRow.seq.desc()).limit(1)).mappings().first()
    if row is None:
        return None, None, "no verified head recorded yet"
    seq = int(row["seq"])
    try:
        payload = json_object(row["payload"], "payload")
        heads = heads_from_json(payload)
        signature = base64.b64decode(str(payload.get("signature")), validate=True)
    except (JournalError, binascii.Error, ValueError) as e:
        return None, None, f"the verified head at record {seq} cannot be read: {e}"
    if payload.get("key") != key.key_id or not key.verify(_signed_text(heads), signature):
        return None, None, (f"the verified head at record {seq} is not signed by the "
                            f"table key {key.key_id}")
    if heads.journal_seq >= seq:
        return None, None, f"the verified head at record {seq} names a later record"
    return heads, seq, ""


def verify(journal: Journal, key: PublicKey | None, *, full: bool = False) -> Verification:
    """Check the journal: from the newest signed mark (`key` given, not `full`), else all of
    it. Never raises for damaged data."""
    heads = read_heads(journal)
    start, mark_seq, note = (None, None, "") if full else (
        (None, None, "no table key to check a verified head with") if key is None
        else latest_mark(journal, key))
    if start is None:
        return Verification(scope="full", problems=journal.verify(), heads=heads, note=note)
    return Verification(scope="incremental", heads=heads, start=start, mark_seq=mark_seq,
                        problems=journal.verify(start, whole_file=False))


def whole_file_problems(journal: Journal) -> list[IntegrityProblem]:
    """SQLite's own page-by-page check of the file alone (slow: it reads every page)."""
    try:
        with journal._read() as conn:
            return sqlite_problems(conn)
    except exc.SQLAlchemyError as e:
        return [IntegrityProblem(area="database", code="unreadable",
                                 detail=f"SQLite cannot read the file: {e}")]
