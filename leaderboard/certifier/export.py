"""The certifier's bundle written from the central database (read only, apart from the audit
row that records the export): the rules in force, the period's entries, their scores with
the tables' signed messages and acknowledgements, disputes and rulings, prizes and claims,
the Final's seat draw with its commitment, the audit rows (and their chain heads where the
database has them), the tables' public keys and the central one (D382)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Engine, MetaData, Table, inspect, select
from sqlalchemy.orm import Session, undefer

from game.messages.corrections import HandCorrected, HandDisputed
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.tournament.standings import StandingsError, leaderboard
from leaderboard.certifier.manifest import sha256_hex, write_bundle
from leaderboard.desk.action import begin_action, write_audit
from leaderboard.desk.scores import score_records
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import (
    AuditEntry,
    Dispute,
    DisputeBundleRecord,
    Draw,
    DrawCommitment,
    Entry,
    HandCorrection,
    Message,
    PrizeAward,
    Score,
    TableRecord,
)
from wire.envelope import canonical_json
from wire.signing import Signer

__all__ = ["MEMBERS", "Exported", "Period", "export_bundle", "standings_of"]

# Every member a bundle holds (audit_heads.json only where the database has the table).
MEMBERS: Final = (
    "rules/tournament.toml", "rules/paytables.toml", "records/entries.json",
    "records/scores.json", "records/messages.json", "records/disputes.json",
    "records/hand_corrections.json", "records/dispute_bundles.json", "records/prizes.json",
    "records/draws.json", "records/audit.json", "records/standings.json", "keys/tables.json",
    "keys/central.pub",
)
AUDIT_HEADS: Final = "records/audit_heads.json"
EXPORTED: Final = "certifier.exported"


@dataclass(frozen=True, slots=True)
class Period:
    """The venue-local days exported, both included."""

    first: date
    last: date

    def bounds(self, settings: TournamentSettings) -> tuple[datetime, datetime]:
        """[start, end) in UTC: from the first day's midnight to the day after the last."""
        start = datetime.combine(self.first, time(0), tzinfo=settings.tz)
        end = datetime.combine(self.last + timedelta(days=1), time(0), tzinfo=settings.tz)
        return as_utc(start), as_utc(end)


@dataclass(frozen=True, slots=True, kw_only=True)
class Exported:
    """What was written: the file, its manifest and each member's count of records."""

    path: Path
    manifest: Mapping[str, Any]
    counts: Mapping[str, int]


def _plain(value: Any) -> Any:
    """A database value as JSON: times in UTC ISO 8601, dates ISO, the rest as it is."""
    if isinstance(value, datetime):
        return from_db(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _row(obj: Any, names: Iterable[str]) -> dict[str, Any]:
    return {n: _plain(getattr(obj, n)) for n in names}


def _columns(model: Any) -> list[str]:
    return [c.key for c in inspect(model).mapper.column_attrs]


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _reflected(engine: Engine, name: str, where: Any = None) -> list[dict[str, Any]] | None:
    """Every row of a table as the database has it (all its columns, whoever added them),
    or None when the database has no such table."""
    if not inspect(engine).has_table(name):
        return None
    table = Table(name, MetaData(), autoload_with=engine)
    query = select(table)
    if where is not None:
        query = query.where(where(table))
    order = list(table.primary_key.columns) or list(table.columns)[:1]
    with engine.connect() as connection:
        return [{k: _plain(v) for k, v in r._mapping.items()}
                for r in connection.execute(query.order_by(*order))]


def standings_of(records_by_stage: Mapping[Stage, Sequence[Any]],
                 settings: TournamentSettings) -> dict[str, Any]:
    """Each stage's board as the service computes it: position, entry and counted score
    (or, where the stored scores break the rules, why no board can be computed)."""
    out: dict[str, Any] = {}
    for stage, records in records_by_stage.items():
        try:
            board = leaderboard(records, settings, stage=stage)
        except StandingsError as exc:
            out[stage.value] = {"error": str(exc)}
            continue
        out[stage.value] = [{"position": p.position, "entry_id": p.entry_id,
                             "score_cents": p.score_cents} for p in board.places]
    return out


def _messages(session: Session, entries: set[str], scores: Sequence[Score]
              ) -> list[dict[str, Any]]:
    """The tables' signed messages about the entries' scores and disputes: each score row's
    own ``score.recorded``, and every ``score.*``, ``hand.disputed`` and ``hand.corrected``
    message naming one of the entries."""
    keys = {(s.table_id, int(s.seq)) for s in scores}
    rows = session.scalars(select(Message).where(
        Message.type.like("score.%") | Message.type.in_((HandDisputed.TYPE, HandCorrected.TYPE)))
                           .options(undefer(Message.envelope))
                           .order_by(Message.table_id, Message.seq)).all()
    out = []
    for m in rows:
        if (m.table_id, int(m.seq)) in keys or str(m.body.get("entry_id")) in entries:
            out.append({"table": m.table_id, "seq": int(m.seq), "type": m.type,
                        "received_at": _plain(m.received_at), "envelope": m.envelope})
    return out


def _table_keys(session: Session) -> dict[str, dict[str, Any]]:
    """Each enrolled table's key and venue, with the keys it had before (audit log)."""
    tables = {t.table_id: {"public_key": t.public_key, "venue": t.venue,
                           "enrolled_at": _plain(t.enrolled_at), "active": t.active,
                           "former_keys": []}
              for t in session.scalars(select(TableRecord).order_by(TableRecord.table_id))}
    for change in session.scalars(select(AuditEntry).where(
            AuditEntry.action == "table.enrolment_changed").order_by(AuditEntry.id)):
        table, old = change.detail.get("table"), change.detail.get("old_key")
        if str(table) in tables and isinstance(old, str) and old not in (
                tables[str(table)]["public_key"], *tables[str(table)]["former_keys"]):
            tables[str(table)]["former_keys"].append(old)
    return tables


def _draws(session: Session, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The draws made in the period with their commitments (seed revealed once used), and
    the commitments made in the period that no draw used (digest only)."""
    out: list[dict[str, Any]] = []
    used: set[int] = set()
    commitment_cols = [c for c in _columns(DrawCommitment) if c != "seed_hex"]
    for d in session.scalars(select(Draw).where(Draw.drawn_at >= start, Draw.drawn_at < end)
                             .order_by(Draw.id)):
        row = _row(d, _columns(Draw))
        c = session.get(DrawCommitment, d.commitment_id) if d.commitment_id else None
        if c is not None:
            used.add(c.id)
            row["commitment"] = {**_row(c, commitment_cols), "seed_hex": c.seed_hex}
        out.append(row)
    for c in session.scalars(select(DrawCommitment).where(
            DrawCommitment.committed_at >= start, DrawCommitment.committed_at < end)
            .order_by(DrawCommitment.id)):
        if c.id not in used:
            out.append({"stage": c.stage, "unused_commitment": _row(c, commitment_cols)})
    return out


def export_bundle(engine: Engine, settings: TournamentSettings, *, rules: Mapping[str, bytes],
                  period: Period, out: Path, signer: Signer, exported_by: str, venue: str,
                  now: datetime) -> Exported:
    """Write the period's bundle to ``out`` (never overwritten), signed by ``signer`` (the
    central key), and record the export in the audit under ``exported_by``."""
    start, end = period.bounds(settings)
    with Session(engine) as session:
        entries = session.scalars(select(Entry).where(Entry.bought_at >= start,
                                                      Entry.bought_at < end)
                                  .order_by(Entry.entry_id)).all()
        ids = {e.entry_id for e in entries}
        scores = [s for s in session.scalars(select(Score).order_by(Score.entry_id))
                  if s.entry_id in ids]
        disputes = [d for d in session.scalars(select(Dispute).order_by(Dispute.id))
                    if d.entry_id in ids]
        dispute_ids = {d.id for d in disputes}
        bundles = [json.loads(b.bundle) for b in session.scalars(
            select(DisputeBundleRecord).options(undefer(DisputeBundleRecord.bundle))
            .order_by(DisputeBundleRecord.id))
            if b.dispute_id in dispute_ids]
        corrections = [c for c in session.scalars(select(HandCorrection)
                                                   .order_by(HandCorrection.id))
                       if c.entry_id in ids]
        prizes = [p for p in session.scalars(select(PrizeAward).order_by(PrizeAward.id))
                  if p.entry_id in ids]
        by_stage = {stage: [r for r in score_records(session, settings, stage)
                            if r.entry_id in ids] for stage in Stage}
        members: dict[str, bytes] = {
            **rules,
            "records/entries.json": _json([_row(e, _columns(Entry)) for e in entries]),
            "records/scores.json": _json([_row(s, _columns(Score)) for s in scores]),
            "records/messages.json": _json(_messages(session, ids, scores)),
            "records/disputes.json": _json([_row(d, _columns(Dispute)) for d in disputes]),
            "records/hand_corrections.json": _json(
                [_row(c, _columns(HandCorrection)) for c in corrections]),
            "records/dispute_bundles.json": _json(bundles),
            "records/prizes.json": _json([_row(p, _columns(PrizeAward)) for p in prizes]),
            "records/draws.json": _json(_draws(session, start, end)),
            "records/standings.json": _json(standings_of(by_stage, settings)),
            "keys/tables.json": _json(_table_keys(session)),
            "keys/central.pub": (signer.public_key.enrolment_line() + "\n").encode(),
        }
    audit = _reflected(engine, "audit", lambda t: (t.c.at >= start) & (t.c.at < end))
    members["records/audit.json"] = _json(audit or [])
    heads = _reflected(engine, "audit_heads")
    if heads is not None:
        members[AUDIT_HEADS] = _json(heads)
    counts = {name: len(json.loads(data)) for name, data in members.items()
              if name.endswith(".json")}
    header = {"venue": venue, "period": {"from": period.first.isoformat(),
                                         "to": period.last.isoformat(),
                                         "timezone": str(settings.tz),
                                         "start_utc": start.isoformat(),
                                         "end_utc": end.isoformat()},
              "exported_at": as_utc(now).isoformat(), "exported_by": exported_by,
              "rules": {name: sha256_hex(rules[name]) for name in sorted(rules)},
              "counts": counts}
    manifest = write_bundle(out, members, header, signer)
    with Session(engine) as session:  # written as every desk action's audit row is
        actor = begin_action(session, exported_by)
        write_audit(session, now, actor, EXPORTED, detail={
            "file": out.name, "from": period.first.isoformat(), "to": period.last.isoformat(),
            "manifest_sha256": sha256_hex(canonical_json(manifest)), "counts": counts})
        session.commit()
    return Exported(path=out, manifest=manifest, counts=counts)
