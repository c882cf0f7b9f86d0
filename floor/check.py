"""The final report of a simulated floor run (`showdown simulate floor`): what every table's
journal says it did, checked message by message against what the central database holds.

A message is lost when a table's journal has it and the central database does not, and
duplicated when the central database holds a (table, seq) twice or a hand twice; a score is
wrong when the central database's differs from the one the table journaled. Any of these, a
table that stopped, or a message the central service rejected is a problem (exit 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from controller.journal import Journal
from leaderboard.models import Hand, Message, Rejection, Score
from wire.messages import Alert, HandSettled, HandVoided, ScoreRecorded

__all__ = ["CentralFigures", "FloorReport", "TableFigures", "central_figures",
           "journal_figures"]


@dataclass(slots=True)
class TableFigures:
    """One table, as its journal and the central database show it."""

    table: str
    hands: int = 0  # hands settled or voided (journal)
    heats: int = 0
    wall_s: float = 0.0
    published: int = 0  # messages in its outbox (journal)
    delivered: int = 0  # messages its link had acknowledged by the broker
    ingested: int = 0  # its messages the central database holds
    lost: list[int] = field(default_factory=list)  # seqs the central database lacks
    duplicated: int = 0  # (table, seq) or hand ids held twice centrally
    hands_central: int = 0
    # heat -> (virtual time of its first hand, of its last, hands): the pace within heats
    heat_span: dict[str, tuple[datetime, datetime, int]] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)  # entry -> score (journal)
    score_mismatches: list[str] = field(default_factory=list)
    alerts: Counter[str] = field(default_factory=Counter)  # kind -> how many
    resent: int = 0  # desk commands the floor's desk sent again (a delivery went missing)
    problem: str | None = None

    @property
    def hands_per_hour(self) -> float | None:
        """Hands an hour of virtual time within its heats (from each heat's first hand to
        its last; None without a heat of two hands)."""
        gaps = sum(n - 1 for _, _, n in self.heat_span.values())
        hours = sum((last - first).total_seconds()
                    for first, last, _ in self.heat_span.values()) / 3600
        return gaps / hours if gaps and hours > 0 else None


@dataclass(slots=True)
class CentralFigures:
    """What the central database holds per table (messages, hands, scores, rejections)."""

    seqs: dict[str, Counter[int]] = field(default_factory=dict)
    hands: dict[str, Counter[str]] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)  # entry -> score_cents
    rejected: int = 0


@dataclass(slots=True)
class FloorReport:
    """The run's outcome: per table figures, wall time, and every problem found."""

    tables: list[TableFigures]
    wall_s: float
    virtual_start: datetime
    virtual_end: datetime
    ingest: dict[str, Any] = field(default_factory=dict)
    rejected: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def hands(self) -> int:
        """Hands played on the whole floor."""
        return sum(t.hands for t in self.tables)

    @property
    def hands_per_second(self) -> float:
        """Hands a second of wall time, the whole floor."""
        return self.hands / self.wall_s if self.wall_s > 0 else 0.0

    def check(self) -> list[str]:
        """Every problem: a stopped table, lost or duplicated messages, wrong scores."""
        problems = list(self.problems)
        for t in self.tables:
            if t.problem:
                problems.append(t.problem)
            if t.lost:
                problems.append(f"{t.table}: {len(t.lost)} message(s) never reached the"
                                f" central database (seq {', '.join(map(str, t.lost[:10]))})")
            if t.duplicated:
                problems.append(f"{t.table}: {t.duplicated} message(s) or hand(s) held twice"
                                " centrally")
            if t.hands_central != t.hands:
                problems.append(f"{t.table}: the journal has {t.hands} hands, the central"
                                f" database {t.hands_central}")
            problems += [f"{t.table}: {m}" for m in t.score_mismatches]
        if self.rejected:
            problems.append(f"the central service rejected {self.rejected} message(s)")
        return problems


def journal_figures(table: str, path: Path) -> tuple[TableFigures, set[int], set[str]]:
    """A table's figures from its journal (read-only), with its message seqs and hand ids."""
    figures = TableFigures(table=table)
    hands: set[str] = set()
    with Journal.open(path, read_only=True) as journal:
        messages = journal.messages(1)
    for m in messages:
        if m.type in (HandSettled.TYPE, HandVoided.TYPE):
            hands.add(str(m.body.get("hand_id")))
            heat = str(m.body.get("heat_id"))
            first, _, n = figures.heat_span.get(heat, (m.wall, m.wall, 0))
            figures.heat_span[heat] = (first, m.wall, n + 1)
        elif m.type == ScoreRecorded.TYPE:
            figures.scores[str(m.body.get("entry_id"))] = int(m.body.get("score", 0))
        elif m.type == Alert.TYPE:
            figures.alerts[str(m.body.get("kind"))] += 1
    figures.hands = len(hands)
    figures.published = len(messages)
    return figures, {m.seq for m in messages}, hands


def central_figures(engine: Engine) -> CentralFigures:
    """Every stored message's (table, seq), every hand and score, and the rejections."""
    out = CentralFigures()
    with Session(engine) as session:
        for table_id, seq in session.execute(select(Message.table_id, Message.seq)):
            out.seqs.setdefault(table_id, Counter())[int(seq)] += 1
        for table_id, hand_id in session.execute(select(Hand.table_id, Hand.hand_id)):
            out.hands.setdefault(table_id, Counter())[hand_id] += 1
        out.scores = {e: int(s) for e, s in session.execute(
            select(Score.entry_id, Score.score_cents))}
        out.rejected = int(session.scalar(select(func.count()).select_from(Rejection)) or 0)
    return out


def compare(figures: TableFigures, seqs: set[int], hands: set[str],
            central: CentralFigures) -> None:
    """Fill in what the central database holds of this table, and what differs."""
    held = central.seqs.get(figures.table, Counter())
    figures.ingested = sum(1 for s in seqs if s in held)
    figures.lost = sorted(seqs - set(held))
    held_hands = central.hands.get(figures.table, Counter())
    figures.hands_central = sum(1 for h in hands if h in held_hands)
    figures.duplicated = sum(n - 1 for n in held.values() if n > 1) + sum(
        n - 1 for n in held_hands.values() if n > 1)
    for entry, score in sorted(figures.scores.items()):
        stored = central.scores.get(entry)
        if stored != score:
            figures.score_mismatches.append(
                f"entry {entry}: the journal's score is {score} cents, the central"
                f" database's {'none' if stored is None else f'{stored} cents'}")
