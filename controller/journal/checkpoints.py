"""Checkpoints: a signed record of the table's state at a safe point, inside the journal's own
integrity scheme, so that start-up replays only the records after it (docs/journal.md,
Checkpoints).

A checkpoint is two things written in ONE transaction:

- a ``journal.checkpoint`` record in the record chain (so it is hash-chained like every other
  record and replay skips it): the record seq the state covers and both chains' heads at that
  point, the SHA-256 and size of the state's canonical text, the snapshot version, and the
  table key's Ed25519 signature over all of that;
- the state itself (canonical JSON) in the side table ``checkpoint_body``, keyed by its
  SHA-256. It is not part of a chain: a changed or missing body only makes that checkpoint
  unusable (its digest no longer matches), never the journal. Only the states of the
  `KEPT_STATES` newest checkpoints are kept (the older records stay, naming a state that is
  gone), so the file does not grow by a state per checkpoint.

`find_checkpoints` reads them newest first through the kind index (a few rows, whatever the
journal's length) and says for each why it cannot be used, if it cannot. What the state means
is not the journal's business: the caller restores it (and falls back to an older checkpoint,
then to the full replay, when that fails).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Select, select
from sqlalchemy.engine import Connection

from controller.journal.checksums import GENESIS, canonical_json, record_row_checksum
from controller.journal.integrity import ChainHeads
from controller.journal.models import JournalRow
from controller.journal.pause import pause_at
from controller.journal.records import OWN_KIND_PREFIX, JournalError, JournalRecord
from controller.journal.rows import json_object
from controller.journal.store import Journal
from wire.signing import PublicKey, Signer

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_KIND", "HOOK_ENV", "KEPT_STATES", "Checkpoint",
           "find_checkpoints", "heads_from_json", "heads_json", "read_heads", "write_checkpoint"]

CHECKPOINT_KIND: Final = f"{OWN_KIND_PREFIX}checkpoint"
CHECKPOINT_FORMAT: Final = 1
_DOMAIN: Final = "showdown.checkpoint.v1"
# Test builds only (controller/journal/pause.py): "in_transaction" stops inside the
# checkpoint's transaction, its state written and not committed; "committed" right after.
HOOK_ENV: Final = "SHOWDOWN_TEST_PAUSE_CHECKPOINT"
KEPT_STATES: Final = 3  # the states of the newest checkpoints kept (start-up tries these)
_BODY_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS checkpoint_body ("
    "sha256 TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """One checkpoint found in a journal: usable (`body` set) or not (`problem` says why)."""

    seq: int  # the checkpoint record's own seq
    covers: ChainHeads  # the state is the one after record covers.journal_seq
    snapshot_version: int | None
    body: Mapping[str, Any] | None = None
    problem: str | None = None


def read_heads(journal: Journal) -> ChainHeads:
    """Both chains' heads now (the last record and message, seqs and checksums)."""
    with journal._read() as conn:
        return _heads(conn)


def _heads(conn: Connection) -> ChainHeads:
    row = conn.exec_driver_sql("SELECT journal_seq, journal_checksum, outbox_seq, "
                               "outbox_checksum FROM head WHERE id = 1").one()
    return ChainHeads(journal_seq=int(row[0]), journal_checksum=str(row[1]),
                      outbox_seq=int(row[2]), outbox_checksum=str(row[3]))


def _signed_text(covers: ChainHeads, body_sha256: str, snapshot_version: int) -> bytes:
    material = [_DOMAIN, CHECKPOINT_FORMAT, covers.journal_seq, covers.journal_checksum,
                covers.outbox_seq, covers.outbox_checksum, body_sha256, snapshot_version]
    return json.dumps(material, separators=(",", ":")).encode("utf-8")


def heads_json(heads: ChainHeads) -> dict[str, Any]:
    """Both heads as stored in a record's payload."""
    return {"journal": {"seq": heads.journal_seq, "checksum": heads.journal_checksum},
            "outbox": {"seq": heads.outbox_seq, "checksum": heads.outbox_checksum}}


def heads_from_json(value: object) -> ChainHeads:
    """`heads_json` read back; JournalError when malformed."""
    try:
        j, o = value["journal"], value["outbox"]  # type: ignore[index]
        heads = ChainHeads(journal_seq=j["seq"], journal_checksum=j["checksum"],
                           outbox_seq=o["seq"], outbox_checksum=o["checksum"])
    except (KeyError, TypeError) as e:
        raise JournalError(f"the heads are malformed ({e})") from e
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in (heads.journal_seq, heads.outbox_seq)) \
            or not all(isinstance(v, str) and len(v) == 64
                       for v in (heads.journal_checksum, heads.outbox_checksum)):
        raise JournalError("the heads are malformed (seq or checksum of the wrong type)")
    return heads


def write_checkpoint(journal: Journal, body: Mapping[str, Any], *, covers: ChainHeads,
                     snapshot_version: int, signer: Signer) -> JournalRecord:
    """Append a checkpoint of the state `body` (plain JSON) after record `covers.journal_seq`.

    `covers` must be the heads read while the state was taken (no input applied since); own
    records (faults, other checkpoints) may have been appended in between.
    """
    text = canonical_json(body, what="checkpoint state")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    signature = signer.sign(_signed_text(covers, digest, snapshot_version))
    payload = {"format": CHECKPOINT_FORMAT, "covers": heads_json(covers),
               "body_sha256": digest, "body_bytes": len(text.encode("utf-8")),
               "snapshot_version": snapshot_version, "key": signer.key_id,
               "signature": base64.b64encode(signature).decode("ascii")}

    def store_body(conn: Connection) -> None:
        conn.exec_driver_sql(_BODY_TABLE)
        conn.exec_driver_sql("INSERT OR IGNORE INTO checkpoint_body (sha256, body) "
                             "VALUES (?, ?)", (digest, text))
        # Only the newest states are ever loaded: the older ones' pages are reused.
        conn.exec_driver_sql(
            "DELETE FROM checkpoint_body WHERE sha256 != ? AND sha256 NOT IN ("
            "SELECT json_extract(payload, '$.body_sha256') FROM journal WHERE kind = ? "
            "ORDER BY seq DESC LIMIT ?)", (digest, CHECKPOINT_KIND, KEPT_STATES - 1))
        pause_at(HOOK_ENV, "in_transaction")

    record, _ = journal._append(CHECKPOINT_KIND, payload, journal._clock(), lambda _r: (),
                                setup=store_body)
    pause_at(HOOK_ENV, "committed")
    return record


def find_checkpoints(journal: Journal, key: PublicKey, *, limit: int = 3
                     ) -> Iterator[Checkpoint]:
    """The last `limit` checkpoints, newest first, each checked (its record's own checksum,
    the rows it names, the signature, the body's digest); its `problem` says what failed."""
    with journal._read() as conn:
        found = conn.execute(_latest(limit)).mappings().all()
        has_bodies = conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoint_body'"
        ).scalar() is not None
        for row in found:
            yield _checked(conn, row, key, has_bodies)


def _latest(limit: int) -> Select[Any]:
    return (select(JournalRow).where(JournalRow.kind == CHECKPOINT_KIND)
            .order_by(JournalRow.seq.desc()).limit(limit))


def _checked(conn: Connection, row: Mapping[Any, Any], key: PublicKey,
             has_bodies: bool) -> Checkpoint:
    seq = int(row["seq"])
    blank = ChainHeads(journal_seq=0, journal_checksum=GENESIS, outbox_seq=0,
                       outbox_checksum=GENESIS)  # for a record that cannot be read
    if record_row_checksum(row, row["prev_checksum"]) != row["checksum"]:
        return Checkpoint(seq=seq, covers=blank, snapshot_version=None,
                          problem="its record does not match its checksum (changed)")
    try:
        payload = json_object(row["payload"], "payload")
        covers = heads_from_json(payload.get("covers"))
    except JournalError as e:
        return Checkpoint(seq=seq, covers=blank, snapshot_version=None, problem=str(e))
    version = payload.get("snapshot_version")
    digest = payload.get("body_sha256")
    if payload.get("format") != CHECKPOINT_FORMAT or not isinstance(version, int) \
            or not isinstance(digest, str):
        return Checkpoint(seq=seq, covers=covers, snapshot_version=None,
                          problem=f"checkpoint format {payload.get('format')!r} is not "
                                  f"{CHECKPOINT_FORMAT}")

    def bad(problem: str) -> Checkpoint:
        return Checkpoint(seq=seq, covers=covers, snapshot_version=version, problem=problem)

    if not covers.journal_seq < seq:
        return bad(f"it covers record {covers.journal_seq}, not one before it")
    stored = conn.exec_driver_sql("SELECT checksum FROM journal WHERE seq = ?",
                                  (covers.journal_seq,)).scalar()
    if stored != covers.journal_checksum:
        return bad(f"record {covers.journal_seq} does not hold the checksum it names")
    if covers.outbox_checksum != GENESIS:
        stored = conn.exec_driver_sql("SELECT checksum FROM outbox WHERE seq = ?",
                                      (covers.outbox_seq,)).scalar()
        if stored != covers.outbox_checksum:
            return bad(f"message {covers.outbox_seq} does not hold the checksum it names")
    try:
        signature = base64.b64decode(str(payload.get("signature")), validate=True)
    except (binascii.Error, ValueError):
        return bad("its signature is not base64")
    if payload.get("key") != key.key_id \
            or not key.verify(_signed_text(covers, digest, version), signature):
        return bad(f"its signature is not the table key's ({key.key_id})")
    text = conn.exec_driver_sql("SELECT body FROM checkpoint_body WHERE sha256 = ?",
                                (digest,)).scalar() if has_bodies else None
    if not isinstance(text, str):
        return bad("its state is missing")
    if hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest() != digest:
        return bad("its state does not match its SHA-256 (changed)")
    try:
        body = json_object(text, "state")
    except JournalError as e:
        return bad(str(e))
    return Checkpoint(seq=seq, covers=covers, snapshot_version=version, body=body)
