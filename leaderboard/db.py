"""Database access for the leaderboard: engines for SQLite or PostgreSQL, and migrations.

Only `upgrade` creates or changes a schema (the leaderboard service's start and
``showdown desk init`` call it). Every command that only uses a database opens it with
`open_existing`, which refuses, in one line naming the URL and what to run, a SQLite file
that does not exist (so a mistyped URL never creates an empty database) and a database that
is empty or at another schema revision than this software's.

On PostgreSQL a connection the server can no longer write through is a lost connection
(`lost_connection_state`): a read-only error (SQLSTATE 25006: the server was demoted to a
standby, or a multi-host URL's libpq landed on one), an administrator or crash shutdown
(57P01, 57P02), a server still starting (57P03) or a connection failure (class 08). The
engine then drops the connection and every pooled one opened before it, so the next attempt
connects again and libpq, given every host and ``target_session_attrs=read-write``, finds
the writable one (docs/operations/broker-cluster.md section 2; D388). Pooled
connections are pinged at checkout, so one that died with its server is replaced at once.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import URL, Engine, create_engine, event, make_url, text
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
)

from game.errors import ConfigError, GameError
from leaderboard.audit_trail.chain import AuditValues, append_audit
from leaderboard.audit_trail.outside_writes import mark_service_connection, restore_triggers
from runtime.errors import Unavailable, one_line

__all__ = [
    "MIGRATIONS",
    "DatabaseNotReady",
    "MigrationError",
    "alembic_config",
    "configured_engine",
    "connection_lost",
    "database_answers",
    "head_revisions",
    "lost_connection_state",
    "make_engine",
    "missing_sqlite_file",
    "open_existing",
    "shown",
    "upgrade",
]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class DatabaseNotReady(GameError):
    """A database a command was asked to use is missing, empty or at another revision; the
    message names its URL and what to run."""


class MigrationError(GameError):
    """The database cannot be upgraded as it stands; the message names what must be resolved."""


# SQLSTATEs after which a PostgreSQL connection cannot write again (besides class 08,
# connection exceptions): read-only transaction (a standby, a demoted primary), shutdowns,
# a server that is starting or in recovery.
_LOST_STATES: Final = frozenset({"25006", "57P01", "57P02", "57P03"})


def lost_connection_state(sqlstate: str | None) -> bool:
    """Whether a PostgreSQL error of this SQLSTATE means the connection is lost for writing
    (the engine then connects again; see the module's docstring)."""
    return sqlstate is not None and (sqlstate in _LOST_STATES or sqlstate.startswith("08"))


def _lost_connection(context: ExceptionContext) -> None:
    """The engine's ``handle_error`` hook: mark a lost-for-writing connection as a disconnect,
    so that SQLAlchemy invalidates it and the pool (D388)."""
    original = context.original_exception
    if lost_connection_state(getattr(original, "sqlstate", None)):
        context.is_disconnect = True
    elif context.connection is None and isinstance(context.sqlalchemy_exception,
                                                   OperationalError):
        context.is_disconnect = True  # no server took the connection (refused, not writable)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the engine lost its connection, or could not connect to a server
    that takes writes (PostgreSQL: the work may be tried again on a new connection), rather
    than that the database refused the work. Besides SQLAlchemy's errors, psycopg's own: a
    statement an engine event runs on the raw connection (the central lease's fence, at
    commit) is not wrapped, nor seen by the ``handle_error`` hook."""
    if isinstance(exc, DBAPIError):
        return bool(exc.connection_invalidated)
    if not type(exc).__module__.startswith("psycopg"):
        return False
    if lost_connection_state(getattr(exc, "sqlstate", None)):
        return True
    return any(c.__name__ in ("OperationalError", "InterfaceError")
               for c in type(exc).__mro__)


def make_engine(url: str, **options: object) -> Engine:
    """An engine for `url`; SQLite gets WAL, foreign keys and a busy timeout. Every connection
    is marked as the service's, so the database's triggers do not record its writes as made
    outside the service (leaderboard.audit_trail.outside_writes). On PostgreSQL pooled
    connections are pinged at checkout and a connection that cannot write any more is
    dropped (the module's docstring)."""
    if make_url(url).get_backend_name() == "postgresql":
        options.setdefault("pool_pre_ping", True)
    engine = create_engine(url, **options)
    dialect = engine.dialect.name
    if dialect == "postgresql":
        event.listen(engine, "handle_error", _lost_connection)
    if dialect == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()

    @event.listens_for(engine, "connect")
    def _service_mark(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        mark_service_connection(dbapi_connection, dialect)

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
    host or file) is `Unavailable` naming the setting that points at it; a file that is not
    an SQLite database is a ConfigError naming it."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise Unavailable(source, key, "the database did not answer:"
                          f" {one_line(exc.orig or exc)[:200]}") from exc
    except DatabaseError as exc:
        if getattr(exc.orig, "sqlite_errorname", "") != "SQLITE_NOTADB":
            raise
        raise ConfigError(source, key, "the file is not an SQLite database (a text file,"
                          " a backup archive, another program's file?): name the central"
                          " database's file") from exc


def alembic_config(url: str) -> Config:
    """The Alembic configuration for this package's migrations and `url`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine) -> None:
    """Create or upgrade the schema to the newest revision; then put back any trigger that
    records outside writes the database lacks, with a high-severity alert in the audit trail
    naming them (a migration's table copy, or a trigger dropped by hand)."""
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with _sqlite_migration_lock(engine.url), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # one migration at a time per schema: two instances started together on an
            # empty database (the standby central service) must not both create its tables
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext("
                                    "'showdown.migrate.' || current_schema()))"))
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")
        restored = restore_triggers(connection)
        if restored:
            append_audit(connection, [AuditValues(
                at=datetime.now(UTC), actor="(schema check at upgrade)",
                action="alert.triggers_restored", detail={
                    "severity": "high", "triggers": restored[:50],
                    "problem": f"{len(restored)} trigger(s) recording outside writes were"
                               f" missing and are restored: {', '.join(restored[:5])}"})])


def _sqlite_migration_lock(url: URL) -> AbstractContextManager[object]:
    """An exclusive lock on ``<database file>.migration-lock`` while an SQLite file is
    migrated (a file of its own: closing a descriptor of the database file would drop
    SQLite's own locks in this process); nothing for other databases."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return nullcontext()
    return _file_lock(Path(f"{url.database}.migration-lock"))


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shown(url: str) -> str:
    """The URL as it may be shown (no password)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)


def missing_sqlite_file(url: str) -> Path | None:
    """The SQLite file ``url`` names when it does not exist (None: it exists, or not SQLite,
    or in memory)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    return None if path.is_file() else path


def head_revisions() -> set[str]:
    """The schema revisions this software's migrations end at."""
    return set(ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads())


def open_existing(url: str, *, create_with: str, source: str | None = None,
                  key: str = "") -> Engine:
    """An engine on the existing database at ``url``, at this software's schema revision.

    Never creates anything: a missing SQLite file, an empty database or one at another
    revision is a `DatabaseNotReady` saying to run ``create_with`` (a command line). A URL
    that is not one is a ConfigError, a database that does not answer `Unavailable`, both
    naming ``source`` and ``key`` (the file and key, or the flag, that gave the URL)."""
    where = source if source is not None else shown(url)
    try:
        missing = missing_sqlite_file(url)
    except ArgumentError:
        raise ConfigError(where, key, f"{url!r} is not a database URL") from None
    if missing is not None:
        raise DatabaseNotReady(f"database {shown(url)}: no such SQLite file {missing} (a"
                               f" mistyped URL?); to create it run `{create_with}`")
    engine = configured_engine(url, source=where, key=key)
    try:
        with database_answers(where, key), engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except BaseException:
        engine.dispose()
        raise
    heads = head_revisions()
    if current in heads:
        return engine
    engine.dispose()
    if current is None:
        raise DatabaseNotReady(f"database {shown(url)} is empty (no showdown schema): to"
                               f" create it run `{create_with}`")
    raise DatabaseNotReady(f"database {shown(url)} is at schema revision {current}; this"
                           f" software needs {', '.join(sorted(heads))}: to upgrade it run"
                           f" `{create_with}`")
