"""What the audit chain hashes and its heads sign, with nothing but the standard library and
the envelope's canonical JSON (no database): the row hash, the head's signed text and its
check. The central service (`chain`, `heads`, `verify`) and a certifier's offline check of an
exported bundle (leaderboard.certifier.verify) use these same functions."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from typing import Final

from wire.envelope import canonical_json
from wire.signing import PublicKey

__all__ = ["DOMAIN", "GENESIS", "HEAD_DOMAIN", "canonical_at", "detail_text",
           "head_signature_verifies", "head_text", "row_hash"]

GENESIS: Final = "0" * 64  # the prev_hash of the chain's first row
DOMAIN: Final = "showdown.audit.v1"
HEAD_DOMAIN: Final = "showdown.audit-head.v1"


def canonical_at(moment: datetime) -> str:
    """A stored time as the chain hashes it: UTC, microseconds, ``Z`` (naive: read back from
    SQLite, which keeps UTC)."""
    utc = moment.replace(tzinfo=UTC) if moment.utcoffset() is None else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def detail_text(detail: object) -> str:
    """A detail as the chain hashes it: canonical JSON (sorted keys, no spaces)."""
    return canonical_json(detail).decode("utf-8")


def row_hash(*, id: int, at: str, actor: str, action: str, detail: str,
             prev_hash: str) -> str:
    """SHA-256 (hex) of an audit row's content (as `canonical_at` and `detail_text` give
    them) and the previous row's hash."""
    material = [DOMAIN, id, at, actor, action, detail, prev_hash]
    text = json.dumps(material, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def head_text(*, row_id: int, row_hash: str, signed_at: datetime, key_id: str) -> bytes:
    """The bytes a head's signature covers."""
    material = [HEAD_DOMAIN, row_id, row_hash, canonical_at(signed_at), key_id]
    return json.dumps(material, separators=(",", ":")).encode("utf-8")


def head_signature_verifies(*, row_id: int, row_hash: str, signed_at: datetime, key_id: str,
                            signature: str, key: PublicKey) -> bool:
    """True if ``signature`` (base64) is ``key``'s signature of the head these name."""
    try:
        raw = base64.b64decode(signature, validate=True)
    except (ValueError, TypeError):
        return False
    return key_id == key.key_id and key.verify(head_text(
        row_id=row_id, row_hash=row_hash, signed_at=signed_at, key_id=key_id), raw)
