"""Database access for the leaderboard: engines for SQLite or PostgreSQL, and migrations."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, InterfaceError, NoSuchModuleError, OperationalError

from game.errors import ConfigError, GameError
from runtime.errors import Unavailable, one_line

__all__ = ["MIGRATIONS", "MigrationError", "alembic_config", "configured_engine",
           "database_answers", "make_engine", "upgrade"]

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


def configured_engine(url: str, *, source: str, key: str, **options: object) -> Engine:
    """`make_engine` for the URL a configuration (file and key, or a flag) names: a URL that
    is not one, or names a driver that is not installed, is a ConfigError naming them."""
    try:
        return make_engine(url, **options)
    except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
        raise ConfigError(source, key, f"{url!r} is not a usable database URL:"
                          f" {one_line(exc)[:200]}") from None


@contextmanager
def database_answers(source: str, key: str) -> Iterator[None]:
    """Within the block, a database that cannot be reached (refused, timed out, no such
    host or file) is `Unavailable` naming the setting that points at it."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise Unavailable(source, key, "the database did not answer:"
                          f" {one_line(exc.orig or exc)[:200]}") from exc


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
