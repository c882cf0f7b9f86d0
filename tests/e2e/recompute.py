"""The tournament's arithmetic recomputed from the recorded hands and the desk's records,
written from the specification (tournament.md, promotion-rules.txt, docs/decisions/), not
from the system's code: it imports none of game.tournament.standings, game.tournament.prizes,
leaderboard.projections or leaderboard.standings.view.

`recompute(evidence, rules)` gives each entry's score per stage (`tests.e2e.scoring`), the
qualifying board [16], the weekly boards [17], the top `advance` into the semi-finals [21, 24],
the semi-final board and the top 6 [36], the Final seat draw replayed from its bytes [40], the
Final places, the pools [18] and every prize with its claim deadline [4, 17, 52, 55].

Boards: higher score first, then the earlier acknowledgement (an unacknowledged score after
every acknowledged one), then the earlier recording, then the entry id. Under
``tie_rule = "split"`` equal scores share a position (1, 2, 2, 4) and tied prize places pool
their published shares, split equally and rounded down. Every share is rounded down to the
cent; what is left is a remainder (rounding, tie_split, unawarded), never passed on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from fractions import Fraction

from tests.e2e.draw import replay_seat_draw
from tests.e2e.payouts import Paytables, payout_problems
from tests.e2e.records import Evidence
from tests.e2e.rules import Rules
from tests.e2e.scoring import EntryScore, score_entries

__all__ = [
    "Award",
    "Book",
    "Expected",
    "Place",
    "Pools",
    "Remainder",
    "board",
    "heat_day_of",
    "prize_book",
    "recompute",
    "week_moment",
    "week_of",
]

_PREFIX = {"qualifying": "E-", "semi_final": "S-", "final": "F-"}
_UNPAID = frozenset({"refunded"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """One row of a board."""

    rank: int
    position: int
    entry_id: str
    patron_id: str
    score_cents: int
    tied: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Award:
    """One prize: its kind, week (weekly) or position, the entry, the holder, the amount and
    the end of its claim window."""

    kind: str  # weekly | top_score | final
    place: int
    entry_id: str
    patron_id: str
    amount_cents: int
    deadline: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Remainder:
    """Cents of a pool that no award carries, and why."""

    reason: str  # rounding | tie_split | unawarded
    amount_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Book:
    """One pool settled: the total, its awards and its remainders (they add up exactly)."""

    kind: str
    week: int | None
    total_cents: int
    awards: tuple[Award, ...]
    remainders: tuple[Remainder, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pools:
    """The buy-ins kept and their 80/20 split [18]."""

    entries: int
    total_cents: int
    final_pool_cents: int
    top_score_cents: int
    remainder_cents: int


@dataclass(slots=True, kw_only=True)
class Expected:
    """Everything the system should show, recomputed."""

    scores: dict[str, EntryScore]
    qualifying: list[Place]
    weekly: dict[int, list[Place]]
    semi_places: list[str]  # qualifying entries that earned a semi-final place, best first
    semi: list[Place]
    final_places: list[str]  # semi-final places that earned a Final place, best first
    final: list[Place]
    draw: dict[str, int] | None  # Final place -> seat, replayed from the stored bytes
    pools: Pools
    books: list[Book]
    problems: list[str] = field(default_factory=list)

    def book(self, kind: str, week: int | None = None) -> Book | None:
        """The book of a kind (and week), if any."""
        return next((b for b in self.books if b.kind == kind and b.week == week), None)


def _key(score: EntryScore) -> tuple[object, ...]:
    ack = score.acknowledged_at
    assert score.counted_cents is not None and score.recorded_at is not None
    return (-score.counted_cents, ack is None,
            ack.timestamp() if ack is not None else 0.0, score.recorded_at.timestamp(),
            score.entry_id)


def board(scores: Sequence[EntryScore], tie_rule: str) -> list[Place]:
    """The counted scores ranked: position is the rank, or shared by equal scores under
    the split rule."""
    ranked = sorted((s for s in scores if s.counts), key=_key)
    counts: dict[int, int] = {}
    for s in ranked:
        assert s.counted_cents is not None
        counts[s.counted_cents] = counts.get(s.counted_cents, 0) + 1
    out: list[Place] = []
    for rank, s in enumerate(ranked, 1):
        assert s.counted_cents is not None
        position = rank
        if tie_rule == "split":
            position = 1 + sum(1 for o in ranked if (o.counted_cents or 0) > s.counted_cents)
        out.append(Place(rank=rank, position=position, entry_id=s.entry_id,
                         patron_id=s.patron_id, score_cents=s.counted_cents,
                         tied=counts[s.counted_cents] > 1))
    return out


def week_of(day: date, rules: Rules) -> int:
    """The prize week of a heat day: week 1 is the week (from the week's first weekday) in
    which the first heat day falls."""
    back = (rules.first_day.weekday() - rules.week_starts_on) % 7
    start = rules.first_day - timedelta(days=back)
    return (day - start).days // 7 + 1


def heat_day_of(bought_at: datetime, rules: Rules) -> date | None:
    """The heat day a buy-in belongs to: the day whose heat window (from heat_opens to the
    last buy-in, inclusive, past midnight when it ends earlier than it opens) holds it."""
    local = bought_at.astimezone(rules.timezone)
    for day in (local.date(), local.date() - timedelta(days=1)):
        opens = datetime.combine(day, rules.heat_opens, tzinfo=rules.timezone)
        ends_on = day if rules.last_buy_in > rules.heat_opens else day + timedelta(days=1)
        last = datetime.combine(ends_on, rules.last_buy_in, tzinfo=rules.timezone)
        if opens <= local <= last:
            return day
    return None


def _heat_days(evidence: Evidence, rules: Rules) -> list[str]:
    out = []
    for e in sorted(evidence.entries.values(), key=lambda e: e.entry_id):
        if e.stage != "qualifying" or e.bought_at is None:
            continue
        day = heat_day_of(e.bought_at, rules)
        if day is None or day != e.heat_day:
            out.append(f"{e.entry_id}: bought at {e.bought_at.isoformat()} for heat day"
                       f" {e.heat_day}, but that buy-in falls in the heat of {day}")
        elif not rules.first_day <= day <= rules.last_day:
            out.append(f"{e.entry_id}: heat day {day} is outside qualifying")
    return out


def _week_start(week: int, rules: Rules) -> date:
    back = (rules.first_day.weekday() - rules.week_starts_on) % 7
    return rules.first_day - timedelta(days=back) + timedelta(days=7 * (week - 1))


def week_moment(week: int, rules: Rules) -> datetime:
    """A moment inside prize week `week` (its fourth day at noon, venue time)."""
    return datetime.combine(_week_start(week, rules) + timedelta(days=3), time(12),
                            tzinfo=rules.timezone)


def _deadline(draw_day: date, rules: Rules) -> datetime:
    """Claims run to the end of the claim_days-th day after the draw, venue time [55]."""
    return datetime.combine(draw_day + timedelta(days=rules.claim_days + 1), time(0),
                            tzinfo=rules.timezone)


def _shares(total: int, percents: Sequence[Fraction]) -> list[int]:
    return [int(total * p // 100) for p in percents]


def prize_book(kind: str, places: Sequence[Place], total: int, percents: Sequence[Fraction], *,
               tie_rule: str, deadline: datetime, week: int | None = None) -> Book:
    """A pool split by position: each place's share rounded down; under "split" a tied group
    pools the shares of the paying places it occupies and divides them equally."""
    shares = _shares(total, percents)
    remainders: list[Remainder] = []
    rounding = total - sum(shares)
    if rounding:
        remainders.append(Remainder(reason="rounding", amount_cents=rounding))
    awards: list[Award] = []
    paid = 0
    at = 0
    while at < len(places) and at < len(shares):
        first = places[at]
        group = [first]
        if tie_rule == "split":
            group = [p for p in places[at:] if p.score_cents == first.score_cents]
        pooled = sum(shares[at:at + len(group)])
        each = pooled // len(group)
        for p in group:
            if each > 0:
                awards.append(Award(kind=kind, place=week if week is not None else p.position,
                                    entry_id=p.entry_id, patron_id=p.patron_id,
                                    amount_cents=each, deadline=deadline))
        if pooled - each * len(group):
            remainders.append(Remainder(reason="tie_split",
                                        amount_cents=pooled - each * len(group)))
        paid += pooled
        at += len(group)
    unawarded = sum(shares) - paid
    if unawarded:
        remainders.append(Remainder(reason="unawarded", amount_cents=unawarded))
    book = Book(kind=kind, week=week, total_cents=total, awards=tuple(awards),
                remainders=tuple(remainders))
    carried = sum(a.amount_cents for a in awards) + sum(r.amount_cents for r in remainders)
    assert carried == total, (kind, week, carried, total)
    return book


def _pools(evidence: Evidence, rules: Rules) -> Pools:
    paid = [e for e in evidence.entries.values()
            if e.stage == "qualifying" and e.buy_in_cents > 0 and e.status not in _UNPAID]
    total = sum(e.buy_in_cents for e in paid)
    final = int(total * rules.final_pool_percent // 100)
    top = int(total * rules.top_score_percent // 100)
    return Pools(entries=len(paid), total_cents=total, final_pool_cents=final,
                 top_score_cents=top, remainder_cents=total - final - top)


def _advancing(places: Sequence[Place], count: int | None, next_stage: str) -> list[str]:
    """The place ids the top `count` earn in the next stage (E-x -> S-x -> F-x)."""
    out = []
    for p in places[: count or 0]:
        rest = p.entry_id.split("-", 1)[1] if "-" in p.entry_id else p.entry_id
        out.append(_PREFIX[next_stage] + rest)
    return out


def _weeks_in_qualifying(rules: Rules) -> int:
    return week_of(rules.last_day, rules)


def _books(expected: Expected, rules: Rules) -> list[Book]:
    books: list[Book] = []
    for week in range(1, min(rules.prize_weeks, _weeks_in_qualifying(rules)) + 1):
        places = expected.weekly.get(week, [])
        if not places:
            continue  # no heat that week: nothing to award (nor any book recorded)
        paid_on = _week_start(week, rules) + timedelta(days=7)
        books.append(prize_book("weekly", places, rules.weekly_prize_cents, [Fraction(100)],
                                tie_rule=rules.tie_rule, deadline=_deadline(paid_on, rules),
                                week=week))
    final_start = rules.stage("final").starts
    assert final_start is not None, "the Final has no start: no draw date for its prizes"
    draw_day = final_start.astimezone(rules.timezone).date()
    deadline = _deadline(draw_day, rules)
    books.append(prize_book("top_score", expected.qualifying, expected.pools.top_score_cents,
                            rules.top_score_places, tie_rule=rules.tie_rule, deadline=deadline))
    books.append(prize_book("final", expected.final, expected.pools.final_pool_cents,
                            rules.final_places, tie_rule=rules.tie_rule, deadline=deadline))
    return books


def recompute(evidence: Evidence, rules: Rules, *,
              paytables: Mapping[str, Paytables] | None = None) -> Expected:
    """The whole tournament's standings and prizes, recomputed; with each table's paytables,
    every wager line's pay is checked too (tests.e2e.payouts)."""
    scores = score_entries(evidence, rules)

    def of(stage: str) -> list[EntryScore]:
        """The recomputed scores of one stage."""
        return [s for s in scores.values() if s.stage == stage]

    qualifying = board(of("qualifying"), rules.tie_rule)
    weekly: dict[int, list[Place]] = {}
    by_week: dict[int, list[EntryScore]] = {}
    for s in of("qualifying"):
        if s.heat_day is not None:
            by_week.setdefault(week_of(s.heat_day, rules), []).append(s)
    for week, members in sorted(by_week.items()):
        weekly[week] = board(members, rules.tie_rule)
    semi = board(of("semi_final"), rules.tie_rule)
    final = board(of("final"), rules.tie_rule)
    draw = None
    problems = [f"{e}: {p}" for e, s in sorted(scores.items()) for p in s.problems]
    problems += evidence.problems
    problems += _heat_days(evidence, rules)
    for hand in evidence.hands if paytables is not None else ():
        tables = paytables.get(hand.table) if paytables is not None else None
        if tables is None:
            problems.append(f"{hand.table}: no paytables to check hand {hand.hand_id} against")
            continue
        problems += payout_problems(hand, tables, rules.marker_value_cents)
    if evidence.draw is not None:
        draw = replay_seat_draw(evidence.draw.finalists, evidence.draw.seats,
                                bytes.fromhex(evidence.draw.random_hex))
    expected = Expected(
        scores=scores, qualifying=qualifying, weekly=weekly,
        semi_places=_advancing(qualifying, rules.stage("qualifying").advance, "semi_final"),
        semi=semi,
        final_places=_advancing(semi, rules.stage("semi_final").advance, "final"),
        final=final, draw=draw, pools=_pools(evidence, rules), books=[], problems=problems)
    expected.books = _books(expected, rules)
    return expected

