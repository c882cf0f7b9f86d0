"""What the `showdown desk` actions for the tables' consoles do (issue 12): enrol staff and
send their roster, record a participant's rewards card and PIN, acknowledge a score at the
desk, list disputes and payout checks and record a dispute's resolution, each through the
central service's desk API (cli.desk.api).

The arguments are defined in `cli.desk.command`; the printing is `cli.desk.actions`'. A PIN
is read from ``--pin-file`` or typed at a prompt that does not echo it, never from the
command line; it goes to the service only over the desk API's HTTPS.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.desk import actions as act
from cli.desk import api
from cli.desk.table_answers import send
from cli.errors import CommandError
from cli.typed_secrets import secret_from_file, typed_secret
from game.money import format_rand
from leaderboard.desk.passphrases import MIN_PASSPHRASE

__all__ = [
    "read_passphrase",
    "run_acknowledge",
    "run_dispute_resolve",
    "run_disputes",
    "run_patron_credentials",
    "run_patron_display",
    "run_patron_show",
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


def _staff_line(v: dict[str, Any]) -> str:
    proof = " and ".join(w for w, held in (("PIN", v["pin"]), ("card", v["card"]),
                                           ("desk passphrase", v["passphrase"])) if held)
    state = "" if v["active"] else ", DISABLED"
    return f"{v['staff_id']} {v['name']} ({v['role']}, {proof or 'no credential'}{state})"


def _changed(args: argparse.Namespace, view: dict[str, Any], what: str) -> int:
    act.show(args, view, [f"{_staff_line(view)}: {what}; roster version"
                          f" {view['roster_version']} (send it to the tables: showdown desk"
                          " staff send)"])
    return 0


def _staff(staff_id: str, *rest: str) -> str:
    return api.path("staff", staff_id, *rest)


def run_staff_add(args: argparse.Namespace) -> int:
    """Enrol a dealer, clerk, supervisor or manager: a desk passphrase is asked for a clerk
    (or with --passphrase), a PIN for the tables unless a card or a passphrase is given."""
    passphrase = read_passphrase(args, f"{args.staff_id}'s", required=args.role == "clerk")
    pin = act.read_pin(args, f"{args.staff_id}'s", required=args.role != "clerk"
                       and args.card is None and passphrase is None)
    view = api.call(args, "POST", "staff", {
        "staff_id": args.staff_id, "name": args.name, "role": args.role, "pin": pin,
        "card": args.card, "passphrase": passphrase, "why": args.why})
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
    data = api.call(args, "POST", _staff(args.staff_id, "passphrase"),
                    {"passphrase": passphrase, "why": args.why})
    act.show(args, data, [f"{data['staff_id']}: new desk passphrase set; their desk sessions"
                          " are ended"])
    return 0


def run_staff_list(args: argparse.Namespace) -> int:
    """List the enrolled staff (which credentials each has, never the hashes)."""
    views = api.call(args, "GET", "staff")["staff"]
    act.show(args, views, [_staff_line(v) for v in views] or ["no staff enrolled"])
    return 0


def run_staff_disable(args: argparse.Namespace) -> int:
    """Disable a member's credentials."""
    view = api.call(args, "POST", _staff(args.staff_id, "disable"), {"why": args.why})
    return _changed(args, view, "disabled")


def run_staff_enable(args: argparse.Namespace) -> int:
    """Enable a member's credentials again."""
    view = api.call(args, "POST", _staff(args.staff_id, "enable"), {"why": args.why})
    return _changed(args, view, "enabled")


def run_staff_pin(args: argparse.Namespace) -> int:
    """Give a member a new PIN."""
    pin = act.read_pin(args, f"{args.staff_id}'s new", required=True)
    view = api.call(args, "POST", _staff(args.staff_id, "pin"), {"pin": pin, "why": args.why})
    return _changed(args, view, "new PIN")


def run_staff_card(args: argparse.Namespace) -> int:
    """Give a member a new employee card."""
    view = api.call(args, "POST", _staff(args.staff_id, "card"),
                    {"card": args.card, "why": args.why})
    return _changed(args, view, "new employee card")


def run_staff_send(args: argparse.Namespace) -> int:
    """Send the staff roster to every active enrolled table (or ``--table``)."""
    sent = send(args, "POST", "staff/roster", {"table": args.table, "why": args.why})
    data = sent.body
    return act.finish(args, sent, [
        f"staff roster version {data['roster_version']} sent to table {c['table']}"
        f" (seq {c['seq']})" for c in data["sent"]],
        {"roster_version": data["roster_version"], "sent": data["sent"]})


def run_patron_credentials(args: argparse.Namespace) -> int:
    """Record a patron's rewards card and/or PIN (hashed), for the entries seated next."""
    pin = act.read_pin(args, "the participant's")
    sent = send(args, "POST", api.path("patrons", args.patron, "credentials"),
                {"rewards_card": args.rewards_card, "pin": pin, "why": args.why})
    data = sent.body
    held = " and ".join(w for w, h in (("rewards card", data["card"]), ("PIN", data["pin"]))
                        if h)
    lines = [f"patron {data['patron_id']}: {held or 'nothing'} recorded for the table"
             " (entries seated from now on carry it)"]
    lines += [f"sent to table {c['table']} for entry {c['entry_id']} (seq {c['seq']})"
              for c in data["sent"]]
    return act.finish(args, sent, lines, {k: data[k] for k in ("patron_id", "card", "pin",
                                                                 "sent")})


def run_patron_show(args: argparse.Namespace) -> int:
    """Print a patron's record: each entry by code and id, and where it stands (D333)."""
    record = api.call(args, "GET", api.path("patrons", args.patron))
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
    patron = api.call(args, "POST", api.path("patrons", args.patron, "display"),
                      {"name_consent": args.consent, "screen_name": args.screen_name,
                       "clear_screen_name": bool(args.no_screen_name), "why": args.why})
    act.show(args, patron, [f"patron {patron['patron_id']}: "
                            + ("named by first name and initial" if patron["name_consent"]
                               else "no consent to be named")
                            + (f", screen name {patron['screen_name']!r}"
                               if patron["screen_name"] else ", no screen name")])
    return 0


def run_acknowledge(args: argparse.Namespace) -> int:
    """Send a score's acknowledgement taken at the desk to the table that recorded it."""
    sent = send(args, "POST", "acknowledgements", {"entry_id": args.entry,
                                                   "method": args.method, "why": args.why})
    c = sent.body
    return act.finish(args, sent, [f"entry {c['entry_id']}'s score acknowledged at the desk"
                                   f" ({c['method']}): sent to table {c['table']}"
                                   f" (seq {c['seq']})"])


def _dispute_line(d: dict[str, Any]) -> str:
    state = (f"resolved by {d['resolved_by']}: {d['resolution']}" if not d["open"] else "OPEN")
    score = "no score" if d["score_cents"] is None else format_rand(d["score_cents"])
    where = f"at {d['table']} (seq {d['seq']})" if d["seq"] is not None else "at the desk"
    return (f"{act.moment(d['at']):%Y-%m-%d %H:%M} {d['entry_id']} {score} {where}:"
            f" {d['note']!r} - {state}")


def run_disputes(args: argparse.Namespace) -> int:
    """List the disputes (``--open``: only those not resolved)."""
    rows = api.call(args, "GET", "disputes" + api.query(open=args.open))["disputes"]
    act.show(args, rows, [_dispute_line(d) for d in rows]
             or ["no open disputes" if args.open else "no disputes"])
    return 0


def run_dispute_resolve(args: argparse.Namespace) -> int:
    """Record the supervisor's resolution of an entry's open dispute."""
    if not args.resolution.strip():
        raise CommandError("say how the dispute was resolved (--resolution)")
    rows = api.call(args, "POST", "dispute-resolutions",
                    {"entry_id": args.entry, "resolution": args.resolution})["resolved"]
    act.show(args, rows, [_dispute_line(d) for d in rows])
    return 0


def _payout_line(p: dict[str, Any]) -> str:
    head = f"{act.moment(p['at']):%Y-%m-%d %H:%M} {p['hand_id']} at {p['table']}: {p['outcome']}"
    if p["outcome"] != "overridden":
        return head
    spots = ", ".join(f"seat {m.get('seat')} {m.get('spot')} held"
                      f" {format_rand(int(m.get('held', 0)))} of"
                      f" {format_rand(int(m.get('expected', 0)))}" for m in p["mismatches"])
    return f"{head} by {p['by']}: {p['reason']} [{spots or 'no mismatch listed'}]"


def run_payouts(args: argparse.Namespace) -> int:
    """List the payout checks, newest first (``--overridden``: only overrides)."""
    rows = api.call(args, "GET", "payouts" + api.query(overridden=args.overridden))["payouts"]
    rows = rows[:max(0, args.limit)]
    act.show(args, rows, [_payout_line(p) for p in rows] or ["no payout checks"])
    return 0
