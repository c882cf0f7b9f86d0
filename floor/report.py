"""The report of a simulated floor, one type for both commands (`FloorReport`): what happened
in the tournament the demo played (every stage, the scores, places and prizes the central
database holds, the faults injected; floor.summary fills and prints it), and what every
table's journal says it did, checked message by message against what the central database
holds (`build_report`, for `showdown simulate floor`).

A message is lost when a table's journal has it and the central database does not, and
duplicated when the central database holds a (table, seq) twice or a hand twice; a score is
wrong when the central database's differs from the one the table journaled. Any of these, a
table that stopped, or a message the central service rejected is a problem (exit 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from controller.journal import Journal
from leaderboard.models import Hand, Message, Rejection, Score
from wire.messages import Alert, HandSettled, HandVoided, ScoreRecorded

if TYPE_CHECKING:
    from floor.run import FloorRun

__all__ = ["CentralFigures", "FloorReport", "PlaceLine", "PrizeLine", "TableFigures",
           "build_report", "central_figures", "compare", "journal_figures"]

# The fields of the tables' check, which the demo's summary document leaves out.
_CHECK_FIELDS: Final = frozenset({"tables", "wall_s", "virtual_start", "virtual_end", "ingest",
                                  "rejected"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaceLine:
    """A semi-final or Final place as it was played: who, where, the score, the prize."""

    stage: str
    position: int | None  # its rank in that stage's standings (None: no counted score)
    entry_id: str
    holder: str  # the patron who won the place (and any prize)
    played_by: str  # the patron who played it (the holder, or a proxy)
    heat: str
    seat: int
    score_cents: int | None
    prize_cents: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeLine:
    """One prize awarded: what, to whom, how much, and whether it was claimed."""

    award_id: int
    kind: str  # weekly, top_score, final
    place: int  # the week for a weekly prize, else the position
    entry_id: str
    patron_id: str
    winner: str  # the patron's name
    amount_cents: int
    status: str  # claimed, unclaimed, expired, withheld
    deadline: datetime  # aware UTC
    claimed_at: datetime | None = None


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
    """What a floor did: the problems found; each table's figures checked against the
    central database and the wall time (the load floor); every stage, the scores, places
    and prizes the central database holds, the faults injected, and where the run's files
    are (the demo's tournament)."""

    seed: int = 0
    problems: list[str] = field(default_factory=list)
    # ---- the tables' check (build_report) ----
    tables: list[TableFigures] = field(default_factory=list)
    wall_s: float = 0.0  # real seconds of play
    virtual_start: datetime | None = None  # the floor's clock from ... to
    virtual_end: datetime | None = None
    ingest: dict[str, Any] = field(default_factory=dict)
    rejected: int = 0  # messages the central service rejected
    # ---- the tournament (floor.tournament, floor.summary) ----
    url: str = ""
    heats_played: int = 0  # qualifying heats
    entries_seated: int = 0  # qualifying entries
    scores: dict[str, int] = field(default_factory=dict)  # qualifying entry -> score, centrally
    withdrawn: dict[str, int] = field(default_factory=dict)  # entry -> hands played, centrally
    refused: list[str] = field(default_factory=list)
    payouts_verified: int = 0  # hands whose payout the chip readers verified
    overpays: int = 0  # faults injected: one chip too many paid
    overrides: int = 0  # payouts a supervisor overrode
    hands_refused: int = 0  # next hands the tables refused while a payout was wrong
    deck_holds: int = 0  # suspect decks the tables held and a supervisor cleared
    chips_reconciled: int = 0  # entries whose chips were returned to their table's float
    chips_missing: int = 0  # chips not returned (rule 19)
    stages: list[str] = field(default_factory=list)  # stages completed, in order
    calendar: list[tuple[str, datetime]] = field(default_factory=list)  # (what, venue time)
    hands_played: int = 0  # hands dealt at every table, every stage
    semi_places: list[PlaceLine] = field(default_factory=list)  # by semi-final position
    final_places: list[PlaceLine] = field(default_factory=list)  # by final position
    prizes: list[PrizeLine] = field(default_factory=list)
    pools: dict[str, int] = field(default_factory=dict)  # cents: buy_ins, final_pool, ...
    remainders: dict[str, int] = field(default_factory=dict)  # prize book -> cents kept back
    proxies: dict[str, str] = field(default_factory=dict)  # place -> the proxy playing it
    names: dict[str, str] = field(default_factory=dict)  # patron id -> name
    draw: dict[str, object] = field(default_factory=dict)  # the Final's seat draw
    database: str = ""  # the central database's URL
    tournament: Path | None = None  # the settings file in force
    journals: dict[str, Path] = field(default_factory=dict)  # table -> its journal

    @property
    def hands(self) -> int:
        """Hands played on the whole floor, as the tables' journals show them."""
        return sum(t.hands for t in self.tables)

    @property
    def hands_per_second(self) -> float:
        """Hands a second of wall time, the whole floor."""
        return self.hands / self.wall_s if self.wall_s > 0 else 0.0

    def tournament_doc(self) -> dict[str, Any]:
        """The tournament's part as plain data (`showdown demo --json`)."""
        return {k: v for k, v in asdict(self).items() if k not in _CHECK_FIELDS}

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


def build_report(floor: FloorRun) -> FloorReport:
    """The load floor's report: every table's journal checked against the central database."""
    from controller.journal import JournalUnreadable  # noqa: PLC0415
    from leaderboard.db import configured_engine  # noqa: PLC0415

    assert floor.service is not None
    engine = configured_engine(floor.service.config.database, source="--db",
                               key="database")
    try:
        central = central_figures(engine)
    finally:
        engine.dispose()
    tables = []
    for name, run in floor.tables.items():
        try:
            assert run.journal is not None
            figures, seqs, hands = journal_figures(name, run.journal)
        except JournalUnreadable as exc:  # a table process that died before it had one
            figures, seqs, hands = TableFigures(table=name), set(), set()
            run.problem = "; ".join(filter(None, (
                run.problem, f"{name}: its journal cannot be read ({exc})")))
        compare(figures, seqs, hands, central)
        figures.heats, figures.wall_s, figures.problem = run.heats, run.wall_s, run.problem
        figures.delivered, figures.resent = run.published, run.resent
        tables.append(figures)
    return FloorReport(seed=floor.plan.seed, tables=tables, wall_s=floor.wall_s,
                       virtual_start=floor.clock.start, virtual_end=floor.clock.wall(),
                       rejected=central.rejected, problems=list(floor.problems))
