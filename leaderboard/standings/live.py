"""The standings kept up to date change by change, instead of read whole after every change.

`LiveStandings.document(now)` is what the service's `StandingsFeed` computes: the first call
reads every score and entry once (as the full computation does); every later call reads only
the entries written since (`standings_changes`, filled by database triggers on ``scores`` and
``entries`` whoever writes them: the ingest, the desk, a script, another instance) and
applies them to what it keeps:

- each entry's record (leaderboard.standings.rows.score_record: the same rules, entry by
  entry), or why its score is not ranked;
- the counted qualifying scores in score order, overall and per prize week, with the counts
  of voided and unacknowledged ones;
- the scores awaiting acknowledgement, newest first; the buy-ins; the semi-final and Final
  places and records (a few dozen: ranked whole each time).

The document is then built by leaderboard.standings.view from the top of each board: the
rows shown, the places that advance or take a prize, and every entry tied with the last of
them, so positions, ties, the cut line and the prize shares are those of the whole board
(game.tournament.standings ranks them). Disputes, prize awards and names are read at each
computation (a handful of rows). A restart rebuilds everything from the database.

Ids of changes come from one sequence, but on PostgreSQL two transactions may commit out of
order: an id skipped over is asked for again ("holes") for `HOLE_SECONDS`.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from heapq import nsmallest
from typing import Any, Final, Literal

from sqlalchemy import Engine, func, or_, select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.tournament.standings import ScoreRecord, leaderboard
from leaderboard.config import NameMode
from leaderboard.models import Dispute, Entry, Score, StandingsChange
from leaderboard.standings.awards import awarded_prizes
from leaderboard.standings.rows import (
    Excluded,
    LineupSeat,
    Ranked,
    lineup_seat,
    paid_cents,
    score_record,
    shown_names,
)
from leaderboard.standings.view import ViewOptions, build_standings

__all__ = ["HOLE_SECONDS", "LiveStandings", "RefreshStats"]

HOLE_SECONDS: Final = 120.0  # how long an id skipped over is asked for again
_CHUNK: Final = 500  # entry ids per IN (...) query
_HOLE_WINDOW: Final = 1_000  # at a rebuild, the latest ids checked for holes
_SMALL_STAGES: Final = (Stage.SEMI_FINAL, Stage.FINAL)

_Key = tuple[int, str]  # (-score, entry id): score order, one key per entry
_Kind = Literal["counted", "voided", "unacknowledged"]


@dataclass(slots=True)
class _Board:
    """One leaderboard's counted scores in score order, and how many did not count."""

    keys: list[_Key] = field(default_factory=list)
    voided: int = 0
    unacknowledged: int = 0

    def change(self, key: _Key, kind: _Kind, by: int, *, loading: bool = False) -> None:
        """Add (by=1) or take away (by=-1) one score; `loading`: append, sorted later."""
        if kind == "voided":
            self.voided += by
        elif kind == "unacknowledged":
            self.unacknowledged += by
        elif loading:
            self.keys.append(key)
        elif by > 0:
            insort(self.keys, key)
        else:
            del self.keys[bisect_left(self.keys, key)]

    def top(self, places: int) -> list[_Key]:
        """The first `places` keys and every key tied in score with the last of them."""
        if places <= 0 or not self.keys:
            return []
        last = self.keys[min(places, len(self.keys)) - 1][0]
        return self.keys[: bisect_left(self.keys, (last + 1, ""))]


@dataclass(frozen=True, slots=True)
class RefreshStats:
    """What the last computation did: a full rebuild or how many entries it read again."""

    rebuilt: bool
    entries_read: int
    changes: int
    watermark: int


class _Names(Mapping[str, str]):
    """Patrons' display names, read when the document asks for one (one computation)."""

    def __init__(self, session: Session, names: NameMode) -> None:
        self._session = session
        self._mode = names
        self._cache: dict[str, str | None] = {}

    def __getitem__(self, patron_id: str) -> str:
        if patron_id not in self._cache:
            self._cache[patron_id] = shown_names(self._session, self._mode,
                                                 [patron_id]).get(patron_id)
        value = self._cache[patron_id]
        if value is None:
            raise KeyError(patron_id)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, v in self._cache.items() if v is not None)

    def __len__(self) -> int:
        return sum(v is not None for v in self._cache.values())


class LiveStandings:
    """The service's standings, updated from the changed entries (see the module docstring).

    Blocking (database queries): call `document` from one worker thread at a time.
    """

    def __init__(self, engine: Engine, settings: TournamentSettings,
                 options: ViewOptions) -> None:
        self.engine, self.settings, self.options = engine, settings, options
        self._lock = threading.Lock()
        self._built = False
        self.stats = RefreshStats(rebuilt=False, entries_read=0, changes=0, watermark=0)
        self._reset()

    def _reset(self) -> None:
        self._watermark = 0
        self._holes: dict[int, float] = {}  # id -> when first missed (monotonic)
        self._records: dict[str, ScoreRecord] = {}
        self._excluded: dict[str, Excluded] = {}
        self._paid: dict[str, int] = {}
        self._paid_total = 0
        self._lineups: dict[str, LineupSeat] = {}
        self._qualifying = _Board()
        self._weeks: dict[int, _Board] = {}
        self._pending: dict[Stage, list[tuple[datetime, str]]] = {s: [] for s in Stage}
        self._stage_count: Counter[Stage] = Counter()
        self._small: dict[Stage, dict[str, ScoreRecord]] = {s: {} for s in _SMALL_STAGES}
        self._names: Mapping[str, str] = {}
        self._codes: dict[str, str] = {}
        self._disputed: frozenset[str] = frozenset()
        self._loading = False  # a rebuild appends to the sorted lists and sorts them once

    # ---- the computation ----------------------------------------------------------------------

    def document(self, now: datetime) -> dict[str, Any]:
        """The standings document at `now`: the changes applied, then the document built."""
        with self._lock, Session(self.engine) as session, session.begin():
            if not self._built:
                self.rebuild(session)
            else:
                self.catch_up(session)
            self._disputed = frozenset(session.scalars(
                select(Dispute.entry_id).where(Dispute.resolved_at.is_(None))))
            shown = self.options.names != "entry_code"
            names = _Names(session, self.options.names) if shown else {}
            self._names = names
            doc = build_standings(self, self.settings, self.options, now=now)
            doc["awards"] = awarded_prizes(session, self.settings, now=now,
                                           names=names if shown else None, codes=self._codes)
            self._names = {}
        return doc

    def rebuild(self, session: Session) -> None:
        """Read every score and entry again (at start, or when the changes cannot be
        followed: the database was replaced)."""
        self._reset()
        top = session.scalar(select(func.max(StandingsChange.id))) or 0
        seen = set(session.scalars(select(StandingsChange.id).where(
            StandingsChange.id > top - _HOLE_WINDOW)))
        now = time.monotonic()
        self._holes = {i: now for i in range(max(1, top - _HOLE_WINDOW + 1), top + 1)
                       if i not in seen}
        self._watermark = top
        entries = session.scalars(select(Entry)).all()
        scores = {s.entry_id: s for s in session.scalars(select(Score))}
        by_id = {e.entry_id: e for e in entries}
        self._loading = True
        try:
            for entry in entries:
                self._apply(entry.entry_id, scores.get(entry.entry_id), entry)
            for entry_id, score in scores.items():
                if entry_id not in by_id:
                    self._apply(entry_id, score, None)
        finally:
            self._loading = False
        for board in (self._qualifying, *self._weeks.values()):
            board.keys.sort()
        for pending in self._pending.values():
            pending.sort()
        self._built = True
        self.stats = RefreshStats(rebuilt=True, entries_read=len(by_id.keys() | scores.keys()),
                                  changes=0, watermark=top)

    def catch_up(self, session: Session) -> None:
        """Apply the changes written since the last computation (the entries read again)."""
        top = session.scalar(select(func.max(StandingsChange.id))) or 0
        if top < self._watermark:  # ids went back: another database (a restored backup)
            self.rebuild(session)
            return
        now = time.monotonic()
        self._holes = {i: t for i, t in self._holes.items() if now - t < HOLE_SECONDS}
        if top == self._watermark and not self._holes:
            self.stats = RefreshStats(rebuilt=False, entries_read=0, changes=0, watermark=top)
            return
        condition = StandingsChange.id > self._watermark
        if self._holes:
            condition = or_(condition, StandingsChange.id.in_(sorted(self._holes)))
        rows = session.execute(select(StandingsChange.id, StandingsChange.entry_id)
                               .where(condition)).all()
        changed = {e for _, e in rows}
        # Read first: should it fail, the same changes are read again next time.
        self._read(session, changed)
        ids = {i for i, _ in rows}
        for i in ids:
            self._holes.pop(i, None)
        highest = max((i for i in ids if i > self._watermark), default=self._watermark)
        for i in range(self._watermark + 1, highest):
            if i not in ids:
                self._holes[i] = now
        self._watermark = highest
        self.stats = RefreshStats(rebuilt=False, entries_read=len(changed), changes=len(rows),
                                  watermark=highest)

    def _read(self, session: Session, entry_ids: Iterable[str]) -> None:
        wanted = sorted(entry_ids)
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start:start + _CHUNK]
            entries = {e.entry_id: e for e in session.scalars(
                select(Entry).where(Entry.entry_id.in_(chunk)))}
            scores = {s.entry_id: s for s in session.scalars(
                select(Score).where(Score.entry_id.in_(chunk)))}
            for entry_id in chunk:
                self._apply(entry_id, scores.get(entry_id), entries.get(entry_id))

    # ---- one entry --------------------------------------------------------------------------

    def _apply(self, entry_id: str, score: Score | None, entry: Entry | None) -> None:
        """Replace what is kept of one entry by what its rows say now."""
        self._forget(entry_id)
        if entry is not None:
            if entry.entry_code is not None:
                self._codes[entry_id] = entry.entry_code
            cents = paid_cents(entry)
            if cents is not None:
                self._paid[entry_id] = cents
                self._paid_total += cents
            seat = lineup_seat(entry)
            if seat is not None:
                self._lineups[entry_id] = seat
        if score is None:
            return
        result = score_record(score, entry, self.settings)
        if isinstance(result, Excluded):
            self._excluded[entry_id] = result
            return
        self._records[entry_id] = result
        self._count(result, 1)

    def _forget(self, entry_id: str) -> None:
        cents = self._paid.pop(entry_id, None)
        if cents is not None:
            self._paid_total -= cents
        self._lineups.pop(entry_id, None)
        self._excluded.pop(entry_id, None)
        record = self._records.pop(entry_id, None)
        if record is not None:
            self._count(record, -1)

    def _kind(self, record: ScoreRecord) -> _Kind:
        if record.voided:
            return "voided"
        if self.settings.acknowledged_only and not record.acknowledged:
            return "unacknowledged"
        return "counted"

    def _count(self, record: ScoreRecord, by: int) -> None:
        """Add (by=1) or take away (by=-1) a record from every structure it belongs to."""
        stage, entry_id = record.stage, record.entry_id
        self._stage_count[stage] += by
        if not record.voided and not record.acknowledged:
            pending = self._pending[stage]
            item = (record.recorded_at, entry_id)
            if self._loading:
                pending.append(item)
            elif by > 0:
                insort(pending, item)
            else:
                del pending[bisect_left(pending, item)]
        if stage in self._small:
            if by > 0:
                self._small[stage][entry_id] = record
            else:
                del self._small[stage][entry_id]
            return
        kind, key = self._kind(record), (-record.score_cents, entry_id)
        self._qualifying.change(key, kind, by, loading=self._loading)
        s = self.settings
        week = s.weekly_prizes.week_of(s.schedule, record.heat_day)
        self._weeks.setdefault(week, _Board()).change(key, kind, by, loading=self._loading)

    # ---- what the document is built from (leaderboard.standings.view.StandingsSource) -------

    @property
    def paid_entries(self) -> int:
        """Paid qualifying buy-ins."""
        return len(self._paid)

    @property
    def buy_ins_cents(self) -> int:
        """The money those buy-ins took."""
        return self._paid_total

    @property
    def lineups(self) -> Sequence[LineupSeat]:
        """Semi-final and Final places, in entry id order."""
        return [self._lineups[k] for k in sorted(self._lineups)]

    @property
    def names(self) -> Mapping[str, str]:
        """Patrons' display names (during a computation, when shown)."""
        return self._names

    @property
    def disputed(self) -> frozenset[str]:
        """Entries with a dispute not yet resolved."""
        return self._disputed

    @property
    def codes(self) -> Mapping[str, str]:
        """Entry id -> entry code, of every entry read."""
        return self._codes

    def stages(self) -> frozenset[Stage]:
        """The stages with at least one record."""
        return frozenset(s for s, n in self._stage_count.items() if n > 0)

    def records_of(self, stage: Stage) -> Sequence[ScoreRecord]:
        """Every record of the semi-finals or the Final."""
        if stage not in self._small:
            raise ValueError(f"only the semi-final and Final records are kept whole, not {stage}")
        return list(self._small[stage].values())

    def _ranked(self, board: _Board, places: int, week: int | None) -> Ranked:
        top = [self._records[entry_id] for _, entry_id in board.top(places)]
        ranked = leaderboard(top, self.settings, stage=Stage.QUALIFYING, week=week)
        return Ranked(board=ranked, counted=len(board.keys), voided=board.voided,
                      unacknowledged=board.unacknowledged)

    def qualifying(self, settings: TournamentSettings, rows: int) -> Ranked:
        """The top of qualifying: the rows shown, the places that advance (and the first
        left out, for the cut line) and the Top Score places, ties complete."""
        places = max(rows, (settings.qualifying.advance or 1) + 1,
                     len(settings.prizes.top_score_places))
        return self._ranked(self._qualifying, places, None)

    def weekly(self, _settings: TournamentSettings, week: int) -> Ranked:
        """The top of one prize week: its leader(s)."""
        return self._ranked(self._weeks.get(week, _Board()), 1, week)

    def pending(self, stage: Stage, limit: int) -> list[ScoreRecord]:
        """The newest `limit` scores of a stage awaiting acknowledgement."""
        waiting = self._pending[stage]
        return [self._records[entry_id] for _, entry_id in reversed(waiting[-limit:])]

    def excluded_first(self, limit: int) -> tuple[int, Sequence[Excluded]]:
        """How many scores cannot be ranked, and the first `limit` by entry id."""
        first = nsmallest(limit, self._excluded)
        return len(self._excluded), [self._excluded[k] for k in first]
