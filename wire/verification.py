"""The verification code printed on a participant's score slip: the SHA-256 of the signed
``score.recorded`` message, so the casino's paper trail can be matched to the message the
central service stored.

The code is computed from what identifies a sealed message and what it says, in canonical
JSON (`wire.envelope.canonical_json`): ``{"table", "seq", "type", "body"}``. The table prints
it from its journal; the central service recomputes it from the stored message (table id, seq,
type and body) and finds the same code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from wire.envelope import canonical_json

__all__ = ["GROUPS", "GROUP_SIZE", "grouped", "verification_code"]

GROUPS: Final = 4  # the slip shows the first GROUPS x GROUP_SIZE hex digits in groups
GROUP_SIZE: Final = 4


def verification_code(table: str, seq: int, type_: str, body: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of the canonical JSON of a message's table, seq, type and body."""
    document = {"table": table, "seq": seq, "type": type_, "body": dict(body)}
    return hashlib.sha256(canonical_json(document)).hexdigest()


def grouped(code: str) -> str:
    """The code as printed large on the slip: the first 16 hex digits in groups of four,
    upper case (``"9F86 D081 884C 7D65"``)."""
    head = code[: GROUPS * GROUP_SIZE].upper()
    return " ".join(head[i:i + GROUP_SIZE] for i in range(0, len(head), GROUP_SIZE))
