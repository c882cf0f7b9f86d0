"""The standings as the page, the JSON API and the retained topic show them.

DB rows -> `game.tournament.standings.ScoreRecord`s -> leaderboards, pools and prize books (all the
rules live in game/tournament/standings.py and game/tournament/prizes.py) -> one JSON document:

- ``board``: the current stage's top scores (rank, position, entry id, score, hands,
  acknowledged flag, ``disputed`` while the participant's dispute is open, advancing mark,
  projected prize), with counts of what did not count;
- ``pending``: scores waiting for the participant's acknowledgement (when only acknowledged
  scores count), a disputed one marked;
- ``week``: this prize week (Friday to Thursday, venue time) and its leader(s);
- ``pools``: the Final Prize Pool and the Top Score Progressive, live from all buy-ins, each
  split by place, every share rounded down to the cent and the remainder shown;
- ``semi_final`` / ``final``: the line-ups (heat, table, seat) as the desk seats them;
- ``excluded``: scores that cannot be ranked (no registered entry, inconsistent), with why.

Every row that shows an entry carries its ``entry_id`` (for the API and the desk) and its
short ``code`` ("K7-42F", leaderboard.display_names), which the page shows instead of the id.
Under the page setting ``names = "first_name_initial"`` (patrons who consented at
registration) or ``"screen_name"`` (patrons who chose one) a row also carries ``name``
("Thandi M."), None for the others; ``strip_names`` removes every name for what leaves the
service by MQTT (tables and MQTT never carry PII).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from fractions import Fraction
from typing import Any, Final, Protocol

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from game.money import format_rand, split_round_down
from game.tournament.entries import Stage
from game.tournament.prizes import PrizeBook, final_book, pools_taken, top_score_book
from game.tournament.schema import TournamentSettings
from game.tournament.standings import (
    Leaderboard,
    Placing,
    Qualification,
    ScoreRecord,
    final_standings,
    qualifiers,
    semi_final_standings,
)
from leaderboard.config import NameMode
from leaderboard.display_names import entry_code
from leaderboard.projections import UNPAID_STATUSES
from leaderboard.standings.rows import (
    Excluded,
    LineupSeat,
    Ranked,
    Snapshot,
    display_name,
    load_snapshot,
)
from leaderboard.standings.text import format_text
from wire.envelope import format_ts

__all__ = [
    "FORMAT_VERSION",
    "UNPAID_STATUSES",
    "Excluded",
    "LineupSeat",
    "Snapshot",
    "StandingsSource",
    "ViewOptions",
    "build_standings",
    "current_stage",
    "display_name",
    "format_text",
    "load_snapshot",
    "standings",
    "strip_names",
]

FORMAT_VERSION: Final = 1
STAGE_LABELS: Final = {Stage.QUALIFYING: "Qualifying", Stage.SEMI_FINAL: "Semi-finals",
                       Stage.FINAL: "Final"}
_PENDING_ROWS: Final = 10
_WEEKDAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                  "Dec")
_EXCLUDED_ROWS: Final = 50  # the rest are counted in excluded_total


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewOptions:
    """What to show: the venue id, the page title, how many rows, and the name setting."""

    venue: str
    title: str
    rows: int = 20
    names: NameMode = "entry_code"
    stage: Stage | None = None  # the board to show; None: the current stage (current_stage)


class StandingsSource(Protocol):
    """What the document is built from: a `Snapshot` (everything read at once) or the
    incremental standings (leaderboard/standings/live.py). Both answer the same."""

    @property
    def paid_entries(self) -> int: ...
    @property
    def buy_ins_cents(self) -> int: ...
    @property
    def lineups(self) -> Sequence[LineupSeat]: ...  # in entry id order
    @property
    def names(self) -> Mapping[str, str]: ...  # patron id -> display name (when shown)
    @property
    def disputed(self) -> frozenset[str]: ...
    @property
    def codes(self) -> Mapping[str, str]: ...  # entry id -> entry code (of those stored)
    def stages(self) -> frozenset[Stage]: ...
    def records_of(self, stage: Stage) -> Sequence[ScoreRecord]: ...  # semi-final, Final
    def qualifying(self, settings: TournamentSettings, rows: int) -> Ranked: ...
    def weekly(self, settings: TournamentSettings, week: int) -> Ranked: ...
    def pending(self, stage: Stage, limit: int) -> Sequence[ScoreRecord]: ...
    def excluded_first(self, limit: int) -> tuple[int, Sequence[Excluded]]: ...


# ---- building the document -----------------------------------------------------------------


def current_stage(snapshot: StandingsSource, settings: TournamentSettings,
                  now: datetime) -> Stage:
    """The latest stage that has begun (by its start time) or already has scores.

    Line-ups alone do not move the board on: between the end of qualifying and the
    semi-finals the floor still sees the final qualifying board (and the line-ups beside it).
    """
    present = snapshot.stages()
    for stage in (Stage.FINAL, Stage.SEMI_FINAL):
        starts = settings.stage(stage).starts_at
        if stage in present or (starts is not None and now >= starts):
            return stage
    return Stage.QUALIFYING


def _pct(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _local(value: datetime, settings: TournamentSettings) -> str:
    return value.astimezone(settings.tz).strftime("%Y-%m-%d %H:%M")


def _day_label(day: date) -> str:
    """ "Fri 3 Jul" (English names, whatever the machine's locale)."""
    return f"{_WEEKDAYS[day.weekday()]} {day.day} {_MONTHS[day.month - 1]}"


def _money(cents: int) -> dict[str, Any]:
    return {"cents": cents, "text": format_rand(cents)}


class _Builder:
    def __init__(self, snapshot: StandingsSource, settings: TournamentSettings,
                 options: ViewOptions, now: datetime) -> None:
        self.snapshot, self.settings, self.options, self.now = snapshot, settings, options, now
        self.show_names = options.names != "entry_code"

    def name(self, patron_id: str) -> dict[str, Any]:
        if not self.show_names:
            return {}
        return {"name": self.snapshot.names.get(patron_id) or None}

    def who(self, entry_id: str, patron_id: str) -> dict[str, Any]:
        """The entry as rows show it: its id, its code and (when shown) the patron's name."""
        code = self.snapshot.codes.get(entry_id) or entry_code(entry_id)
        return {"entry_id": entry_id, "code": code, **self.name(patron_id)}

    def row(self, p: Placing, *, advance: int | None = None,
            prizes: Mapping[str, int] | None = None) -> dict[str, Any]:
        r = p.record
        out: dict[str, Any] = {
            "rank": p.rank, "position": p.position, **self.who(r.entry_id, r.patron_id),
            "score_cents": r.score_cents, "score": format_rand(r.score_cents),
            "hands": r.hands, "status": r.status.value, "acknowledged": r.acknowledged,
            "disputed": r.entry_id in self.snapshot.disputed,
            "acknowledged_at": format_ts(r.acknowledged_at) if r.acknowledged_at else None,
            "tied": p.tied, "table": r.table, "heat_id": r.heat_id, "corrected": r.corrected,
            "advancing": advance is not None and p.rank <= advance,
        }
        if prizes is not None and r.entry_id in prizes:
            out["prize"] = _money(prizes[r.entry_id])
        return out

    def board(self, ranked: Ranked, *, advance: Qualification | None,
              prizes: PrizeBook | None) -> dict[str, Any]:
        board = ranked.board
        places = advance.places if advance is not None else None
        amounts = {a.entry_id: a.amount_cents for a in prizes.awards} if prizes else None
        shown = board.places[: self.options.rows]
        tie = advance.cut_line_tie if advance is not None else None
        return {
            "stage": board.stage.value, "label": STAGE_LABELS[board.stage],
            "counted": ranked.counted, "more": ranked.counted - len(shown),
            "advance": places, "tie_rule": board.tie_rule,
            "acknowledged_only": board.acknowledged_only,
            "awaiting_acknowledgement": ranked.unacknowledged,
            "voided": ranked.voided,
            "cut_line_tie": tie.note if tie is not None else None,
            "rows": [self.row(p, advance=places, prizes=amounts) for p in shown],
        }

    def pending(self, stage: Stage) -> list[dict[str, Any]]:
        if not self.settings.acknowledged_only:
            return []
        waiting = self.snapshot.pending(stage, _PENDING_ROWS)
        return [{**self.who(r.entry_id, r.patron_id),
                 "score_cents": r.score_cents, "score": format_rand(r.score_cents),
                 "disputed": r.entry_id in self.snapshot.disputed,
                 "table": r.table, "recorded_at": format_ts(r.recorded_at),
                 "recorded_local": _local(r.recorded_at, self.settings)}
                for r in waiting]

    def week(self) -> dict[str, Any]:
        s = self.settings
        weekly, schedule = s.weekly_prizes, s.schedule
        last = weekly.weeks_in(schedule)
        week, state = 1, "before"
        for number in range(1, last + 1):
            start, end = weekly.week_bounds(schedule, number)
            if self.now >= start:
                week, state = number, "running" if self.now < end else "after"
        start, end = weekly.week_bounds(schedule, week)
        first = start.astimezone(s.tz).date()
        last_day = (end - timedelta(microseconds=1)).astimezone(s.tz).date()
        ranked = self.snapshot.weekly(s, week)
        board = ranked.board
        leaders = [self.row(p) for p in board.at_position(1)] if board.places else []
        return {
            "week": week, "weeks": last, "prize_weeks": weekly.weeks,
            "prize_week": week <= weekly.weeks, "state": state,
            "starts": first.isoformat(), "ends": last_day.isoformat(),
            "label": f"{_day_label(first)} to {_day_label(last_day)}",
            "counted": ranked.counted, "leaders": leaders,
        }

    def pools(self, qualifying: Leaderboard, final: Leaderboard
              ) -> tuple[dict[str, Any], PrizeBook, PrizeBook]:
        s = self.settings
        snap = self.snapshot
        consistent = snap.buy_ins_cents == snap.paid_entries * s.buy_in_cents
        # an entry sold at another price: the pools follow the money actually taken
        pools = pools_taken(snap.paid_entries, snap.buy_ins_cents, s)
        top = top_score_book(qualifying, pools, s)
        fin = final_book(final, pools, s)
        return {
            "entries": pools.entries, "buy_in": _money(pools.buy_in_cents),
            "total": _money(pools.total_cents), "remainder": _money(pools.remainder_cents),
            "buy_ins_consistent": consistent,
            "final_pool": self.pool(pools.final_pool_cents, s.prizes.final_pool_percent,
                                    s.prizes.final_places, fin),
            "top_score": self.pool(pools.top_score_cents, s.prizes.top_score_percent,
                                   s.prizes.top_score_places, top),
        }, top, fin

    def pool(self, cents: int, percent: Fraction, places: Sequence[Fraction],
             book: PrizeBook) -> dict[str, Any]:
        shares, rest = split_round_down(cents, places)
        return {
            **_money(cents), "percent": _pct(percent),
            "places": [{"place": i + 1, "percent": _pct(p), **_money(c)}
                       for i, (p, c) in enumerate(zip(places, shares, strict=True))],
            "remainder": _money(rest),
            "projected": [{"entry_id": a.entry_id, "position": a.position,
                           **_money(a.amount_cents)} for a in book.awards],
            "projected_remainders": [{"reason": r.reason.value, "detail": r.detail,
                                      **_money(r.amount_cents)} for r in book.remainders],
        }

    def lineup(self, stage: Stage, standings: Leaderboard) -> dict[str, Any]:
        s = self.settings
        seats = [x for x in self.snapshot.lineups if x.stage is stage]
        scores = {p.entry_id: p for p in standings.places}
        heats: dict[str, list[LineupSeat]] = {}
        for x in seats:
            heats.setdefault(x.heat_id or "", []).append(x)
        starts = s.stage(stage).starts_at
        return {
            "stage": stage.value, "label": STAGE_LABELS[stage],
            "starts": _local(starts, s) if starts is not None else None,
            "heats": [{
                "heat_id": heat or None,
                "table": next((x.table for x in group if x.table), None),
                "seats": [{
                    "seat": x.seat, **self.who(x.entry_id, x.patron_id),
                    "proxy": x.proxy,
                    "score": (_money(scores[x.entry_id].score_cents)
                              if x.entry_id in scores else None),
                } for x in sorted(group, key=lambda x: (x.seat is None, x.seat or 0,
                                                          x.entry_id))],
            } for heat, group in sorted(heats.items())],
        }

    def build(self) -> dict[str, Any]:
        s, snap = self.settings, self.snapshot
        stage = self.options.stage or current_stage(snap, s, self.now)
        ranked = snap.qualifying(s, self.options.rows)
        qualifying = ranked.board
        semi = semi_final_standings(snap.records_of(Stage.SEMI_FINAL), s)
        final = final_standings(snap.records_of(Stage.FINAL), s)
        pools, top, fin = self.pools(qualifying, final)
        if stage is Stage.QUALIFYING:
            board = self.board(ranked, advance=qualifiers(qualifying, s.qualifying.advance
                                                          or 1), prizes=top)
        elif stage is Stage.SEMI_FINAL:
            board = self.board(Ranked.whole(semi.board), advance=semi, prizes=None)
        else:
            board = self.board(Ranked.whole(final), advance=None, prizes=fin)
        excluded_total, excluded = snap.excluded_first(_EXCLUDED_ROWS)
        return {
            "version": 0,
            "format": FORMAT_VERSION,
            "venue": self.options.venue,
            "title": self.options.title,
            "generated_at": format_ts(self.now),
            "generated_local": _local(self.now, s),
            "timezone": s.timezone,
            "stage": stage.value,
            "stage_label": STAGE_LABELS[stage],
            "names": self.options.names,
            "board": board,
            "pending": self.pending(stage),
            "week": self.week(),
            "pools": pools,
            "semi_final": self.lineup(Stage.SEMI_FINAL, semi.board),
            "final": self.lineup(Stage.FINAL, final),
            "excluded_total": excluded_total,
            "excluded": [{"entry_id": x.entry_id,
                          "code": self.snapshot.codes.get(x.entry_id) or entry_code(x.entry_id),
                          "table": x.table, "stage": x.stage,
                          **_money(x.score_cents), "reason": x.reason}
                         for x in excluded],
        }


def build_standings(snapshot: StandingsSource, settings: TournamentSettings,
                    options: ViewOptions, *, now: datetime) -> dict[str, Any]:
    """The standings document (plain JSON types) of a snapshot at `now` (aware)."""
    if now.utcoffset() is None:
        raise ValueError("now must be an aware datetime")
    return _Builder(snapshot, settings, options, now).build()


def standings(engine: Engine, settings: TournamentSettings, options: ViewOptions, *,
              now: datetime) -> dict[str, Any]:
    """Read the database and build the standings document (blocking: run it in a thread)."""
    from leaderboard.standings.awards import awarded_prizes  # noqa: PLC0415

    with Session(engine) as session, session.begin():
        snapshot = load_snapshot(session, settings, names=options.names)
        shown = snapshot.names if options.names != "entry_code" else None
        awards = awarded_prizes(session, settings, now=now, names=shown, codes=snapshot.codes)
    doc = build_standings(snapshot, settings, options, now=now)
    doc["awards"] = awards  # the prizes awarded so far, claimed or open
    return doc


def strip_names(value: Any) -> Any:
    """A copy of a standings document without any ``name`` (for MQTT: no PII leaves)."""
    if isinstance(value, Mapping):
        return {k: strip_names(v) for k, v in value.items() if k != "name"}
    if isinstance(value, list | tuple):
        return [strip_names(v) for v in value]
    return value
