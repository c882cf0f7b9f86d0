"""A PostgreSQL primary and a streaming standby on loopback ports, for failover drills.

    pair = PgPair(synchronous=True)          # two nodes, free ports, a tmp dir of their own
    pair.start()                             # initdb + start the primary, pg_basebackup -R
    url = pair.url()                         # both hosts, target_session_attrs=read-write
    pair.hold_standby()                      # (asynchronous) nothing more reaches the standby
    lost = pair.kill_primary()               # SIGKILL the primary's postmaster and backends
    lost = pair.demote_primary()             # or: it stays up, read-only (a switchover)
    pair.promote()                           # pg_ctl promote the standby: the new primary
    pair.rebuild()                           # the lost node again, as the new standby
    timings = pair.failover()                # the three steps above, each one timed
    pair.stop()                              # both servers stopped, the tmp dir removed
    with PgPair(synchronous=False) as pair:  # start() ... stop()
        ...

Each node is a data directory and a fixed port; the roles move between them: after
``failover()`` the other node is the primary, and the URL, which names both ports, stays
the same (libpq tries them in order and keeps the writable one). Both listen on 127.0.0.1
only, trust authentication, user ``postgres``, database ``drill`` (``database=``).

- Run as root (the test machine), the servers and their tools run as the ``postgres`` OS user
  (``runuser -u postgres --``; initdb and postgres refuse root), in a directory under the
  system's tmp made for it (pytest's tmp_path is not readable by that user); otherwise as
  the user running the tests. ``available()`` says whether the binaries are installed
  (``PG_BIN``, or the newest /usr/lib/postgresql/*/bin); a test calls ``require_pair()``
  (skipped without them, failed under SHOWDOWN_REQUIRE_SERVICES).
- ``synchronous=True``: the primary runs with ``synchronous_standby_names =
  'FIRST 1 ("pg-a", "pg-b")'`` (the nodes' application names: never another WAL stream,
  such as ``pg_basebackup``'s own while a standby is rebuilt) and
  ``synchronous_commit`` = ``commit_level`` ("on" by default; "remote_write",
  "remote_apply"), so a commit returns only once the standby has it. When the primary is
  lost, ``promote()`` leaves the new primary without a synchronous standby until
  ``rebuild()`` has one streaming again, as Patroni's (non-strict) synchronous mode does:
  commits do not hang while there is no standby, and in that window they exist on one
  server only. ``strict=True`` keeps the requirement instead: the new primary's commits wait
  for the rebuilt standby (no commit is ever acknowledged by one server alone).
- ``synchronous=False``: asynchronous streaming; a primary lost with commits not yet sent
  takes them with it (what a table's journal must send again). ``hold_standby()`` makes
  the standby fall behind on purpose (the primary's WAL sender stopped with SIGSTOP; it is
  let go only after ``promote()``), so that the commits made meanwhile never leave the
  primary and are lost with it (on loopback an asynchronous standby is otherwise never
  behind when the primary goes).
- A primary is "lost" by SIGKILL of its postmaster and every process of it (the machine gone,
  but its sockets reset at once, as on loopback), or "demoted": it keeps running and keeps
  its clients' connections but answers every write with SQLSTATE 25006
  (``default_transaction_read_only``, reloaded), as a demoted primary behind a switchover
  does, until ``rebuild()`` stops it. ``rebuild()`` makes the lost node a new
  standby with a fresh ``pg_basebackup`` of the new primary (seconds for a small database;
  no pg_rewind, which needs ``wal_log_hints`` and a clean history).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["PG_BIN", "Failover", "PgNode", "PgPair", "available", "require_pair"]


def _pg_bin() -> Path:
    given = os.environ.get("PG_BIN")
    if given:
        return Path(given)
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return versions[-1] if versions else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()
_AS_ROOT = os.geteuid() == 0
_WAIT_S = 60.0  # against hangs only


def available() -> bool:
    """Whether the PostgreSQL server binaries (and, as root, runuser and the postgres user)
    are there."""
    if not all((PG_BIN / tool).exists() for tool in ("initdb", "pg_ctl", "pg_basebackup")):
        return False
    if not _AS_ROOT:
        return True
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return shutil.which("runuser") is not None


def require_pair() -> None:
    """Skip the calling test when the PostgreSQL server binaries are absent; fail it instead
    under SHOWDOWN_REQUIRE_SERVICES (CI)."""
    if available():
        return
    import pytest  # here: the bench imports this module too

    from tests import services

    reason = (f"the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup in {PG_BIN};"
              " PG_BIN= to name another folder) are not installed")
    if services.services_required():
        pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*args: str, timeout: float = _WAIT_S) -> str:
    """Run a PostgreSQL tool (as the postgres user when we are root); its output."""
    command = [str(PG_BIN / args[0]), *args[1:]]
    if _AS_ROOT:
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}"
                           f" {done.stdout.strip()}"[:2000])
    return done.stdout


def _own(path: Path) -> None:
    if _AS_ROOT:
        shutil.chown(path, "postgres", "postgres")


@dataclass
class PgNode:
    """One server: its data directory, port and log; ``role`` is "primary", "standby" or
    "lost"."""

    name: str
    port: int
    data: Path
    log: Path
    role: str = "lost"

    def conninfo(self, dbname: str = "postgres") -> str:
        """A libpq connection string to this node alone."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def sql(self, statement: str, params: tuple[Any, ...] = (),
            dbname: str = "postgres") -> list[tuple[Any, ...]]:
        """Run one statement in autocommit; its rows (empty for a statement without)."""
        with psycopg.connect(self.conninfo(dbname), autocommit=True, connect_timeout=5) as c:
            cursor = c.execute(statement.encode(), params or None)
            return list(cursor.fetchall()) if cursor.description else []

    def postmaster(self) -> int | None:
        """The postmaster's pid, from postmaster.pid (None: not running)."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def answers(self) -> bool:
        """Whether something accepts connections on its port."""
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def start(self) -> None:
        """pg_ctl start, waiting until it accepts connections."""
        # cluster_name: the name its WAL receiver gives the primary (application_name), so
        # that synchronous_standby_names can name it (and not pg_basebackup's stream).
        _run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o",
             f"-p {self.port} -c cluster_name={self.name}", "-w", "-t", str(int(_WAIT_S)),
             "start")

    def kill(self) -> None:
        """SIGKILL the postmaster and every process it started; return once the port is
        closed."""
        pid = self.postmaster()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)  # no new child while its children are listed
            for child in _children(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + _WAIT_S
        while self.answers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} (port {self.port}) still answers after SIGKILL")
            time.sleep(0.02)
        self.role = "lost"

    def stop(self) -> None:
        """Stop it at once if it runs (pg_ctl stop -m immediate, else SIGKILL)."""
        if self.postmaster() is None or not self.answers():
            return
        try:
            _run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        except (RuntimeError, subprocess.TimeoutExpired):
            self.kill()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@dataclass(frozen=True)
class Failover:
    """One failover's steps, in seconds: the primary killed, the standby promoted (``pg_ctl
    promote -w``), the lost node streaming again as the standby."""

    killed_at: float  # time.time() of the kill
    lost: str  # the node lost
    promoted: str  # the node promoted
    kill_s: float
    promote_s: float
    rebuild_s: float


@dataclass
class PgPair:
    """A primary and a streaming standby (see the module's docstring)."""

    synchronous: bool = True
    commit_level: str = "on"
    strict: bool = False
    database: str = "drill"
    root: Path | None = None
    nodes: list[PgNode] = field(default_factory=list)
    _own_root: bool = False
    _held: int | None = None

    def __post_init__(self) -> None:
        if self.commit_level not in ("off", "local", "remote_write", "on", "remote_apply"):
            raise ValueError(f"synchronous_commit {self.commit_level!r} is not a level")
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="showdown-pgpair-"))
            self._own_root = True
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        _own(self.root)
        self.nodes = [PgNode(name, _free_port(), self.root / name, self.root / f"{name}.log")
                      for name in ("pg-a", "pg-b")]

    # ---- who is what ----------------------------------------------------------------------

    @property
    def primary(self) -> PgNode:
        """The node that is primary now."""
        return next(n for n in self.nodes if n.role == "primary")

    @property
    def standby(self) -> PgNode | None:
        """The node that is the standby now (None while the lost one is not rebuilt)."""
        return next((n for n in self.nodes if n.role == "standby"), None)

    def url(self, driver: str = "postgresql+psycopg") -> str:
        """The multi-host URL naming both nodes, asking for the writable one."""
        hosts = "&".join(f"host=127.0.0.1:{n.port}" for n in self.nodes)
        return (f"{driver}://postgres@/{self.database}?{hosts}"
                "&target_session_attrs=read-write&connect_timeout=5")

    # ---- the steps --------------------------------------------------------------------------

    def start(self) -> None:
        """initdb and start the first node as the primary, make the database, then the
        second node as its standby, streaming (synchronous if asked)."""
        first, second = self.nodes
        first.data.mkdir(mode=0o700)
        _own(first.data)
        _run("initdb", "-D", str(first.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--locale=C", "--no-sync")
        with (first.data / "postgresql.conf").open("a") as conf:
            conf.write(self._settings())
        for path in (first.log, second.log):
            path.touch()
            _own(path)
        first.start()
        first.role = "primary"
        first.sql(f"CREATE DATABASE {self.database}")
        self._make_standby(second, first)

    def kill_primary(self) -> PgNode:
        """SIGKILL the primary (postmaster and backends); the node now lost."""
        node = self.primary
        node.kill()
        return node

    def demote_primary(self) -> PgNode:
        """Make the primary read-only for every session, its connections kept (a switchover's
        demoted primary, until ``rebuild()``); the node now counted lost."""
        node = self.primary
        node.sql("ALTER SYSTEM SET default_transaction_read_only = on")
        node.sql("SELECT pg_reload_conf()")
        node.role = "lost"
        return node

    def hold_standby(self) -> int:
        """Stop the primary's WAL sender (SIGSTOP) until after ``promote()``: the primary's
        commits from now on never reach the standby (asynchronous only); its pid."""
        if self.synchronous:
            raise RuntimeError("a synchronous standby cannot be held: commits would wait")
        rows = self.primary.sql("SELECT pid FROM pg_stat_replication")
        if not rows:
            raise RuntimeError(f"{self.primary.name} has no WAL sender")
        self._held = int(rows[0][0])
        os.kill(self._held, signal.SIGSTOP)
        return self._held

    def promote(self) -> PgNode:
        """Promote the standby (``pg_ctl promote -w``); without ``strict``, a synchronous
        pair's new primary stops waiting for a standby it does not have yet."""
        node = self.standby
        if node is None:
            raise RuntimeError("no standby to promote")
        _run("pg_ctl", "-D", str(node.data), "-w", "-t", str(int(_WAIT_S)), "promote")
        if self._held is not None:  # too late now to send anything to the promoted node
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._held, signal.SIGCONT)
            self._held = None
        node.role = "primary"
        if self.synchronous:
            self._sync_names(node, self._standby_names() if self.strict else "")
        return node

    def rebuild(self) -> PgNode:
        """Make the lost node the new primary's standby (a fresh pg_basebackup), started and
        streaming; a synchronous pair waits for it again."""
        node = next((n for n in self.nodes if n.role == "lost"), None)
        if node is None:
            raise RuntimeError("no lost node to rebuild")
        node.stop()
        shutil.rmtree(node.data, ignore_errors=True)
        self._make_standby(node, self.primary)
        return node

    def failover(self) -> Failover:
        """Kill the primary, promote the standby, rebuild the lost node: each step timed."""
        killed_at = time.time()
        t0 = time.monotonic()
        lost = self.kill_primary()
        t1 = time.monotonic()
        promoted = self.promote()
        t2 = time.monotonic()
        self.rebuild()
        t3 = time.monotonic()
        return Failover(killed_at=killed_at, lost=lost.name, promoted=promoted.name,
                        kill_s=t1 - t0, promote_s=t2 - t1, rebuild_s=t3 - t2)

    def stop(self) -> None:
        """Stop both servers; remove the directory if this pair made it."""
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
        if self._own_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgPair:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # ---- helpers ----------------------------------------------------------------------------

    def _settings(self) -> str:
        return (
            "\n# showdown failover drill (tests/integration/pg_pair.py)\n"
            "listen_addresses = '127.0.0.1'\n"
            "unix_socket_directories = ''\n"
            "max_connections = 60\n"
            "shared_buffers = 32MB\n"
            "wal_level = replica\n"
            "max_wal_senders = 5\n"
            "wal_keep_size = 128MB\n"
            "hot_standby = on\n"
            "wal_receiver_status_interval = 1s\n"
            # After its primary died a standby retries the stream every this often; with
            # the default 5 s, one promotion per 20 waited about 5 s for it.
            "wal_retrieve_retry_interval = 1s\n"
            f"synchronous_commit = {self.commit_level}\n"
        )

    def _make_standby(self, node: PgNode, primary: PgNode) -> None:
        _run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
             "-D", str(node.data), "-R", "-X", "stream", "-c", "fast", "--no-sync")
        node.start()
        node.role = "standby"
        deadline = time.monotonic() + _WAIT_S
        while not primary.sql("SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'"
                              " AND application_name = %s", (node.name,)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node.name} never streamed from {primary.name}")
            time.sleep(0.05)
        if self.synchronous:
            self._sync_names(primary, self._standby_names())
            while not primary.sql("SELECT 1 FROM pg_stat_replication WHERE sync_state ="
                                  " 'sync' AND application_name = %s", (node.name,)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{node.name} never became synchronous")
                time.sleep(0.05)

    def _standby_names(self) -> str:
        return "FIRST 1 ({})".format(", ".join(f'"{n.name}"' for n in self.nodes))

    @staticmethod
    def _sync_names(node: PgNode, names: str) -> None:
        node.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
        node.sql("SELECT pg_reload_conf()")
