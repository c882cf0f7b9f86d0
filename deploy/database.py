"""The PostgreSQL role and database of the central service, as one command for the database's
administrator (a casino's DBA may own PostgreSQL, so the installer prints it; D327)."""

from __future__ import annotations

import shlex

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["postgres_setup_command"]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def postgres_setup_command(url: str, *, admin: str = "postgres") -> str | None:
    """The `psql` command that creates the URL's role (LOGIN, no password: the site's
    pg_hba.conf and .pgpass decide how it signs in) and its database owned by that role;
    None for a database that is not PostgreSQL or names no user or database."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "postgresql" or not parsed.username or not parsed.database:
        return None
    argv = ["psql"]
    if parsed.host:
        argv += ["-h", parsed.host]
    if parsed.port:
        argv += ["-p", str(parsed.port)]
    role, database = _ident(parsed.username), _ident(parsed.database)
    argv += ["-U", admin, "-d", "postgres", "-v", "ON_ERROR_STOP=1",
             "-c", f"CREATE ROLE {role} LOGIN",
             "-c", f"CREATE DATABASE {database} OWNER {role}"]
    return shlex.join(argv)
