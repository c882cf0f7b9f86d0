"""The demo's stages after qualifying, each through the real desk functions under the signed-in
desk staff (floor.demo): the semi-final places allocated (rules 21, 24),
a proxy nominated for each extra place a patron holds (rules 25, 41), every place's heat and
seat chosen (rule 27); the semi-final heats played (in parallel when there are tables for
them); the Final's places allocated (rule 36) and its seats drawn (rule 40); the Final played
with the bonus markers (rules 43, 46); the weekly prizes awarded as each prize week ends (rule
17), the Top Score Progressive and the Final Prize Pool after the Final (rules 4, 18, 52); and
the winners claiming (rule 55), all but `FloorPlan.unclaimed` of them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from floor.demo_people import AckTurns
from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.prizes import PrizeKind
from game.words import book_name, spoken
from leaderboard import desk
from leaderboard.desk.values import Place
from leaderboard.models import PrizeAward
from runtime.clocks import WallClock

if TYPE_CHECKING:
    from floor.demo import SimulatedFloor
    from game.tournament.schema import TournamentSettings

__all__ = ["award_due_weeks", "finals"]

_ORDINAL: Final = {1: "st", 2: "nd", 3: "rd"}
_CHOOSE_AFTER: Final = timedelta(hours=10)  # the morning after qualifying ends: places
_PRIZE_AFTER: Final = timedelta(hours=1)  # after the Final starts: its prizes
_CLAIMS_AT: Final = timedelta(days=1, hours=-5)  # the winners come the next day, at noon


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th ... 11th, 12th."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else _ORDINAL.get(n % 10, 'th')}"


async def finals(floor: SimulatedFloor) -> None:
    """Everything after qualifying, stage by stage."""
    await semi_finals(floor)
    await final(floor)
    await prizes(floor)


# ---- line-ups ----------------------------------------------------------------------------


async def _proxies(floor: SimulatedFloor, stage: Stage, places: Sequence[Place]) -> None:
    """A patron holding several places of `stage` plays the best of them; a proxy, drawn
    from the registered patrons holding or playing no place of the stage, plays each other."""
    involved = {p.holder for p in places}
    free = [p for p in floor.patrons if p not in involved]
    held: dict[str, list[Place]] = {}
    for place in places:
        held.setdefault(place.holder, []).append(place)
    for holder, mine in held.items():
        for extra in mine[1:]:
            if not free:
                raise desk.Conflict(f"no registered patron is free to play {extra.entry_id}"
                                    f" for {floor.short(holder)}")
            proxy = free.pop(floor.rng.randrange(len(free)))
            await floor.at_desk("place.proxy", lambda s, st, by: desk.nominate_proxy(
                s, st, floor.clock, actor=by, entry_id=extra.entry_id,  # noqa: B023
                proxy_patron_id=proxy))  # noqa: B023
            floor.report.proxies[extra.entry_id] = proxy
            floor.say(f"desk: {floor.short(holder)} holds {len(mine)} {spoken(stage)} places:"
                      f" {floor.short(proxy)} plays {extra.entry_id} as proxy (rules 25, 41)")


def _places(floor: SimulatedFloor, stage: Stage) -> tuple[Place, ...]:
    return floor.read(lambda s, st: desk.places(s, st, stage))


def _seats(places: Sequence[Place], heat: int) -> list[tuple[int, str, str]]:
    return sorted((p.seat or 0, p.entry_id, p.player) for p in places if p.heat == heat)


async def semi_finals(floor: SimulatedFloor) -> None:
    """Allocate the semi-final places, proxies, heats and seats; play the heats."""
    settings = floor.settings
    assert settings is not None
    await floor.jump(settings.schedule.ends_at + _CHOOSE_AFTER,
                     "qualifying has ended: the semi-final places")
    await award_due_weeks(floor)
    allocated = await floor.at_desk("places.allocate", lambda s, st, by: desk.allocate_semis(
        s, st, floor.clock, actor=by))
    floor.say(f"desk: the top {len(allocated)} qualifying scores go to the semi-finals:")
    for p in allocated:
        floor.say(f"  {ordinal(p.position or 0):>4} {floor.short(p.holder):<14}"
                  f" {format_rand(p.score_cents or 0):>10}  ({p.won_by} -> {p.entry_id})")
    await _proxies(floor, Stage.SEMI_FINAL, allocated)
    sset = settings.semi_final
    heats, per_heat = sset.heats or 1, sset.seats_per_heat or 6
    free = [(h, s) for h in range(1, heats + 1) for s in range(1, per_heat + 1)]
    for place in allocated:  # in qualifying order, each chooses from the seats left (rule 27)
        heat, seat = free.pop(floor.rng.randrange(len(free)))
        await floor.at_desk("place.choose_seat", lambda s, st, by: desk.choose_seat(
            s, st, floor.clock, actor=by, entry_id=place.entry_id, heat=heat,  # noqa: B023
            seat=seat))  # noqa: B023
    places = _places(floor, Stage.SEMI_FINAL)
    await floor.jump(sset.starts_at or floor.clock(), "the semi-finals")
    tables = sorted(floor.tables)
    hands = sset.rules.hands
    for wave in range(0, heats, len(tables)):
        numbers = list(range(wave + 1, min(heats, wave + len(tables)) + 1))
        at = dict(zip(numbers, tables, strict=False))
        turns = AckTurns([at[h] for h in numbers])
        bars = {h: floor.narrator.bar(f"semi-final heat {h} at {at[h]}", hands) for h in numbers}
        await floor.parallel(floor.play_heat(
            at[h], stage=Stage.SEMI_FINAL, heat_id=desk.semi_heat_id(h), seats=_seats(places, h),
            turns=turns, bar=bars[h]) for h in numbers)
        for bar in bars.values():
            bar.finish()
    floor.report.stages.append(Stage.SEMI_FINAL.value)


def _draw_bytes(seed: int) -> desk.RandomBytes:
    """The demo's seat draw bytes, from the seed (a floor's come from the OS's CSPRNG)."""
    rng = random.Random(f"{seed}:final-draw")
    return rng.randbytes


async def final(floor: SimulatedFloor) -> None:
    """Allocate the Final's places, proxies, the seat draw; play the Final."""
    settings = floor.settings
    assert settings is not None
    await floor.jump(settings.final.starts_at or floor.clock(), "the Final")
    allocated = await floor.at_desk("places.allocate", lambda s, st, by: desk.allocate_final(
        s, st, floor.clock, actor=by))
    floor.say(f"desk: the top {len(allocated)} of the semi-finals go to the Final")
    await _proxies(floor, Stage.FINAL, allocated)
    drawn = await floor.at_desk("draw.final", lambda s, st, by: desk.draw_final(
        s, st, floor.clock, actor=by, random_bytes=_draw_bytes(floor.plan.seed)))
    floor.report.draw = {"draw_id": drawn.draw_id, "random_hex": drawn.random_hex,
                         "seats": dict(drawn.seats)}
    places = _places(floor, Stage.FINAL)
    markers = settings.final.rules.markers
    floor.say(f"desk: the Final's seats drawn (draw {drawn.draw_id}, bytes seeded by the demo;"
              f" replay: showdown desk draw replay); {markers} bonus markers of"
              f" {format_rand(settings.marker_value_cents)} each per finalist")
    for p in sorted(places, key=lambda p: p.seat or 0):
        floor.say(f"  seat {p.seat}: {floor.short(p.player)} ({p.entry_id})")
    bar = floor.narrator.bar("the Final at t01", settings.final.rules.hands)
    await floor.play_heat("t01", stage=Stage.FINAL, heat_id=desk.FINAL_HEAT,
                          seats=_seats(places, int(desk.FINAL_HEAT.rsplit("-", 1)[-1])),
                          turns=None, bar=bar)
    bar.finish()
    floor.report.stages.append(Stage.FINAL.value)


# ---- prizes ------------------------------------------------------------------------------


def _weeks(floor: SimulatedFloor) -> list[int]:
    """The prize weeks that have heat days and pay a prize (rule 17)."""
    settings, calendar = floor.settings, floor.calendar
    assert settings is not None
    assert calendar is not None
    weekly = settings.weekly_prizes
    return sorted({w for d in calendar.days if (w := weekly.week_of(settings.schedule, d))
                   <= weekly.weeks})


def _awarded(session: Session, _: TournamentSettings) -> set[tuple[str, int]]:
    return {(k, p) for k, p in session.execute(select(PrizeAward.kind, PrizeAward.place))}


async def award_due_weeks(floor: SimulatedFloor) -> None:
    """Award the weekly prize of every prize week that has ended and has not been awarded."""
    settings = floor.settings
    assert settings is not None
    now = floor.clock()
    awarded = await floor.at_desk("prizes.show", lambda s, st, _by: _awarded(s, st))
    for week in _weeks(floor):
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if end > now or (PrizeKind.WEEKLY.value, week) in awarded:
            continue
        await _award(floor, PrizeKind.WEEKLY, week=week)


async def _award(floor: SimulatedFloor, kind: PrizeKind, *, week: int | None = None) -> None:
    settings = floor.settings
    assert settings is not None
    amount = settings.weekly_prizes.prize_cents if kind is PrizeKind.WEEKLY else None
    what = f"week {week}'s prize" if week is not None else f"the {book_name(kind.value)} prizes"
    try:
        views = await floor.at_desk("prize.award", lambda s, st, by: desk.award_prizes(
            s, st, floor.clock, actor=by, kind=kind.value, week=week, prize_cents=amount))
    except desk.Conflict as exc:
        floor.say(f"desk: {what}: none awarded ({exc})")
        return
    for v in views:
        label = f"week {v.place}" if kind is PrizeKind.WEEKLY else ordinal(v.place)
        floor.say(f"desk: {book_name(kind.value)} prize {label}: {format_rand(v.amount_cents)} to"
                  f" {floor.short(v.patron_id)} ({v.entry_id}), to be claimed by"
                  f" {floor.local(v.deadline):%a %d %b %Y %H:%M}")


async def prizes(floor: SimulatedFloor) -> None:
    """The Final's and the top scores' prizes, the weeks still to pay, then the claims."""
    settings = floor.settings
    assert settings is not None
    await floor.jump((settings.final.starts_at or floor.clock()) + _PRIZE_AFTER,
                     "after the Final: the prizes")
    await _award(floor, PrizeKind.FINAL)
    await _award(floor, PrizeKind.TOP_SCORE)
    await award_due_weeks(floor)
    for week in _weeks(floor):  # a prize week that ends after the Final
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if end > floor.clock():
            await floor.jump(end + timedelta(hours=12), f"prize week {week} has ended")
            await award_due_weeks(floor)
    floor.report.stages.append("prizes")
    await claims(floor)


async def claims(floor: SimulatedFloor) -> None:
    """The winners come to the desk with their document and sign for their prize; the
    `unclaimed` ones (drawn by the seed) do not come (open until their deadline)."""
    views = floor.read(lambda s, _st: desk.prizes(s, floor.clock))
    if not views:
        return
    day = floor.local().replace(hour=12, minute=0, second=0, microsecond=0)
    await floor.jump(day + timedelta(days=1), "the winners claim their prizes")
    stay_away = set(floor.rng.sample([v.award_id for v in views],
                                     min(floor.plan.unclaimed, len(views))))
    for v in views:
        if v.award_id in stay_away:
            floor.say(f"desk: prize {v.award_id} ({format_rand(v.amount_cents)},"
                      f" {floor.short(v.patron_id)}) not claimed yet: open until"
                      f" {floor.local(v.deadline):%a %d %b %Y %H:%M} (rule 55)")
            continue
        person = floor.people[v.patron_id]
        await floor.at_desk("prize.claim", partial(
            _claim, clock=floor.clock, award_id=v.award_id, id_number=person.id_number))
        floor.say(f"desk: {floor.short(v.patron_id)} claimed prize {v.award_id}"
                  f" ({format_rand(v.amount_cents)}) showing {person.id_kind.replace('_', ' ')}"
                  f" {person.id_number}")
    floor.report.stages.append("claims")


def _claim(session: Session, settings: TournamentSettings, by: str, *, clock: WallClock,
           award_id: int, id_number: str) -> None:
    desk.claim_prize(session, settings, clock, actor=by, award_id=award_id,
                     id_number=id_number, receipt=f"demo receipt {award_id}")

