"""What the `showdown desk` actions for the tables' consoles do (issue 12): enrol staff and
send their roster, record a participant's rewards card and PIN, acknowledge a score at the
desk, list disputes and payout checks and record a dispute's resolution.

The arguments are defined in `cli.desk.command`; the shared plumbing (database,
operator, sending, printing) is `cli.desk.actions`'. A PIN is read from
``--pin-file`` or typed at a prompt that does not echo it, never from the command line.
"""

from __future__ import annotations

import argparse

from cli.desk import actions as act
from cli.errors import CommandError
from cli.typed_secrets import secret_from_file, typed_secret
from game.money import format_rand
from leaderboard import desk
from leaderboard.desk import DisputeView, PayoutCheckView, StaffView
from leaderboard.desk.auth import may_set_passphrase
from leaderboard.desk.passphrases import MIN_PASSPHRASE
from leaderboard.desk.patron_record import patron_record

__all__ = [
    "read_passphrase",
    "run_acknowledge",
    "run_dispute_resolve",
    "run_disputes",
    "run_patron_credentials",
    "run_patron_display",
    "run_payouts",
    "run_staff_add",
    "run_staff_card",
    "run_staff_disable",
    "run_staff_enable",
    "run_staff_list",
    "run_staff_passphrase",
    "run_staff_pin",
    "run_staff_send",
]


def _staff_line(v: StaffView) -> str:
    proof = " and ".join(w for w, held in (("PIN", v.has_pin), ("card", v.has_card),
                                           ("desk passphrase", v.has_passphrase)) if held)
    state = "" if v.active else ", DISABLED"
    return f"{v.staff_id} {v.name} ({v.role}, {proof or 'no credential'}{state})"


def _changed(args: argparse.Namespace, view: StaffView, what: str) -> int:
    act.show(args, view, [f"{_staff_line(view)}: {what}; roster version {view.roster_version}"
                          " (send it to the tables: showdown desk staff send)"])
    return 0


def run_staff_add(args: argparse.Namespace) -> int:
    """Enrol a dealer, clerk, supervisor or manager: a desk passphrase is asked for a clerk
    (or with --passphrase), a PIN for the tables unless a card or a passphrase is given."""
    passphrase = read_passphrase(args, f"{args.staff_id}'s", required=args.role == "clerk")
    pin = act.read_pin(args, f"{args.staff_id}'s", required=args.role != "clerk"
                       and args.card is None and passphrase is None)
    with act.desk_session(args, "staff.enrol") as (s, actor):
        view = desk.enrol_staff(s, act.clock, actor=actor, staff_id=args.staff_id,
                                name=args.name, role=args.role, pin=pin, card=args.card,
                                desk_passphrase=passphrase, why=args.why)
    return _changed(args, view, "enrolled")


def read_passphrase(args: argparse.Namespace, whose: str, *,
                    required: bool = False) -> str | None:
    """A desk passphrase from ``--passphrase-file``, else typed twice at a prompt that does
    not echo it (``--passphrase``, or when ``required``); None when none is given."""
    path = getattr(args, "passphrase_file", None)
    if path is not None:
        return secret_from_file(path, "--passphrase-file")
    if not (getattr(args, "passphrase", False) or required):
        return None
    return typed_secret("passphrase", f"{whose} desk passphrase ({MIN_PASSPHRASE}+ characters)",
                        twice=True, unchanged="nothing was changed")


def run_staff_passphrase(args: argparse.Namespace) -> int:
    """Set a desk passphrase: one's own, or (a manager) anyone's; their sessions end."""
    passphrase = read_passphrase(args, f"{args.staff_id}'s new", required=True)
    assert passphrase is not None  # required
    with act.desk_session(args, "passphrase.own") as (s, actor):
        may_set_passphrase(s, actor=actor, staff_id=args.staff_id)
        view = desk.set_desk_passphrase(s, act.clock, actor=actor, staff_id=args.staff_id,
                                        new_passphrase=passphrase, why=args.why)
    act.show(args, {"staff_id": view.staff_id, "passphrase_set": True},
             [f"{view.staff_id}: new desk passphrase set; their desk sessions are ended"])
    return 0


def run_staff_list(args: argparse.Namespace) -> int:
    """List the enrolled staff (which credentials each has, never the hashes)."""
    with act.desk_session(args, "staff.list") as (s, _):
        views = desk.list_staff(s)
    act.show(args, views, [_staff_line(v) for v in views] or ["no staff enrolled"])
    return 0


def run_staff_disable(args: argparse.Namespace) -> int:
    """Disable a member's credentials."""
    with act.desk_session(args, "staff.disable") as (s, actor):
        view = desk.set_staff_active(s, act.clock, actor=actor,
                                     staff_id=args.staff_id, active=False, why=args.why)
    return _changed(args, view, "disabled")


def run_staff_enable(args: argparse.Namespace) -> int:
    """Enable a member's credentials again."""
    with act.desk_session(args, "staff.enable") as (s, actor):
        view = desk.set_staff_active(s, act.clock, actor=actor,
                                     staff_id=args.staff_id, active=True, why=args.why)
    return _changed(args, view, "enabled")


def run_staff_pin(args: argparse.Namespace) -> int:
    """Give a member a new PIN."""
    pin = act.read_pin(args, f"{args.staff_id}'s new", required=True)
    assert pin is not None  # required
    with act.desk_session(args, "staff.pin") as (s, actor):
        view = desk.change_staff_pin(s, act.clock, actor=actor,
                                     staff_id=args.staff_id, pin=pin, why=args.why)
    return _changed(args, view, "new PIN")


def run_staff_card(args: argparse.Namespace) -> int:
    """Give a member a new employee card."""
    with act.desk_session(args, "staff.card") as (s, actor):
        view = desk.change_staff_card(s, act.clock, actor=actor,
                                      staff_id=args.staff_id, card=args.card, why=args.why)
    return _changed(args, view, "new employee card")


def run_staff_send(args: argparse.Namespace) -> int:
    """Send the staff roster to every active enrolled table (or ``--table``)."""
    act.make_sender(args)  # refuse before recording anything if the sender cannot be made
    with act.desk_session(args, "staff.send_roster") as (s, actor):
        commands = desk.send_roster(s, act.clock, actor=actor, table=args.table,
                                    why=args.why)
    for n, command in enumerate(commands):
        try:
            act.send_command(args, command)
        except CommandError as exc:
            unsent = ", ".join(f"{c.table} (seq {c.seq})" for c in commands[n:])
            raise exc.reworded(f"{exc}; not sent: {unsent}") from None
    version = commands[0].args["version"]
    act.show(args, {"roster_version": version,
                    "sent": [{"table": c.table, "seq": c.seq} for c in commands]},
             [f"staff roster version {version} sent to table {c.table} (seq {c.seq})"
              for c in commands])
    return 0


def run_patron_credentials(args: argparse.Namespace) -> int:
    """Record a patron's rewards card and/or PIN (hashed), for the entries seated next."""
    pin = act.read_pin(args, "the participant's")
    settings = act.tournament_settings(args)
    with act.desk_session(args, "patron.credentials") as (s, actor):
        done = desk.set_patron_credentials(s, act.clock, actor=actor,
                                           patron_id=args.patron,
                                           rewards_card=args.rewards_card, pin=pin,
                                           why=args.why, card_forms=settings.card_forms)
    patron = done.patron
    for n, command in enumerate(done.commands):
        try:
            act.send_command(args, command)
        except CommandError as exc:
            unsent = ", ".join(f"{c.table} (seq {c.seq})" for c in done.commands[n:])
            raise exc.reworded(f"{exc}; not sent: {unsent}") from None
    data = {"patron_id": patron.patron_id, "card": patron.card_hash is not None,
            "pin": patron.pin_hash is not None,
            "sent": [{"table": c.table, "seq": c.seq, "entry_id": c.args["entry_id"]}
                     for c in done.commands]}
    held = " and ".join(w for w, h in (("rewards card", data["card"]), ("PIN", data["pin"]))
                        if h)
    lines = [f"patron {patron.patron_id}: {held or 'nothing'} recorded for the table"
             " (entries seated from now on carry it)"]
    lines += [f"sent to table {c.table} for entry {c.args['entry_id']} (seq {c.seq})"
              for c in done.commands]
    act.show(args, data, lines)
    return 0


def run_patron_show(args: argparse.Namespace) -> int:
    """Print a patron's record: each entry by code and id, and where it stands (D333)."""
    settings = act.tournament_settings(args)
    with act.desk_session(args, "patron.show") as (s, _actor):
        record = patron_record(s, settings, args.patron)
    lines = [f"patron {record['patron_id']}: {record['name']} ({record['standing']});"
             f" documents: {', '.join(record['documents']) or 'none'}; for the table:"
             f" {'rewards card' if record['card'] else 'no rewards card'},"
             f" {'PIN' if record['pin'] else 'no PIN'}"]
    lines += [f"  {e['code']} [{e['entry_id']}] {e['stage']}: {e['summary']}"
              for e in record["entries"]] or ["  no entries"]
    act.show(args, record, lines)
    return 0


def run_patron_display(args: argparse.Namespace) -> int:
    """Record how the page may name a patron (consent, screen name)."""
    with act.desk_session(args, "patron.display") as (s, actor):
        patron = desk.set_patron_display(s, act.clock, actor=actor, patron_id=args.patron,
                                         name_consent=args.consent,
                                         screen_name=args.screen_name,
                                         clear_screen_name=args.no_screen_name, why=args.why)
    data = {"patron_id": patron.patron_id, "name_consent": patron.name_consent,
            "screen_name": patron.screen_name}
    act.show(args, data, [f"patron {patron.patron_id}: "
                          + ("named by first name and initial" if patron.name_consent
                             else "no consent to be named")
                          + (f", screen name {patron.screen_name!r}" if patron.screen_name
                             else ", no screen name")])
    return 0


def run_acknowledge(args: argparse.Namespace) -> int:
    """Send a score's acknowledgement taken at the desk to the table that recorded it."""
    act.make_sender(args)
    with act.desk_session(args, "score.acknowledge") as (s, actor):
        command = desk.acknowledge_score(s, act.clock, actor=actor,
                                         entry_id=args.entry, method=args.method, why=args.why)
    act.send_command(args, command)
    act.show(args, command, [f"entry {command.args['entry_id']}'s score acknowledged at the"
                             f" desk ({command.args['method']}): sent to table {command.table}"
                             f" (seq {command.seq})"])
    return 0


def _dispute_line(d: DisputeView) -> str:
    state = (f"resolved by {d.resolved_by}: {d.resolution}" if not d.open else "OPEN")
    score = "no score" if d.score_cents is None else format_rand(d.score_cents)
    where = f"at {d.table} (seq {d.seq})" if d.seq is not None else "at the desk"
    return f"{d.at:%Y-%m-%d %H:%M} {d.entry_id} {score} {where}: {d.note!r} - {state}"


def run_disputes(args: argparse.Namespace) -> int:
    """List the disputes (``--open``: only those not resolved)."""
    with act.desk_session(args, "disputes.show") as (s, _):
        rows = desk.disputes(s, open_only=args.open)
    act.show(args, rows, [_dispute_line(d) for d in rows]
             or ["no open disputes" if args.open else "no disputes"])
    return 0


def run_dispute_resolve(args: argparse.Namespace) -> int:
    """Record the supervisor's resolution of an entry's open dispute."""
    with act.desk_session(args, "dispute.resolve") as (s, actor):
        rows = desk.resolve_dispute(s, act.clock, actor=actor,
                                    entry_id=args.entry, resolution=args.resolution)
    act.show(args, rows, [_dispute_line(d) for d in rows])
    return 0


def _payout_line(p: PayoutCheckView) -> str:
    head = f"{p.at:%Y-%m-%d %H:%M} {p.hand_id} at {p.table}: {p.outcome}"
    if p.outcome != "overridden":
        return head
    spots = ", ".join(f"seat {m.get('seat')} {m.get('spot')} held"
                      f" {format_rand(int(m.get('held', 0)))} of"
                      f" {format_rand(int(m.get('expected', 0)))}" for m in p.mismatches)
    return f"{head} by {p.by}: {p.reason} [{spots or 'no mismatch listed'}]"


def run_payouts(args: argparse.Namespace) -> int:
    """List the payout checks, newest first (``--overridden``: only overrides)."""
    with act.desk_session(args, "payouts.show") as (s, _):
        rows = desk.payout_checks(s, overridden_only=args.overridden, limit=args.limit)
    act.show(args, rows, [_payout_line(p) for p in rows] or ["no payout checks"])
    return 0
