"""The registration desk: patrons, entries, seating, semi-final and Final line-ups, prizes.

Plain functions on a SQLAlchemy `Session`, the tournament settings and a clock; each one is a
whole desk action: it checks everything first, writes its rows and an `AuditEntry` (who, what,
when, why) and commits, or raises a `DeskError` having changed nothing, except that a refusal
on eligibility is committed (the `Refusal` row) before `Refused` is raised. Actions that
instruct a table (open a heat, seat an entry, close a heat) return a `DeskCommand`; the caller
sends it with a `leaderboard.desk_sender` sender. A command's `seq` is the id of its audit
row, so it is unique and rising for the desk's key across processes and restarts.

Two desks (or two HTTP requests) may act at the same moment: each checks, then writes. What
must be unique is also enforced by the database (one seat draw per stage, one semi-final or
Final place per heat and seat until seated, one award of a kind per entry, one patron per
document, one proxy per place); the loser of such a race gets a `Conflict` naming what the
other desk did, and nothing of its action is kept. A prize claim is a compare-and-set:
claimed once.

Rules: tournament.md "Entries and eligibility", "Stages", "Prize money"; promotion rules 1-3,
5-8, 14, 24-27, 39-41, 55. Nothing identifying a patron goes into a command: tables see the
opaque entry ids only. Times are stored in UTC and read in the venue's zone.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Final

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.topics import TopicError, validate_id
from game.draw import RECOMMENDED_BYTES, DrawError, draw_seats
from game.errors import GameError
from game.money import format_rand
from game.prizes import (
    PrizeBook,
    PrizeError,
    PrizeKind,
    final_book,
    prize_pools,
    top_score_book,
    weekly_book,
)
from game.standings import (
    Qualification,
    ScoreRecord,
    ScoreStatus,
    StandingsError,
    final_standings,
    qualifying_leaderboard,
    semi_final_standings,
    semi_finalists,
    weekly_leaderboard,
)
from game.tournament import Stage
from game.tournament_schema import MAX_SEATS, TournamentSettings
from leaderboard.desk_lock import hold_desk_lock
from leaderboard.eligibility import (
    ID_KINDS,
    Candidate,
    Verdict,
    as_utc,
    check,
    from_db,
    normalize_id,
    record_refusal,
)
from leaderboard.models import (
    AuditEntry,
    Draw,
    Entry,
    Patron,
    PrizeAward,
    Proxy,
    Refusal,
    Score,
)
from leaderboard.projections import REFUNDED, RELEASED, SEATED, UNPAID_STATUSES, WITHDRAWN

__all__ = [
    "FINAL_HEAT",
    "Clock",
    "Conflict",
    "DeskCommand",
    "DeskError",
    "DrawOutcome",
    "NotFound",
    "Place",
    "PrizeView",
    "Refused",
    "Replay",
    "Seating",
    "allocate_final",
    "allocate_semis",
    "audit_log",
    "award_prizes",
    "buy_entry",
    "check_person",
    "choose_seat",
    "claim_prize",
    "close_heat",
    "draw_final",
    "get_entry",
    "get_patron",
    "nominate_proxy",
    "open_heat",
    "places",
    "prize_status",
    "prizes",
    "recorded_command",
    "refusals",
    "register_patron",
    "replay_draw",
    "resend_command",
    "score_records",
    "seat_entry",
    "semi_heat_id",
    "unseat_entry",
]

Clock = Callable[[], datetime]
RandomBytes = Callable[[int], bytes]

# Entry ids are opaque: "E-" and 16 hex digits for a buy-in; a semi-final place won by entry
# E-x is S-x and a Final place won by S-x is F-x, so the chain of places can be followed
# without a patron's identity.
_ENTRY_PREFIX: Final = {Stage.QUALIFYING: "E-", Stage.SEMI_FINAL: "S-", Stage.FINAL: "F-"}
FINAL_HEAT: Final = "final-1"
_PLAYED: Final = (SEATED, WITHDRAWN)  # a withdrawn entry left before its last hand (D55)
_REGISTERED: Final = "registered"
_HEAT_ID: Final = re.compile(r"[a-z0-9-]{1,64}")
_MAX_AGE: Final = 130


# ---- errors -----------------------------------------------------------------------------


class DeskError(GameError, ValueError):
    """A desk action refused for bad input (HTTP 400); the message says what and why."""


class NotFound(DeskError):
    """No such patron, entry, award or draw (HTTP 404)."""


class Conflict(DeskError):
    """The action contradicts the state (seat taken, outside the window, already done: 409)."""


class Refused(DeskError):
    """The person is not eligible; the refusal is recorded (HTTP 403)."""

    def __init__(self, who: str, verdict: Verdict, refusal_id: int) -> None:
        self.verdict = verdict
        self.refusal_id = refusal_id
        super().__init__(f"{who} refused (refusal {refusal_id}): {verdict.reason}")


# ---- values -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskCommand:
    """A command for one table, recorded before it is sent; `seq` is its audit row id."""

    seq: int
    table: str
    command: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def body(self, key_id: str) -> dict[str, Any]:
        """The envelope body: table, command, a command id unique per desk key, the args."""
        return {"table": self.table, "command": self.command,
                "command_id": f"{key_id}-{self.seq}", **self.args}


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFault:
    """A table taken out of service mid-heat: what the desk did and what the table is sent."""

    table: str
    heat_id: str
    refunded: Mapping[str, int]  # qualifying entry -> the buy-in returned, cents
    released: tuple[str, ...]  # semi-final and Final places, free to be seated again
    commands: tuple[DeskCommand, ...]  # unseat each, then close_heat: applied if it returns


@dataclass(frozen=True, slots=True, kw_only=True)
class Seating:
    """An entry seated at a table and the `seat` command to send."""

    entry_id: str
    table: str
    seat: int
    heat_id: str
    player: str  # the patron who plays: the holder or a proxy
    command: DeskCommand


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """A semi-final or Final place: its entry, where it came from, who holds and plays it."""

    entry_id: str
    stage: Stage
    won_by: str  # the entry of the previous stage that earned the place
    holder: str
    played_by: str | None
    position: int | None  # on the previous stage's board (None if that score was voided since)
    score_cents: int | None
    heat: int | None
    seat: int | None
    table: str | None
    status: str

    @property
    def player(self) -> str:
        """Who plays the place: the proxy if one is nominated, else the holder."""
        return self.played_by or self.holder


@dataclass(frozen=True, slots=True, kw_only=True)
class DrawOutcome:
    """The Final's seat draw: its stored row, the seats, and whether it was reused."""

    draw_id: int
    seats: Mapping[str, int]  # entry id -> seat
    random_hex: str
    reused: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A stored draw recomputed from its stored inputs."""

    draw_id: int
    stored: tuple[tuple[str, int], ...]
    replayed: tuple[tuple[str, int], ...]
    bytes_used: int

    @property
    def matches(self) -> bool:
        """Whether the recomputation gives the stored result."""
        return self.stored == self.replayed


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeView:
    """An awarded prize and its claim status at a given moment."""

    award_id: int
    kind: str
    place: int
    entry_id: str
    patron_id: str
    amount_cents: int
    awarded_at: datetime
    deadline: datetime
    claimed_at: datetime | None
    claimed_by: str | None
    status: str  # claimed | unclaimed | expired


# ---- helpers ----------------------------------------------------------------------------


def _now(clock: Clock) -> datetime:
    now = clock()
    if now.utcoffset() is None:
        raise DeskError(f"the desk clock gave {now!r} without a time zone")
    return now


def _begin(session: Session, actor: str) -> str:
    """Start a desk action: the operator's name checked, then the desk lock taken, so that
    the action's checks and writes are not interleaved with another desk's (D57)."""
    actor = _actor(actor)
    hold_desk_lock(session)
    return actor


def _actor(actor: str) -> str:
    actor = " ".join(str(actor).split())
    if not actor:
        raise DeskError("name who performs the desk action (the operator)")
    if len(actor) > 200:
        raise DeskError("the operator's name is longer than 200 characters")
    return actor


def _audit(session: Session, now: datetime, actor: str, action: str, *,
           detail: Mapping[str, Any], why: str | None = None) -> AuditEntry:
    body = dict(detail)
    if why is not None and why.strip():
        body["why"] = " ".join(why.split())
    row = AuditEntry(at=as_utc(now), actor=actor, action=action, detail=body)
    session.add(row)
    session.flush()
    return row


def _refuse(session: Session, person: Candidate | Patron, verdict: Verdict, now: datetime, *,
            context: str, actor: str, who: str) -> Refused:
    """Record and commit a refusal; the caller raises what this returns."""
    refusal = record_refusal(session, person, verdict, now, context=context, actor=actor)
    session.commit()
    return Refused(who, verdict, refusal.id)


@contextmanager
def _race(session: Session, describe: Callable[[], str]) -> Iterator[None]:
    """Writes that a unique index may refuse because another desk did the same at the same
    moment: the session is rolled back and `Conflict(describe())` raised (describe runs after
    the rollback, so it sees what the other desk stored)."""
    try:
        yield
    except IntegrityError:
        session.rollback()
        raise Conflict(describe()) from None


def _table_id(table: str) -> str:
    try:
        return validate_id("table", table)
    except TopicError as exc:
        raise DeskError(str(exc)) from None


def _new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(8)}"


def _stage(entry: Entry) -> Stage:
    try:
        return Stage(entry.stage)
    except ValueError:
        raise DeskError(f"entry {entry.entry_id} has an unknown stage {entry.stage!r}") from None


def semi_heat_id(heat: int) -> str:
    """The heat id of semi-final heat `heat` (1, 2): what the table's heat is opened with."""
    return f"semi-final-{heat}"


def _has_score(session: Session, entry_id: str) -> bool:
    return session.get(Score, entry_id) is not None


def _local_day(settings: TournamentSettings, moment: datetime) -> date:
    return moment.astimezone(settings.tz).date()


def get_patron(session: Session, patron_id: str) -> Patron:
    """A registered patron, or NotFound."""
    patron = session.get(Patron, str(patron_id).strip())
    if patron is None:
        raise NotFound(f"no patron {patron_id!r}")
    return patron


def get_entry(session: Session, entry_id: str) -> Entry:
    """An entry, or NotFound."""
    entry = session.get(Entry, str(entry_id).strip())
    if entry is None:
        raise NotFound(f"no entry {entry_id!r}")
    return entry


def _birth_date(value: date | str) -> date:
    if isinstance(value, datetime):
        raise DeskError(f"birth date must be a date, not a date and time ({value!r})")
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise DeskError(f"birth date {value!r} is not a date such as 1990-05-31") from None


def _candidate(*, id_number: str, name: str, birth_date: date | str) -> Candidate:
    try:
        number = normalize_id(str(id_number))
    except ValueError as exc:
        raise DeskError(str(exc)) from None
    clean = " ".join(str(name).split())
    if not clean:
        raise DeskError("the patron's name is empty")
    if len(clean) > 200:
        raise DeskError("the patron's name is longer than 200 characters")
    return Candidate(id_number=number, name=clean, birth_date=_birth_date(birth_date))


# ---- patrons ----------------------------------------------------------------------------


def check_person(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
                 patron_id: str | None = None, id_number: str | None = None,
                 name: str | None = None, birth_date: date | str | None = None) -> Verdict:
    """Check a registered patron or a would-be one; a negative answer is recorded (context
    "check") like every refusal."""
    actor = _begin(session, actor)
    now = _now(clock)
    person: Candidate | Patron
    if patron_id is not None:
        person = get_patron(session, patron_id)
    elif id_number is not None and name is not None and birth_date is not None:
        person = _candidate(id_number=id_number, name=name, birth_date=birth_date)
    else:
        raise DeskError("give a patron id, or an id number, name and birth date")
    verdict = check(session, person, now, tz=settings.tz)
    if not verdict.eligible:
        record_refusal(session, person, verdict, now, context="check", actor=actor)
    session.commit()
    return verdict


def register_patron(session: Session, settings: TournamentSettings, clock: Clock, *,
                    actor: str, name: str, id_kind: str, id_number: str,
                    birth_date: date | str, why: str | None = None) -> Patron:
    """Register a patron by rewards card, ID document or driver's licence (rule 5), after
    the eligibility check (rules 1-3); an ineligible person is refused and recorded."""
    actor = _begin(session, actor)
    now = _now(clock)
    if id_kind not in ID_KINDS:
        raise DeskError(f"unknown document kind {id_kind!r} (one of {', '.join(ID_KINDS)})")
    person = _candidate(id_number=id_number, name=name, birth_date=birth_date)
    today = _local_day(settings, now)
    if person.birth_date > today or today.year - person.birth_date.year > _MAX_AGE:
        raise DeskError(f"birth date {person.birth_date} is not plausible")
    existing = session.scalar(select(Patron).where(Patron.id_number == person.id_number))
    if existing is not None:
        raise Conflict(f"{id_kind} {person.id_number} is already registered as patron"
                       f" {existing.patron_id}")
    verdict = check(session, person, now, tz=settings.tz)
    if not verdict.eligible:
        raise _refuse(session, person, verdict, now, context="registration", actor=actor,
                      who="registration")
    patron = Patron(patron_id=_new_id("P-"), name=person.name, id_kind=id_kind,
                    id_number=person.id_number, birth_date=person.birth_date,
                    created_at=as_utc(now))

    def raced() -> str:
        other = session.scalar(select(Patron.patron_id).where(
            Patron.id_number == person.id_number))
        return (f"{id_kind} {person.id_number} was registered at the same moment at another"
                f" desk, as patron {other or '(unknown)'}")

    with _race(session, raced):
        session.add(patron)
        _audit(session, now, actor, "patron.registered",
               detail={"patron_id": patron.patron_id, "id_kind": id_kind}, why=why)
        session.commit()
    return patron


# ---- qualifying entries -----------------------------------------------------------------


def _window_text(settings: TournamentSettings) -> str:
    s = settings.schedule
    return (f"buy-ins are taken daily {s.window.opens:%H:%M} to {s.window.last_buy_in:%H:%M}"
            f" ({settings.timezone}) from {s.first_day:%d %b} to {s.last_day:%d %b %Y}")


def buy_entry(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
              patron_id: str, why: str | None = None) -> Entry:
    """Sell a qualifying entry (R100, rule 6) inside the heat window; a patron may buy many,
    each its own entry and heat (rule 7). Eligibility is checked again before the money."""
    actor = _begin(session, actor)
    now = _now(clock)
    patron = get_patron(session, patron_id)
    schedule = settings.schedule
    heat_day = schedule.heat_day(now)
    if not schedule.buy_in_open(now) or heat_day is None:
        local = now.astimezone(settings.tz)
        raise Conflict(f"no buy-in at {local:%Y-%m-%d %H:%M}: {_window_text(settings)}")
    verdict = check(session, patron, now, tz=settings.tz)
    if not verdict.eligible:
        raise _refuse(session, patron, verdict, now, context="buy_in", actor=actor,
                      who=f"buy-in for patron {patron.patron_id}")
    entry = Entry(entry_id=_new_id(_ENTRY_PREFIX[Stage.QUALIFYING]),
                  patron_id=patron.patron_id, stage=Stage.QUALIFYING.value, heat_day=heat_day,
                  buy_in_cents=settings.buy_in_cents, bought_at=as_utc(now), status=_REGISTERED)
    session.add(entry)
    _audit(session, now, actor, "entry.bought", detail={
        "entry_id": entry.entry_id, "patron_id": patron.patron_id,
        "buy_in_cents": settings.buy_in_cents, "heat_day": heat_day.isoformat()}, why=why)
    session.commit()
    return entry


# ---- heats and seating ------------------------------------------------------------------


def _open_heats(session: Session) -> dict[str, tuple[str, Stage]]:
    """The heat the desk last opened at each table and has not closed: table -> (heat, stage)."""
    rows = session.scalars(
        select(AuditEntry).where(AuditEntry.action.in_(("heat.opened", "heat.closed")))
        .order_by(AuditEntry.id)
    ).all()
    heats: dict[str, tuple[str, Stage]] = {}
    for row in rows:
        table = str(row.detail.get("table"))
        if row.action == "heat.opened":
            heats[table] = (str(row.detail["heat_id"]), Stage(row.detail["stage"]))
        else:
            heats.pop(table, None)
    return heats


def _occupied(session: Session, *, table: str | None = None,
              player: str | None = None) -> list[Entry]:
    """Entries seated (at `table`, or played by `player`) whose score has not come in."""
    scored = select(Score.entry_id).where(Score.entry_id == Entry.entry_id).exists()
    query = select(Entry).where(Entry.status == SEATED, ~scored)
    if table is not None:
        query = query.where(Entry.table_id == table)
    if player is not None:
        query = query.where(or_(Entry.played_by == player,
                                and_(Entry.played_by.is_(None), Entry.patron_id == player)))
    return list(session.scalars(query.order_by(Entry.entry_id)).all())


def open_heat(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
              table: str, stage: Stage | str, heat_id: str | None = None,
              why: str | None = None) -> DeskCommand:
    """Record and return the `open_heat` command for a table.

    Qualifying heats get an id of their own unless one is given; a semi-final heat must be
    ``semi-final-1`` or ``-2`` (the heats patrons choose, rule 27) and the Final
    ``final-1``.
    """
    actor = _begin(session, actor)
    now = _now(clock)
    table = _table_id(table)
    try:
        stage = Stage(stage)
    except ValueError:
        raise DeskError(f"unknown stage {stage!r} (one of {', '.join(s.value for s in Stage)})"
                        ) from None
    open_now = _open_heats(session)
    if table in open_now:
        raise Conflict(f"heat {open_now[table][0]} is still open at table {table}; close it first")
    if stage is Stage.QUALIFYING:
        day = settings.schedule.heat_day(now)
        if day is None:
            local = now.astimezone(settings.tz)
            raise Conflict(f"no qualifying heat runs at {local:%Y-%m-%d %H:%M}")
        heat_id = heat_id or f"q-{day:%Y%m%d}-{table}-{secrets.token_hex(2)}"
    else:
        sset = settings.stage(stage)
        heats = sset.heats or 1
        allowed = ([semi_heat_id(n) for n in range(1, heats + 1)] if stage is Stage.SEMI_FINAL
                   else [FINAL_HEAT])
        heat_id = heat_id or (allowed[0] if len(allowed) == 1 else None)
        if heat_id not in allowed:
            raise DeskError(f"a {stage} heat is one of {', '.join(allowed)}, not {heat_id!r}")
    if not _HEAT_ID.fullmatch(heat_id):
        raise DeskError(f"heat id {heat_id!r} must be a-z, 0-9 and '-' (at most 64)")
    if heat_id in {h for h, _ in open_now.values()}:
        raise Conflict(f"heat {heat_id} is already open at another table")
    args = {"stage": stage.value, "heat_id": heat_id}
    row = _audit(session, now, actor, "heat.opened",
                 detail={"table": table, "command": "open_heat", "args": args, **args}, why=why)
    session.commit()
    return DeskCommand(seq=row.id, table=table, command="open_heat", args=args)


def close_heat(session: Session, clock: Clock, *, actor: str, table: str,
               why: str | None = None) -> DeskCommand:
    """Record and return the `close_heat` command; refused while entries are still seated."""
    actor = _begin(session, actor)
    now = _now(clock)
    table = _table_id(table)
    open_now = _open_heats(session)
    if table not in open_now:
        raise Conflict(f"the desk has no heat open at table {table}")
    seated = _occupied(session, table=table)
    if seated:
        raise Conflict(f"entries still seated at table {table} without a score: "
                       + ", ".join(e.entry_id for e in seated))
    row = _audit(session, now, actor, "heat.closed", detail={
        "table": table, "command": "close_heat", "args": {}, "heat_id": open_now[table][0]},
        why=why)
    session.commit()
    return DeskCommand(seq=row.id, table=table, command="close_heat", args={})


def _seat_for(session: Session, settings: TournamentSettings, now: datetime, *,
              entry: Entry, stage: Stage, table: str, seat: int | None) -> tuple[str, int]:
    """The heat and seat an entry takes at `table` (checks the heat, the day, the choice)."""
    heat = _open_heats(session).get(table)
    if heat is None:
        raise Conflict(f"no heat is open at table {table} (open one first)")
    heat_id, heat_stage = heat
    if heat_stage is not stage:
        raise Conflict(f"table {table} runs a {heat_stage} heat; entry {entry.entry_id} plays"
                       f" the {stage}")
    seats = MAX_SEATS
    if stage is Stage.QUALIFYING:
        day = entry.heat_day
        if day is None:
            raise DeskError(f"entry {entry.entry_id} has no heat day")
        opens = settings.schedule.opens_at(day)
        if not opens <= now < opens + timedelta(days=1):
            raise Conflict(f"entry {entry.entry_id} is for the heat of {day}; it can be seated"
                           f" from {opens:%Y-%m-%d %H:%M} until the next heat opens")
        if seat is None:
            raise DeskError("name the seat")
    else:
        seats = settings.stage(stage).seats_per_heat or MAX_SEATS
        if entry.seat is None or entry.heat_id is None:
            how = ("choose its heat and seat first (rule 27)" if stage is Stage.SEMI_FINAL
                   else "draw the Final's seats first (rule 40)")
            raise Conflict(f"place {entry.entry_id} has no seat yet: {how}")
        if entry.heat_id != heat_id:
            raise Conflict(f"place {entry.entry_id} plays heat {entry.heat_id}; table {table}"
                           f" runs {heat_id}")
        if seat is not None and seat != entry.seat:
            raise Conflict(f"place {entry.entry_id} has seat {entry.seat}, not {seat}")
        seat = entry.seat
    if isinstance(seat, bool) or not isinstance(seat, int) or not 1 <= seat <= seats:
        raise DeskError(f"seat must be 1 to {seats}, not {seat!r}")
    taken = [e for e in _occupied(session, table=table) if e.seat == seat]
    if taken:
        raise Conflict(f"seat {seat} at table {table} is taken by entry {taken[0].entry_id}")
    return heat_id, seat


def _check_player(session: Session, *, entry: Entry, stage: Stage, player_id: str) -> None:
    """A person plays one entry at a time, and one place per semi-final or Final."""
    busy = _occupied(session, player=player_id)
    if busy:
        raise Conflict(f"patron {player_id} is already playing entry {busy[0].entry_id} at"
                       f" table {busy[0].table_id}")
    if stage is Stage.QUALIFYING:
        return
    other = [e for e in _stage_entries(session, stage)
             if e.entry_id != entry.entry_id and (e.played_by or e.patron_id) == player_id
             and (e.status in _PLAYED or _has_score(session, e.entry_id))]
    if other:
        raise Conflict(
            f"patron {player_id} already played place {other[0].entry_id} in the {stage}:"
            " each extra place needs a proxy (rules 25, 41)")


def seat_entry(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
               entry_id: str, table: str, seat: int | None = None,
               why: str | None = None) -> Seating:
    """Seat an entry at a table: eligibility is checked again (rules 1-3) for whoever plays
    it, and the `seat` command is recorded and returned for sending.

    A qualifying entry takes any free seat at a table running a qualifying heat, on its
    heat day; a semi-final place takes the heat and seat chosen for it (rule 27), a Final
    place its drawn seat (rule 40). A person plays one entry at a time, and one place per
    semi-final or Final.
    """
    actor = _begin(session, actor)
    now = _now(clock)
    table = _table_id(table)
    entry = get_entry(session, entry_id)
    stage = _stage(entry)
    if _has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} already has a score; it cannot be seated again")
    if entry.status == SEATED:
        raise Conflict(f"entry {entry.entry_id} is already seated at table {entry.table_id}"
                       f" seat {entry.seat}")
    if entry.status == WITHDRAWN:
        raise Conflict(f"entry {entry.entry_id} left table {entry.table_id} before its last"
                       " hand: it records no score (rule 14) and is not seated again")
    if entry.status == REFUNDED:
        raise Conflict(f"entry {entry.entry_id} was refunded: the patron buys a new entry")
    heat_id, seat = _seat_for(session, settings, now, entry=entry, stage=stage, table=table,
                              seat=seat)
    player_id = entry.played_by or entry.patron_id
    _check_player(session, entry=entry, stage=stage, player_id=player_id)
    player = get_patron(session, player_id)
    verdict = check(session, player, now, tz=settings.tz)
    if not verdict.eligible:
        raise _refuse(session, player, verdict, now, context="seating", actor=actor,
                      who=f"seating of entry {entry.entry_id}")
    entry.table_id, entry.seat, entry.heat_id, entry.status = table, seat, heat_id, SEATED
    args = {"entry_id": entry.entry_id, "seat": seat}
    row = _audit(session, now, actor, "entry.seated", detail={
        "table": table, "command": "seat", "args": args, "heat_id": heat_id,
        "player": player_id, "holder": entry.patron_id, **args}, why=why)
    session.commit()
    return Seating(entry_id=entry.entry_id, table=table, seat=seat, heat_id=heat_id,
                   player=player_id,
                   command=DeskCommand(seq=row.id, table=table, command="seat", args=args))


def unseat_entry(session: Session, clock: Clock, *, actor: str, entry_id: str,
                 why: str) -> DeskCommand:
    """Record and return the `unseat` command for an entry that leaves before its last hand
    (between hands; the table refuses otherwise). Once the table reports it, the entry is
    withdrawn: no score (rule 14), never seated again, its buy-in stays in the pools (D55)."""
    actor = _begin(session, actor)
    now = _now(clock)
    reason = _reason(why, "the entry leaves", kept="the table's record")
    entry = get_entry(session, entry_id)
    if entry.status == WITHDRAWN:
        raise Conflict(f"entry {entry.entry_id} has already left table {entry.table_id}")
    if entry.status != SEATED or entry.table_id is None or entry.seat is None:
        raise Conflict(f"entry {entry.entry_id} is not seated at a table")
    if _has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} has played its hands and has a score")
    command = _unseat(session, now, actor, entry, reason=reason, why=why)
    session.commit()
    return command


def _unseat(session: Session, now: datetime, actor: str, entry: Entry, *, reason: str,
            why: str | None, **detail: Any) -> DeskCommand:
    """Record the `unseat` command for a seated entry (its audit row is the command's seq)."""
    assert entry.table_id is not None
    args = {"seat": entry.seat, "entry_id": entry.entry_id, "reason": reason}
    row = _audit(session, now, actor, "entry.unseat", detail={
        "table": entry.table_id, "command": "unseat", "args": args, "heat_id": entry.heat_id,
        **detail, **args}, why=why)
    return DeskCommand(seq=row.id, table=entry.table_id, command="unseat", args=args)


def _reason(why: str | None, what: str, *, kept: str = "the audit") -> str:
    reason = " ".join((why or "").split())
    if not reason:
        raise DeskError(f"say why {what} (--why): it goes into {kept}")
    return reason


def refund_entry(session: Session, clock: Clock, *, actor: str, entry_id: str,
                 why: str) -> Entry:
    """Refund a qualifying entry that has not been seated: its buy-in goes back to the
    patron and out of the pools (D60). A seated entry leaves by `unseat` or a table fault."""
    actor = _begin(session, actor)
    now = _now(clock)
    reason = _reason(why, "the entry is refunded")
    entry = get_entry(session, entry_id)
    if entry.stage != Stage.QUALIFYING.value:
        raise Conflict(f"entry {entry.entry_id} is a {entry.stage} place: only a bought"
                       " (qualifying) entry is refunded")
    if entry.status == REFUNDED:
        raise Conflict(f"entry {entry.entry_id} has already been refunded")
    if entry.status != _REGISTERED or _has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} is {entry.status}: only an entry not yet"
                       " seated is refunded (a table out of service: `desk table-fault`)")
    _refund(session, now, actor, entry, cause="desk", why=reason)
    session.commit()
    return entry


def _refund(session: Session, now: datetime, actor: str, entry: Entry, *, cause: str,
            why: str) -> None:
    entry.status = REFUNDED
    _audit(session, now, actor, "entry.refunded", detail={
        "entry_id": entry.entry_id, "patron_id": entry.patron_id, "cause": cause,
        "refund_cents": entry.buy_in_cents, "table": entry.table_id,
        "heat_id": entry.heat_id}, why=why)


def table_fault(session: Session, clock: Clock, *, actor: str, table: str,
                why: str) -> TableFault:
    """Take a table out of service mid-heat (D60): its unfinished qualifying entries are
    refunded, its semi-final and Final places are freed to be seated again, and the desk
    closes its heat. The returned commands (unseat each, close the heat) go to the table,
    which applies them if it comes back, so it never plays those entries on."""
    actor = _begin(session, actor)
    now = _now(clock)
    reason = _reason(why, "the table is out of service", kept="the audit and the table's record")
    table = _table_id(table)
    open_now = _open_heats(session)
    if table not in open_now:
        raise Conflict(f"the desk has no heat open at table {table}")
    heat_id = open_now[table][0]
    refunded: dict[str, int] = {}
    released: list[str] = []
    commands: list[DeskCommand] = []
    for entry in _occupied(session, table=table):
        commands.append(_unseat(session, now, actor, entry, why=why, table_fault=True,
                                reason=f"table out of service: {reason}"))
        if entry.stage == Stage.QUALIFYING.value:
            _refund(session, now, actor, entry, cause="table_fault", why=reason)
            refunded[entry.entry_id] = entry.buy_in_cents
        else:  # the place is played again from the start, at a table the desk seats it at
            _audit(session, now, actor, RELEASED, detail={
                "entry_id": entry.entry_id, "table": table, "heat_id": entry.heat_id,
                "seat": entry.seat}, why=why)
            entry.table_id, entry.status = None, _REGISTERED
            released.append(entry.entry_id)
    row = _audit(session, now, actor, "heat.closed", detail={
        "table": table, "command": "close_heat", "args": {}, "heat_id": heat_id,
        "table_fault": True}, why=why)
    commands.append(DeskCommand(seq=row.id, table=table, command="close_heat", args={}))
    session.commit()
    return TableFault(table=table, heat_id=heat_id, refunded=refunded,
                      released=tuple(released), commands=tuple(commands))


def recorded_command(session: Session, seq: int) -> DeskCommand:
    """A command as it was recorded (its audit row `seq`)."""
    row = session.get(AuditEntry, seq)
    if row is None or "command" not in row.detail or "args" not in row.detail:
        raise NotFound(f"no desk command with seq {seq}")
    return DeskCommand(seq=row.id, table=str(row.detail["table"]),
                       command=str(row.detail["command"]), args=dict(row.detail["args"]))


def resend_command(session: Session, clock: Clock, *, actor: str, seq: int,
                   why: str | None = None) -> DeskCommand:
    """The recorded command `seq`, to send again unchanged (after a failed delivery): a
    table applies a seq once and refuses a repeat, so a resend is always safe."""
    actor = _begin(session, actor)
    now = _now(clock)
    command = recorded_command(session, seq)
    _audit(session, now, actor, "command.resent",
           detail={"seq": seq, "table": command.table, "resent": command.command}, why=why)
    session.commit()
    return command


# ---- scores into standings ----------------------------------------------------------------


def score_records(session: Session, settings: TournamentSettings,
                  stage: Stage) -> list[ScoreRecord]:
    """Every stored score of a stage as a standings record (the place's holder as patron)."""
    out: list[ScoreRecord] = []
    rows = session.execute(
        select(Score, Entry).join(Entry, Entry.entry_id == Score.entry_id)
        .where(Score.stage == stage.value).order_by(Score.entry_id)
    ).all()
    for score, entry in rows:
        voided = score.voided_at is not None or score.status == "voided" or (
            entry.status in UNPAID_STATUSES)  # e.g. a table that came back after its fault
        try:
            status = ScoreStatus(score.status) if not voided else ScoreStatus.FINISHED
        except ValueError:
            raise DeskError(f"entry {score.entry_id}: unknown score status {score.status!r}"
                            ) from None
        recorded = from_db(score.recorded_at)
        acked = from_db(score.acknowledged_at) if score.acknowledged_at else None
        out.append(ScoreRecord(
            entry_id=score.entry_id, patron_id=entry.patron_id, stage=stage,
            heat_id=score.heat_id or entry.heat_id or "-", table=score.table_id,
            score_cents=score.score_cents, hands=score.hands, status=status,
            recorded_at=recorded, acknowledged_at=acked, voided=voided,
            heat_day=entry.heat_day or _local_day(settings, recorded)))
    return out


# ---- semi-final and Final places ----------------------------------------------------------


def _stage_entries(session: Session, stage: Stage) -> list[Entry]:
    return list(session.scalars(
        select(Entry).where(Entry.stage == stage.value).order_by(Entry.entry_id)).all())


def _previous(stage: Stage) -> Stage:
    return Stage.QUALIFYING if stage is Stage.SEMI_FINAL else Stage.SEMI_FINAL


def _place_id(stage: Stage, won_by: str) -> str:
    """The place id in `stage` earned by entry `won_by` of the previous stage."""
    before = _ENTRY_PREFIX[_previous(stage)]
    rest = won_by[len(before):] if won_by.startswith(before) else won_by
    return _ENTRY_PREFIX[stage] + rest


def _won_by(session: Session, entry_id: str, stage: Stage) -> str:
    """The previous stage's entry that earned place `entry_id` (inverse of _place_id)."""
    rest = entry_id[len(_ENTRY_PREFIX[stage]):]
    candidate = _ENTRY_PREFIX[_previous(stage)] + rest
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
    for e in _stage_entries(session, stage):
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
    existing = {e.entry_id for e in _stage_entries(session, stage)}
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
    with _race(session, lambda: f"the {stage} places were allocated at the same moment at"
                                " another desk: look at the line-up again"):
        for entry_id, placing in wanted.items():
            session.add(Entry(entry_id=entry_id, patron_id=placing.patron_id,
                              stage=stage.value, buy_in_cents=0, bought_at=as_utc(now),
                              status=_REGISTERED))
        _audit(session, now, actor, f"{stage.value}.allocated", detail={
            "places": [{"entry_id": eid, "won_by": p.entry_id, "holder": p.patron_id,
                        "position": p.position, "score_cents": p.score_cents}
                       for eid, p in wanted.items()],
            "cut_line_tie": tie.note if tie else None}, why=why)
        session.commit()
    return places(session, settings, stage)


def allocate_semis(session: Session, settings: TournamentSettings, clock: Clock, *,
                   actor: str, why: str | None = None) -> tuple[Place, ...]:
    """Give the top 12 qualifying entries their semi-final places (rules 21, 24), once
    qualifying has ended; a patron with several qualifying entries holds several places."""
    actor = _begin(session, actor)
    now = _now(clock)
    ends = settings.schedule.ends_at
    if now < ends:
        raise Conflict(f"qualifying ends at {ends:%Y-%m-%d %H:%M}: the semi-final places are"
                       " allocated after the last heat (rule 21)")
    return _allocate(session, settings, now, actor=actor, stage=Stage.SEMI_FINAL, why=why)


def allocate_final(session: Session, settings: TournamentSettings, clock: Clock, *,
                   actor: str, why: str | None = None) -> tuple[Place, ...]:
    """Give the top 6 of both semi-final heats their Final places (rule 36), once no
    semi-final place is still at a table."""
    actor = _begin(session, actor)
    now = _now(clock)
    if not _stage_entries(session, Stage.SEMI_FINAL):
        raise Conflict("no semi-final places are allocated")
    starts = settings.semi_final.starts_at
    if starts is not None and now < starts:
        raise Conflict(f"the semi-finals start at {starts:%Y-%m-%d %H:%M}")
    playing = [e.entry_id for e in _stage_entries(session, Stage.SEMI_FINAL)
               if e.status == SEATED and not _has_score(session, e.entry_id)]
    if playing:
        raise Conflict(f"semi-final places still playing: {', '.join(playing)}")
    return _allocate(session, settings, now, actor=actor, stage=Stage.FINAL, why=why)


def _unplayed_place(session: Session, entry_id: str) -> tuple[Entry, Stage]:
    entry = get_entry(session, entry_id)
    stage = _stage(entry)
    if stage is Stage.QUALIFYING:
        raise DeskError(f"{entry.entry_id} is a qualifying entry, not a semi-final or Final place")
    if entry.status in _PLAYED or _has_score(session, entry.entry_id):
        raise Conflict(f"place {entry.entry_id} has already been seated")
    return entry, stage


def choose_seat(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
                entry_id: str, heat: int, seat: int, why: str | None = None) -> Place:
    """The holder of a semi-final place selects its heat and seat (rule 27); a taken seat is
    refused. The Final's seats are drawn instead (rule 40)."""
    actor = _begin(session, actor)
    now = _now(clock)
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

    with _race(session, raced):
        entry.heat_id, entry.seat = heat_id, seat
        _audit(session, now, actor, "semi_final.seat_chosen", detail={
            "entry_id": entry.entry_id, "holder": entry.patron_id, "heat": heat, "seat": seat,
            "before": before}, why=why)
        session.commit()
    return next(p for p in places(session, settings, stage) if p.entry_id == place_id)


def nominate_proxy(session: Session, settings: TournamentSettings, clock: Clock, *,
                   actor: str, entry_id: str, proxy_patron_id: str,
                   why: str | None = None) -> Proxy:
    """A patron holding several places in a stage nominates a proxy for each extra place
    (rules 25, 41); the proxy must be registered, pass eligibility and hold or play no other
    place of that stage. The holder keeps the place (and any prize); the proxy plays it."""
    actor = _begin(session, actor)
    now = _now(clock)
    entry, stage = _unplayed_place(session, entry_id)
    holder = entry.patron_id
    held = [e for e in _stage_entries(session, stage) if e.patron_id == holder]
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
    involved = [e.entry_id for e in _stage_entries(session, stage)
                if proxy.patron_id in (e.patron_id, e.played_by)]
    if involved:
        raise Conflict(f"patron {proxy.patron_id} already holds or plays {stage} place"
                       f" {involved[0]}")
    verdict = check(session, proxy, now, tz=settings.tz)
    if not verdict.eligible:
        raise _refuse(session, proxy, verdict, now, context="proxy", actor=actor,
                      who=f"proxy {proxy.patron_id} for place {entry.entry_id}")
    row = Proxy(entry_id=entry.entry_id, holder_patron_id=holder,
                proxy_patron_id=proxy.patron_id, nominated_at=as_utc(now))
    place_id = entry.entry_id

    def raced() -> str:
        other = session.scalar(select(Proxy.proxy_patron_id).where(Proxy.entry_id == place_id))
        return (f"place {place_id} was given proxy {other or '(unknown)'} at the same moment"
                " at another desk")

    with _race(session, raced):
        session.add(row)
        entry.played_by = proxy.patron_id
        _audit(session, now, actor, "proxy.nominated", detail={
            "entry_id": entry.entry_id, "stage": stage.value, "holder": holder,
            "proxy": proxy.patron_id}, why=why)
        session.commit()
    return row


# ---- the Final's seat draw (rule 40; R10) -------------------------------------------------


def _draw_seats(settings: TournamentSettings) -> list[int]:
    return list(range(1, (settings.final.seats_per_heat or MAX_SEATS) + 1))


def _apply_draw(session: Session, row: Draw, now: datetime, actor: str) -> dict[str, int]:
    """Give each Final place its drawn seat (idempotent) and commit."""
    draw_id = row.id
    seats = {str(a["finalist"]): int(a["seat"]) for a in row.result["assignments"]}
    entries = [get_entry(session, entry_id) for entry_id in sorted(seats)]
    changed = [e for e in entries
               if e.seat != seats[e.entry_id] or e.heat_id != FINAL_HEAT]

    def raced() -> str:
        held = session.execute(select(Entry.entry_id, Entry.seat).where(
            Entry.stage == Stage.FINAL.value, Entry.heat_id == FINAL_HEAT,
            Entry.table_id.is_(None))).all()
        wrong = [f"{e} holds seat {s}" for e, s in sorted(held)
                 if s is not None and seats.get(e) != s]
        return (f"the seats of draw {draw_id} cannot be given: "
                + ("; ".join(wrong) or "another desk changed the Final's seats meanwhile")
                + ", which the draw did not give: a supervisor must resolve it")

    if changed:
        with _race(session, raced):
            # Free the seats first: a seat moving from one place to another never
            # collides with itself on the way (one place per heat and seat).
            for entry in changed:
                entry.seat = None
            session.flush()
            for entry in changed:
                entry.seat, entry.heat_id = seats[entry.entry_id], FINAL_HEAT
            _audit(session, now, actor, "final.seats_applied", detail={
                "draw_id": draw_id, "seats": {e.entry_id: seats[e.entry_id] for e in changed}})
            session.commit()
    else:
        session.commit()
    return seats


def draw_final(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
               random_bytes: RandomBytes = secrets.token_bytes,
               why: str | None = None) -> DrawOutcome:
    """Draw the Final's seats (rule 40) with the OS CSPRNG and an unbiased shuffle.

    The random bytes, the finalists and the result are committed in a `Draw` row before any
    seat is given; if a draw row exists (say the desk crashed after drawing) it is used
    again and nothing is drawn anew (R10).
    """
    actor = _begin(session, actor)
    now = _now(clock)
    row = session.scalar(select(Draw).where(Draw.stage == Stage.FINAL.value).order_by(Draw.id))
    reused = row is not None
    if row is None:
        finalists = [e.entry_id for e in _stage_entries(session, Stage.FINAL)]
        if not finalists:
            raise Conflict("no Final places are allocated")
        seated = [e for e in _stage_entries(session, Stage.FINAL) if e.status in _PLAYED]
        if seated:
            raise Conflict(f"Final place {seated[0].entry_id} is already seated")
        data = random_bytes(RECOMMENDED_BYTES)
        try:
            drawn = draw_seats(finalists, _draw_seats(settings), data)
        except DrawError as exc:
            raise DeskError(str(exc)) from None
        row = Draw(stage=Stage.FINAL.value, random_hex=data.hex(),
                   finalists=list(drawn.finalists), result=drawn.log_record(),
                   drawn_at=as_utc(now), drawn_by=actor)

        def raced() -> str:
            other = session.scalar(select(Draw).where(Draw.stage == Stage.FINAL.value))
            who = f"draw {other.id} by {other.drawn_by}" if other is not None else "a draw"
            return (f"the Final's seats were drawn at the same moment at another desk ({who});"
                    " that draw is in force and this one was not stored: run the draw again"
                    " to give its seats")

        with _race(session, raced):  # one draw per stage: the first one stored is in force
            session.add(row)
            session.flush()
            _audit(session, now, actor, "final.drawn", detail={
                "draw_id": row.id, "seats": {a.finalist: a.seat for a in drawn.assignments}},
                why=why)
            session.commit()  # stored before use: a crash from here on reuses this draw
    seats = _apply_draw(session, row, now, actor)
    return DrawOutcome(draw_id=row.id, seats=seats, random_hex=row.random_hex, reused=reused)


def replay_draw(session: Session, draw_id: int) -> Replay:
    """Recompute a stored draw from its stored bytes, finalists and seats."""
    row = session.get(Draw, draw_id)
    if row is None:
        raise NotFound(f"no draw {draw_id}")
    try:
        data = bytes.fromhex(row.random_hex)
        again = draw_seats(list(row.finalists), [int(s) for s in row.result["seats"]], data)
    except (DrawError, ValueError, KeyError, TypeError) as exc:
        raise DeskError(f"draw {draw_id} cannot be replayed: {exc}") from None
    stored = tuple(sorted((str(a["finalist"]), int(a["seat"]))
                          for a in row.result["assignments"]))
    replayed = tuple(sorted((a.finalist, a.seat) for a in again.assignments))
    return Replay(draw_id=row.id, stored=stored, replayed=replayed, bytes_used=again.bytes_used)


# ---- prizes (rules 4, 17, 18, 52, 55) ------------------------------------------------------


def prize_status(row: PrizeAward, now: datetime) -> str:
    """claimed, or unclaimed until the deadline and expired from it (game.prizes rule)."""
    if row.claimed_at is not None:
        return "claimed"
    return "expired" if as_utc(now) >= from_db(row.deadline) else "unclaimed"


def _view(row: PrizeAward, now: datetime) -> PrizeView:
    return PrizeView(award_id=row.id, kind=row.kind, place=row.place, entry_id=row.entry_id,
                     patron_id=row.patron_id, amount_cents=row.amount_cents,
                     awarded_at=from_db(row.awarded_at), deadline=from_db(row.deadline),
                     claimed_at=from_db(row.claimed_at) if row.claimed_at else None,
                     claimed_by=row.claimed_by, status=prize_status(row, now))


def _book(session: Session, settings: TournamentSettings, now: datetime, *, kind: PrizeKind,
          week: int | None, prize_cents: int | None) -> PrizeBook:
    entries = session.scalar(select(func.count()).select_from(Entry).where(
        Entry.stage == Stage.QUALIFYING.value)) or 0
    pools = prize_pools(entries, settings)
    if kind is PrizeKind.WEEKLY:
        if week is None or prize_cents is None:
            raise DeskError("a weekly prize needs the week and the prize amount")
        weeks = settings.weekly_prizes.weeks
        if not 1 <= week <= weeks:
            raise DeskError(f"week {week} has no weekly prize: only weeks 1 to {weeks} do"
                            " (rule 17)")
        _, end = settings.weekly_prizes.week_bounds(settings.schedule, week)
        if now < end:
            raise Conflict(f"week {week} runs until {end:%Y-%m-%d %H:%M}")
        records = score_records(session, settings, Stage.QUALIFYING)
        return weekly_book(weekly_leaderboard(records, settings, week), settings, prize_cents)
    if kind is PrizeKind.TOP_SCORE:
        if now < settings.schedule.ends_at:
            raise Conflict(f"qualifying ends at {settings.schedule.ends_at:%Y-%m-%d %H:%M}")
        records = score_records(session, settings, Stage.QUALIFYING)
        return top_score_book(qualifying_leaderboard(records, settings), pools, settings)
    finals = _stage_entries(session, Stage.FINAL)
    if not finals:
        raise Conflict("no Final places are allocated")
    board = final_standings(score_records(session, settings, Stage.FINAL), settings)
    if len(board.places) < len(finals):
        raise Conflict(f"{len(board.places)} of {len(finals)} Final scores are counted so far")
    return final_book(board, pools, settings)


def award_prizes(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
                 kind: str, week: int | None = None, prize_cents: int | None = None,
                 why: str | None = None) -> tuple[PrizeView, ...]:
    """Record the awards of one prize book (weekly, top score or Final) with their claim
    deadlines (rule 55); each book is recorded once. Remainders go to the audit row."""
    actor = _begin(session, actor)
    now = _now(clock)
    try:
        pkind = PrizeKind(kind)
    except ValueError:
        raise DeskError(f"unknown prize kind {kind!r} (one of"
                        f" {', '.join(k.value for k in PrizeKind)})") from None
    if pkind is not PrizeKind.WEEKLY and (week is not None or prize_cents is not None):
        raise DeskError(f"the {pkind} prize takes no week or amount: it comes from the pools")
    query = select(PrizeAward).where(PrizeAward.kind == pkind.value)
    if pkind is PrizeKind.WEEKLY:
        query = query.where(PrizeAward.place == week)
    if session.scalars(query).first() is not None:
        what = (f"week {week}'s prize is" if pkind is PrizeKind.WEEKLY
                else f"the {pkind} prizes are")
        raise Conflict(f"{what} already awarded")
    try:
        book = _book(session, settings, now, kind=pkind, week=week, prize_cents=prize_cents)
    except DeskError:
        raise
    except (PrizeError, StandingsError, ValueError) as exc:
        raise DeskError(str(exc)) from None
    rows = []
    what = f"week {week}'s prize" if pkind is PrizeKind.WEEKLY else f"the {pkind} prizes"
    with _race(session, lambda: f"{what} were awarded at the same moment at another desk:"
                                " nothing was recorded twice; look at the prizes again"):
        for award in book.awards:
            place = award.week if award.week is not None else award.position
            row = PrizeAward(kind=pkind.value, place=place or 0, entry_id=award.entry_id,
                             patron_id=award.patron_id, amount_cents=award.amount_cents,
                             awarded_at=as_utc(now), deadline=as_utc(award.claim_deadline))
            session.add(row)
            rows.append(row)
        session.flush()
        _audit(session, now, actor, "prize.awarded", detail={
            "kind": pkind.value, "week": week, "total_cents": book.total_cents,
            "awards": [{"award_id": r.id, "entry_id": r.entry_id, "patron_id": r.patron_id,
                        "place": r.place, "amount_cents": r.amount_cents} for r in rows],
            "remainders": [{"reason": r.reason.value, "amount_cents": r.amount_cents,
                            "detail": r.detail} for r in book.remainders]}, why=why)
        session.commit()
    return tuple(_view(r, now) for r in rows)


def claim_prize(session: Session, settings: TournamentSettings, clock: Clock, *, actor: str,
                award_id: int, id_number: str, receipt: str | None = None,
                why: str | None = None) -> PrizeView:
    """Record that the winner collected and signed for a prize (rule 55): the claimant's
    document must be the winning patron's, and the claim must come before the deadline."""
    actor = _begin(session, actor)
    now = _now(clock)
    row = session.get(PrizeAward, award_id)
    if row is None:
        raise NotFound(f"no prize award {award_id}")
    if row.claimed_at is not None:
        raise Conflict(f"prize {award_id} was claimed at {from_db(row.claimed_at):%Y-%m-%d %H:%M}"
                       f" by {row.claimed_by}")
    if prize_status(row, now) == "expired":
        local = from_db(row.deadline).astimezone(settings.tz)
        raise Conflict(f"prize {award_id} ({format_rand(row.amount_cents)}) expired at"
                       f" {local:%Y-%m-%d %H:%M} (rule 55: claims within"
                       f" {settings.prizes.claim_days} days)")
    try:
        number = normalize_id(id_number)
    except ValueError as exc:
        raise DeskError(str(exc)) from None
    winner = get_patron(session, row.patron_id)
    if number != winner.id_number:
        raise Conflict(f"the document shown is not that of the prize winner {winner.patron_id}")
    # Compare-and-set: of two desks claiming at the same moment, one records the claim.
    claimed = session.execute(
        update(PrizeAward).where(PrizeAward.id == award_id, PrizeAward.claimed_at.is_(None))
        .values(claimed_at=as_utc(now), claimed_by=f"{winner.name} ({winner.patron_id})"[:200])
        .execution_options(synchronize_session=False))
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        session.rollback()
        raise Conflict(f"prize {award_id} was claimed at the same moment at another desk:"
                       " pay it once")
    session.refresh(row)
    _audit(session, now, actor, "prize.claimed", detail={
        "award_id": row.id, "patron_id": winner.patron_id, "amount_cents": row.amount_cents,
        "receipt": receipt}, why=why)
    session.commit()
    return _view(row, now)


def prizes(session: Session, clock: Clock) -> tuple[PrizeView, ...]:
    """Every prize awarded, with its status now."""
    now = _now(clock)
    rows = session.scalars(select(PrizeAward).order_by(PrizeAward.id)).all()
    return tuple(_view(r, now) for r in rows)


# ---- the record --------------------------------------------------------------------------


def audit_log(session: Session, *, limit: int = 100, action: str | None = None
              ) -> Sequence[AuditEntry]:
    """The latest audit rows, newest first."""
    if limit < 1:
        raise DeskError("limit must be at least 1")
    query = select(AuditEntry)
    if action is not None:
        query = query.where(AuditEntry.action == action)
    return session.scalars(query.order_by(AuditEntry.id.desc()).limit(limit)).all()


def refusals(session: Session, *, limit: int = 100) -> Sequence[Refusal]:
    """The latest refusals, newest first."""
    return session.scalars(select(Refusal).order_by(Refusal.id.desc()).limit(limit)).all()

