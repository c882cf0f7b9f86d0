"""What every `showdown desk` command starts from: the desk config (``--config``, else
$SHOWDOWN_DESK_CONFIG, else the shipped desk.toml; a flag overrides its key), the database it
names (opened only if it exists and is migrated), and the signed-in person's session token,
kept in a file only its owner can read under the user's state directory.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sqlalchemy import Engine

from cli.errors import CommandError
from leaderboard.db import DatabaseNotReady, make_engine, open_existing
from leaderboard.desk.config import DeskConfig, read_desk_config

__all__ = [
    "INIT",
    "SavedSession",
    "database_url",
    "desk_config",
    "existing_engine",
    "forget_session",
    "new_engine",
    "save_session",
    "saved_session",
    "session_file",
]

INIT: Final = "showdown desk init"
_CACHE: Final = "_desk_config"


def desk_config(args: argparse.Namespace) -> DeskConfig:
    """The desk config the command runs with (read once per command)."""
    cached = getattr(args, _CACHE, None)
    if isinstance(cached, DeskConfig):
        return cached
    config = read_desk_config(getattr(args, "config", None))
    setattr(args, _CACHE, config)
    return config


def database_url(args: argparse.Namespace) -> str:
    """``--db``, else the config's ``desk.database``."""
    given = getattr(args, "db", None)
    return str(given) if given else desk_config(args).database


def existing_engine(args: argparse.Namespace) -> Engine:
    """An engine on the command's database, which must exist and be migrated."""
    try:
        given = getattr(args, "db", None)
        source, key = (("--db", "") if given else
                       (str(desk_config(args).source), "desk.database"))
        return open_existing(database_url(args), create_with=INIT, source=source, key=key)
    except DatabaseNotReady as exc:
        raise CommandError(str(exc)) from None


def new_engine(args: argparse.Namespace) -> Engine:
    """An engine on the command's database, its SQLite directory made (``desk init`` only)."""
    url = database_url(args)
    from sqlalchemy import make_url  # noqa: PLC0415

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return make_engine(url)


# ---- the signed-in person's session -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SavedSession:
    """What `showdown desk login` keeps: the token, whose it is, and on which database."""

    token: str
    staff_id: str
    database: str


def session_file() -> Path:
    """$XDG_STATE_HOME/showdown/desk-session, else ~/.local/state/showdown/desk-session."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state and Path(state).is_absolute() else (
        Path.home() / ".local" / "state")
    return base / "showdown" / "desk-session"


def save_session(saved: SavedSession) -> Path:
    """Write the session file (mode 0600, its directory 0700), replacing any."""
    path = session_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"token": saved.token, "staff_id": saved.staff_id,
                   "database": saved.database}, out)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def saved_session() -> SavedSession | None:
    """The saved session, if any; a damaged file is a CommandError saying what to do."""
    path = session_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: cannot read the desk session ({exc}): run"
                           " `showdown desk login` again") from None
    if not (isinstance(data, dict) and all(isinstance(data.get(k), str)
                                           for k in ("token", "staff_id", "database"))):
        raise CommandError(f"{path} is not a desk session file: run `showdown desk login`")
    return SavedSession(data["token"], data["staff_id"], data["database"])


def forget_session() -> bool:
    """Remove the session file; True if there was one."""
    try:
        session_file().unlink()
    except FileNotFoundError:
        return False
    return True
