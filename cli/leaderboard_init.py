"""`showdown leaderboard init --db URL`: create (or upgrade) the central database and enrol its
first manager, on the central server (it was `showdown desk init` while the desk opened the
database itself; a desk workstation holds no database URL now, D353)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cli.errors import CommandError

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["add_init", "run_init"]


def add_init(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `init` to `showdown leaderboard`."""
    a = lsub.add_parser(
        "init", help="create the central database and enrol its first manager",
        description="Create (or upgrade) the central database and enrol its first manager,"
        " who then enrols the staff at a desk (showdown desk staff add). The only command"
        " that creates a database; run it on the central server.")
    a.add_argument("--db", required=True, metavar="URL", help="database URL, e.g."
                   " sqlite:////var/lib/showdown-leaderboard/leaderboard.sqlite3")
    a.add_argument("--staff-id", default=None, help="the first manager's staff id")
    a.add_argument("--name", default=None, help="the first manager's name")
    a.add_argument("--passphrase-file", metavar="FILE", type=Path,
                   help="a file holding their desk passphrase (else typed at a prompt)")
    a.add_argument("--json", action="store_true", help="print JSON")
    a.set_defaults(handler=run_init)


def _engine(url: str) -> Engine:
    from sqlalchemy import make_url  # noqa: PLC0415 (only `init` needs the database stack)
    from sqlalchemy.exc import ArgumentError  # noqa: PLC0415

    from leaderboard.db import make_engine  # noqa: PLC0415

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise CommandError(f"--db {url!r} is not a database URL") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return make_engine(url)


def run_init(args: argparse.Namespace) -> int:
    """Create (or upgrade) the central database and enrol its first manager."""
    from sqlalchemy import select  # noqa: PLC0415 (only `init` needs the database stack)
    from sqlalchemy.exc import SQLAlchemyError  # noqa: PLC0415
    from sqlalchemy.orm import Session  # noqa: PLC0415

    from cli.desk.actions import clock, show  # noqa: PLC0415
    from cli.desk.staff import read_passphrase  # noqa: PLC0415
    from leaderboard.db import shown, upgrade  # noqa: PLC0415
    from leaderboard.desk.auth import init_first_manager  # noqa: PLC0415
    from leaderboard.models import StaffRecord  # noqa: PLC0415

    url = args.db
    engine = _engine(url)
    try:
        upgrade(engine)
        with Session(engine, expire_on_commit=False) as s:
            managers = s.scalars(select(StaffRecord.staff_id)
                                 .where(StaffRecord.role == "manager")).all()
            if managers:
                show(args, {"database": shown(url), "managers": list(managers)},
                     [f"database {shown(url)} is ready; its managers: {', '.join(managers)}"
                      " (they enrol staff: showdown desk staff add)"])
                return 0
            if not args.staff_id or not args.name:
                raise CommandError(f"database {shown(url)} is ready but has no manager yet:"
                                   " give --staff-id and --name to enrol the first")
            passphrase = read_passphrase(args, f"{args.staff_id}'s", required=True)
            assert passphrase is not None  # required
            view = init_first_manager(s, clock, staff_id=args.staff_id, name=args.name,
                                      passphrase_text=passphrase)
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        detail = " ".join(str(orig if orig is not None else exc).split())
        raise CommandError(f"database {shown(url)}: {detail[:300]}") from None
    finally:
        engine.dispose()
    show(args, {"database": shown(url), "managers": [view.staff_id]},
         [f"database {shown(url)} is ready; {view.staff_id} ({view.name}) is its first"
          " manager: sign in at a desk with `showdown desk login`"])
    return 0
