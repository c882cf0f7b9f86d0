"""The central lease: which of the central instances on one database is active, and the fence that
keeps every other one from writing (docs/operations/standby-central.md).

One row, ``central_lease`` (revision 0019): the holder, a fencing ``epoch`` and when the lease
expires, on the database's own clock (so two machines' clocks never compare). An instance takes
the lease when it is expired (`CentralLease.take`: the epoch goes up by one), renews it every
``renew_every_s`` while active (`renew`), and gives it up at a clean stop (`release`).

The fence (`install_fence`, D395): every transaction the instance commits on its engine
reads the lease's epoch in that same transaction just before COMMIT - on PostgreSQL ``FOR
SHARE``, so a takeover's UPDATE waits until that commit is done; on SQLite the transaction's
write lock keeps the takeover out - and is refused (`LeaseLost`, the transaction rolled back)
unless the epoch is still this instance's. So an instance that lost the lease (frozen past it,
cut off from the database) cannot mix one write with the new holder's; the first refusal also
marks the lease lost (``on_lost``), and the service steps down. Only the lease's own statements
are not fenced (they run with the execution option ``central_lease``).

Besides the database's word, the holder keeps a local deadline (`active`, D396): the
last renewal's start plus the period, on the monotonic clock. Past it the holder cannot prove
it still holds the lease (a freeze, a database that does not answer), so it stops taking
messages from the broker until a renewal succeeds (leaderboard.app): a frozen instance resumed
by SIGCONT never reconnects with the ingest's client id before it learns that another one took
over.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.exc import SQLAlchemyError

from leaderboard.audit_trail.chain import AuditValues, append_audit, lock_tip
from runtime.logs import get_logger

__all__ = ["EXEMPT", "CentralLease", "LeaseLost", "LeaseView", "install_fence",
           "instance_name", "read_lease"]

EXEMPT: Final = "central_lease"  # the execution option of the lease's own connections
_ROW: Final = 1
_log = get_logger("leaderboard.central_lease")


class LeaseLost(SQLAlchemyError):
    """A write by an instance that does not hold the central lease (standby, or it lost the
    lease): refused, its transaction rolled back. A database error to every caller that
    handles those (the audit heads, the desk API's answers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseView:
    """The lease as the database has it: holder ("" when never taken), epoch, and seconds
    until it expires (negative: expired since)."""

    holder: str
    epoch: int
    expires_in_s: float

    @property
    def expired(self) -> bool:
        """True when the lease may be taken."""
        return self.expires_in_s < 0

    def as_dict(self) -> dict[str, Any]:
        """What health answers and the status command show."""
        return {"holder": self.holder or None, "epoch": self.epoch,
                "expires_in_s": round(self.expires_in_s, 1)}


def instance_name(configured: str) -> str:
    """This process's holder id: the configured instance name (else the host name) and a
    random suffix, so two processes never share one (not even one restarted at once)."""
    return f"{configured or socket.gethostname()}/{uuid.uuid4().hex[:8]}"


def _now_sql(dialect: str) -> str:
    """The database's clock, seconds since 1970, as SQL."""
    if dialect == "postgresql":
        return "EXTRACT(EPOCH FROM clock_timestamp())::float8"
    return "((julianday('now') - 2440587.5) * 86400.0)"


def read_lease(conn: Connection) -> LeaseView:
    """The lease as the database has it now (a database where no instance ever ran: free,
    epoch 0)."""
    now = _now_sql(conn.dialect.name)
    row = conn.execute(text(f"SELECT holder, epoch, expires_at - {now}"  # noqa: S608
                            " FROM central_lease WHERE id = :id"), {"id": _ROW}).first()
    conn.rollback()
    if row is None:
        return LeaseView(holder="", epoch=0, expires_in_s=-1.0)
    return LeaseView(holder=str(row[0]), epoch=int(row[1]), expires_in_s=float(row[2]))


class CentralLease:
    """One instance's side of the lease on ``engine`` (see the module docstring)."""

    def __init__(self, engine: Engine, holder: str, *, lease_s: float,
                 on_lost: Callable[[str], None] | None = None) -> None:
        if lease_s <= 0:
            raise ValueError(f"lease_s must be positive, got {lease_s}")
        self.engine = engine
        self.holder = holder
        self.lease_s = lease_s
        self.renew_every_s = min(1.0, lease_s / 4)
        self.epoch: int | None = None  # ours while we hold it
        self.valid_until = 0.0  # time.monotonic(): the local deadline
        self.last_seen: LeaseView | None = None
        self.on_lost = on_lost
        self._now = _now_sql(engine.dialect.name)
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """True while we hold the lease and its local deadline has not passed."""
        return self.epoch is not None and time.monotonic() < self.valid_until

    def _connect(self) -> Connection:
        return self.engine.connect().execution_options(**{EXEMPT: True})

    def view(self) -> LeaseView:
        """The lease as the database has it now (kept as ``last_seen``)."""
        with self._connect() as conn:
            seen = read_lease(conn)
        self.last_seen = seen
        return seen

    def take(self) -> int | None:
        """Take the lease if it is expired: the new epoch; None while another holds it. A
        takeover is written to the audit chain (``central.lease_taken``) in the same
        transaction, so the chain says which instance was active from when (D420)."""
        started = time.monotonic()
        with self._connect() as conn, conn.begin():
            # The chain's tip first, then the lease row: the order every fenced writer takes
            # them (its tip during the transaction, the lease FOR SHARE at commit).
            lock_tip(conn)
            conn.execute(text(  # the row, the first time (never taken: free, epoch 0)
                "INSERT INTO central_lease (id, holder, epoch, expires_at, renewed_at, taken_at)"
                " VALUES (:id, '', 0, 0, 0, 0) ON CONFLICT (id) DO NOTHING"), {"id": _ROW})
            before = conn.execute(text("SELECT holder, epoch FROM central_lease WHERE id = :id"),
                                  {"id": _ROW}).one()
            taken = conn.execute(text(
                f"UPDATE central_lease SET holder = :h, epoch = epoch + 1,"  # noqa: S608
                f" expires_at = {self._now} + :s, renewed_at = {self._now},"
                f" taken_at = {self._now} WHERE id = :id AND expires_at < {self._now}"),
                {"h": self.holder, "s": self.lease_s, "id": _ROW}).rowcount
            if taken != 1:
                return None
            epoch = int(conn.execute(text("SELECT epoch FROM central_lease WHERE id = :id"),
                                     {"id": _ROW}).scalar_one())
            append_audit(conn, [AuditValues(
                at=datetime.now(UTC), actor=f"(central instance {self.holder})",
                action="central.lease_taken",
                detail={"instance": self.holder, "epoch": epoch,
                        "previous": str(before[0]) or None, "previous_epoch": int(before[1]),
                        "lease_s": self.lease_s})])
        with self._lock:
            self.epoch, self.valid_until = epoch, started + self.lease_s
        self.last_seen = LeaseView(holder=self.holder, epoch=epoch, expires_in_s=self.lease_s)
        return epoch

    def renew(self) -> bool:
        """Extend our lease by a period; False (and the lease marked lost) if another
        instance took it since."""
        epoch = self.epoch
        if epoch is None:
            return False
        started = time.monotonic()
        with self._connect() as conn, conn.begin():
            renewed = conn.execute(text(
                f"UPDATE central_lease SET expires_at = {self._now} + :s,"  # noqa: S608
                f" renewed_at = {self._now} WHERE id = :id AND holder = :h AND epoch = :e"),
                {"s": self.lease_s, "id": _ROW, "h": self.holder, "e": epoch}).rowcount
        if renewed != 1:
            self.lost(f"epoch {epoch} is no longer this instance's: another instance took"
                      " the lease")
            return False
        with self._lock:
            if self.epoch == epoch:
                self.valid_until = started + self.lease_s
        return True

    def release(self) -> None:
        """Give the lease up at once (a clean stop): the standby may take it now."""
        epoch = self.epoch
        if epoch is None:
            return
        with self._lock:
            self.epoch = None
        with self._connect() as conn, conn.begin():
            conn.execute(text("UPDATE central_lease SET expires_at = 0"
                              " WHERE id = :id AND holder = :h AND epoch = :e"),
                         {"id": _ROW, "h": self.holder, "e": epoch})

    def lost(self, why: str) -> None:
        """Mark the lease lost (no write of ours commits from now on) and tell ``on_lost``
        once."""
        with self._lock:
            had, self.epoch = self.epoch, None
        if had is not None:
            _log.error("central_lease_lost", instance=self.holder, epoch=had, reason=why)
            if self.on_lost is not None:
                self.on_lost(why)

    def check(self, conn: Connection) -> None:
        """The fence, in ``conn``'s transaction just before it commits: LeaseLost unless the
        lease's epoch is still ours (see the module docstring)."""
        epoch = self.epoch
        if epoch is None:
            raise LeaseLost(f"instance {self.holder} does not hold the central lease (it is"
                            " standby): the write is refused")
        dbapi = conn.connection.dbapi_connection
        if dbapi is None:
            raise LeaseLost("no database connection to check the central lease on")
        lock = " FOR SHARE" if conn.dialect.name == "postgresql" else ""
        cursor = dbapi.cursor()
        try:
            cursor.execute(f"SELECT epoch, holder FROM central_lease WHERE id = 1{lock}")  # noqa: S608
            row = cursor.fetchone()
        finally:
            cursor.close()
        if row is None or int(row[0]) != epoch:
            holder = "nobody" if row is None else f"{row[1]} (epoch {row[0]})"
            why = f"the central lease is now held by {holder}, not by epoch {epoch}"
            self.lost(why)
            raise LeaseLost(f"write refused: {why}")


def install_fence(engine: Engine, lease: CentralLease) -> None:
    """Fence every transaction committed on ``engine`` with ``lease.check`` (the lease's own
    connections, with the ``central_lease`` execution option, excepted)."""

    @event.listens_for(engine, "commit")
    def _fence(conn: Connection) -> None:
        if not conn.get_execution_options().get(EXEMPT):
            lease.check(conn)
