"""The desk sessions a workstation keeps: one file per terminal and person, only its owner can
read ($XDG_STATE_HOME/showdown/desk-sessions/<terminal>/<staff id>.json), so two people signed
in one after the other at a shared desk PC never act under each other's session (D354).

A command uses the session of the person named by ``--as ID`` (else $SHOWDOWN_DESK_STAFF);
with nobody named it uses the only session saved for this terminal and service, and refuses
when several people are signed in here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cli.desk.context import desk_config
from cli.errors import CommandError, CommandRefused

__all__ = [
    "DESK_STAFF_ENV",
    "SavedSession",
    "chosen_staff",
    "current_session",
    "forget_session",
    "save_session",
    "saved_sessions",
    "sessions_dir",
]

DESK_STAFF_ENV: Final = "SHOWDOWN_DESK_STAFF"
_SAFE: Final = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class SavedSession:
    """What `showdown desk login` keeps: the token, whose it is, where and for which service."""

    token: str
    staff_id: str
    terminal: str
    api_url: str


def _safe(name: str) -> str:
    return _SAFE.sub("_", name)[:80] or "_"


def sessions_dir(terminal: str) -> Path:
    """The terminal's session directory under $XDG_STATE_HOME (else ~/.local/state)."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state and Path(state).is_absolute() else (
        Path.home() / ".local" / "state")
    return base / "showdown" / "desk-sessions" / _safe(terminal)


def _where(args: argparse.Namespace) -> tuple[str, str]:
    config = desk_config(args)
    return config.terminal, config.api_url or ""


def save_session(saved: SavedSession) -> Path:
    """Write a person's session file for their terminal (mode 0600, directory 0700)."""
    folder = sessions_dir(saved.terminal)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{_safe(saved.staff_id)}.json"
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"token": saved.token, "staff_id": saved.staff_id,
                   "terminal": saved.terminal, "api_url": saved.api_url}, out)
    tmp.replace(path)
    return path


def _read(path: Path) -> SavedSession:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: cannot read the desk session ({exc}): remove it and run"
                           " `showdown desk login` again") from None
    keys = ("token", "staff_id", "terminal", "api_url")
    if not (isinstance(data, dict) and all(isinstance(data.get(k), str) for k in keys)):
        raise CommandError(f"{path} is not a desk session file: remove it and run"
                           " `showdown desk login`")
    return SavedSession(*(data[k] for k in keys))


def saved_sessions(args: argparse.Namespace) -> list[SavedSession]:
    """The sessions saved at this terminal for this service, by staff id."""
    terminal, url = _where(args)
    folder = sessions_dir(terminal)
    if not folder.is_dir():
        return []
    found = [_read(p) for p in sorted(folder.glob("*.json"))]
    return [s for s in found if s.api_url == url]


def chosen_staff(args: argparse.Namespace) -> str | None:
    """The person named for this command: ``--as``, else $SHOWDOWN_DESK_STAFF."""
    given = getattr(args, "as_staff", None) or os.environ.get(DESK_STAFF_ENV, "").strip()
    return given or None


def current_session(args: argparse.Namespace) -> SavedSession:
    """The session this command acts under; CommandRefused when none, or when several people
    are signed in here and none is named."""
    terminal, _ = _where(args)
    saved = saved_sessions(args)
    who = chosen_staff(args)
    if who is not None:
        mine = [s for s in saved if s.staff_id == who]
        if not mine:
            raise CommandRefused(f"{who} is not signed in at terminal {terminal}: run"
                                 f" `showdown desk login --staff-id {who}`")
        return mine[0]
    if not saved:
        raise CommandRefused("nobody is signed in here: run `showdown desk login`")
    if len(saved) > 1:
        names = ", ".join(s.staff_id for s in saved)
        raise CommandRefused(f"{names} are signed in at terminal {terminal}: say who acts"
                             f" with --as STAFF_ID (or ${DESK_STAFF_ENV}), or sign out"
                             " the others (showdown desk logout --as ID)")
    return saved[0]


def forget_session(saved: SavedSession) -> bool:
    """Remove a person's session file at its terminal; True if there was one."""
    try:
        (sessions_dir(saved.terminal) / f"{_safe(saved.staff_id)}.json").unlink()
    except FileNotFoundError:
        return False
    return True
