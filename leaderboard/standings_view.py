"""The standings as the page, the JSON API and the retained topic show them.

DB rows -> `game.standings.ScoreRecord`s -> leaderboards, pools and prize books (all the rules
live in game/standings.py and game/prizes.py) -> one JSON document:

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

Patrons are shown by entry id. Only when the page setting ``names = "first_name_initial"`` is
on does a row carry ``name`` ("Thandi M."); ``strip_names`` removes every name for what leaves
the service by MQTT (tables and MQTT never carry PII).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import Any, Final

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from game.money import format_rand, split_round_down
from game.prizes import PrizeBook, final_book, pools_taken, top_score_book
from game.standings import (
    Leaderboard,
    Placing,
    Qualification,
    ScoreRecord,
    ScoreStatus,
    StandingsError,
    check_record,
    final_standings,
    qualifiers,
    qualifying_leaderboard,
    semi_final_standings,
    weekly_leaderboard,
)
from game.tournament import Stage
from game.tournament_schema import TournamentSettings
from leaderboard.config import NameMode
from leaderboard.models import Dispute, Entry, Patron, Score
from leaderboard.projections import UNPAID_STATUSES
from wire.envelope import format_ts

__all__ = [
    "FORMAT_VERSION",
    "UNPAID_STATUSES",
    "Excluded",
    "LineupSeat",
    "Snapshot",
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
    names: NameMode = "entry_id"
    stage: Stage | None = None  # the board to show; None: the current stage (current_stage)


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    """A stored score that cannot be ranked, and why (kept visible for the floor supervisor)."""

    entry_id: str
    table: str
    stage: str
    score_cents: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LineupSeat:
    """One entry seated (or to be seated) in a semi-final or final heat."""

    stage: Stage
    entry_id: str
    patron_id: str
    heat_id: str | None
    table: str | None
    seat: int | None
    proxy: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What the standings are computed from, read from the database in one transaction."""

    records: tuple[ScoreRecord, ...]
    excluded: tuple[Excluded, ...]
    paid_entries: int
    buy_ins_cents: int
    lineups: tuple[LineupSeat, ...]
    names: Mapping[str, str] = field(default_factory=dict)  # patron id -> display name
    disputed: frozenset[str] = frozenset()  # entries with a dispute not yet resolved


# ---- reading the database --------------------------------------------------------------------


def _utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: they were stored in UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def display_name(full_name: str) -> str:
    """First name and the initial of the last name: "Thandiwe Mokoena" -> "Thandiwe M."."""
    parts = full_name.split()
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return f"{parts[0]} {parts[-1][0].upper()}."


def _heat_day(entry: Entry | None, recorded_at: datetime, stage: Stage,
              settings: TournamentSettings) -> date:
    if entry is not None and entry.heat_day is not None:
        return entry.heat_day
    if stage is Stage.QUALIFYING:
        day = settings.schedule.heat_day(recorded_at)
        if day is not None:
            return day
    return recorded_at.astimezone(settings.tz).date()


def _record(score: Score, entry: Entry | None, settings: TournamentSettings
            ) -> ScoreRecord | Excluded:
    def excluded(reason: str) -> Excluded:
        return Excluded(entry_id=score.entry_id, table=score.table_id, stage=score.stage,
                        score_cents=score.score_cents, reason=reason)

    if entry is None:
        return excluded("no registered entry with this id")
    if entry.status in UNPAID_STATUSES:  # e.g. refunded after its table's fault (D60)
        return excluded(f"the entry was {entry.status}")
    if entry.disqualified_at is not None:
        return excluded("the entry was disqualified (rule 57)")
    try:
        stage = Stage(score.stage)
    except ValueError:
        return excluded(f"unknown stage {score.stage!r}")
    voided = score.voided_at is not None or score.status == "voided"
    try:
        status = ScoreStatus.FINISHED if score.status == "voided" else ScoreStatus(score.status)
    except ValueError:
        return excluded(f"unknown score status {score.status!r}")
    if entry.stage != stage.value:
        return excluded(f"the entry is a {entry.stage} entry, the score a {stage.value} score")
    recorded_at = _utc(score.recorded_at)
    assert recorded_at is not None
    try:
        record = ScoreRecord(
            entry_id=score.entry_id, patron_id=entry.patron_id, stage=stage,
            heat_id=score.heat_id or entry.heat_id or stage.value, table=score.table_id,
            score_cents=score.counted_cents, hands=score.hands, status=status,
            recorded_at=recorded_at, acknowledged_at=_utc(score.counted_acknowledged_at),
            voided=voided,
            heat_day=_heat_day(entry, recorded_at, stage, settings),
            corrected=score.corrected_cents is not None,
        )
        check_record(record, settings)
    except StandingsError as exc:
        return excluded(str(exc))
    return record


def load_snapshot(session: Session, settings: TournamentSettings, *,
                  names: NameMode = "entry_id") -> Snapshot:
    """Read scores, entries (for pools and line-ups) and, if shown, patrons' display names."""
    records: list[ScoreRecord] = []
    excluded: list[Excluded] = []
    rows = session.execute(
        select(Score, Entry).outerjoin(Entry, Entry.entry_id == Score.entry_id)
        .order_by(Score.entry_id)
    ).all()
    for score, entry in rows:
        result = _record(score, entry, settings)
        if isinstance(result, ScoreRecord):
            records.append(result)
        else:
            excluded.append(result)
    paid = 0
    buy_ins = 0
    lineups: list[LineupSeat] = []
    for entry in session.scalars(select(Entry).order_by(Entry.entry_id)):
        if entry.stage == Stage.QUALIFYING.value:
            if entry.buy_in_cents > 0 and entry.status not in UNPAID_STATUSES:
                paid += 1
                buy_ins += entry.buy_in_cents
        elif entry.stage in (Stage.SEMI_FINAL.value, Stage.FINAL.value) and (
                entry.status not in UNPAID_STATUSES):
            lineups.append(LineupSeat(
                stage=Stage(entry.stage), entry_id=entry.entry_id, patron_id=entry.patron_id,
                heat_id=entry.heat_id, table=entry.table_id, seat=entry.seat,
                proxy=entry.played_by is not None))
    disputed = frozenset(session.scalars(
        select(Dispute.entry_id).where(Dispute.resolved_at.is_(None))))
    shown: dict[str, str] = {}
    if names == "first_name_initial":
        for patron_id, name in session.execute(select(Patron.patron_id, Patron.name)):
            shown[patron_id] = display_name(name)
    return Snapshot(records=tuple(records), excluded=tuple(excluded), paid_entries=paid,
                    buy_ins_cents=buy_ins, lineups=tuple(lineups), names=shown,
                    disputed=disputed)


# ---- building the document -----------------------------------------------------------------


def current_stage(snapshot: Snapshot, settings: TournamentSettings, now: datetime) -> Stage:
    """The latest stage that has begun (by its start time) or already has scores.

    Line-ups alone do not move the board on: between the end of qualifying and the
    semi-finals the floor still sees the final qualifying board (and the line-ups beside it).
    """
    present = {r.stage for r in snapshot.records}
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
    def __init__(self, snapshot: Snapshot, settings: TournamentSettings, options: ViewOptions,
                 now: datetime) -> None:
        self.snapshot, self.settings, self.options, self.now = snapshot, settings, options, now
        self.show_names = options.names == "first_name_initial"

    def name(self, patron_id: str) -> dict[str, Any]:
        if not self.show_names:
            return {}
        return {"name": self.snapshot.names.get(patron_id) or None}

    def row(self, p: Placing, *, advance: int | None = None,
            prizes: Mapping[str, int] | None = None) -> dict[str, Any]:
        r = p.record
        out: dict[str, Any] = {
            "rank": p.rank, "position": p.position, "entry_id": r.entry_id,
            **self.name(r.patron_id),
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

    def board(self, board: Leaderboard, *, advance: Qualification | None,
              prizes: PrizeBook | None) -> dict[str, Any]:
        places = advance.places if advance is not None else None
        amounts = {a.entry_id: a.amount_cents for a in prizes.awards} if prizes else None
        shown = board.places[: self.options.rows]
        reasons = [n.reason for n in board.not_counted]
        tie = advance.cut_line_tie if advance is not None else None
        return {
            "stage": board.stage.value, "label": STAGE_LABELS[board.stage],
            "counted": len(board.places), "more": len(board.places) - len(shown),
            "advance": places, "tie_rule": board.tie_rule,
            "acknowledged_only": board.acknowledged_only,
            "awaiting_acknowledgement": reasons.count("unacknowledged"),
            "voided": reasons.count("voided"),
            "cut_line_tie": tie.note if tie is not None else None,
            "rows": [self.row(p, advance=places, prizes=amounts) for p in shown],
        }

    def pending(self, stage: Stage) -> list[dict[str, Any]]:
        if not self.settings.acknowledged_only:
            return []
        waiting = [r for r in self.snapshot.records
                   if r.stage is stage and not r.voided and not r.acknowledged]
        waiting.sort(key=lambda r: (r.recorded_at, r.entry_id), reverse=True)
        return [{"entry_id": r.entry_id, **self.name(r.patron_id),
                 "score_cents": r.score_cents, "score": format_rand(r.score_cents),
                 "disputed": r.entry_id in self.snapshot.disputed,
                 "table": r.table, "recorded_at": format_ts(r.recorded_at),
                 "recorded_local": _local(r.recorded_at, self.settings)}
                for r in waiting[:_PENDING_ROWS]]

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
        board = weekly_leaderboard(self.snapshot.records, s, week)
        leaders = [self.row(p) for p in board.at_position(1)] if board.places else []
        return {
            "week": week, "weeks": last, "prize_weeks": weekly.weeks,
            "prize_week": week <= weekly.weeks, "state": state,
            "starts": first.isoformat(), "ends": last_day.isoformat(),
            "label": f"{_day_label(first)} to {_day_label(last_day)}",
            "counted": len(board.places), "leaders": leaders,
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
                    "seat": x.seat, "entry_id": x.entry_id, **self.name(x.patron_id),
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
        qualifying = qualifying_leaderboard(snap.records, s)
        semi = semi_final_standings(snap.records, s)
        final = final_standings(snap.records, s)
        pools, top, fin = self.pools(qualifying, final)
        if stage is Stage.QUALIFYING:
            board = self.board(qualifying, advance=qualifiers(qualifying, s.qualifying.advance
                                                              or 1), prizes=top)
        elif stage is Stage.SEMI_FINAL:
            board = self.board(semi.board, advance=semi, prizes=None)
        else:
            board = self.board(final, advance=None, prizes=fin)
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
            "excluded_total": len(snap.excluded),
            "excluded": [{"entry_id": x.entry_id, "table": x.table, "stage": x.stage,
                          **_money(x.score_cents), "reason": x.reason}
                         for x in snap.excluded[:_EXCLUDED_ROWS]],
        }


def build_standings(snapshot: Snapshot, settings: TournamentSettings, options: ViewOptions, *,
                    now: datetime) -> dict[str, Any]:
    """The standings document (plain JSON types) of a snapshot at `now` (aware)."""
    if now.utcoffset() is None:
        raise ValueError("now must be an aware datetime")
    return _Builder(snapshot, settings, options, now).build()


def standings(engine: Engine, settings: TournamentSettings, options: ViewOptions, *,
              now: datetime) -> dict[str, Any]:
    """Read the database and build the standings document (blocking: run it in a thread)."""
    from leaderboard.standings_awards import awarded_prizes  # noqa: PLC0415

    with Session(engine) as session, session.begin():
        snapshot = load_snapshot(session, settings, names=options.names)
        shown = snapshot.names if options.names == "first_name_initial" else None
        awards = awarded_prizes(session, settings, now=now, names=shown)
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


def _ack_text(row: Mapping[str, Any]) -> str:
    if row.get("disputed"):
        return "disputed"
    return "yes" if row["acknowledged"] else "no"


def format_text(doc: Mapping[str, Any]) -> str:
    """The standings as plain text for a terminal (`showdown leaderboard standings`)."""
    lines: list[str] = []
    board = doc["board"]
    lines.append(f"{doc['title']} - {board['label']} (as of {doc['generated_local']}"
                 f" {doc['timezone']})")

    def who(row: Mapping[str, Any]) -> str:
        return str(row["entry_id"]) + (f" ({row['name']})" if row.get("name") else "")

    width = max([16, *(len(who(row)) for row in board["rows"])])
    lines.append(f"{'rank':>4}  {'entry':<{width}} {'score':>14}  hands  ack")
    advance = board.get("advance")
    for row in board["rows"]:
        mark = "=" if row["tied"] and board["tie_rule"] == "split" else " "
        lines.append(f"{row['position']:>4}{mark} {who(row):<{width}} {row['score']:>14}"
                     f"  {row['hands']:>5}"
                     f"  {_ack_text(row)}"
                     + (f"  prize {row['prize']['text']}" if "prize" in row else ""))
        if advance is not None and row["rank"] == advance:
            lines.append(f"      ---- top {advance} advance ----")
    if not board["rows"]:
        lines.append("      (no counted scores yet)")
    if board["more"]:
        lines.append(f"      ... and {board['more']} more")
    if board.get("cut_line_tie"):
        lines.append(f"  note: {board['cut_line_tie']}")
    lines.append(f"  awaiting acknowledgement: {board['awaiting_acknowledgement']},"
                 f" voided: {board['voided']}")
    week = doc["week"]
    leaders = ", ".join(f"{r['entry_id']} {r['score']}" for r in week["leaders"]) or "none yet"
    lines.append(f"week {week['week']} ({week['starts']} to {week['ends']}): {leaders}")
    pools = doc["pools"]
    for key, label in (("final_pool", "Final Prize Pool"), ("top_score", "Top Score Progressive")):
        pool = pools[key]
        split = ", ".join(f"{p['place']}: {p['text']}" for p in pool["places"])
        lines.append(f"{label} ({pool['percent']}% of {pools['entries']} buy-ins):"
                     f" {pool['text']} [{split}; remainder {pool['remainder']['text']}]")
    lines.append(f"pool split remainder: {pools['remainder']['text']}")
    for key in ("semi_final", "final"):
        lineup = doc[key]
        for heat in lineup["heats"]:
            seats = ", ".join(f"seat {s['seat']}: {s['entry_id']}" for s in heat["seats"])
            lines.append(f"{lineup['label']} {heat['heat_id'] or ''} table"
                         f" {heat['table'] or '-'}: {seats}")
    for x in doc["excluded"]:
        lines.append(f"not ranked: {x['entry_id']} ({x['table']}, {x['text']}): {x['reason']}")
    return "\n".join(lines)

