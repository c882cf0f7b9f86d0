"""The demo's closing summary, read from the central database: the standings as the page shows
them, the Final's winners with their places and prizes, every prize with its amount and whether
it was claimed, the pools and what they kept back, hands played, alerts, the faults injected,
and the problems found. It fills the FloorReport (floor.report) the floor returns.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from drivers.readings import RECOVERED
from floor.clock import FloorClock
from floor.plan import TournamentPlan
from floor.progress import ordinal
from floor.report import FloorReport, PlaceLine, PrizeLine
from game.messages.table import Alert
from game.money import format_rand
from game.tournament.entries import Stage
from game.tournament.prizes import prize_pools
from game.tournament.standings import StandingsError, final_standings, semi_final_standings
from game.words import book_name, spoken, spoken_list
from leaderboard import desk
from leaderboard.models import AuditEntry, Dispute, Entry, Message

if TYPE_CHECKING:
    from game.tournament.schema import TournamentSettings
    from leaderboard.app import LeaderboardService

__all__ = ["summary"]


class SimulatedFloor(Protocol):
    """What the summary reads of the tournament's floor (floor.tournament.SimulatedFloor)."""

    plan: TournamentPlan
    report: FloorReport
    clock: FloorClock
    settings: TournamentSettings | None
    service: LeaderboardService | None
    names: dict[str, str]

    def say(self, text: str) -> None: ...
    def short(self, patron: str) -> str: ...
    def local(self, when: datetime | None = None) -> datetime: ...


def _lines(session: Session, settings: TournamentSettings, stage: Stage,
           prizes: dict[str, int]) -> list[PlaceLine]:
    records = desk.score_records(session, settings, stage)
    try:
        board = (semi_final_standings(records, settings).board if stage is Stage.SEMI_FINAL
                 else final_standings(records, settings))
    except StandingsError:
        return []
    out = []
    for p in board.places:
        entry = session.get(Entry, p.entry_id)
        assert entry is not None
        out.append(PlaceLine(stage=stage.value, position=p.position, entry_id=p.entry_id,
                             holder=entry.patron_id, played_by=entry.played_by or entry.patron_id,
                             heat=entry.heat_id or "-", seat=entry.seat or 0,
                             score_cents=p.score_cents, prize_cents=prizes.get(p.entry_id, 0)))
    return out


def _collect(floor: SimulatedFloor, session: Session, settings: TournamentSettings) -> None:
    """Read what the central database holds into the report."""
    r = floor.report
    now = floor.clock.wall()
    r.prizes = [PrizeLine(award_id=v.award_id, kind=v.kind, place=v.place, entry_id=v.entry_id,
                          patron_id=v.patron_id, winner=floor.names.get(v.patron_id, "?"),
                          amount_cents=v.amount_cents, status=v.status, deadline=v.deadline,
                          claimed_at=v.claimed_at) for v in desk.prizes(session, lambda: now)]
    final_prizes = {p.entry_id: p.amount_cents for p in r.prizes if p.kind == "final"}
    r.semi_places = _lines(session, settings, Stage.SEMI_FINAL, {})
    r.final_places = _lines(session, settings, Stage.FINAL, final_prizes)
    entries = session.scalar(select(func.count()).select_from(Entry).where(
        Entry.stage == Stage.QUALIFYING.value)) or 0
    pools = prize_pools(entries, settings)
    r.pools = {"entries": entries, "buy_ins": pools.total_cents,
               "final_pool": pools.final_pool_cents, "top_score": pools.top_score_cents,
               "split_remainder": pools.remainder_cents}
    for row in session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.awarded")):
        kind = str(row.detail.get("kind"))
        key = f"week {row.detail['week']}" if kind == "weekly" else kind
        r.remainders[key] = sum(int(x["amount_cents"]) for x in row.detail.get("remainders", []))


def _checks(floor: SimulatedFloor, settings: TournamentSettings) -> list[str]:
    """What does not add up: prize books against their pools, places against seats,
    entries without a score, claims against the plan."""
    r, out = floor.report, []
    for kind, pool in (("final", r.pools.get("final_pool", 0)),
                       ("top_score", r.pools.get("top_score", 0))):
        if kind not in r.remainders:
            continue
        paid = sum(p.amount_cents for p in r.prizes if p.kind == kind)
        if paid + r.remainders[kind] != pool:
            out.append(f"the {kind} prizes ({format_rand(paid)}) and their remainder"
                       f" ({format_rand(r.remainders[kind])}) do not make the pool"
                       f" ({format_rand(pool)})")
    if Stage.FINAL.value in r.stages and len(r.final_places) != (settings.final.seats or 0):
        out.append(f"{len(r.final_places)} Final scores for {settings.final.seats} seats")
    unscored = r.entries_seated - len(r.scores) - len(r.withdrawn)
    if unscored:
        out.append(f"{unscored} seated qualifying entries have no score")
    if "claims" in r.stages:
        open_ = sum(1 for p in r.prizes if p.status != "claimed")
        if open_ != min(floor.plan.unclaimed, len(r.prizes)):
            out.append(f"{open_} prizes not claimed, {floor.plan.unclaimed} planned")
    return out


def _alerts(session: Session) -> Counter[str]:
    rows = session.scalars(select(Message.body).where(Message.type == Alert.TYPE))
    return Counter(str(body.get("kind")) for body in rows)


def _recovered(session: Session) -> Counter[str]:
    """What the tables' drivers healed by themselves, totalled from their `device_recovered`
    notices (D347): counter -> count."""
    rows = session.scalars(select(Message.body).where(Message.type == Alert.TYPE))
    total: Counter[str] = Counter()
    for body in rows:
        evidence = body.get("evidence") if body.get("kind") == "device_recovered" else None
        counts = evidence.get("counts") if isinstance(evidence, dict) else None
        if isinstance(counts, dict):
            total.update({str(k): int(v) for k, v in counts.items()})
    return total


def _disputes(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(Dispute)) or 0


def summary(floor: SimulatedFloor) -> None:
    """Print the closing standings and the tournament's summary; fill the report."""
    from leaderboard.standings.view import ViewOptions, format_text, standings  # noqa: PLC0415

    settings, r, say = floor.settings, floor.report, floor.say
    assert settings is not None
    engine = floor.service.engine if floor.service is not None else None
    assert engine is not None
    doc = standings(engine, settings, ViewOptions(venue=floor.plan.venue,
                    title=settings.venue_name, rows=12, names="first_name_initial"),
                    now=floor.clock.wall())
    say("\n" + format_text(doc))
    with Session(engine) as session:
        _collect(floor, session, settings)
        alerts = _alerts(session)
        recovered = _recovered(session)
        disputes = _disputes(session)
    r.problems.extend(_checks(floor, settings))
    say(f"\n==== the tournament, seed {r.seed} ====")
    say(f"stages played: {spoken_list(r.stages)}")
    for what, when in r.calendar:
        say(f"  {when:%a %d %b %Y %H:%M}  {what}")
    if r.final_places:
        say("the Final:")
        for p in r.final_places:
            proxy = (f", played by {floor.short(p.played_by)} as proxy"
                     if p.played_by != p.holder else "")
            say(f"  {ordinal(p.position or 0):>4}  {floor.names.get(p.holder, p.holder):<24}"
                f" {format_rand(p.score_cents or 0):>11}  prize {format_rand(p.prize_cents):>10}"
                f"  (seat {p.seat}, {p.entry_id}{proxy})")
    if r.prizes:
        say("prizes:")
    for prize in r.prizes:
        label = f"week {prize.place}" if prize.kind == "weekly" else ordinal(prize.place)
        until = f"{floor.local(prize.deadline):%a %d %b %Y %H:%M}"
        status = (f"claimed {floor.local(prize.claimed_at):%d %b}"
                  if prize.claimed_at is not None
                  else f"{prize.status}, open until {until}" if prize.status == "unclaimed"
                  else prize.status)
        say(f"  {book_name(prize.kind):<22} {label:<7}"
            f" {format_rand(prize.amount_cents):>11}  {prize.winner:<24} {status}")
    pools = r.pools
    if pools:
        kept = ", ".join(f"{book_name(k)} {format_rand(v)}"
                         for k, v in sorted(r.remainders.items()))
        weekly = sum(p.amount_cents for p in r.prizes if p.kind == "weekly")
        say(f"pools: {pools['entries']} buy-ins {format_rand(pools['buy_ins'])}: Final Prize"
            f" Pool {format_rand(pools['final_pool'])}, Top Score Progressive"
            f" {format_rand(pools['top_score'])}, split remainder"
            f" {format_rand(pools['split_remainder'])}; kept back by the prize books:"
            f" {kept or 'nothing'}; weekly prizes {format_rand(weekly)} (the casino's)")
    say(f"hands played: {r.hands_played} at {floor.plan.tables} tables; alerts raised by the"
        f" tables: {sum(alerts.values())}"
        + (f" ({', '.join(f'{spoken(k)} {n}' for k, n in sorted(alerts.items()))})"
           if alerts else ""))
    if recovered:
        say("recovered device faults (healed by the drivers, D347): " + ", ".join(
            f"{n} {RECOVERED.get(k, k)}" for k, n in sorted(recovered.items())))
    say(f"faults injected: overpays {r.overpays} (next hands refused {r.hands_refused},"
        f" overridden {r.overrides}), disputes {disputes} (ruled on at the desk), withdrawals"
        f" {len(r.withdrawn)}, decks {floor.plan.deck_mode} (held {r.deck_holds})")
    claimed = sum(1 for p in r.prizes if p.status == "claimed")
    say(f"prizes awarded {len(r.prizes)}, claimed {claimed}; proxies {len(r.proxies)};"
        f" Final seat draw {r.draw.get('draw_id', '-')}")
    _legacy(floor)


def _legacy(floor: SimulatedFloor) -> None:
    """The counts the earlier demo printed (scripts read them)."""
    r, plan, say = floor.report, floor.plan, floor.say
    say(f"\n{r.heats_played} heats played, {r.entries_seated} entries seated,"
        f" {len(r.scores)} scores on the leaderboard, {len(r.withdrawn)} withdrawn,"
        f" {len(r.refused)} registration refused, {len(r.problems)} problems")
    say(f"payouts verified by the chip readers: {r.payouts_verified}; overpays"
        f" injected: {r.overpays}, next hands refused: {r.hands_refused},"
        f" supervisor overrides: {r.overrides}")
    if plan.deck_mode != "shuffled" or r.deck_holds:
        say(f"decks {plan.deck_mode}: suspect decks held, cleared by a supervisor:"
            f" {r.deck_holds}")
    say(f"chips returned to the tables' floats: {r.chips_reconciled} entries,"
        f" {r.chips_missing} chips missing")
    for problem in r.problems:
        say(f"  problem: {problem}")
    if not r.problems:
        say("problems: none")

