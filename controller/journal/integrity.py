"""The journal's integrity check: SQLite's own check, the schema's triggers, both hash chains
(order, content, links), the head row and the fault clearings. It reads raw rows without type
processing, so a damaged value is reported as a problem, never raised."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.engine import Connection

from controller.journal.checksums import GENESIS, outbox_row_checksum, record_row_checksum
from controller.journal.models import APPLICATION_ID, TRIGGERS
from controller.journal.records import (
    CREATED_KIND,
    FAULT_KIND,
    FAULTS_CLEARED_KIND,
    IntegrityProblem,
    JournalError,
    ProblemArea,
)
from controller.journal.rows import json_object

__all__ = ["ChainHeads", "check_connection"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainHeads:
    """Where a check begins: the last journal record and outbox message already verified
    (their seqs and checksums). The rows up to them are not read again."""

    journal_seq: int
    journal_checksum: str
    outbox_seq: int
    outbox_checksum: str


@dataclass(slots=True)
class _ChainState:
    """What verify() carries along one chain."""

    area: Literal["journal", "outbox"]
    expected_seq: int
    prev_checksum: str = GENESIS
    last_seq: int = 0
    rows: int = 0
    problems: list[IntegrityProblem] = field(default_factory=list)

    def problem(self, code: str, detail: str, seq: int | None) -> None:
        self.problems.append(IntegrityProblem(area=self.area, code=code, detail=detail, seq=seq))


def check_connection(conn: Connection, start: ChainHeads | None = None, *,
                     whole_file: bool = True) -> list[IntegrityProblem]:
    """Every problem in the journal open on `conn` (one read transaction); [] when intact.

    With `start`, both chains are checked only after it (the rows it names must still hold
    its checksums); `whole_file=False` skips SQLite's own check, which reads every page.
    """
    problems = _check_sqlite(conn, whole_file=whole_file)
    if start is not None:
        problems += _check_start(conn, start)
    journal, genesis_base, cleared = _check_journal_chain(conn, start)
    problems += journal.problems
    outbox = _check_outbox_chain(conn, genesis_base, start)
    problems += outbox.problems
    problems += _check_links(conn, start.outbox_seq if start else 0)
    problems += _check_head(conn, journal, outbox, genesis_base or 0)
    problems += _check_cleared(conn, cleared)
    return problems


def _check_start(conn: Connection, start: ChainHeads) -> list[IntegrityProblem]:
    """The rows a verified head names still hold the checksums it names."""
    problems: list[IntegrityProblem] = []
    checks: tuple[tuple[ProblemArea, str, int, str], ...] = (
            ("journal", "SELECT checksum FROM journal WHERE seq = ?", start.journal_seq,
             start.journal_checksum),
            ("outbox", "SELECT checksum FROM outbox WHERE seq = ?", start.outbox_seq,
             start.outbox_checksum))
    for area, sql, seq, checksum in checks:
        if area == "outbox" and checksum == GENESIS:
            continue  # no message yet when it was verified
        stored = conn.exec_driver_sql(sql, (seq,)).scalar()
        if stored != checksum:
            problems.append(IntegrityProblem(
                area=area, code="verified_changed", seq=seq,
                detail="the row the signed verified head names was removed or changed "
                       "after it was verified"))
    return problems


def _raw_rows(conn: Connection, sql: str, params: tuple[Any, ...] = ()
              ) -> Iterator[Mapping[str, Any]]:
    result = conn.exec_driver_sql(sql, params)
    keys = list(result.keys())
    for values in result:
        yield dict(zip(keys, tuple(values), strict=True))


def _printable(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def sqlite_problems(conn: Connection) -> list[IntegrityProblem]:
    """SQLite's own whole-file check (every page and index), as problems."""
    return [IntegrityProblem(area="database", code="sqlite_integrity",
                             detail=f"SQLite integrity check: {line}")
            for (line,) in conn.exec_driver_sql("PRAGMA integrity_check") if line != "ok"]


def _check_sqlite(conn: Connection, *, whole_file: bool) -> list[IntegrityProblem]:
    problems = sqlite_problems(conn) if whole_file else []
    app_id = conn.exec_driver_sql("PRAGMA application_id").scalar()
    if app_id != APPLICATION_ID:
        problems.append(IntegrityProblem(area="database", code="not_a_journal",
                                         detail=f"application_id is {app_id}, "
                                                f"expected {APPLICATION_ID}"))
    present = {str(name) for (name,) in conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for name in TRIGGERS:
        if name not in present:
            problems.append(IntegrityProblem(
                area="database", code="trigger_missing",
                detail=f"the append-only trigger {name} was removed"))
    return problems


def _chain_step(state: _ChainState, row: Mapping[str, Any], computed: str) -> None:
    """The checks shared by both chains: seq order, content checksum, link to the previous row."""
    seq = row["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        state.problem("row_unreadable", f"seq is {_printable(seq)}, not an integer", None)
        return
    if seq > state.expected_seq:
        missing = (f"seq {state.expected_seq}" if seq == state.expected_seq + 1
                   else f"seqs {state.expected_seq} to {seq - 1}")
        state.problem("seq_gap", f"{missing} missing (removed?)", state.expected_seq)
    elif seq < state.expected_seq:
        state.problem("seq_order", f"seq {seq} is out of order", seq)
    if computed != row["checksum"]:
        state.problem("checksum_mismatch",
                      "content does not match its checksum (the row was changed)", seq)
    if row["prev_checksum"] != state.prev_checksum:
        state.problem("chain_broken",
                      "does not follow the previous row (a row before it was removed, "
                      "changed or reordered)", seq)
    state.expected_seq = max(state.expected_seq, seq + 1)
    state.prev_checksum = row["checksum"]
    state.last_seq = seq
    state.rows += 1


def _check_journal_chain(conn: Connection, start: ChainHeads | None,
                         ) -> tuple[_ChainState, int | None, list[tuple[int, Any]]]:
    """The journal chain; also returns the genesis outbox base and the fault-clearing payloads."""
    state = _ChainState(area="journal", expected_seq=1)
    genesis_base: int | None = None
    cleared: list[tuple[int, Any]] = []
    after = 0
    if start is not None:
        after = start.journal_seq
        state.expected_seq, state.prev_checksum = after + 1, start.journal_checksum
        state.last_seq, state.rows = after, 1
        genesis_base = _genesis_base(conn)
    for row in _raw_rows(conn, "SELECT * FROM journal WHERE seq > ? ORDER BY seq",
                         (after,)):
        _chain_step(state, row, record_row_checksum(row, row["prev_checksum"]))
        seq = row["seq"]
        try:
            payload = json_object(row["payload"], "payload")
        except JournalError as e:
            state.problem("not_json", str(e), seq)
            continue
        try:
            datetime.fromisoformat(row["wall"])
        except (TypeError, ValueError):
            state.problem("row_unreadable", f"wall is {_printable(row['wall'])}", seq)
        if seq == 1:
            base = payload.get("outbox_seq_base")
            if row["kind"] != CREATED_KIND or not isinstance(base, int) or base < 0:
                state.problem("genesis", "the first record is not the journal's creation record",
                              seq)
            else:
                genesis_base = base
        if row["kind"] == FAULTS_CLEARED_KIND:
            cleared.append((seq, payload.get("faults")))
    if state.rows == 0:
        state.problem("genesis", "the journal has no records (not even its creation record)",
                      None)
    return state, genesis_base, cleared


def _genesis_base(conn: Connection) -> int | None:
    """The outbox seq base the creation record (seq 1) names, read on its own."""
    text = conn.exec_driver_sql("SELECT payload FROM journal WHERE seq = 1").scalar()
    try:
        base = json_object(str(text), "payload").get("outbox_seq_base")
    except JournalError:
        return None
    return base if isinstance(base, int) and not isinstance(base, bool) else None


def _check_outbox_chain(conn: Connection, base: int | None,
                        start: ChainHeads | None) -> _ChainState:
    state = _ChainState(area="outbox", expected_seq=(base or 0) + 1)
    last_record, after = 0, 0
    if start is not None and start.outbox_checksum != GENESIS:
        after = start.outbox_seq
        state.expected_seq, state.prev_checksum = after + 1, start.outbox_checksum
        state.last_seq, state.rows = after, 1
        last_record = int(conn.exec_driver_sql("SELECT record_seq FROM outbox WHERE seq = ?",
                                               (after,)).scalar() or 0)
    for row in _raw_rows(conn, "SELECT * FROM outbox WHERE seq > ? ORDER BY seq",
                         (after,)):
        _chain_step(state, row, outbox_row_checksum(row, row["prev_checksum"]))
        seq = row["seq"]
        try:
            json_object(row["body"], "body")
        except JournalError as e:
            state.problem("not_json", str(e), seq)
        record_seq = row["record_seq"]
        if isinstance(record_seq, int) and record_seq < last_record:
            state.problem("record_order", f"caused by journal seq {record_seq}, before the "
                          f"previous message's {last_record}", seq)
        if isinstance(record_seq, int):
            last_record = max(last_record, record_seq)
    return state


def _check_links(conn: Connection, after: int) -> list[IntegrityProblem]:
    return [
        IntegrityProblem(area="outbox", code="orphan", seq=int(seq),
                         detail=f"caused by journal seq {_printable(rseq)}, which is missing")
        for seq, rseq in conn.exec_driver_sql(
            "SELECT o.seq, o.record_seq FROM outbox o LEFT JOIN journal j "
            "ON j.seq = o.record_seq WHERE j.seq IS NULL AND o.seq > ? ORDER BY o.seq",
            (after,))
    ]


def _check_head(conn: Connection, journal: _ChainState, outbox: _ChainState,
                outbox_base: int) -> list[IntegrityProblem]:
    rows = list(_raw_rows(conn, "SELECT * FROM head"))
    if len(rows) != 1 or rows[0].get("id") != 1:
        return [IntegrityProblem(area="head", code="head_missing",
                                 detail=f"expected one head row, found {len(rows)}")]
    head = rows[0]
    problems: list[IntegrityProblem] = []
    for area, chain, empty, seq_key, sum_key in (
        ("journal", journal, 0, "journal_seq", "journal_checksum"),
        ("outbox", outbox, outbox_base, "outbox_seq", "outbox_checksum"),
    ):
        last_seq = chain.last_seq if chain.rows else empty
        if head[seq_key] != last_seq or head[sum_key] != chain.prev_checksum:
            problems.append(IntegrityProblem(
                area="head", code="head_mismatch", seq=last_seq,
                detail=f"the {area} ends at seq {last_seq} but the head row says seq "
                       f"{_printable(head[seq_key])} (rows at the end were removed, or the "
                       "head was changed)"))
    return problems


def _check_cleared(conn: Connection, cleared: list[tuple[int, Any]]) -> list[IntegrityProblem]:
    faults = {int(seq) for (seq,) in conn.exec_driver_sql(
        "SELECT seq FROM journal WHERE kind = ?", (FAULT_KIND,))}
    problems: list[IntegrityProblem] = []
    for seq, listed in cleared:
        items = listed if isinstance(listed, list) else None
        if items is None or not all(isinstance(i, dict) and i.get("seq") in faults
                                    for i in items):
            problems.append(IntegrityProblem(
                area="faults", code="bad_clearing", seq=seq,
                detail="the clearing record names faults that were never recorded"))
    return problems
