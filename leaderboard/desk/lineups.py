"""Semi-final and Final line-ups: places allocated from the standings (rules 21, 24, 36),
heats and seats chosen (rule 27), proxies nominated (rules 25, 41)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.schema import MAX_SEATS, TournamentSettings
from game.tournament.standings import (
    Qualification,
    StandingsError,
    semi_final_standings,
    semi_finalists,
)
from leaderboard.desk.action import (
    begin_action,
    conflict_on_race,
    desk_now,
    write_audit,
)
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.holds import screen
from leaderboard.desk.ids import ENTRY_PREFIX, semi_heat_id
from leaderboard.desk.lookups import (
    PLAYED,
    REGISTERED,
    get_entry,
    get_patron,
    has_score,
    stage_entries,
    stage_of,
)
from leaderboard.desk.scores import score_records
from leaderboard.desk.values import Place
from leaderboard.eligibility import as_utc
from leaderboard.models import Entry, Proxy
from leaderboard.projections import SEATED
from runtime.clocks import WallClock

# The audit action of each stage's allocation (one name per stage: docs/significant-events.md).
ALLOCATED: Final[Mapping[Stage, str]] = {Stage.SEMI_FINAL: "semi_final.allocated",
                                         Stage.FINAL: "final.allocated"}


def _previous(stage: Stage) -> Stage:
    return Stage.QUALIFYING if stage is Stage.SEMI_FINAL else Stage.SEMI_FINAL


def _place_id(stage: Stage, won_by: str) -> str:
    """The place id in `stage` earned by entry `won_by` of the previous stage."""
    before = ENTRY_PREFIX[_previous(stage)]
    rest = won_by[len(before):] if won_by.startswith(before) else won_by
    return ENTRY_PREFIX[stage] + rest


def _won_by(session: Session, entry_id: str, stage: Stage) -> str:
    """The previous stage's entry that earned place `entry_id` (inverse of _place_id)."""
    rest = entry_id[len(ENTRY_PREFIX[stage]):]
    candidate = ENTRY_PREFIX[_previous(stage)] + rest
    return candidate if session.get(Entry, candidate) is not None else rest


def _qualification(session: Session, settings: TournamentSettings,
                   stage: Stage) -> Qualification:
    """Who advances into `stage`: top 12 qualifiers, or the top 6 of the semi-finals."""
    try:
        if stage is Stage.SEMI_FINAL:
            return semi_finalists(score_records(session, settings, Stage.QUALIFYING), settings)
        return semi_final_standings(score_records(session, settings, Stage.SEMI_FINAL), settings)
    except StandingsError as exc:
        raise DeskError(str(exc)) from None


def places(session: Session, settings: TournamentSettings, stage: Stage) -> tuple[Place, ...]:
    """The allocated places of the semi-finals or the Final, best first."""
    if stage is Stage.QUALIFYING:
        raise DeskError("qualifying has entries, not places")
    board = _qualification(session, settings, stage).board
    position = {p.entry_id: (p.position, p.score_cents) for p in board.places}
    out: list[Place] = []
    for e in stage_entries(session, stage):
        src = _won_by(session, e.entry_id, stage)
        pos, score = position.get(src, (None, None))
        heat = None
        if e.heat_id is not None and e.heat_id.rsplit("-", 1)[-1].isdigit():
            heat = int(e.heat_id.rsplit("-", 1)[-1])
        out.append(Place(entry_id=e.entry_id, stage=stage, won_by=src, holder=e.patron_id,
                         played_by=e.played_by, position=pos, score_cents=score, heat=heat,
                         seat=e.seat, table=e.table_id, status=e.status))
    return tuple(sorted(out, key=lambda p: (p.position is None, p.position or 0, p.entry_id)))


def _allocate(session: Session, settings: TournamentSettings, now: datetime, *, actor: str,
              stage: Stage, why: str | None) -> tuple[Place, ...]:
    qualification = _qualification(session, settings, stage)
    wanted = {_place_id(stage, p.entry_id): p for p in qualification.advancing}
    existing = {e.entry_id for e in stage_entries(session, stage)}
    if existing:
        if existing == set(wanted):
            return places(session, settings, stage)
        raise Conflict(
            f"the {stage} places were allocated ({len(existing)}) but the standings now give"
            f" a different line-up: a supervisor must resolve it"
            f" (allocated only: {', '.join(sorted(existing - set(wanted))) or '-'};"
            f" now qualifying: {', '.join(sorted(set(wanted) - existing)) or '-'})")
    if not wanted:
        raise Conflict(f"no counted {_previous(stage)} score yet: nobody to allocate")
    tie = qualification.cut_line_tie
    with conflict_on_race(session, lambda: f"the {stage} places were allocated at the same moment"
                          " at another desk: look at the line-up again"):
        for entry_id, placing in wanted.items():
            session.add(Entry(entry_id=entry_id, patron_id=placing.patron_id,
                              stage=stage.value, buy_in_cents=0, bought_at=as_utc(now),
                              status=REGISTERED))
        write_audit(session, now, actor, ALLOCATED[stage], detail={
            "places": [{"entry_id": eid, "won_by": p.entry_id, "holder": p.patron_id,
                        "position": p.position, "score_cents": p.score_cents}
                       for eid, p in wanted.items()],
            "cut_line_tie": tie.note if tie else None}, why=why)
        session.commit()
    return places(session, settings, stage)


def allocate_semis(session: Session, settings: TournamentSettings, clock: WallClock, *,
                   actor: str, why: str | None = None) -> tuple[Place, ...]:
    """Give the top 12 qualifying entries their semi-final places (rules 21, 24), once
    qualifying has ended; a patron with several qualifying entries holds several places."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    ends = settings.schedule.ends_at
    if now < ends:
        raise Conflict(f"qualifying ends at {ends:%Y-%m-%d %H:%M}: the semi-final places are"
                       " allocated after the last heat (rule 21)")
    return _allocate(session, settings, now, actor=actor, stage=Stage.SEMI_FINAL, why=why)


def allocate_final(session: Session, settings: TournamentSettings, clock: WallClock, *,
                   actor: str, why: str | None = None) -> tuple[Place, ...]:
    """Give the top 6 of both semi-final heats their Final places (rule 36), once no
    semi-final place is still at a table."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    if not stage_entries(session, Stage.SEMI_FINAL):
        raise Conflict("no semi-final places are allocated")
    starts = settings.semi_final.starts_at
    if starts is not None and now < starts:
        raise Conflict(f"the semi-finals start at {starts:%Y-%m-%d %H:%M}")
    playing = [e.entry_id for e in stage_entries(session, Stage.SEMI_FINAL)
               if e.status == SEATED and not has_score(session, e.entry_id)]
    if playing:
        raise Conflict(f"semi-final places still playing: {', '.join(playing)}")
    return _allocate(session, settings, now, actor=actor, stage=Stage.FINAL, why=why)


def _unplayed_place(session: Session, entry_id: str) -> tuple[Entry, Stage]:
    entry = get_entry(session, entry_id)
    stage = stage_of(entry)
    if stage is Stage.QUALIFYING:
        raise DeskError(f"{entry.entry_id} is a qualifying entry, not a semi-final or Final place")
    if entry.status in PLAYED or has_score(session, entry.entry_id):
        raise Conflict(f"place {entry.entry_id} has already been seated")
    return entry, stage


def choose_seat(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
                entry_id: str, heat: int, seat: int, why: str | None = None) -> Place:
    """The holder of a semi-final place selects its heat and seat (rule 27); a taken seat is
    refused. The Final's seats are drawn instead (rule 40)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    entry, stage = _unplayed_place(session, entry_id)
    if stage is Stage.FINAL:
        raise DeskError("Final seats are drawn (rule 40), not chosen")
    sset = settings.semi_final
    heats, seats = sset.heats or 1, sset.seats_per_heat or MAX_SEATS
    for name, value, top in (("heat", heat, heats), ("seat", seat, seats)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise DeskError(f"{name} must be 1 to {top}, not {value!r}")
    heat_id = semi_heat_id(heat)
    holder = session.scalar(select(Entry).where(
        Entry.stage == stage.value, Entry.heat_id == heat_id, Entry.seat == seat,
        Entry.entry_id != entry.entry_id))
    if holder is not None:
        raise Conflict(f"heat {heat} seat {seat} is taken by place {holder.entry_id}")
    before = {"heat_id": entry.heat_id, "seat": entry.seat}
    place_id = entry.entry_id

    def raced() -> str:
        other = session.scalar(select(Entry.entry_id).where(
            Entry.stage == stage.value, Entry.heat_id == heat_id, Entry.seat == seat))
        return (f"heat {heat} seat {seat} was taken at the same moment by place"
                f" {other or '(unknown)'} at another desk; place {place_id} keeps"
                f" {before['heat_id'] or 'no heat'} seat {before['seat'] or '-'}")

    with conflict_on_race(session, raced):
        entry.heat_id, entry.seat = heat_id, seat
        write_audit(session, now, actor, "semi_final.seat_chosen", detail={
            "entry_id": entry.entry_id, "holder": entry.patron_id, "heat": heat, "seat": seat,
            "before": before}, why=why)
        session.commit()
    return next(p for p in places(session, settings, stage) if p.entry_id == place_id)


def nominate_proxy(session: Session, settings: TournamentSettings, clock: WallClock, *,
                   actor: str, entry_id: str, proxy_patron_id: str,
                   why: str | None = None) -> Proxy:
    """A patron holding several places in a stage nominates a proxy for each extra place
    (rules 25, 41); the proxy must be registered, pass eligibility and hold or play no other
    place of that stage. The holder keeps the place (and any prize); the proxy plays it."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    entry, stage = _unplayed_place(session, entry_id)
    holder = entry.patron_id
    held = [e for e in stage_entries(session, stage) if e.patron_id == holder]
    if len(held) < 2:
        raise DeskError(f"patron {holder} holds one {stage} place: a proxy is only for a"
                        " patron's extra places (rules 25, 41)")
    if entry.played_by is not None:
        raise Conflict(f"place {entry.entry_id} already has proxy {entry.played_by}")
    proxied = [e for e in held if e.played_by is not None]
    if len(proxied) >= len(held) - 1:
        raise Conflict(f"patron {holder} holds {len(held)} places and has nominated"
                       f" {len(proxied)} proxies: the holder plays the remaining place")
    proxy = get_patron(session, proxy_patron_id)
    if proxy.patron_id == holder:
        raise DeskError("the holder cannot be their own proxy")
    involved = [e.entry_id for e in stage_entries(session, stage)
                if proxy.patron_id in (e.patron_id, e.played_by)]
    if involved:
        raise Conflict(f"patron {proxy.patron_id} already holds or plays {stage} place"
                       f" {involved[0]}")
    screen(session, settings.tz, proxy, now, context="proxy", actor=actor,
           who=f"proxy {proxy.patron_id} for place {entry.entry_id}", names=settings.name_checks)
    row = Proxy(entry_id=entry.entry_id, holder_patron_id=holder,
                proxy_patron_id=proxy.patron_id, nominated_at=as_utc(now))
    place_id = entry.entry_id

    def raced() -> str:
        other = session.scalar(select(Proxy.proxy_patron_id).where(Proxy.entry_id == place_id))
        return (f"place {place_id} was given proxy {other or '(unknown)'} at the same moment"
                " at another desk")

    with conflict_on_race(session, raced):
        session.add(row)
        entry.played_by = proxy.patron_id
        write_audit(session, now, actor, "proxy.nominated", detail={
            "entry_id": entry.entry_id, "stage": stage.value, "holder": holder,
            "proxy": proxy.patron_id}, why=why)
        session.commit()
    return row
