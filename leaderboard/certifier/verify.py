"""A certifier's bundle checked with nothing but the file (no database, no network): the
manifest's signature under the central key, every member's SHA-256, every table message's
signature under the bundle's table keys, each score against its table's signed messages,
the standings recomputed from the scores with the rules in force, the Final's seat draw
against its commitment, each countersigned dispute bundle (D382), and the audit rows against
their hash chain and its signed heads (D421). Every problem names
the member and the record it is about."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from game.errors import GameError
from game.messages.console import ScoreDisputed
from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.table import ScoreAcknowledged, ScoreRecorded
from game.money import format_rand
from game.tournament.draw import DrawError, replay_draw
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings, parse_tournament, timezone_name
from game.tournament.standings import ScoreRecord, ScoreStatus, StandingsError, leaderboard
from leaderboard.audit_trail.hashing import (
    canonical_at,
    detail_text,
    head_signature_verifies,
    row_hash,
)
from leaderboard.certifier.manifest import Bundle, BundleError, sha256_hex
from runtime.settings_files import load_toml
from wire.dispute_bundle import check as check_dispute_bundle
from wire.envelope import EnvelopeError, verify_envelope
from wire.signing import KeyFormatError, KeyRing, PublicKey, parse_public_key

__all__ = ["Verdict", "central_key", "problems_json", "verify_bundle"]

TOURNAMENT: Final = "rules/tournament.toml"
AUDIT: Final = "records/audit.json"
AUDIT_HEADS: Final = "records/audit_heads.json"
# An entry refunded, cancelled, voided or refused: its score never counts (promotion rules).
_UNPAID: Final = ("refunded", "cancelled", "void", "voided", "refused")


@dataclass(slots=True)
class Verdict:
    """What a check found: the problems (none: whole) and what was checked, counted."""

    problems: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    key_source: str = ""

    @property
    def whole(self) -> bool:
        """True when nothing is wrong with the bundle."""
        return not self.problems

    def count(self, what: str, n: int = 1) -> None:
        """Count ``n`` more records of a kind checked."""
        self.checked[what] = self.checked.get(what, 0) + n


def central_key(text: str) -> PublicKey:
    """The one key of a public key file's text (``<key id> <base64>``, # comments)."""
    lines = [line.split("#", 1)[0].split() for line in text.splitlines()]
    keys = [parts for parts in lines if parts]
    if len(keys) != 1 or len(keys[0]) != 2:
        raise KeyFormatError("expected one line '<key id> <base64 public key>'")
    return parse_public_key(keys[0][0], keys[0][1])


def _central(bundle: Bundle, key: PublicKey | None, v: Verdict) -> PublicKey | None:
    """The key the manifest must be signed with: the one given, else the bundle's own."""
    inside: PublicKey | None = None
    raw = bundle.members.get("keys/central.pub")
    if raw is not None:
        try:
            inside = central_key(raw.decode("utf-8"))
        except (KeyFormatError, UnicodeDecodeError) as exc:
            v.problems.append(f"keys/central.pub: {exc}")
    if key is not None:
        v.key_source = f"the given key {key.key_id!r}"
        if inside is not None and inside.base64 != key.base64:
            v.problems.append("keys/central.pub: the bundle names another central key than"
                              " the one given")
        return key
    v.key_source = ("the key inside the bundle (keys/central.pub); give --key to check it"
                    " against the central key you hold")
    return inside


def _members(bundle: Bundle, v: Verdict) -> None:
    listed = bundle.manifest.get("members")
    listed = listed if isinstance(listed, Mapping) else {}
    for name in sorted(set(listed) | set(bundle.members)):
        entry = listed.get(name)
        if name not in bundle.members:
            v.problems.append(f"member {name}: listed in the manifest but missing")
        elif not isinstance(entry, Mapping):
            v.problems.append(f"member {name}: in the file but not in the manifest")
        else:
            got = sha256_hex(bundle.members[name])
            if got != entry.get("sha256"):
                v.problems.append(f"member {name}: SHA-256 {got} does not match the"
                                  f" manifest's {entry.get('sha256')}")
            else:
                v.count("members")


def _settings(bundle: Bundle, v: Verdict) -> TournamentSettings | None:
    raw = bundle.members.get(TOURNAMENT)
    if raw is None:
        return None
    try:
        data = load_toml(Path(TOURNAMENT), raw.decode("utf-8"))
        return parse_tournament(data, TOURNAMENT, tz=ZoneInfo(timezone_name(data, TOURNAMENT)))
    except (GameError, UnicodeDecodeError, ZoneInfoNotFoundError, ValueError) as exc:
        v.problems.append(f"{TOURNAMENT}: the rules cannot be read: {exc}")
        return None


def _records(bundle: Bundle, name: str, v: Verdict) -> list[dict[str, Any]]:
    if name not in bundle.members:
        return []
    try:
        rows = bundle.json(name)
    except BundleError as exc:
        v.problems.append(str(exc))
        return []
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        v.problems.append(f"member {name}: not a list of records")
        return []
    return rows


def _rings(bundle: Bundle, v: Verdict) -> dict[str, list[KeyRing]]:
    """Each table's keys (the enrolled one first, then the keys it had before)."""
    rings: dict[str, list[KeyRing]] = {}
    if "keys/tables.json" not in bundle.members:
        return rings
    try:
        tables = bundle.json("keys/tables.json")
    except BundleError as exc:
        v.problems.append(str(exc))
        return rings
    for table, about in (tables.items() if isinstance(tables, dict) else ()):
        keys = [about.get("public_key"), *(about.get("former_keys") or [])] \
            if isinstance(about, dict) else []
        for text in keys:
            try:
                rings.setdefault(str(table), []).append(
                    KeyRing([parse_public_key(str(table), str(text))]))
            except KeyFormatError as exc:
                v.problems.append(f"keys/tables.json: table {table}: {exc}")
    return rings


def _messages(bundle: Bundle, rings: Mapping[str, list[KeyRing]], v: Verdict
              ) -> dict[tuple[str, int], Mapping[str, Any]]:
    """The verified messages by (table, seq): type and body as the table signed them."""
    out: dict[tuple[str, int], Mapping[str, Any]] = {}
    for m in _records(bundle, "records/messages.json", v):
        where = f"records/messages.json: table {m.get('table')} seq {m.get('seq')}"
        text = m.get("envelope")
        if not isinstance(text, str):
            v.problems.append(f"{where}: no signed envelope was stored")
            continue
        envelope, failure = None, "its table has no key in keys/tables.json"
        for ring in rings.get(str(m.get("table")), []):
            try:
                envelope = verify_envelope(text.encode("utf-8"), ring)
                break
            except EnvelopeError as exc:
                failure = f"{exc} [{exc.reason}]"
        if envelope is None:
            v.problems.append(f"{where}: the signature does not verify: {failure}")
            continue
        if (envelope.table, envelope.seq, envelope.type) != (m.get("table"), m.get("seq"),
                                                             m.get("type")):
            v.problems.append(f"{where}: the listed table, seq or type differ from the signed"
                              f" envelope's ({envelope.table}, {envelope.seq},"
                              f" {envelope.type})")
            continue
        out[(envelope.table, envelope.seq)] = {"type": envelope.type, "body": envelope.body}
        v.count("table messages verified")
    return out


def _scores(rows: Sequence[dict[str, Any]], messages: Mapping[tuple[str, int], Mapping[str, Any]],
            v: Verdict) -> None:
    """Each score against the table's signed ``score.recorded`` and its acknowledgement."""
    acks: dict[str, list[Mapping[str, Any]]] = {}
    for m in messages.values():
        if m["type"] == ScoreAcknowledged.TYPE:
            acks.setdefault(str(m["body"].get("entry_id")), []).append(m["body"])
    for s in rows:
        where = f"records/scores.json: entry {s.get('entry_id')}"
        signed = messages.get((str(s.get("table_id")), int(s.get("seq") or 0)))
        if signed is None or signed["type"] != ScoreRecorded.TYPE:
            v.problems.append(f"{where}: no verified score.recorded message of table"
                              f" {s.get('table_id')} seq {s.get('seq')}")
            continue
        body = signed["body"]
        differ = [name for name, stored, table in (
            ("entry_id", s.get("entry_id"), body.get("entry_id")),
            ("score_cents", s.get("score_cents"), body.get("score")),
            ("hands", s.get("hands"), body.get("hands")),
            ("stage", s.get("stage"), body.get("stage")),
        ) if stored != table]
        if s.get("status") in ("finished", "ended_early") and s.get("status") != body.get(
                "status"):
            differ.append("status")
        if differ:
            v.problems.append(f"{where}: {', '.join(differ)} differ from the table's signed"
                              f" score.recorded (table {s.get('table_id')} seq {s.get('seq')})")
            continue
        if s.get("acknowledged_at") is not None:
            matching = [a for a in acks.get(str(s.get("entry_id")), [])
                        if a.get("score") == s.get("score_cents")
                        and a.get("method") == s.get("ack_method")]
            if not matching:
                v.problems.append(f"{where}: acknowledged ({s.get('ack_method')}) but no"
                                  " verified score.acknowledged message of that score says so")
                continue
        v.count("scores matched to signed messages")


def _signed_rows(bundle: Bundle, name: str, kinds: tuple[str, ...], *,
                 fields: tuple[tuple[str, str], ...],
                 messages: Mapping[tuple[str, int], Mapping[str, Any]], v: Verdict) -> None:
    """Rows that a table's message made (``table_id`` and ``seq`` set) against that signed
    message: its type one of ``kinds`` and each (row field, body field) pair equal."""
    what = name.rsplit("/", maxsplit=1)[-1].removesuffix(".json").replace("_", " ")
    for r in _records(bundle, name, v):
        if r.get("seq") is None or r.get("table_id") is None:
            continue  # recorded at the desk, not by a table
        where = f"{name}: {r.get('id')} (table {r.get('table_id')} seq {r.get('seq')})"
        signed = messages.get((str(r["table_id"]), int(r["seq"])))
        if signed is None or signed["type"] not in kinds:
            v.problems.append(f"{where}: no verified {' or '.join(kinds)} message")
            continue
        differ = [row for row, body in fields if r.get(row) != signed["body"].get(body)]
        if differ:
            v.problems.append(f"{where}: {', '.join(differ)} differ from the table's signed"
                              f" {signed['type']}")
        else:
            v.count(f"{what} matched to signed messages")


def _when(text: Any) -> datetime | None:
    return datetime.fromisoformat(str(text)) if text is not None else None


def _score_records(scores: Sequence[dict[str, Any]], entries: Sequence[dict[str, Any]],
                   settings: TournamentSettings, v: Verdict) -> dict[Stage, list[ScoreRecord]]:
    """The scores as the rules count them (written from the rules, not from the service's
    code: a correction counts, a voided score or a refunded or disqualified entry does not)."""
    by_id = {str(e.get("entry_id")): e for e in entries}
    out: dict[Stage, list[ScoreRecord]] = {stage: [] for stage in Stage}
    for s in scores:
        entry = by_id.get(str(s.get("entry_id")))
        if entry is None:
            v.problems.append(f"records/scores.json: entry {s.get('entry_id')} is not in"
                              " records/entries.json")
            continue
        try:
            corrected = s.get("corrected_cents")
            acked = _when(s.get("acknowledged_at"))
            if acked is None and corrected is not None:
                acked = _when(s.get("corrected_at"))  # management's decision is final (D65)
            voided = (s.get("voided_at") is not None or s.get("status") == "voided"
                      or entry.get("status") in _UNPAID
                      or entry.get("disqualified_at") is not None)
            recorded = _when(s.get("recorded_at"))
            if recorded is None:
                raise ValueError("no recorded_at")
            day = entry.get("heat_day")
            out[Stage(str(s.get("stage")))].append(ScoreRecord(
                entry_id=str(s["entry_id"]), patron_id=str(entry.get("patron_id")),
                stage=Stage(str(s.get("stage"))),
                heat_id=str(s.get("heat_id") or entry.get("heat_id") or "-"),
                table=str(s.get("table_id")),
                score_cents=int(corrected if corrected is not None else s["score_cents"]),
                hands=int(s["hands"]),
                status=ScoreStatus.FINISHED if voided else ScoreStatus(str(s.get("status"))),
                recorded_at=recorded, acknowledged_at=acked, voided=voided,
                heat_day=date.fromisoformat(day) if day else recorded.astimezone(
                    settings.tz).date(),
                corrected=corrected is not None))
        except (KeyError, ValueError, TypeError, StandingsError) as exc:
            v.problems.append(f"records/scores.json: entry {s.get('entry_id')}: {exc}")
    return out


def _place(row: Any) -> str:
    """A standings row for a person: position, entry and score in rand."""
    if not isinstance(row, Mapping):
        return repr(row)
    cents = row.get("score_cents")
    score = format_rand(cents) if isinstance(cents, int) else repr(cents)
    return f"{row.get('position')}. {row.get('entry_id')} {score}"


def _standings(bundle: Bundle, settings: TournamentSettings,
               records: Mapping[Stage, list[ScoreRecord]], v: Verdict) -> None:
    if "records/standings.json" not in bundle.members:
        return
    try:
        stated = bundle.json("records/standings.json")
    except BundleError as exc:
        v.problems.append(str(exc))
        return
    for stage in Stage:
        try:
            board = leaderboard(records[stage], settings, stage=stage)
        except StandingsError as exc:
            v.problems.append(f"standings {stage.value}: cannot be recomputed: {exc}")
            continue
        mine = [{"position": p.position, "entry_id": p.entry_id,
                 "score_cents": p.score_cents} for p in board.places]
        theirs = stated.get(stage.value, []) if isinstance(stated, dict) else None
        if mine != theirs:
            first = next((i for i, (a, b) in enumerate(zip(mine, theirs or [], strict=False))
                          if a != b), min(len(mine), len(theirs or [])))
            stated_rows = theirs if isinstance(theirs, list) else []
            v.problems.append(
                f"records/standings.json: the {stage.value} standings differ from those"
                f" recomputed from the scores, from row {first + 1}: recomputed"
                f" {_place(mine[first]) if first < len(mine) else 'nothing'}, stated"
                f" {_place(stated_rows[first]) if first < len(stated_rows) else theirs}")
        else:
            v.count("standings rows recomputed", len(mine))


def _draws(rows: Sequence[dict[str, Any]], v: Verdict) -> None:
    """Each draw replayed from its bytes; with a commitment, sha256(seed) == its digest, the
    seed is the draw's bytes, the witness another person, the draw within the commitment."""
    for d in rows:
        if "unused_commitment" in d:
            v.count("unused draw commitments listed")
            continue
        where = f"records/draws.json: draw {d.get('id')}"
        result = d.get("result")
        try:
            if not isinstance(result, dict) or result.get("random_bytes") != d.get(
                    "random_hex"):
                raise DrawError("the stored result was not drawn from the stored bytes")
            replay_draw(result)
        except DrawError as exc:
            v.problems.append(f"{where}: does not replay: {exc}")
            continue
        c = d.get("commitment")
        if not isinstance(c, dict):
            v.problems.append(f"{where}: drawn without a commitment made before it")
            continue
        seed = str(c.get("seed_hex"))
        try:
            digest = hashlib.sha256(bytes.fromhex(seed)).hexdigest()
        except ValueError:
            digest = "(not hex)"
        if digest != c.get("seed_sha256"):
            v.problems.append(f"{where}: SHA-256 of the revealed seed is {digest}, the"
                              f" commitment {c.get('id')} recorded {c.get('seed_sha256')}")
        elif seed != d.get("random_hex"):
            v.problems.append(f"{where}: the seats were not drawn from commitment"
                              f" {c.get('id')}'s seed")
        elif c.get("witness") == d.get("drawn_by"):
            v.problems.append(f"{where}: witnessed by the person who drew ({c.get('witness')})")
        elif not (str(c.get("committed_at")) <= str(d.get("drawn_at"))
                  <= str(c.get("expires_at"))):
            v.problems.append(f"{where}: drawn at {d.get('drawn_at')}, outside commitment"
                              f" {c.get('id')}'s time ({c.get('committed_at')} to"
                              f" {c.get('expires_at')})")
        else:
            v.count("draws replayed against their commitment")


def _late(claimed: Any, deadline: Any) -> bool:
    at, by = _when(claimed), _when(deadline)
    return at is not None and by is not None and at > by


def _prizes(rows: Sequence[dict[str, Any]], entries: Sequence[dict[str, Any]],
            v: Verdict) -> None:
    """Each prize: its entry among the period's entries and its patron's, a claim made by
    the deadline, a withheld award only for a disqualified entry (rules 55, 57)."""
    by_id = {str(e.get("entry_id")): e for e in entries}
    for p in rows:
        where = f"records/prizes.json: award {p.get('id')} ({p.get('kind')} {p.get('place')})"
        entry = by_id.get(str(p.get("entry_id")))
        if entry is None:
            v.problems.append(f"{where}: entry {p.get('entry_id')} is not in"
                              " records/entries.json")
        elif entry.get("patron_id") != p.get("patron_id"):
            v.problems.append(f"{where}: awarded to patron {p.get('patron_id')}, but entry"
                              f" {p.get('entry_id')} is patron {entry.get('patron_id')}'s")
        elif _late(p.get("claimed_at"), p.get("deadline")):
            v.problems.append(f"{where}: claimed at {p.get('claimed_at')}, after its deadline"
                              f" {p.get('deadline')}")
        elif p.get("withheld_at") is not None and entry.get("disqualified_at") is None:
            v.problems.append(f"{where}: withheld, but entry {p.get('entry_id')} is not"
                              " disqualified")
        else:
            v.count("prizes checked")


def _dispute_bundles(rows: Sequence[dict[str, Any]], rings: Mapping[str, list[KeyRing]],
                     central: PublicKey | None, v: Verdict) -> None:
    for i, b in enumerate(rows, 1):
        table = str((b.get("manifest") or {}).get("table"))
        ring = rings.get(table, [KeyRing()])[0]
        found = check_dispute_bundle(b, ring, central)
        counter = b.get("countersignature") or {}
        for p in found:
            v.problems.append(f"records/dispute_bundles.json: bundle {i} (dispute"
                              f" {counter.get('dispute_id')}, table {table}): {p}")
        if not found:
            v.count("dispute bundles with both signatures")


def verify_bundle(bundle: Bundle, key: PublicKey | None = None) -> Verdict:
    """Every problem with the bundle; ``key`` is the central public key the certifier holds
    (None: the bundle's own keys/central.pub is used, and the verdict says so)."""
    v = Verdict()
    try:
        _verify(bundle, key, v)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # Records not of the shape exported: said with what was found before, no traceback.
        v.problems.append(f"the bundle's records are malformed, the check stopped there:"
                          f" {type(exc).__name__}: {exc}")
    return v


def _verify(bundle: Bundle, key: PublicKey | None, v: Verdict) -> None:
    central = _central(bundle, key, v)
    if central is None:
        v.problems.append("manifest: no central key to check its signature (give --key)")
    elif bundle.manifest.get("signed_by") != central.key_id or not bundle.signed_by(central):
        v.problems.append(f"manifest: the signature does not match the manifest and the"
                          f" central key {central.key_id!r}")
    _members(bundle, v)
    rings = _rings(bundle, v)
    messages = _messages(bundle, rings, v)
    scores = _records(bundle, "records/scores.json", v)
    _scores(scores, messages, v)
    _signed_rows(bundle, "records/hand_corrections.json", (HandCorrected.TYPE,),
                 fields=(("hand_id", "hand_id"), ("entry_id", "entry_id"), ("seat", "seat"),
                         ("ruling", "ruling"), ("recorded_net", "recorded_net"),
                         ("counted_net", "counted_net"), ("balance_before", "balance_before"),
                         ("balance_after", "balance_after")), messages=messages, v=v)
    _signed_rows(bundle, "records/disputes.json", (HandDisputed.TYPE, ScoreDisputed.TYPE),
                 fields=(("entry_id", "entry_id"),), messages=messages, v=v)
    settings = _settings(bundle, v)
    entries = _records(bundle, "records/entries.json", v)
    if settings is not None:
        _standings(bundle, settings, _score_records(scores, entries, settings, v), v)
    _prizes(_records(bundle, "records/prizes.json", v), entries, v)
    _draws(_records(bundle, "records/draws.json", v), v)
    _dispute_bundles(_records(bundle, "records/dispute_bundles.json", v), rings, central, v)
    _audit(bundle, central, v)


def _audit(bundle: Bundle, central: PublicKey | None, v: Verdict) -> None:
    """The period's audit rows against their own chain (each row's hash, each link between
    rows of consecutive ids, no id missing), and every signed head of the chain against the
    central key and the row it names where that row is in the bundle (D421)."""
    rows = _records(bundle, AUDIT, v)
    v.count("audit rows listed", len(rows))
    hashes: dict[int, str] = {}
    previous: tuple[int, str] | None = None
    for row in rows:
        row_id = int(row["id"])
        stored, prev = row.get("row_hash"), row.get("prev_hash")
        if not isinstance(stored, str) or not isinstance(prev, str):
            v.problems.append(f"{AUDIT}: row {row_id} ({row.get('action')}) has no chain hash:"
                              " it was not written by the service")
            previous = None
            continue
        content = row_hash(id=row_id, at=canonical_at(datetime.fromisoformat(str(row["at"]))),
                           actor=str(row["actor"]), action=str(row["action"]),
                           detail=detail_text(row["detail"]), prev_hash=prev)
        if content != stored:
            v.problems.append(f"{AUDIT}: row {row_id} ({row['action']} by {row['actor']}) does"
                              " not match its hash: it was changed after it was written")
        if previous is not None and row_id != previous[0] + 1:
            v.problems.append(f"{AUDIT}: ids jump from {previous[0]} to {row_id}: rows of the"
                              " period are missing (removed, or never stored before the"
                              " chain began)")
        elif previous is not None and prev != previous[1]:
            v.problems.append(f"{AUDIT}: row {row_id} does not follow row {previous[0]}: its"
                              f" prev_hash is not row {previous[0]}'s hash")
        else:
            v.count("audit rows chained")
        hashes[row_id] = stored
        previous = (row_id, stored)
    if AUDIT_HEADS not in bundle.members:
        return
    heads = _records(bundle, AUDIT_HEADS, v)
    v.count("audit chain heads listed", len(heads))
    for head in heads:
        row_id = int(head["row_id"])
        if central is None or not head_signature_verifies(
                row_id=row_id, row_hash=str(head["row_hash"]),
                signed_at=datetime.fromisoformat(str(head["signed_at"])),
                key_id=str(head["key_id"]), signature=str(head["signature"]), key=central):
            v.problems.append(f"{AUDIT_HEADS}: head {head.get('id')} (row {row_id}): the"
                              " signature does not verify against the central key")
        elif row_id in hashes and hashes[row_id] != head["row_hash"]:
            v.problems.append(f"{AUDIT}: row {row_id} is not the row signed head"
                              f" {head.get('id')} covers (changed, replaced or removed)")
        else:
            v.count("audit chain heads verified")


def problems_json(v: Verdict) -> str:
    """The verdict as a JSON document."""
    return json.dumps({"whole": v.whole, "problems": v.problems, "checked": v.checked,
                       "manifest_key": v.key_source}, indent=2)

