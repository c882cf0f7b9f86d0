"""A dispute bundle: one hand's (entry's, heat's) game history, signed by the table (issue 14).

Pure: records and messages in, a JSON document out, and back. `select` picks what belongs to
a hand, an entry or a heat from a journal's records and outbox messages (given as plain
dicts); `build` puts them in parts, hashes each part (SHA-256 of its canonical JSON) into a
manifest and signs the manifest with the table's Ed25519 key; `check` lists every problem
with a bundle: a part whose hash does not match, a part missing or extra, the manifest's
signature, each included envelope's own signature (`verify_envelope`). docs/disputes.md.

The central service countersigns a bundle it receives for a dispute (issue 33, D383):
`countersign` adds ``countersignature``, the central key's signature over the bundle's
digest (`bundle_digest`: SHA-256 of its signed manifest and the table's signature, which
cover every part), the dispute id and the time; `check` with ``central`` checks it too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from wire.envelope import EnvelopeError, canonical_json, verify_envelope
from wire.messages import (
    HandCorrected,
    HandDisputed,
    HandSettled,
    HandVoided,
    ScoreAcknowledged,
    ScoreDisputed,
    ScoreRecorded,
    ScoreVoided,
)
from wire.signing import KeyRing, PublicKey, Signer

__all__ = ["CONTEXT", "COUNTERSIGNATURE", "FORMAT", "HAND_TYPES", "PARTS", "Selection",
           "Selector", "build", "bundle_digest", "check", "check_countersignature",
           "countersign", "part_hash", "select"]

FORMAT: Final = "showdown.dispute-bundle/1"
COUNTERSIGNATURE: Final = "showdown.dispute-countersignature/1"
HAND_TYPES: Final = (HandSettled.TYPE, HandVoided.TYPE)
SCORE_TYPES: Final = (ScoreRecorded.TYPE, ScoreAcknowledged.TYPE, ScoreDisputed.TYPE,
                      ScoreVoided.TYPE)
DISPUTE_TYPES: Final = (HandDisputed.TYPE, HandCorrected.TYPE, ScoreDisputed.TYPE)
ACK_TYPES: Final = (ScoreAcknowledged.TYPE,)
# The parts, in the manifest's order; CONTEXT (what a replay needs besides) is optional.
PARTS: Final = ("records", "envelopes", "settlements", "acknowledgements", "disputes")
CONTEXT: Final = "context"
_CREATED: Final = "journal.created"  # the journal's own first record: no hand's input
Selector = Literal["hand", "entry", "heat"]


@dataclass(frozen=True, slots=True)
class Selection:
    """What belongs in a bundle: the journal records and outbox messages (plain dicts)."""

    hand_ids: tuple[str, ...]
    entry_ids: tuple[str, ...]
    records: tuple[Mapping[str, Any], ...]
    messages: tuple[Mapping[str, Any], ...]


def _entries_of(hand: Mapping[str, Any]) -> set[str]:
    return {s["entry_id"] for s in hand.get("seats") or () if isinstance(s, Mapping)
            and isinstance(s.get("entry_id"), str)}


def select(selector: Selector, ident: str, records: Sequence[Mapping[str, Any]],
           messages: Sequence[Mapping[str, Any]]) -> Selection:
    """The hands chosen by `selector`, their inputs and every message about them or their
    entries. Each message is ``{"seq", "record_seq", "type", "body", ...}``; a hand's inputs
    are the records after the previous hand's closing record up to its own closing one."""
    hands = [m for m in messages if m["type"] in HAND_TYPES]
    if selector == "hand":
        chosen = [m for m in hands if m["body"].get("hand_id") == ident]
    elif selector == "entry":
        chosen = [m for m in hands if ident in _entries_of(m["body"])]
    else:
        chosen = [m for m in hands if m["body"].get("heat_id") == ident]
    hand_ids = {str(m["body"].get("hand_id")) for m in chosen}
    entries = {ident} if selector == "entry" else set().union(
        *(_entries_of(m["body"]) for m in chosen))
    heats = {m["body"].get("heat_id") for m in chosen} - {None}
    if selector == "heat":
        heats.add(ident)

    def about(m: Mapping[str, Any]) -> bool:
        body = m["body"]
        if m["type"] in HAND_TYPES:
            return m in chosen
        if body.get("hand_id") in hand_ids:
            return True
        if m["type"] in SCORE_TYPES and body.get("entry_id") in entries:
            return not heats or body.get("heat_id") in heats or body.get("heat_id") is None
        return selector == "heat" and body.get("heat_id") == ident

    picked = [m for m in messages if about(m)]
    closing = sorted(int(m["record_seq"]) for m in hands)
    wanted: set[int] = {int(m["record_seq"]) for m in picked}
    for m in chosen:
        end = int(m["record_seq"])
        start = max((s for s in closing if s < end), default=0)
        wanted.update(range(start + 1, end + 1))
    kept = tuple(r for r in records if int(r["seq"]) in wanted and r["kind"] != _CREATED)
    return Selection(hand_ids=tuple(sorted(hand_ids)), entry_ids=tuple(sorted(entries)),
                     records=kept, messages=tuple(picked))


def _count(part: Any) -> int:
    """A part's size: its items (the context: its records)."""
    if isinstance(part, Mapping):
        return len(part.get("records") or ())
    return len(part)


def part_hash(part: Any) -> str:
    """SHA-256 (hex) of a part's canonical JSON."""
    return hashlib.sha256(canonical_json(part)).hexdigest()


def build(selection: Selection, envelopes: Sequence[bytes], *, selector: Selector, ident: str,
          signer: Signer, chain: Mapping[str, Any], exported_at: str, exported_by: str,
          context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bundle document: parts, their manifest, and the manifest's signature.

    `envelopes` are the wire bytes of `selection.messages` (same order), as the table sent
    them; `chain` describes the journal (its head and seq ranges) at export; `context`, when
    given, is the optional part that lets the bundle be replayed on its own."""
    if len(envelopes) != len(selection.messages):
        raise ValueError("one envelope per selected message is needed")
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for m in selection.messages:
        by_type.setdefault(str(m["type"]), []).append(m)
    parts: dict[str, Any] = {
        "records": [dict(r) for r in selection.records],
        "envelopes": [e.decode("utf-8") for e in envelopes],
        "settlements": [dict(m["body"]) for m in selection.messages if m["type"] in HAND_TYPES],
        "acknowledgements": [dict(m["body"]) for m in selection.messages
                             if m["type"] in ACK_TYPES],
        "disputes": [{"type": m["type"], **m["body"]} for m in selection.messages
                     if m["type"] in DISPUTE_TYPES],
    }
    names: tuple[str, ...] = PARTS
    if context is not None:
        parts[CONTEXT] = dict(context)
        names = (*PARTS, CONTEXT)
    records = [int(r["seq"]) for r in selection.records]
    seqs = [int(m["seq"]) for m in selection.messages]
    manifest = {
        "format": FORMAT, "table": signer.key_id, "selector": selector, "id": ident,
        "hand_ids": list(selection.hand_ids), "entry_ids": list(selection.entry_ids),
        "exported_at": exported_at, "exported_by": exported_by, "journal": dict(chain),
        "record_seqs": [min(records), max(records)] if records else None,
        "message_seqs": [min(seqs), max(seqs)] if seqs else None,
        "parts": {name: {"sha256": part_hash(parts[name]), "count": _count(parts[name])}
                  for name in names},
    }
    sig = base64.b64encode(signer.sign(canonical_json(manifest))).decode("ascii")
    return {"manifest": manifest, "signature": sig, "parts": parts}


def check(bundle: Any, keyring: KeyRing, central: PublicKey | None = None) -> list[str]:
    """Every problem with a bundle (empty: whole): its form, each part's hash and count, the
    manifest's signature under its table's key, each envelope's own signature and, with
    ``central``, the central service's countersignature (`check_countersignature`)."""
    if not isinstance(bundle, Mapping):
        return ["the file is not a dispute bundle (not a JSON object)"]
    manifest, parts, sig = bundle.get("manifest"), bundle.get("parts"), bundle.get("signature")
    if not isinstance(manifest, Mapping) or manifest.get("format") != FORMAT:
        return [f"the file is not a dispute bundle (no manifest of format {FORMAT!r})"]
    if not isinstance(parts, Mapping):
        return ["the bundle has no parts"]
    problems: list[str] = []
    table = manifest.get("table")
    listed = manifest.get("parts")
    listed = listed if isinstance(listed, Mapping) else {}
    key = keyring.get(table) if isinstance(table, str) else None
    if key is None:
        problems.append(f"manifest: no public key is enrolled for table {table!r}")
    else:
        try:
            raw_sig = base64.b64decode(str(sig).encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raw_sig = b""
        if not key.verify(canonical_json(manifest), raw_sig):
            problems.append(f"manifest: the signature does not match the manifest and table "
                            f"{table!r}'s key")
    for name in sorted(set(PARTS) | set(parts) | set(listed)):
        entry = listed.get(name)
        if name not in parts:
            problems.append(f"part {name}: listed in the manifest but missing")
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"part {name}: in the bundle but not in the manifest")
            continue
        if part_hash(parts[name]) != entry.get("sha256"):
            problems.append(f"part {name}: SHA-256 {part_hash(parts[name])} does not match the "
                            f"manifest's {entry.get('sha256')}")
    envelopes = parts.get("envelopes")
    for i, text in enumerate(envelopes if isinstance(envelopes, list) else ()):
        try:
            envelope = verify_envelope(str(text).encode("utf-8"), keyring)
        except EnvelopeError as e:
            problems.append(f"envelope {i + 1}: rejected: {e} [{e.reason}]")
            continue
        if envelope.table != table:
            problems.append(f"envelope {i + 1}: sent by {envelope.table!r}, not the "
                            f"bundle's table {table!r}")
    if central is not None:
        problems.extend(check_countersignature(bundle, central))
    return problems


def bundle_digest(bundle: Mapping[str, Any]) -> str:
    """The bundle's digest: SHA-256 (hex) of the canonical JSON of its manifest and the
    table's signature (the manifest holds every part's SHA-256)."""
    return hashlib.sha256(canonical_json({"manifest": bundle.get("manifest"),
                                          "signature": bundle.get("signature")})).hexdigest()


def _countersigned(statement: Mapping[str, Any]) -> bytes:
    return canonical_json({k: statement.get(k) for k in
                           ("format", "key_id", "bundle_sha256", "dispute_id", "at")})


def countersign(bundle: Mapping[str, Any], signer: Signer, *, dispute_id: int,
                at: str) -> dict[str, Any]:
    """The bundle with the central key's countersignature over its digest, the dispute id
    and the time ``at`` (ISO 8601); a countersignature it had is replaced."""
    statement: dict[str, Any] = {"format": COUNTERSIGNATURE, "key_id": signer.key_id,
                                 "bundle_sha256": bundle_digest(bundle),
                                 "dispute_id": dispute_id, "at": at}
    statement["signature"] = base64.b64encode(
        signer.sign(_countersigned(statement))).decode("ascii")
    return {**{k: v for k, v in bundle.items() if k != "countersignature"},
            "countersignature": statement}


def check_countersignature(bundle: Mapping[str, Any], central: PublicKey) -> list[str]:
    """Every problem with the bundle's countersignature under the central key ``central``:
    missing, signed by another key, made over another bundle, or a bad signature."""
    statement = bundle.get("countersignature")
    if statement is None:
        return ["countersignature: missing (the central service never countersigned this"
                " bundle)"]
    if not isinstance(statement, Mapping) or statement.get("format") != COUNTERSIGNATURE:
        return [f"countersignature: not of format {COUNTERSIGNATURE!r}"]
    problems: list[str] = []
    if statement.get("key_id") != central.key_id:
        problems.append(f"countersignature: made by key {statement.get('key_id')!r}, not the"
                        f" central key {central.key_id!r}")
    digest = bundle_digest(bundle)
    if statement.get("bundle_sha256") != digest:
        problems.append(f"countersignature: made over bundle digest "
                        f"{statement.get('bundle_sha256')}, but the bundle's is {digest} (the"
                        " bundle changed after it was countersigned)")
    try:
        raw = base64.b64decode(str(statement.get("signature")).encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raw = b""
    if not central.verify(_countersigned(statement), raw):
        problems.append(f"countersignature: the signature does not match the statement and"
                        f" the central key {central.key_id!r}")
    return problems
