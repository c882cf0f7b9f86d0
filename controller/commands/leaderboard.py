"""`showdown leaderboard ...`: run the central service, print the standings from its database,
or audit its stored messages against the tables' enrolled keys."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from controller.cli import CommandError
from game.tournament import Stage
from runtime.errors import one_line
from runtime.logs import configure_logging
from runtime.settings_files import read_tournament

if TYPE_CHECKING:
    from sqlalchemy import Engine, Inspector

    from wire.envelope import Envelope
    from wire.signing import KeyRing

__all__ = ["AUDIT_FAILED", "AuditFailure", "MessageAudit", "audit_messages", "register"]

AUDIT_FAILED: Final = 1  # exit status of `audit` when a stored message fails verification


def register(sub: Any) -> None:
    """Add the `leaderboard` subcommand group."""
    p: argparse.ArgumentParser = sub.add_parser(
        "leaderboard", help="the central service: scores from every table, standings, the page",
        description="The central leaderboard service (docs/leaderboard.md).")
    lsub = p.add_subparsers(dest="leaderboard_command", metavar="ACTION", required=True)
    serve = lsub.add_parser("serve", help="run the service (systemd runs this)")
    serve.add_argument("--config", type=Path, required=True,
                       help="leaderboard config file (TOML, docs/leaderboard.md)")
    serve.set_defaults(handler=_serve)
    st = lsub.add_parser("standings", help="print the current standings from the database")
    st.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    st.add_argument("--tournament", type=Path,
                    help="tournament settings (default: $SHOWDOWN_TOURNAMENT or"
                         " config/tournament.toml)")
    st.add_argument("--rows", type=int, default=20, help="rows of the board (default 20)")
    st.add_argument("--venue", default="", help="venue id shown in the JSON")
    st.add_argument("--stage", choices=["qualifying", "semi_final", "final"],
                    help="the board to print (default: the current stage)")
    st.add_argument("--at", metavar="TIME",
                    help="as of this venue-local time, e.g. 2026-07-10T21:00 (default: now;"
                         " decides the current stage and week)")
    st.add_argument("--json", action="store_true", help="print the JSON document of the API")
    st.set_defaults(handler=_standings)
    au = lsub.add_parser(
        "audit", help="verify every stored message again against the tables' enrolled keys",
        description="Verify every stored message again: its signed envelope against the"
                    " table's enrolled Ed25519 key (or a key the audit log shows it had when"
                    " the message arrived), the SHA-256 of the payload, and the stored row"
                    " against the envelope. Exit status 1 if any message fails.")
    au.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    au.add_argument("--json", action="store_true", help="print the result as JSON")
    au.set_defaults(handler=_audit)
    bk = lsub.add_parser(
        "backup", help="copy the SQLite database while the service runs, and check the copy",
        description="A consistent, checked copy of the leaderboard's SQLite database, safe"
                    " while the service runs (PostgreSQL: pg_dump). Never overwrites a file.")
    bk.add_argument("--db", required=True,
                    help="database URL, e.g. sqlite:////var/lib/showdown-leaderboard/"
                         "leaderboard.sqlite3")
    bk.add_argument("--out", type=Path, required=True,
                    help="the backup file, or a directory for leaderboard-<UTC time>.sqlite3")
    bk.add_argument("--keep", type=int, metavar="N",
                    help="with a directory: keep only the newest N backups there")
    bk.add_argument("--json", action="store_true", help="print the result as JSON")
    bk.set_defaults(handler=_backup)


def _backup(args: argparse.Namespace) -> int:
    from leaderboard.backup import BackupError, backup_sqlite, sqlite_file  # noqa: PLC0415

    try:
        report = backup_sqlite(sqlite_file(args.db), args.out, keep=args.keep)
    except BackupError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps({"path": str(report.path), "size_bytes": report.size_bytes,
                          "sha256": report.sha256, "schema": report.schema,
                          "rows": report.rows, "seconds": round(report.seconds, 3),
                          "removed": [str(p) for p in report.removed]}, sort_keys=True))
        return 0
    rows = ", ".join(f"{n:,} {table}" for table, n in report.rows.items())
    print(f"backup {report.path}: {rows}; integrity ok; schema {report.schema};"
          f" {report.size_bytes:,} bytes in {report.seconds:.2f} s; sha256 {report.sha256}")
    for path in report.removed:
        print(f"removed older backup {path}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from leaderboard.app import LeaderboardService, run_service  # noqa: PLC0415
    from leaderboard.config import read_leaderboard_config  # noqa: PLC0415

    config = read_leaderboard_config(args.config)
    configure_logging(fmt=config.log_format, level=config.log_level)
    return asyncio.run(run_service(LeaderboardService(config)))


@contextmanager
def _leaderboard_database(url: str, table: str) -> Iterator[tuple[Engine, Inspector]]:
    """An engine on the leaderboard database at ``url`` that has ``table``, and its
    inspector; a database that cannot be used or read is a one-line CommandError."""
    from sqlalchemy import inspect  # noqa: PLC0415
    from sqlalchemy.exc import SQLAlchemyError  # noqa: PLC0415

    from leaderboard.db import make_engine  # noqa: PLC0415

    try:
        engine = make_engine(url)
    except (SQLAlchemyError, ValueError) as exc:
        raise CommandError(f"cannot use database {url!r}: {exc}") from exc
    try:
        try:
            inspector = inspect(engine)
            if not inspector.has_table(table):
                raise CommandError(f"{url} has no leaderboard tables: start the service"
                                   " on it once (it migrates the database)")
            yield engine, inspector
        except SQLAlchemyError as exc:
            raise CommandError(f"cannot read {url}: {one_line(exc)}") from exc
    finally:
        engine.dispose()


def _standings(args: argparse.Namespace) -> int:
    from leaderboard.standings_view import ViewOptions, format_text, standings  # noqa: PLC0415

    if not 1 <= args.rows <= 10_000:
        raise CommandError(f"--rows must be 1..10000, got {args.rows}")
    settings = read_tournament(args.tournament)
    now = datetime.now(UTC)
    if args.at is not None:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError as exc:
            raise CommandError(f"--at {args.at!r} is not a time such as 2026-07-10T21:00"
                               ) from exc
        now = at.replace(tzinfo=settings.tz) if at.tzinfo is None else at
    with _leaderboard_database(args.db, "scores") as (engine, _):
        doc = standings(engine, settings,
                        ViewOptions(venue=args.venue, title=settings.venue_name,
                                    rows=args.rows,
                                    stage=Stage(args.stage) if args.stage else None),
                        now=now)
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(format_text(doc))
    return 0


# ---- audit ----------------------------------------------------------------------------------


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
    from wire.signing import KeyRing, parse_public_key  # noqa: PLC0415

    return KeyRing([parse_public_key(table, key)])


def _table_keys(engine: Engine) -> dict[str, _TableKeys]:
    """Every enrolled table's keys: the current one and those the audit log says it replaced."""
    from sqlalchemy import select  # noqa: PLC0415
    from sqlalchemy.orm import Session  # noqa: PLC0415

    from leaderboard.eligibility import from_db  # noqa: PLC0415
    from leaderboard.models import AuditEntry, TableRecord  # noqa: PLC0415
    from wire.signing import KeyFormatError  # noqa: PLC0415

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
    from wire.envelope import EnvelopeError, verify_envelope  # noqa: PLC0415

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
    from leaderboard.eligibility import from_db  # noqa: PLC0415
    from wire.envelope import canonical_json  # noqa: PLC0415

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
    from sqlalchemy import select  # noqa: PLC0415

    from leaderboard.models import Message  # noqa: PLC0415

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


def _audit(args: argparse.Namespace) -> int:
    with _leaderboard_database(args.db, "messages") as (engine, inspector):
        columns = {c["name"] for c in inspector.get_columns("messages")}
        if not {"envelope", "payload_sha256"} <= columns:
            raise CommandError(f"{args.db} is at schema revision 0001, which keeps no"
                               " evidence to verify: start the service on it once (it"
                               " migrates the database), then audit")
        audit = audit_messages(engine)
    print(json.dumps(audit.as_dict(), indent=2) if args.json else audit.text())
    return AUDIT_FAILED if audit.failures else 0
