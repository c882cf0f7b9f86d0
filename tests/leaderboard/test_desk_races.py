"""Two desks acting at the same moment: the desk lock (D57) lets one act, the other is told why.

Each race holds the first desk between its check and its write (a barrier after the check,
through pytest-mock: an interleaving that cannot be produced on demand otherwise) until the
second desk has had every chance to run its own check. Without the lock both checks pass and
both write; with it the second desk waits for the first and then sees what it did.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from pytest_mock import MockerFixture
from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import Conflict
from leaderboard.desk import heats as desk_heats
from leaderboard.desk import lock as desk_lock
from leaderboard.desk import seating as desk_seating
from leaderboard.models import AuditEntry, Entry
from tests.leaderboard.desk_helpers import FakeClock, local, register, settings

HEAT_TIME = local(2026, 7, 3, 14, 0)
HOLD_S = 1.0  # how long the first desk waits, after its check, for the second desk's check


def held_after(mocker: MockerFixture, where: ModuleType, name: str) -> None:
    """Make <where>.<name> (a check's read, looked up in desk module `where`) wait for a
    second caller, at most HOLD_S."""
    original = getattr(where, name)
    barrier = threading.Barrier(2, timeout=HOLD_S)

    def held(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):  # the other desk waits
            barrier.wait()                                      # for the lock
        return result

    mocker.patch.object(where, name, side_effect=held)


def race(engine: Engine, *actions: Callable[[Session], object]) -> list[object]:
    """Run each action in its own thread and session at once; their results or errors."""
    results: list[object] = [None] * len(actions)

    def run(index: int) -> None:
        with Session(engine) as session:
            try:
                results[index] = actions[index](session)
            except Exception as exc:  # what the desk would show
                results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_two_desks_opening_a_heat_at_one_table(engine: Engine, mocker: MockerFixture) -> None:
    clock = FakeClock(HEAT_TIME)
    held_after(mocker, desk_heats, "open_heats_by_table")
    results = race(engine, *[
        lambda s, who=who: desk.open_heat(s, settings(), clock, actor=who, table="t01",
                                          stage="qualifying")
        for who in ("desk-1", "desk-2")])
    opened = [r for r in results if isinstance(r, desk.DeskCommand)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(opened) == 1 and len(refused) == 1, results
    assert "still open" in str(refused[0])
    with Session(engine) as s:
        assert s.scalars(select(AuditEntry.action)).all() == ["heat.opened"]


def test_two_desks_seating_two_entries_on_one_seat(engine: Engine,
                                                   mocker: MockerFixture) -> None:
    clock = FakeClock(HEAT_TIME)
    with Session(engine) as s:
        a, b = register(s, clock, "8001015009087"), register(s, clock, "7001015009087")
        e1 = desk.buy_entry(s, settings(), clock, actor="desk-1", patron_id=a,
                            payment="cash").entry_id
        e2 = desk.buy_entry(s, settings(), clock, actor="desk-1", patron_id=b,
                            payment="cash").entry_id
        desk.open_heat(s, settings(), clock, actor="desk-1", table="t01", stage="qualifying")
    held_after(mocker, desk_seating, "occupied_entries")
    results = race(engine, *[
        lambda s, entry=entry: desk.seat_entry(s, settings(), clock, actor="desk-1",
                                               entry_id=entry, table="t01", seat=4)
        for entry in (e1, e2)])
    seated = [r for r in results if isinstance(r, desk.Seating)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(seated) == 1 and len(refused) == 1, results
    assert "seat 4 at table t01 is taken" in str(refused[0])
    with Session(engine) as s:
        statuses = {r.entry_id: r.status for r in s.execute(select(Entry.entry_id, Entry.status))}
    assert sorted(statuses.values()) == ["registered", "seated"]


def test_a_desk_lock_held_too_long_is_an_error_not_a_hang(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(desk_lock, "WAIT_MS", 200)
    clock = FakeClock(HEAT_TIME)
    with Session(engine) as holder, Session(engine) as waiter:
        desk_lock.hold_desk_lock(holder)  # a desk action that does not end
        if engine.dialect.name == "sqlite":
            waiter.connection().exec_driver_sql("PRAGMA busy_timeout = 200")
        started = time.monotonic()
        with pytest.raises(OperationalError):
            desk.open_heat(waiter, settings(), clock, actor="desk-2", table="t01",
                           stage="qualifying")
        waited = time.monotonic() - started
        waiter.rollback()
        holder.rollback()  # the first action ends: the lock is free again
    assert 0.15 < waited < 5
    with Session(engine) as s:
        opened = desk.open_heat(s, settings(), clock, actor="desk-2", table="t01",
                                stage="qualifying")
    assert opened.command == "open_heat"
