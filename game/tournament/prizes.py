"""Prize money: the two buy-in pools, weekly prizes, place prizes with ties, and claim expiry.

Rules: tournament.md "Prize money" and "Leaderboards and ties"; promotion rules [4, 17, 18, 52,
55]. Every split rounds down to the cent and reports what is left (`Remainder`), so in every
`PrizeBook` the awards and the remainders add up to the pool exactly. Pure: "now" is passed in.
docs/standings-and-prizes.md explains each decision (weekly amount, ties, claim dates).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from fractions import Fraction

from game.errors import GameError
from game.money import format_rand, split_round_down
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.tournament.standings import Leaderboard, Placing, ScoreRecord, weekly_leaderboard

__all__ = [
    "ClaimStatus",
    "Pools",
    "PrizeAward",
    "PrizeBook",
    "PrizeError",
    "PrizeKind",
    "Remainder",
    "RemainderReason",
    "check_claim",
    "claim_deadline",
    "claim_status",
    "final_book",
    "final_draw_date",
    "pools_taken",
    "prize_pools",
    "top_score_book",
    "weekly_book",
    "weekly_books",
    "weekly_paid_on",
]


class PrizeError(GameError, ValueError):
    """A prize request that breaks the rules (a week without a prize, a late claim, ...)."""


class PrizeKind(StrEnum):
    """The three kinds of prize (each paid from its own pool)."""

    WEEKLY = "weekly"  # top weekly score, first 4 weeks [17]
    TOP_SCORE = "top_score"  # Top Score Progressive: 20% of buy-ins [4, 18]
    FINAL = "final"  # Final Prize Pool: 80% of buy-ins [18, 52]


class RemainderReason(StrEnum):
    """Why cents of a pool were not awarded."""

    ROUNDING = "rounding"  # the pool's shares were rounded down to the cent
    TIE_SPLIT = "tie_split"  # tied entries' pooled prize did not divide equally
    UNAWARDED = "unawarded"  # a paying place (or week) with no counted score


class ClaimStatus(StrEnum):
    """Where a prize stands at a given moment [55]."""

    UNCLAIMED = "unclaimed"
    CLAIMED = "claimed"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pools:
    """All buy-ins split into the Final Prize Pool and the Top Score Progressive [18].

    final_pool_cents + top_score_cents + remainder_cents == total_cents, always.
    """

    entries: int
    buy_in_cents: int
    total_cents: int
    final_pool_cents: int
    top_score_cents: int
    remainder_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeAward:
    """One prize to one entry (and so to its patron); claimable until `claim_deadline`.

    `week` is set for weekly prizes, `position` for place prizes (the shared position under
    "split"). `draw_date` is the "date of the draw" of rule 55 from which the claim days count.
    """

    kind: PrizeKind
    week: int | None
    position: int | None
    entry_id: str
    patron_id: str
    amount_cents: int
    draw_date: date
    claim_deadline: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Remainder:
    """Cents of a pool not awarded, with why (reported, never lost)."""

    reason: RemainderReason
    amount_cents: int
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeBook:
    """One pool (one week's prize for weekly) and where every cent of it went.

    sum(award amounts) + sum(remainder amounts) == total_cents, checked on construction.
    """

    kind: PrizeKind
    week: int | None
    total_cents: int
    awards: tuple[PrizeAward, ...]
    remainders: tuple[Remainder, ...]

    def __post_init__(self) -> None:
        paid = self.awarded_cents + self.remainder_cents
        if paid != self.total_cents:
            raise PrizeError(
                f"{self.kind} pool of {format_rand(self.total_cents)} does not balance:"
                f" awards and remainders add up to {format_rand(paid)}"
            )

    @property
    def awarded_cents(self) -> int:
        """All cents awarded from this pool."""
        return sum(a.amount_cents for a in self.awards)

    @property
    def remainder_cents(self) -> int:
        """All cents of this pool not awarded."""
        return sum(r.amount_cents for r in self.remainders)

    def awards_of(self, patron_id: str) -> tuple[PrizeAward, ...]:
        """Every award of this pool to one patron (one per winning entry)."""
        return tuple(a for a in self.awards if a.patron_id == patron_id)


def _count(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PrizeError(f"{name} must be a whole number >= {low}, got {value!r}")
    return value


def _aware(name: str, value: object) -> datetime:
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise PrizeError(f"{name} must be a datetime with a time zone, got {value!r}")
    return value


def prize_pools(entries: int, settings: TournamentSettings) -> Pools:
    """The live pools: entries x buy-in, split 80/20 (settings), each rounded down to the cent."""
    _count("entries", entries, 0)
    total = entries * settings.buy_in_cents
    prizes = settings.prizes
    (final, top), rest = split_round_down(total, [prizes.final_pool_percent,
                                                  prizes.top_score_percent])
    return Pools(entries=entries, buy_in_cents=settings.buy_in_cents, total_cents=total,
                 final_pool_cents=final, top_score_cents=top, remainder_cents=rest)


def pools_taken(entries: int, taken_cents: int, settings: TournamentSettings) -> Pools:
    """The pools of `entries` paid buy-ins that took `taken_cents` in all: as `prize_pools`
    when each paid the buy-in, else the money actually taken split 80/20 (rounded down)."""
    _count("entries", entries, 0)
    _count("the buy-ins taken (cents)", taken_cents, 0)
    if taken_cents == entries * settings.buy_in_cents:
        return prize_pools(entries, settings)
    prizes = settings.prizes
    (final, top), rest = split_round_down(taken_cents, [prizes.final_pool_percent,
                                                        prizes.top_score_percent])
    return Pools(entries=entries, buy_in_cents=settings.buy_in_cents, total_cents=taken_cents,
                 final_pool_cents=final, top_score_cents=top, remainder_cents=rest)


def claim_deadline(draw_date: date, *, tz: tzinfo, claim_days: int = 15) -> datetime:
    """The instant a prize expires: 00:00 local after the `claim_days`-th day after the draw.

    Day 1 is the day after the draw date, so a prize drawn on 1 August may be claimed until
    the end of 16 August; at 17 August 00:00 (venue time) it has expired [55].
    """
    if isinstance(draw_date, datetime) or not isinstance(draw_date, date):
        raise PrizeError(f"the draw date must be a date, got {draw_date!r}")
    _count("claim_days", claim_days, 1)
    return datetime.combine(draw_date + timedelta(days=claim_days + 1), time(0), tzinfo=tz)


def check_claim(award: PrizeAward, at: datetime) -> None:
    """Refuse a claim at `at` if the prize has expired by then."""
    _aware("the claim time", at)
    if at >= award.claim_deadline:
        raise PrizeError(
            f"the {award.kind} prize of entry {award.entry_id} ({format_rand(award.amount_cents)})"
            f" expired at {award.claim_deadline:%Y-%m-%d %H:%M}: claimed at {at:%Y-%m-%d %H:%M}"
        )


def claim_status(award: PrizeAward, now: datetime,
                 claimed_at: datetime | None = None) -> ClaimStatus:
    """Claimed (if a valid claim is recorded), else unclaimed until the deadline, then expired."""
    _aware("now", now)
    if claimed_at is not None:
        _aware("claimed_at", claimed_at)
        if claimed_at > now:
            raise PrizeError(f"a claim recorded at {claimed_at:%Y-%m-%d %H:%M} is after now")
        check_claim(award, claimed_at)
        return ClaimStatus.CLAIMED
    return ClaimStatus.EXPIRED if now >= award.claim_deadline else ClaimStatus.UNCLAIMED


def final_draw_date(settings: TournamentSettings) -> date:
    """The draw date of the Top Score Progressive and the Final prizes: the Final's local date."""
    starts = settings.final.starts_at
    if starts is None:  # parse_tournament always sets it; kept for the type checker
        raise PrizeError("final.starts is not set")
    return starts.astimezone(settings.tz).date()


def weekly_paid_on(settings: TournamentSettings, week: int) -> date:
    """The Friday a week's prize is paid (the day the next prize week starts) [17]."""
    _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
    return end.astimezone(settings.tz).date()


def _groups(places: Sequence[Placing]) -> list[list[Placing]]:
    groups: list[list[Placing]] = []
    for p in places:
        if groups and groups[-1][0].position == p.position:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def _place_awards(board: Leaderboard, shares: Sequence[int], *, kind: PrizeKind,
                  week: int | None, draw_date: date, settings: TournamentSettings,
                  ) -> tuple[list[PrizeAward], list[Remainder]]:
    """Pay shares[i] to position i + 1; tied entries sharing a position pool their places."""
    deadline = claim_deadline(draw_date, tz=settings.tz, claim_days=settings.prizes.claim_days)
    awards: list[PrizeAward] = []
    remainders: list[Remainder] = []
    for group in _groups(board.places):
        first = group[0].position
        covered = range(first - 1, min(first - 1 + len(group), len(shares)))
        if not covered:
            break
        pooled = sum(shares[i] for i in covered)
        each, rest = divmod(pooled, len(group))
        if each:
            awards.extend(PrizeAward(
                kind=kind, week=week, position=None if kind is PrizeKind.WEEKLY else p.position,
                entry_id=p.entry_id, patron_id=p.patron_id, amount_cents=each,
                draw_date=draw_date, claim_deadline=deadline) for p in group)
        if rest:
            last = first + len(group) - 1
            remainders.append(Remainder(
                reason=RemainderReason.TIE_SPLIT, amount_cents=rest,
                detail=f"places {first}-{last} ({format_rand(pooled)}) shared by"
                       f" {len(group)} tied entries at {format_rand(each)} each",
            ))
    missing = sum(shares[len(board.places):])
    if missing:
        first_missing = len(board.places) + 1
        remainders.append(Remainder(
            reason=RemainderReason.UNAWARDED, amount_cents=missing,
            detail=f"places {first_missing}-{len(shares)} have no counted score"
            if first_missing < len(shares) else f"place {first_missing} has no counted score",
        ))
    return awards, remainders


def _check_board(board: Leaderboard, stage: Stage, what: str) -> None:
    if board.stage is not stage or board.week is not None or board.heat_id is not None:
        raise PrizeError(f"the {what} is paid from the whole {stage} leaderboard")


def _pct(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _pool_book(board: Leaderboard, pool_cents: int, percents: Sequence[Fraction], *,
               kind: PrizeKind, settings: TournamentSettings) -> PrizeBook:
    shares, rounding = split_round_down(pool_cents, percents)
    awards, remainders = _place_awards(board, shares, kind=kind, week=None,
                                       draw_date=final_draw_date(settings), settings=settings)
    if rounding:
        remainders.insert(0, Remainder(
            reason=RemainderReason.ROUNDING, amount_cents=rounding,
            detail=f"{format_rand(pool_cents)} split {'/'.join(_pct(p) for p in percents)},"
                   " each share rounded down to the cent",
        ))
    return PrizeBook(kind=kind, week=None, total_cents=pool_cents, awards=tuple(awards),
                     remainders=tuple(remainders))


def top_score_book(board: Leaderboard, pools: Pools, settings: TournamentSettings) -> PrizeBook:
    """The Top Score Progressive shared by the top qualifying places (60/25/15) [4, 18]."""
    _check_board(board, Stage.QUALIFYING, "Top Score Progressive")
    return _pool_book(board, pools.top_score_cents, settings.prizes.top_score_places,
                      kind=PrizeKind.TOP_SCORE, settings=settings)


def final_book(board: Leaderboard, pools: Pools, settings: TournamentSettings) -> PrizeBook:
    """The Final Prize Pool by final position (60/10/9/8/7/6) [52]."""
    _check_board(board, Stage.FINAL, "Final Prize Pool")
    return _pool_book(board, pools.final_pool_cents, settings.prizes.final_places,
                      kind=PrizeKind.FINAL, settings=settings)


def weekly_book(board: Leaderboard, settings: TournamentSettings, prize_cents: int) -> PrizeBook:
    """A week's prize to its top weekly score (tied tops share it under "split") [17].

    The amount is not in the promotion rules: the caller passes it (`prize_cents`). Only the
    first `weekly_prizes.weeks` (4) weeks have a prize.
    """
    week = board.week
    if board.stage is not Stage.QUALIFYING or week is None:
        raise PrizeError("a weekly prize is paid from a weekly leaderboard")
    if week > settings.weekly_prizes.weeks:
        raise PrizeError(
            f"week {week} has no weekly prize: only the first {settings.weekly_prizes.weeks}"
            " weeks do (weekly_prizes.weeks)"
        )
    _count("the weekly prize (cents)", prize_cents, 1)
    awards, remainders = _place_awards(board, (prize_cents,), kind=PrizeKind.WEEKLY, week=week,
                                       draw_date=weekly_paid_on(settings, week),
                                       settings=settings)
    if not board.places:
        remainders = [Remainder(reason=RemainderReason.UNAWARDED, amount_cents=prize_cents,
                                detail=f"week {week} has no counted score")]
    return PrizeBook(kind=PrizeKind.WEEKLY, week=week, total_cents=prize_cents,
                     awards=tuple(awards), remainders=tuple(remainders))


def weekly_books(records: Iterable[ScoreRecord], settings: TournamentSettings,
                 prize_cents: int) -> tuple[PrizeBook, ...]:
    """The weekly prize of each of the first `weekly_prizes.weeks` weeks, in week order."""
    records = tuple(records)
    return tuple(
        weekly_book(weekly_leaderboard(records, settings, week), settings, prize_cents)
        for week in range(1, settings.weekly_prizes.weeks + 1)
    )
