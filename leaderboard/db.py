"""Database access for the leaderboard: engines for SQLite or PostgreSQL, and migrations."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event

from game.errors import GameError

__all__ = ["MIGRATIONS", "MigrationError", "alembic_config", "make_engine", "upgrade"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class MigrationError(GameError):
    """The database cannot be upgraded as it stands; the message names what must be resolved."""


def make_engine(url: str, **options: object) -> Engine:
    """An engine for `url`; SQLite gets WAL, foreign keys and a busy timeout."""
    engine = create_engine(url, **options)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()
    return engine


def alembic_config(url: str) -> Config:
    """The Alembic configuration for this package's migrations and `url`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine) -> None:
    """Create or upgrade the schema to the newest revision."""
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")
