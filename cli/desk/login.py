"""`showdown desk init | login | logout | whoami`: create the desk's database with its first
manager, and sign a person in and out (leaderboard.desk.auth). The session token is kept in a
file only its owner can read (cli.desk.context.session_file); every other
desk command acts as, and records, the person signed in.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from cli.desk import actions as act
from cli.desk.context import (
    SavedSession,
    database_url,
    desk_config,
    existing_engine,
    forget_session,
    new_engine,
    save_session,
    saved_session,
)
from cli.desk.staff import read_passphrase
from cli.errors import CommandError, CommandRefused
from cli.typed_secrets import secret_from_file, typed_secret
from leaderboard.db import shown, upgrade
from leaderboard.desk.auth import SignInRefused, authenticate, init_first_manager, sign_in
from leaderboard.desk.auth import sign_out as end_session
from leaderboard.models import StaffRecord

__all__ = ["run_init", "run_login", "run_logout", "run_whoami"]


def _database_error(url: str, exc: SQLAlchemyError) -> CommandError:
    orig = getattr(exc, "orig", None)
    detail = " ".join(str(orig if orig is not None else exc).split())
    return CommandError(f"database {shown(url)}: {detail[:300]}")


def run_init(args: argparse.Namespace) -> int:
    """Create (or upgrade) the desk's database and enrol its first manager."""
    url = database_url(args)
    engine = new_engine(args)
    try:
        upgrade(engine)
        with Session(engine, expire_on_commit=False) as s:
            managers = s.scalars(select(StaffRecord.staff_id)
                                 .where(StaffRecord.role == "manager")).all()
            if managers:
                act.show(args, {"database": shown(url), "managers": list(managers)},
                         [f"database {shown(url)} is ready; its managers: {', '.join(managers)}"
                          " (they enrol staff: showdown desk staff add)"])
                return 0
            if not args.staff_id or not args.name:
                raise CommandError(f"database {shown(url)} is ready but has no manager yet:"
                                   " give --staff-id and --name to enrol the first")
            passphrase = read_passphrase(args, f"{args.staff_id}'s", required=True)
            assert passphrase is not None  # required
            view = init_first_manager(s, act.clock, staff_id=args.staff_id, name=args.name,
                                      passphrase_text=passphrase)
    except SQLAlchemyError as exc:
        raise _database_error(url, exc) from None
    finally:
        engine.dispose()
    act.show(args, {"database": shown(url), "managers": [view.staff_id]},
             [f"database {shown(url)} is ready; {view.staff_id} ({view.name}) is its first"
              " manager: sign in with `showdown desk login`"])
    return 0


def _read_secret(path: Path | None) -> str:
    if path is not None:
        return secret_from_file(path, "--passphrase-file")
    return typed_secret("passphrase", "desk passphrase", twice=False, unchanged="not signed in")


def run_login(args: argparse.Namespace) -> int:
    """Sign in with a staff id and desk passphrase; the session is saved for later commands."""
    url = database_url(args)
    engine = existing_engine(args)  # a wrong database is refused before anything is asked
    try:
        staff_id = args.staff
        if not staff_id:
            try:
                staff_id = input("staff id: ").strip()
            except (EOFError, KeyboardInterrupt):
                raise CommandError("no staff id was typed: not signed in") from None
        secret = _read_secret(args.password_file)
        with Session(engine, expire_on_commit=False) as s:
            signed = sign_in(s, act.clock, staff_id=staff_id, passphrase_text=secret,
                             client="cli", policy=desk_config(args).auth)
    except SignInRefused as exc:
        raise CommandRefused(f"not signed in: {exc}") from None
    except SQLAlchemyError as exc:
        raise _database_error(url, exc) from None
    finally:
        engine.dispose()
    who = signed.identity
    path = save_session(SavedSession(signed.token, who.staff_id, shown(url)))
    act.show(args, {"staff_id": who.staff_id, "name": who.name, "role": who.role,
                    "expires_at": who.expires_at, "session_file": str(path)},
             [f"signed in as {who.staff_id} ({who.name}, {who.role}) until"
              f" {who.expires_at:%Y-%m-%d %H:%M} UTC; the session ends after"
              f" {round((who.idle_until - act.clock()).total_seconds() / 60)} minutes"
              " without a desk command"])
    return 0


def run_logout(args: argparse.Namespace) -> int:
    """End the saved session and forget it."""
    saved = saved_session()
    if saved is None:
        act.show(args, {"signed_out": None}, ["nobody is signed in here"])
        return 0
    url = database_url(args)
    engine = existing_engine(args)
    note = ""
    try:
        with Session(engine, expire_on_commit=False) as s:
            end_session(s, act.clock, saved.token)
    except SignInRefused as exc:
        note = f" (the session had already ended: {exc})"
    except SQLAlchemyError as exc:
        raise _database_error(url, exc) from None
    finally:
        engine.dispose()
    forget_session()
    act.show(args, {"signed_out": saved.staff_id}, [f"{saved.staff_id} signed out{note}"])
    return 0


def run_whoami(args: argparse.Namespace) -> int:
    """Who is signed in here (exit 2 when nobody, or the session has ended)."""
    saved = saved_session()
    url = database_url(args)
    engine = existing_engine(args)
    try:
        with Session(engine, expire_on_commit=False) as s:
            who = authenticate(s, act.clock, None if saved is None else saved.token)
    except SignInRefused as exc:
        raise act.not_signed_in(exc, saved, url) from None
    except SQLAlchemyError as exc:
        raise _database_error(url, exc) from None
    finally:
        engine.dispose()
    act.show(args, {"staff_id": who.staff_id, "name": who.name, "role": who.role,
                    "expires_at": who.expires_at, "database": shown(url)},
             [f"{who.staff_id} ({who.name}, {who.role}) on {shown(url)}, signed in until"
              f" {who.expires_at:%Y-%m-%d %H:%M} UTC"])
    return 0
