"""A tournament's rows for bench/standings.py: N scored qualifying entries, fast.

Patrons (one for every three entries), entries spread over the qualifying days before the
bench's heat day (3 to 19 July) and 20 tables, and their scores: multiples of R25 up to
R8,000, 97% acknowledged, 1% voided by a supervisor, 5% ended early, a few corrected; plus
`live` entries seated at table t01 without a score yet, for the scores the bench then sends.
Inserted in bulk through the models' tables (setup only: what the bench measures is the
service's own path).
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from leaderboard.models import Entry, Patron, Score

__all__ = ["FIRST_DAY", "LIVE_DAY", "SAST", "live_id", "populate"]

SAST = ZoneInfo("Africa/Johannesburg")
FIRST_DAY = date(2026, 7, 3)
LIVE_DAY = date(2026, 7, 20)  # the service's clock runs on this heat day
_CHUNK = 5_000


def live_id(n: int) -> str:
    """The id of the n-th entry waiting for its score (table t01)."""
    return f"E-L{n:06d}"


def _local(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=SAST).astimezone(UTC)


def _insert(engine: sa.Engine, model: type, rows: list[dict[str, object]]) -> None:
    with engine.begin() as connection:
        for start in range(0, len(rows), _CHUNK):
            connection.execute(sa.insert(model), rows[start:start + _CHUNK])


def populate(engine: sa.Engine, entries: int, live: int, seed: int = 7) -> None:
    """Write `entries` scored entries and `live` entries waiting at t01 (see the module)."""
    rng = random.Random(seed)
    patrons = max(1, entries // 3) + 1
    _insert(engine, Patron, [
        {"patron_id": f"P-{n:06d}", "name": f"Patron{n} Surname{n % 997}",
         "id_kind": "id_document", "id_number": f"ID{n:010d}", "birth_date": date(1980, 1, 1),
         "created_at": _local(FIRST_DAY, 12)} for n in range(patrons)])
    rows: list[dict[str, object]] = []
    scores: list[dict[str, object]] = []
    for n in range(entries):
        day = FIRST_DAY + timedelta(days=n % (LIVE_DAY - FIRST_DAY).days)
        table = f"t{n % 20 + 2:02d}"
        entry_id = f"E-{n:07d}"
        rows.append({"entry_id": entry_id, "patron_id": f"P-{n % patrons:06d}",
                     "stage": "qualifying", "heat_id": f"{table}-{day:%m%d}", "heat_day": day,
                     "table_id": table, "seat": n % 6 + 1, "buy_in_cents": 10_000,
                     "bought_at": _local(day, 13), "status": "seated", "payment": "cash"})
        recorded = _local(day, 14) + timedelta(minutes=n % 540)
        early = rng.random() < 0.05
        acked = rng.random() < 0.97
        voided = rng.random() < 0.01
        corrected = rng.random() < 0.002
        scores.append({
            "entry_id": entry_id, "table_id": table, "seq": n + 1, "stage": "qualifying",
            "heat_id": f"{table}-{day:%m%d}", "score_cents": rng.randrange(0, 320) * 2_500,
            "hands": rng.randrange(3, 10) if early else 10,
            "status": "ended_early" if early else "finished", "recorded_at": recorded,
            "acknowledged_at": recorded + timedelta(seconds=40) if acked else None,
            "ack_method": "card_tap" if acked else None,
            "voided_at": recorded + timedelta(minutes=5) if voided else None,
            "void_reason": "supervisor: misdeal" if voided else None,
            "corrected_cents": rng.randrange(0, 320) * 2_500 if corrected else None,
            "corrected_at": recorded + timedelta(minutes=6) if corrected else None,
            "correction_reason": "supervisor: recount" if corrected else None})
    for n in range(live):
        rows.append({"entry_id": live_id(n), "patron_id": f"P-{n % patrons:06d}",
                     "stage": "qualifying", "heat_id": f"t01-{LIVE_DAY:%m%d}",
                     "heat_day": LIVE_DAY, "table_id": "t01", "seat": n % 6 + 1,
                     "buy_in_cents": 10_000, "bought_at": _local(LIVE_DAY, 13),
                     "status": "seated", "payment": "cash"})
    _insert(engine, Entry, rows)
    _insert(engine, Score, scores)
