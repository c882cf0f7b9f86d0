"""`showdown desk login | logout | whoami | sessions`: sign a person in and out at this
terminal through the central service's desk API (leaderboard.desk_api.session). The session
token is kept in a file per terminal and person that only its owner can read
(cli.desk.sessions); every other desk command acts as, and records, the person chosen.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.desk import actions as act
from cli.desk import api
from cli.desk.context import desk_config
from cli.desk.sessions import (
    SavedSession,
    chosen_staff,
    current_session,
    forget_session,
    save_session,
    saved_sessions,
)
from cli.errors import CommandError, CommandRefused
from cli.typed_secrets import secret_from_file, typed_secret

__all__ = ["run_init", "run_login", "run_logout", "run_revoke", "run_sessions", "run_whoami"]


def run_init(_args: argparse.Namespace) -> int:
    """`showdown desk init` is the central server's job now: say which command does it."""
    raise CommandRefused("a desk workstation does not create the database any more: on the"
                         " central server run `showdown leaderboard init --db URL --staff-id"
                         " ID --name NAME` (docs/desk-auth.md)")


def _read_secret(path: Path | None) -> str:
    if path is not None:
        return secret_from_file(path, "--passphrase-file")
    return typed_secret("passphrase", "desk passphrase", twice=False, unchanged="not signed in")


def _until(text: str) -> str:
    value = act.moment(text)
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M}"


def run_login(args: argparse.Namespace) -> int:
    """Sign in with a staff id and desk passphrase; the session is saved for this terminal
    and person."""
    config = desk_config(args)
    staff_id = args.staff or chosen_staff(args)
    if not staff_id:
        try:
            staff_id = input("staff id: ").strip()
        except (EOFError, KeyboardInterrupt):
            raise CommandError("no staff id was typed: not signed in") from None
    secret = _read_secret(args.password_file)
    answer = api.exchange(args, "POST", "session", {
        "staff_id": staff_id, "passphrase": secret, "terminal": config.terminal},
        signed_in=False, accept=(401,))
    who = answer.body
    if answer.status == 401:
        raise CommandRefused(f"not signed in: {who.get('error')}")
    path = save_session(SavedSession(who["token"], who["staff_id"], config.terminal,
                                     config.api_url or ""))
    shown = {k: v for k, v in who.items() if k != "token"}
    act.show(args, {**shown, "terminal": config.terminal, "session_file": str(path)},
             [f"signed in as {who['staff_id']} ({who['name']}, {who['role']}) at terminal"
              f" {config.terminal} until {_until(who['expires_at'])} UTC; the session ends"
              f" after {who.get('idle_minutes')} minutes without a desk command"])
    return 0


def run_logout(args: argparse.Namespace) -> int:
    """End the chosen session at this terminal and forget it."""
    if not saved_sessions(args):
        act.show(args, {"signed_out": None}, ["nobody is signed in here"])
        return 0
    saved = current_session(args)
    answer = api.exchange(args, "DELETE", "session", token=saved.token, accept=(401,))
    note = "" if answer.status != 401 else (
        f" (the session had already ended: {answer.body.get('error')})")
    forget_session(saved)
    act.show(args, {"signed_out": saved.staff_id}, [f"{saved.staff_id} signed out{note}"])
    return 0


def run_whoami(args: argparse.Namespace) -> int:
    """Who is signed in here (refused when nobody, or the session has ended)."""
    saved = current_session(args)
    who = api.call(args, "GET", "session")
    config = desk_config(args)
    act.show(args, {**who, "terminal": saved.terminal, "api_url": config.api_url},
             [f"{who['staff_id']} ({who['name']}, {who['role']}) at terminal {saved.terminal}"
              f" on {config.api_url}, signed in until {_until(who['expires_at'])} UTC"])
    return 0


def run_sessions(args: argparse.Namespace) -> int:
    """List the open desk sessions: a manager's all, anyone else's their own."""
    rows = api.call(args, "GET", "sessions")["sessions"]
    act.show(args, rows, [
        f"{r['id']}  {r['staff_id']}  terminal {r['terminal'] or '-'}  from"
        f" {r['address'] or '-'}  signed in {_until(r['signed_in_at'])}  last used"
        f" {_until(r['last_used_at'])}  expires {_until(r['expires_at'])}" for r in rows]
        or ["no open desk sessions"])
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    """Revoke a desk session (a manager: anyone's; others: their own)."""
    data = api.call(args, "POST", api.path("sessions", args.session_id, "revoke"),
                    {"why": args.why})
    act.show(args, data, [f"session {data['id']} of {data['staff_id']} at terminal"
                          f" {data['terminal'] or '-'} revoked"])
    return 0
