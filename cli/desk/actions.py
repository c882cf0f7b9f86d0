"""What each `showdown desk` action does: open the database, check the signed-in person may
take the action (leaderboard.desk.permissions), act through `leaderboard.desk` as that person, send
the table commands it records, and print the result (text, or JSON with ``--json``).

The arguments are defined in `cli.desk.command`; every handler here takes the parsed
arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from cli.desk.context import (
    SavedSession,
    database_url,
    desk_config,
    existing_engine,
    saved_session,
)
from cli.errors import CommandError, CommandRefused, CommandUnavailable
from cli.typed_secrets import secret_from_file, typed_secret
from game.money import InvalidAmount, format_rand, parse_amount
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.words import spoken
from leaderboard import desk
from leaderboard.db import database_answers, shown
from leaderboard.desk import DeskCommand, Place, PrizeView
from leaderboard.desk.auth import RoleRefused, SignInRefused, authorise
from leaderboard.desk.command_log import mark_sent
from leaderboard.desk.lookups import entry_codes
from leaderboard.desk.sender import CommandSender, DeskSender, SendError
from leaderboard.eligibility import in_force, read_list
from runtime.errors import one_line
from runtime.settings_files import read_tournament
from wire.signing import SigningError, load_private_key

__all__ = [
    "clock",
    "desk_session",
    "local_time",
    "make_sender",
    "not_signed_in",
    "note_sent",
    "now",
    "read_pin",
    "run_audit",
    "run_award",
    "run_buy",
    "run_check",
    "run_choose_seat",
    "run_claim",
    "run_close_heat",
    "run_correct_score",
    "run_draw",
    "run_import_list",
    "run_lists",
    "run_open_heat",
    "run_places",
    "run_prizes",
    "run_proxy",
    "run_refund",
    "run_register",
    "run_resend",
    "run_seat",
    "run_table_fault",
    "run_unseat",
    "run_void_score",
    "send_command",
    "show",
    "tournament_settings",
]

def now() -> datetime:
    """The desk's clock (UTC); tests replace it."""
    return datetime.now(UTC)


def clock() -> datetime:
    """The desk clock desk actions are given (reads `now`, so that tests can set it)."""
    return now()


@contextmanager
def desk_session(args: argparse.Namespace, action: str) -> Iterator[tuple[Session, str]]:
    """A session on the command's database (it must exist and be migrated) and the staff id
    of the signed-in person, whose role may take ``action`` (a name in
    leaderboard.desk.permissions); a refusal or a database error is a one-line CommandError."""
    url = database_url(args)
    engine = existing_engine(args)
    try:
        saved = saved_session()
        with database_answers(url, ""), Session(engine, expire_on_commit=False) as session:
            try:
                who = authorise(session, clock, None if saved is None else saved.token, action)
            except SignInRefused as exc:
                raise not_signed_in(exc, saved, url) from None
            except RoleRefused as exc:
                raise CommandRefused(f"refused: {exc}") from None
            yield session, who.staff_id
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        detail = " ".join(str(orig if orig is not None else exc).split())
        raise CommandError(f"database {shown(url)}: {detail[:300]}") from None
    finally:
        engine.dispose()


def not_signed_in(exc: SignInRefused, saved: SavedSession | None, url: str) -> CommandError:
    """The one line saying why nobody is signed in here, and what to run."""
    if exc.reason == "no_session":
        return CommandRefused("nobody is signed in here: run `showdown desk login`")
    if saved is not None and saved.database != shown(url):
        return CommandRefused(f"not signed in on {shown(url)}: the saved session is for"
                              f" {saved.database}; run `showdown desk login`")
    return CommandRefused(f"not signed in: {exc}")


def tournament_settings(args: argparse.Namespace) -> TournamentSettings:
    """The tournament settings: ``--tournament``, else the config's, else the ones in force."""
    return read_tournament(args.tournament or desk_config(args).tournament)


def read_pin(args: argparse.Namespace, whose: str, *, required: bool = False) -> str | None:
    """The PIN from ``--pin-file``, else typed twice at a prompt that does not echo it
    (``--pin``, or when ``required``); None when no PIN is given."""
    path = getattr(args, "pin_file", None)
    if path is not None:
        return secret_from_file(path, "--pin-file")
    if not (getattr(args, "pin", False) or required):
        return None
    return typed_secret("PIN", f"{whose} PIN (4-8 digits)", twice=True,
                        unchanged="nothing was changed")


def make_sender(args: argparse.Namespace) -> CommandSender:
    """The MQTT sender for the desk's key and venue: the config's, or the flags overriding
    them (tests replace this)."""
    config = desk_config(args)
    key, venue = args.key or config.signing_key, args.venue or config.venue
    if key is None or venue is None:
        missing = " and ".join(k for k, v in (("desk.signing_key", key), ("desk.venue", venue))
                               if v is None)
        raise CommandError(f"{config.source}: {missing}: sending to a table needs the desk's"
                           " signing key and the tables' venue id (or --key / --venue)")
    try:
        settings = config.mqtt()
        if args.broker is not None:
            host, _, port = str(args.broker).rpartition(":")
            if not host or not port.isdigit():
                raise CommandError(f"--broker {args.broker!r}: write it as HOST:PORT")
            settings = replace(settings, host=host, port=int(port))
        if args.username is not None or args.password_file is not None:
            password = None
            if args.password_file is not None:
                password = Path(args.password_file).read_text(encoding="utf-8").strip()
            settings = replace(settings, username=args.username or settings.username,
                               password=password)
        if args.ca_file is not None:
            settings = replace(settings, ca_file=args.ca_file, tls=True)
        if args.topic_root is not None:
            settings = replace(settings, topic_root=args.topic_root)
        signer = load_private_key(key)
        return DeskSender(settings, venue=venue, signer=signer)
    except SigningError as exc:
        where = "--key" if args.key else f"{config.source}: desk.signing_key"
        raise CommandError(f"{where}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--password-file {args.password_file}: {exc}") from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def send_command(args: argparse.Namespace, command: DeskCommand) -> None:
    """Send a recorded command, and record it as sent (its state: `showdown desk commands`);
    a failure says how to send it again."""
    sender = make_sender(args)
    try:
        asyncio.run(sender.send(command))
    except SendError as exc:
        note_sent(args, command, error=str(exc))
        raise CommandUnavailable(f"{exc} (send it again with `showdown desk resend"
                                 f" {command.seq}`)") from None
    note_sent(args, command)


def note_sent(args: argparse.Namespace, command: DeskCommand, *, error: str | None = None
              ) -> None:
    """Record a command as sent (or not, with ``error``) in the desk's database."""
    engine = existing_engine(args)
    try:
        mark_sent(engine, [command], now(), error=error)
    except SQLAlchemyError as exc:
        print(f"warning: seq {command.seq} was sent but not marked sent in the database:"
              f" {one_line(exc)[:200]}", file=sys.stderr)
    finally:
        engine.dispose()


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def show(args: argparse.Namespace, data: Any, lines: Sequence[str]) -> None:
    """Print ``data`` as JSON (``--json``) or ``lines`` as text."""
    if args.json:
        print(json.dumps(_jsonable(data), sort_keys=True))
    else:
        for line in lines:
            print(line)


def local_time(settings: TournamentSettings, moment: datetime) -> str:
    """A moment in the venue's time zone, to the minute."""
    return f"{moment.astimezone(settings.tz):%Y-%m-%d %H:%M}"


# ---- actions ------------------------------------------------------------------------------


def run_register(args: argparse.Namespace) -> int:
    """Register a patron; prints the patron id."""
    settings = tournament_settings(args)
    pin = read_pin(args, "the participant's")
    with desk_session(args, "patron.register") as (s, actor):
        patron = desk.register_patron(s, settings, clock, actor=actor, name=args.name,
                                      id_kind=args.id_kind, id_number=args.id_number,
                                      birth_date=args.birth_date, why=args.why,
                                      rewards_card=args.rewards_card, pin=pin,
                                      name_consent=args.consent_name,
                                      screen_name=args.screen_name)
    proof = [what for what, held in (("rewards card", patron.card_hash),
                                     ("PIN", patron.pin_hash)) if held is not None]
    held = patron.standing == "held"
    show(args, {"patron_id": patron.patron_id, "card": patron.card_hash is not None,
                "pin": patron.pin_hash is not None, "standing": patron.standing,
                "name_consent": patron.name_consent, "screen_name": patron.screen_name},
         [f"registered {patron.patron_id}"
          + (f" ({' and '.join(proof)} recorded for the table)" if proof else "")]
         + ([f"HELD for a supervisor's decision: {patron.standing_reason} (showdown desk"
             " holds --open)"] if held else []))
    return 0


def run_import_list(args: argparse.Namespace) -> int:
    """Import a list file."""
    rows = read_list(args.file)
    settings = tournament_settings(args)
    with desk_session(args, "lists.import") as (s, actor):
        result, found = desk.import_and_rescreen(
            s, settings, clock, actor=actor, kind=args.kind, rows=rows,
            source=args.source, source_date=args.date)
        codes = entry_codes(s, [*found.refunded, *found.seated])
    lines = [f"imported {result.rows} rows: {result.kind} list from {result.source} dated"
             f" {result.source_date}" + (f" (replaces {result.replaced} rows)"
                                         if result.replaced else ""),
             f"screened {found.checked} registered patrons again"]
    lines += [f"patron {p} REFUSED: the list names a document of theirs" for p in found.refused]
    lines += [f"hold {h} opened: a possible match for a supervisor" for h in found.held]
    lines += [f"entry {codes[e]} refunded: pay the patron" for e in found.refunded]
    lines += [f"entry {codes[e]} is seated now: its patron is refused or held (a supervisor"
              " decides)" for e in found.seated]
    show(args, {"import": result, "rescreen": found}, lines)
    return 0


def run_lists(args: argparse.Namespace) -> int:
    """Show the lists in force."""
    with desk_session(args, "lists.show") as (s, _actor):
        lists = list(in_force(s))
    data = [{"kind": k, "source": src, "source_date": d, "rows": n} for k, src, d, n in lists]
    show(args, data, [f"{k}: {src}, dated {d}, {n} rows" for k, src, d, n in lists]
           or ["no lists imported"])
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Check eligibility; exit 0 if eligible, 1 if not (the refusal is recorded)."""
    settings = tournament_settings(args)
    with desk_session(args, "eligibility.check") as (s, actor):
        verdict = desk.check_person(s, settings, clock, actor=actor,
                                    patron_id=args.patron, id_number=args.id_number,
                                    name=args.name, birth_date=args.birth_date)
    eligible = verdict.eligible and not verdict.held
    lines = [f"not eligible: {r}" for r in verdict.reasons]
    lines += [f"{m.sentence()} (a supervisor decides)" for m in verdict.possible]
    show(args, {"eligible": eligible, "reasons": verdict.reasons,
                "possible_matches": [m.as_json() for m in verdict.possible]},
           lines or ["eligible"])
    return 0 if eligible else 1


def run_buy(args: argparse.Namespace) -> int:
    """Sell an entry; prints the entry id and the code the page shows it by."""
    settings = tournament_settings(args)
    with desk_session(args, "entry.buy") as (s, actor):
        entry = desk.buy_entry(s, settings, clock, actor=actor, patron_id=args.patron,
                               payment=args.payment, why=args.why)
    show(args, {"entry_id": entry.entry_id, "code": entry.entry_code,
                "heat_day": entry.heat_day, "buy_in_cents": entry.buy_in_cents,
                "payment": entry.payment},
           [f"entry {entry.entry_code} for the heat of {entry.heat_day}"
            f" ({format_rand(entry.buy_in_cents)}, paid in {entry.payment});"
            f" entry id {entry.entry_id}"])
    return 0


def run_refund(args: argparse.Namespace) -> int:
    """Refund an entry that has not been seated."""
    with desk_session(args, "entry.refund") as (s, actor):
        entry = desk.refund_entry(s, clock, actor=actor, entry_id=args.entry,
                                  why=args.why)
    show(args, {"entry_id": entry.entry_id, "code": entry.entry_code,
                "refund_cents": entry.buy_in_cents},
           [f"entry {entry.entry_code or entry.entry_id} refunded: pay the patron"
            f" {format_rand(entry.buy_in_cents)}"])
    return 0


def run_void_score(args: argparse.Namespace) -> int:
    """Void an entry's recorded score (a supervisor's ruling; nothing is sent to a table)."""
    settings = tournament_settings(args)
    with desk_session(args, "score.void") as (s, actor):
        ruling = desk.void_score(s, settings, clock, actor=actor, entry_id=args.entry,
                                 why=args.why)
        code = entry_codes(s, [ruling.entry_id])[ruling.entry_id]
    show(args, ruling, [f"entry {code} score voided:"
                          f" {format_rand(ruling.recorded_cents)} from {ruling.table} no"
                          " longer counts"])
    return 0


def run_correct_score(args: argparse.Namespace) -> int:
    """Correct an entry's recorded score (a supervisor's ruling; nothing is sent to a table)."""
    try:
        score_cents = parse_amount(args.score)
    except InvalidAmount as exc:
        raise CommandError(f"--score: {exc}") from None
    settings = tournament_settings(args)
    with desk_session(args, "score.correct") as (s, actor):
        ruling = desk.correct_score(s, settings, clock, actor=actor,
                                    entry_id=args.entry, score_cents=score_cents, why=args.why)
        code = entry_codes(s, [ruling.entry_id])[ruling.entry_id]
    assert ruling.counted_cents is not None  # a correction always counts a figure
    show(args, ruling, [f"entry {code} score corrected:"
                          f" {format_rand(ruling.recorded_cents)} from {ruling.table} now"
                          f" counts {format_rand(ruling.counted_cents)}"])
    return 0


def run_table_fault(args: argparse.Namespace) -> int:
    """Take a table out of service mid-heat, and tell the table (for when it comes back)."""
    make_sender(args)
    with desk_session(args, "table.fault") as (s, actor):
        fault = desk.table_fault(s, clock, actor=actor, table=args.table, why=args.why)
        codes = entry_codes(s, [*fault.refunded, *fault.released])
    recorded = [f"table {fault.table} out of service; heat {fault.heat_id} closed at the desk"]
    recorded += [f"entry {codes[e]} refunded: pay the patron {format_rand(c)}"
                 for e, c in fault.refunded.items()]
    recorded += [f"place {codes[e]} freed: seat it again (it is played from the start)"
                 for e in fault.released]
    if not args.json:  # what the desk recorded shows even if the table cannot be told
        show(args, fault, recorded)
    for n, command in enumerate(fault.commands):
        try:
            send_command(args, command)
        except CommandError as exc:
            unsent = ", ".join(str(c.seq) for c in fault.commands[n:])
            raise exc.reworded(f"table {fault.table} is out of service at the desk, but the"
                               f" table was not told: {exc}; unsent seq {unsent}") from None
    show(args, fault, [f"the table is sent {len(fault.commands)} commands (seq"
                         f" {', '.join(str(c.seq) for c in fault.commands)}); it applies"
                         " them if it comes back, so it does not play those entries on"])
    return 0


def run_open_heat(args: argparse.Namespace) -> int:
    """Open a heat at a table."""
    settings = tournament_settings(args)
    make_sender(args)  # refuse before recording anything if the sender cannot be made
    with desk_session(args, "heat.open") as (s, actor):
        command = desk.open_heat(s, settings, clock, actor=actor, table=args.table,
                                 stage=args.stage, heat_id=args.heat_id, why=args.why)
    send_command(args, command)
    show(args, command, [f"heat {command.args['heat_id']} opened at table {command.table}"
                           f" (seq {command.seq})"])
    return 0


def run_close_heat(args: argparse.Namespace) -> int:
    """Close the heat at a table."""
    make_sender(args)
    with desk_session(args, "heat.close") as (s, actor):
        command = desk.close_heat(s, clock, actor=actor, table=args.table, why=args.why)
    send_command(args, command)
    show(args, command, [f"heat closed at table {command.table} (seq {command.seq})"])
    return 0


def run_seat(args: argparse.Namespace) -> int:
    """Seat an entry and send the seat command."""
    settings = tournament_settings(args)
    make_sender(args)
    with desk_session(args, "entry.seat") as (s, actor):
        seating = desk.seat_entry(s, settings, clock, actor=actor, entry_id=args.entry,
                                  table=args.table, seat=args.seat, why=args.why,
                                  names=desk_config(args).names)
    send_command(args, seating.command)
    show(args, seating, [f"entry {seating.entry_code} seated at table {seating.table} seat"
                           f" {seating.seat}, heat {seating.heat_id} (seq {seating.command.seq})"])
    return 0


def run_unseat(args: argparse.Namespace) -> int:
    """Record and send the unseat command for an entry that leaves before its last hand."""
    make_sender(args)
    with desk_session(args, "entry.unseat") as (s, actor):
        command = desk.unseat_entry(s, clock, actor=actor, entry_id=args.entry,
                                    why=args.why)
        code = entry_codes(s, [command.args["entry_id"]])[command.args["entry_id"]]
    send_command(args, command)
    show(args, command, [f"entry {code} to leave table {command.table}"
                           f" seat {command.args['seat']} (seq {command.seq}); it is withdrawn"
                           " once the table confirms"])
    return 0


def run_resend(args: argparse.Namespace) -> int:
    """Send a recorded command again."""
    make_sender(args)
    with desk_session(args, "command.resend") as (s, actor):
        command = desk.resend_command(s, clock, actor=actor, seq=args.seq, why=args.why)
    send_command(args, command)
    show(args, command, [f"{command.command} for table {command.table} sent again"
                           f" (seq {command.seq})"])
    return 0


def _place_line(p: Place) -> str:
    score = format_rand(p.score_cents) if p.score_cents is not None else "-"
    where = f"heat {p.heat} seat {p.seat}" if p.seat is not None else "no seat yet"
    proxy = f", played by proxy {p.played_by}" if p.played_by else ""
    return (f"{p.position or '-':>2}. {p.entry_id} (from {p.won_by}, {score}) holder"
            f" {p.holder}{proxy}: {where}, {p.status}")


def run_places(args: argparse.Namespace) -> int:
    """Show (or allocate) the semi-final or Final places."""
    settings = tournament_settings(args)
    stage: Stage = args.stage
    with desk_session(args, "places.allocate" if args.allocate else "places.show") as (s, actor):
        if args.allocate:
            allocate = desk.allocate_semis if stage is Stage.SEMI_FINAL else desk.allocate_final
            result = allocate(s, settings, clock, actor=actor, why=args.why)
        else:
            result = desk.places(s, settings, stage)
    show(args, result, [_place_line(p) for p in result]
           or [f"no {spoken(stage)} places allocated yet"])
    return 0


def run_proxy(args: argparse.Namespace) -> int:
    """Nominate a proxy."""
    settings = tournament_settings(args)
    with desk_session(args, "place.proxy") as (s, actor):
        row = desk.nominate_proxy(s, settings, clock, actor=actor, entry_id=args.entry,
                                  proxy_patron_id=args.proxy, why=args.why)
        data = {"entry_id": row.entry_id, "holder": row.holder_patron_id,
                "proxy": row.proxy_patron_id}
    show(args, data, [f"{data['proxy']} plays place {data['entry_id']} for {data['holder']}"])
    return 0


def run_choose_seat(args: argparse.Namespace) -> int:
    """Select a semi-final heat and seat."""
    settings = tournament_settings(args)
    with desk_session(args, "place.choose_seat") as (s, actor):
        place = desk.choose_seat(s, settings, clock, actor=actor, entry_id=args.entry,
                                 heat=args.heat, seat=args.seat, why=args.why)
    show(args, place, [_place_line(place)])
    return 0


def run_draw(args: argparse.Namespace) -> int:
    """Draw the Final's seats, or replay a stored draw (exit 1 if the replay differs)."""
    action = "draw.replay" if args.replay is not None else "draw.final"
    with desk_session(args, action) as (s, actor):
        if args.replay is not None:
            replay = desk.replay_draw(s, args.replay)
            lines = [f"draw {replay.draw_id}: replay "
                     + ("matches" if replay.matches else "DIFFERS from the stored result")]
            lines += [f"  {e}: stored seat {st}, replayed seat {rp}" for (e, st), (_, rp)
                      in zip(replay.stored, replay.replayed, strict=False)]
            show(args, {**asdict(replay), "matches": replay.matches}, lines)
            return 0 if replay.matches else 1
        settings = tournament_settings(args)
        outcome = desk.draw_final(s, settings, clock, actor=actor, why=args.why)
    head = (f"draw {outcome.draw_id} " + ("(already drawn: reused)" if outcome.reused
                                          else "made") + f", random bytes {outcome.random_hex}")
    show(args, outcome, [head] + [f"  {e}: seat {seat}" for e, seat
                                    in sorted(outcome.seats.items(), key=lambda x: x[1])])
    return 0


def _prize_line(settings: TournamentSettings, p: PrizeView) -> str:
    claimed = (f", claimed {local_time(settings, p.claimed_at)} by {p.claimed_by}"
               if p.claimed_at else "")
    return (f"#{p.award_id} {p.kind} {p.place}: {format_rand(p.amount_cents)} to {p.patron_id}"
            f" (entry {p.entry_id}) {p.status}, deadline {local_time(settings, p.deadline)}"
            f"{claimed}")


def run_award(args: argparse.Namespace) -> int:
    """Record a prize book."""
    settings = tournament_settings(args)
    with desk_session(args, "prize.award") as (s, actor):
        views = desk.award_prizes(s, settings, clock, actor=actor, kind=args.kind,
                                  week=args.week, prize_cents=args.prize, why=args.why)
    show(args, views, [_prize_line(settings, v) for v in views] or ["nothing to award"])
    return 0


def run_claim(args: argparse.Namespace) -> int:
    """Record a claim."""
    settings = tournament_settings(args)
    with desk_session(args, "prize.claim") as (s, actor):
        view = desk.claim_prize(s, settings, clock, actor=actor, award_id=args.award,
                                id_number=args.id_number, receipt=args.receipt, why=args.why)
    show(args, view, [_prize_line(settings, view)])
    return 0


def run_prizes(args: argparse.Namespace) -> int:
    """List the prizes."""
    settings = tournament_settings(args)
    with desk_session(args, "prizes.show") as (s, _actor):
        views = desk.prizes(s, clock)
    show(args, views, [_prize_line(settings, v) for v in views] or ["no prizes awarded"])
    return 0


def run_audit(args: argparse.Namespace) -> int:
    """Show the audit log."""
    with desk_session(args, "audit.show") as (s, _actor):
        rows = desk.audit_log(s, limit=args.limit, action=args.action)
        data = [{"id": r.id, "at": r.at, "actor": r.actor, "action": r.action,
                 "detail": r.detail} for r in rows]
    show(args, data, [f"{d['id']:>6} {d['at']:%Y-%m-%d %H:%M:%S} {d['actor']}: {d['action']}"
                        f" {json.dumps(d['detail'], sort_keys=True)}" for d in data])
    return 0
