"""The ingest benchmark's result rows, the database check, and where the CPU went."""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from leaderboard.models import Message, Rejection, Score, TableProgress
from support.ingest_tables import FakeTable

# --- one scenario ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One line of the result table."""

    scenario: str
    broker: str
    database: str
    messages: int
    workers: int = 0
    seconds: float | None = None
    stored: int = 0
    duplicates_received: int = 0
    stored_twice: int = 0
    rejected: int = 0
    resends: int = 0
    verify_us: float | None = None  # verify_envelope alone, just before (core rows)
    problem: str | None = None
    note: str = ""
    cpu: dict[str, float] | None = None  # CpuMeter.read() and "ingest" (MQTT rows)

    @property
    def rate(self) -> float | None:
        return None if not self.seconds else self.stored / self.seconds


def check_database(engine: sa.Engine, tables: Sequence[FakeTable]) -> tuple[int, int, str | None]:
    """(stored rows, (table, seq) stored more than once, a problem or None)."""
    with engine.connect() as connection:
        count = connection.scalar(sa.select(sa.func.count(Message.id))) or 0
        twice = len(connection.execute(
            sa.select(Message.table_id, Message.seq).group_by(Message.table_id, Message.seq)
            .having(sa.func.count() > 1)).all())
        rejections = connection.scalar(sa.select(sa.func.count(Rejection.id))) or 0
        acknowledged = connection.scalar(
            sa.select(sa.func.count()).select_from(Score)
            .where(Score.acknowledged_at.is_not(None))) or 0
    expected = sum(len(t.messages) for t in tables)
    scores = sum(t.scores for t in tables)
    problem = None
    if count != expected:
        problem = f"{count:,} messages stored, expected {expected:,}"
    elif twice:
        problem = f"{twice} (table, seq) stored more than once"
    elif rejections:
        problem = f"{rejections} rejections"
    elif acknowledged != scores:
        problem = f"{acknowledged} acknowledged scores, expected {scores}"
    return count, twice, problem


def contiguous(engine: sa.Engine) -> int:
    """Messages stored without a hole, all tables together (a cheap poll: one row a table)."""
    with engine.connect() as connection:
        return int(connection.scalar(sa.select(sa.func.sum(TableProgress.contiguous_seq)))
                   or 0)


def _ticks(path: str, fields: slice) -> int:
    try:
        return sum(int(x) for x in Path(path).read_text().split()[fields])
    except (OSError, ValueError):
        return 0


class CpuMeter:
    """CPU seconds used while a scenario runs: the whole machine, this process (the fake
    tables and the poll), the private broker and PostgreSQL's processes (read from /proc).
    What the ingest instances used, they report themselves."""

    def __init__(self, broker_pid: int | None) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.broker_pid = broker_pid
        self.wall = time.perf_counter()
        self.start = self._sample()

    def _sample(self) -> dict[str, float]:
        cpu_line = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = [int(x) for x in cpu_line]
        own = resource.getrusage(resource.RUSAGE_SELF)
        postgres = 0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _comm(entry) == "postgres":
                postgres += _ticks(f"{entry}/stat", slice(13, 15))
        broker = _ticks(f"/proc/{self.broker_pid}/stat", slice(13, 15)) \
            if self.broker_pid else 0
        return {"busy": (sum(ticks) - ticks[3] - ticks[4]) / self.hz,
                "tables": own.ru_utime + own.ru_stime, "broker": broker / self.hz,
                "postgres": postgres / self.hz}

    def read(self) -> dict[str, float]:
        """CPU seconds per part since the meter started, and ``wall`` seconds."""
        end = self._sample()
        out = {key: end[key] - value for key, value in self.start.items()}
        out["wall"] = time.perf_counter() - self.wall
        return out


def children_cpu() -> float:
    """CPU seconds used so far by this process's live children (verification workers)."""
    ticks = sum(_ticks(f"/proc/{child.pid}/stat", slice(13, 15))
                for child in multiprocessing.active_children())
    return ticks / os.sysconf("SC_CLK_TCK")


def _comm(entry: Path) -> str:
    try:
        return (entry / "comm").read_text().strip()
    except OSError:
        return ""




def cpu_line(row: Row) -> str:
    """Where the machine's CPU went during a scenario, in microseconds per stored message."""
    cpu = row.cpu or {}
    per = {key: value / row.stored * 1e6 for key, value in cpu.items() if key != "wall"}
    known = sum(per.get(k, 0.0) for k in ("ingest", "tables", "broker", "postgres"))
    cores = os.cpu_count() or 1
    busy = cpu.get("busy", 0.0) / (cpu.get("wall") or 1.0) / cores
    parts = ", ".join(f"{label} {per[key]:,.0f}" for key, label in (
        ("ingest", "ingest"), ("tables", "fake tables"), ("broker", "broker"),
        ("postgres", "postgresql")) if key in per and (key != "postgres" or per[key] > 0))
    return (f"CPU per message, {row.scenario} on {row.database}: {per.get('busy', 0):,.0f} us "
            f"machine-wide = {parts}, other {max(per.get('busy', 0) - known, 0):,.0f} "
            f"(the {cores} CPUs {busy:.0%} busy)")


def print_table(rows: Sequence[Row]) -> None:
    header = (f"{'scenario':<34} {'broker':<10} {'database':<10} {'workers':>7} "
              f"{'messages':>9} {'seconds':>8} {'msg/s':>7} {'stored':>8} {'dup recv':>8} "
              f"{'stored 2x':>9} {'rejected':>8} {'resends':>7}  note")
    print(header)
    print("-" * len(header))
    for row in rows:
        seconds = "-" if row.seconds is None else f"{row.seconds:.2f}"
        rate = "-" if row.rate is None else f"{row.rate:,.0f}"
        note = f"WRONG: {row.problem}" if row.problem else row.note
        print(f"{row.scenario:<34} {row.broker:<10} {row.database:<10} {row.workers:>7} "
              f"{row.messages:>9,} {seconds:>8} {rate:>7} {row.stored:>8,} "
              f"{row.duplicates_received:>8,} {row.stored_twice:>9,} {row.rejected:>8,} "
              f"{row.resends:>7,}  {note}", flush=True)
