"""Seating: an entry or place seated at a table with the `seat` command, and unseated with
`unseat` when it leaves before its last hand (rules 1-3, 14, 25, 27, 40, 41)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from game.messages.desk import Seat, Unseat
from game.messages.table import EntrySeated
from game.tournament.entries import Stage
from game.tournament.schema import MAX_SEATS, TournamentSettings
from leaderboard.desk.action import (
    begin_action,
    desk_now,
    require_reason,
    write_audit,
)
from leaderboard.desk.command_log import record_command
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.heats import occupied_entries, open_heats_by_table
from leaderboard.desk.holds import screen
from leaderboard.desk.ids import checked_table_id
from leaderboard.desk.lookups import (
    PLAYED,
    get_entry,
    get_patron,
    has_score,
    stage_entries,
    stage_of,
)
from leaderboard.desk.values import DeskCommand, Seating
from leaderboard.display_names import display_name, entry_code
from leaderboard.models import Entry
from leaderboard.projections import REFUNDED, SEATED, WITHDRAWN
from runtime.clocks import WallClock

if TYPE_CHECKING:  # leaderboard.config imports the desk's policy: no import at run time
    from leaderboard.config import NameMode


def shown_code(entry: Entry) -> str:
    """The entry's short display code (stored when the entry was; derived for an entry stored
    before codes were)."""
    return entry.entry_code or entry_code(entry.entry_id)


def _seat_for(session: Session, settings: TournamentSettings, now: datetime, *,
              entry: Entry, stage: Stage, table: str, seat: int | None) -> tuple[str, int]:
    """The heat and seat an entry takes at `table` (checks the heat, the day, the choice)."""
    heat = open_heats_by_table(session).get(table)
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
    taken = [e for e in occupied_entries(session, table=table) if e.seat == seat]
    if taken:
        raise Conflict(f"seat {seat} at table {table} is taken by entry {taken[0].entry_id}")
    return heat_id, seat


def _check_player(session: Session, *, entry: Entry, stage: Stage, player_id: str) -> None:
    """A person plays one entry at a time, and one place per semi-final or Final."""
    busy = occupied_entries(session, player=player_id)
    if busy:
        raise Conflict(f"patron {player_id} is already playing entry {busy[0].entry_id} at"
                       f" table {busy[0].table_id}")
    if stage is Stage.QUALIFYING:
        return
    other = [e for e in stage_entries(session, stage)
             if e.entry_id != entry.entry_id and (e.played_by or e.patron_id) == player_id
             and (e.status in PLAYED or has_score(session, e.entry_id))]
    if other:
        raise Conflict(
            f"patron {player_id} already played place {other[0].entry_id} in the {stage}:"
            " each extra place needs a proxy (rules 25, 41)")


def seat_entry(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
               entry_id: str, table: str, seat: int | None = None,
               why: str | None = None, names: NameMode = "entry_code") -> Seating:
    """Seat an entry at a table: eligibility is checked again (rules 1-3) for whoever plays
    it, and the `seat` command is recorded and returned for sending, with the hashes of the
    player's rewards card and PIN when the desk has them (what the table checks the score's
    acknowledgement against).

    A qualifying entry takes any free seat at a table running a qualifying heat, on its
    heat day; a semi-final place takes the heat and seat chosen for it (rule 27), a Final
    place its drawn seat (rule 40). A person plays one entry at a time, and one place per
    semi-final or Final.

    The command carries what people see of the entry (D331, D332): its short code, and the
    player's name in the page's style ``names`` (none when the page shows entry codes only,
    or the player has not agreed to be named).
    """
    actor = begin_action(session, actor)
    now = desk_now(clock)
    table = checked_table_id(table)
    entry = get_entry(session, entry_id)
    stage = stage_of(entry)
    if has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} already has a score; it cannot be seated again")
    if entry.status == SEATED:
        raise Conflict(f"entry {entry.entry_id} is already seated at table {entry.table_id}"
                       f" seat {entry.seat}")
    if entry.status == WITHDRAWN:
        raise Conflict(f"entry {entry.entry_id} left table {entry.table_id} before its last"
                       " hand: it records no score (rule 14) and is not seated again")
    if entry.status == REFUNDED:
        raise Conflict(f"entry {entry.entry_id} was refunded: the patron buys a new entry")
    if entry.disqualified_at is not None:
        raise Conflict(f"entry {entry.entry_id} is disqualified (rule 57):"
                       f" {entry.disqualified_reason}")
    heat_id, seat = _seat_for(session, settings, now, entry=entry, stage=stage, table=table,
                              seat=seat)
    player_id = entry.played_by or entry.patron_id
    _check_player(session, entry=entry, stage=stage, player_id=player_id)
    player = get_patron(session, player_id)
    screen(session, settings.tz, player, now, context="seating", actor=actor,
           who=f"seating of entry {entry.entry_id}", names=settings.name_checks)
    before = {"entry_id": entry.entry_id, "table_id": entry.table_id, "seat": entry.seat,
              "heat_id": entry.heat_id, "status": entry.status}  # what a refusal puts back
    entry.table_id, entry.seat, entry.heat_id, entry.status = table, seat, heat_id, SEATED
    # The player's proof for acknowledging the score at the table (a proxy's own): hashes
    # only, and never a name or document number.
    command = Seat(entry_id=entry.entry_id, seat=seat, card_hash=player.card_hash,
                   pin_hash=player.pin_hash, entry_code=shown_code(entry),
                   name=display_name(names, full_name=player.name,
                                     consent=player.name_consent,
                                     screen_name=player.screen_name))
    args = command.args()
    row = write_audit(session, now, actor, EntrySeated.TYPE, detail={
        "table": table, "command": command.NAME, "args": args, "heat_id": heat_id,
        "player": player_id, "holder": entry.patron_id, "entry_id": entry.entry_id,
        "seat": seat}, why=why)
    sent = record_command(session, row, table, command, undo=before)
    session.commit()
    return Seating(entry_id=entry.entry_id, table=table, seat=seat, heat_id=heat_id,
                   player=player_id, command=sent, entry_code=command.entry_code)


def unseat_entry(session: Session, clock: WallClock, *, actor: str, entry_id: str,
                 why: str) -> DeskCommand:
    """Record and return the `unseat` command for an entry that leaves before its last hand
    (the table applies it between hands, holding it to the hand's end, D63). Once the table
    reports it, the entry is withdrawn: no score (rule 14), never seated again, its buy-in
    stays in the pools (D55)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the entry leaves", kept="the table's record")
    entry = get_entry(session, entry_id)
    if entry.status == WITHDRAWN:
        raise Conflict(f"entry {entry.entry_id} has already left table {entry.table_id}")
    if entry.status != SEATED or entry.table_id is None or entry.seat is None:
        raise Conflict(f"entry {entry.entry_id} is not seated at a table")
    if has_score(session, entry.entry_id):
        raise Conflict(f"entry {entry.entry_id} has played its hands and has a score")
    command = record_unseat(session, now, actor, entry, reason=reason, why=why)
    session.commit()
    return command


def record_unseat(session: Session, now: datetime, actor: str, entry: Entry, *, reason: str,
            why: str | None, **detail: Any) -> DeskCommand:
    """Record the `unseat` command for a seated entry (its audit row is the command's seq)."""
    assert entry.table_id is not None
    assert entry.seat is not None
    command = Unseat(seat=entry.seat, entry_id=entry.entry_id, reason=reason)
    args = command.args()
    row = write_audit(session, now, actor, "entry.unseat", detail={
        "table": entry.table_id, "command": command.NAME, "args": args, "heat_id": entry.heat_id,
        **detail, **args}, why=why)
    return record_command(session, row, entry.table_id, command)
