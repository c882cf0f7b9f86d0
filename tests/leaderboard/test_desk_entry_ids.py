"""A seeded simulation names its entries' ids at the buy-in (leaderboard.desk.buy_entry)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from leaderboard import desk
from tests.leaderboard.desk_helpers import FakeClock, register, settings


def test_a_buy_in_takes_the_id_it_is_given_once(session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    entry = desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment="cash", entry_id="E-00000000000000a1")
    assert entry.entry_id == "E-00000000000000a1"
    with pytest.raises(desk.Conflict, match="entry E-00000000000000a1 exists already"):
        desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                       payment="cash", entry_id="E-00000000000000a1")
    for bad in ("S-00000000000000a1", "E-00a1", "E-00000000000000A1", "E-00000000000000a1x"):
        with pytest.raises(desk.DeskError, match="must be 'E-' and 16 hex digits"):
            desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment="cash", entry_id=bad)
    other = desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment="cash")
    assert other.entry_id != entry.entry_id
    assert other.entry_id.startswith("E-") and len(other.entry_id) == 18
