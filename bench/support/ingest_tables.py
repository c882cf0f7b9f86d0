"""The ingest benchmark's fake tables (pre-sealed heats of messages) and its databases."""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from game.poker.cards import DECK
from leaderboard.db import make_engine, upgrade
from leaderboard.models import TableRecord
from wire.envelope import seal
from wire.signing import Signer
from wire.topics import TableTopics

VENUE = "bench"
GOAL = 2_000  # messages per second (issue 6)
HANDS_PER_HEAT = 30
SEATS = 6
POSTGRES_URL = os.environ.get(
    "SHOWDOWN_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MQTT_HOST = "127.0.0.1"
MQTT_PORT = int(os.environ.get("SHOWDOWN_BENCH_MQTT_PORT", "1883"))
T0 = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)
GUARD_S = 300.0  # a scenario that has not finished by then is reported incomplete



# --- messages ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FakeTable:
    """One table's key and its pre-sealed messages, in seq order: (topic, payload)."""

    table: str
    key: Signer
    messages: tuple[tuple[str, bytes], ...]
    scores: int


def _hand_body(rng: random.Random, table: str, hand_id: str, entries: Sequence[str],
               at: str) -> dict[str, Any]:
    """A hand.settled body shaped like game.hand.record.hand_record (about 3 KB)."""
    cards = [str(c) for c in rng.sample(DECK, 2 * SEATS + 2 + 5 + 3)]
    seats = []
    for seat, entry in enumerate(entries, 1):
        hole = cards[2 * seat - 2: 2 * seat]
        wagers = {"ante": 500, "blind": 500, "trips": 500, "pocket_bonus": 200}
        seats.append({"seat": seat, "entry_id": entry, "hole": hole, "wagers": wagers,
                      "decision": {"play": 3, "street": "preflop", "amount": 1500}})
    dealer, board = cards[2 * SEATS: 2 * SEATS + 2], cards[2 * SEATS + 2: 2 * SEATS + 7]
    settlement = [{"seat": s["seat"], "hand": "Two pair, kings and fours", "category": "two_pair",
                   "outcome": rng.choice(["win", "lose", "push"]), "net": rng.randrange(-3000,
                                                                                        3000),
                   "markers_used": [],
                   "wagers": {w: {"result": "win", "stake": 500, "net": 500, "reason": "beats",
                                  "line": None, "marker": False}
                              for w in ("ante", "blind", "trips", "pocket_bonus")}}
                  for s in seats]
    return {
        "v": 1, "table": table, "hand_id": hand_id, "status": "settled", "heat_id": "heat",
        "stage": "qualifying", "opened_at": at, "settled_at": at,
        "deal": {"seats": list(range(1, SEATS + 1))},
        "reads": [{"card": c, "source": "shoe", "at": at} for c in cards],
        "cards": [{"target": f"seat{i % SEATS + 1}", "card": c} for i, c in enumerate(cards)],
        "dealer": dealer, "board": board, "burns": cards[-3:], "seats": seats,
        "corrections": [], "alerts": [], "resolutions": [],
        "nets": {str(s["seat"]): s["net"] for s in settlement},
        "settlement": {"dealer": {"hand": "Pair of nines", "opens": True}, "seats": settlement},
    }


def build_tables(count: int, heats: int, seed: int, root: str) -> list[FakeTable]:
    """Seal every message of ``count`` tables playing ``heats`` heats each."""
    rng = random.Random(seed)
    tables = []
    for number in range(1, count + 1):
        table = f"t{number:02d}"
        key = Signer.from_seed(table, rng.randbytes(32))
        topics = TableTopics(VENUE, table, root)
        out: list[tuple[str, bytes]] = []
        scores = 0

        def add(kind: str, body: dict[str, Any], *, table: str = table, key: Signer = key,
                topics: TableTopics = topics, out: list[tuple[str, bytes]] = out) -> None:
            seq = len(out) + 1
            wall = T0 + timedelta(seconds=seq)
            envelope = seal(venue=VENUE, table=table, seq=seq, wall=wall, type=kind, body=body,
                            boot="bench", mono=seq * 1_000_000, signer=key)
            topic = topics.scores if kind.startswith("score.") else topics.events
            out.append((topic, envelope.encode()))

        for heat in range(1, heats + 1):
            at = (T0 + timedelta(hours=heat)).isoformat().replace("+00:00", "Z")
            heat_id = f"{table}-h{heat}"
            entries = [f"{table}-{heat}-{seat}" for seat in range(1, SEATS + 1)]
            add("heat.opened", {"heat_id": heat_id, "stage": "qualifying", "at": at})
            for seat, entry in enumerate(entries, 1):
                add("entry.seated", {"entry_id": entry, "seat": seat, "heat_id": heat_id,
                                     "at": at})
            for hand in range(1, HANDS_PER_HEAT + 1):
                hand_id = f"{table}-{(heat - 1) * HANDS_PER_HEAT + hand:06d}"
                add("hand.settled", _hand_body(rng, table, hand_id, entries, at))
            for seat, entry in enumerate(entries, 1):
                score = rng.randrange(0, 60_000)
                add("score.recorded", {
                    "entry_id": entry, "stage": "qualifying", "heat_id": heat_id,
                    "table": table, "seat": seat, "score": score, "hands": HANDS_PER_HEAT,
                    "status": "finished", "markers_forfeited": 0, "last_hand_id": "x",
                    "at": at})
                add("score.acknowledged", {"entry_id": entry, "score": score,
                                           "stage": "qualifying", "method": "card_tap",
                                           "by": None, "at": at})
                scores += 1
            for seat, entry in enumerate(entries, 1):
                add("entry.unseated", {"entry_id": entry, "seat": seat,
                                       "hands_played": HANDS_PER_HEAT, "reason": "", "at": at})
            add("heat.closed", {"heat_id": heat_id, "at": at})
        tables.append(FakeTable(table=table, key=key, messages=tuple(out), scores=scores))
    return tables


# --- services ------------------------------------------------------------------------------------



class Database:
    """A fresh database per scenario: a SQLite file, or a PostgreSQL schema dropped after."""

    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self._schema: str | None = None
        if kind == "sqlite":
            self.url = f"sqlite:///{workdir / f'ingest-{secrets.token_hex(4)}.sqlite3'}"
        else:
            self._schema = f"bench_{secrets.token_hex(6)}"
            admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
            with admin.begin() as connection:
                connection.execute(sa.text(f'CREATE SCHEMA "{self._schema}"'))
            admin.dispose()
            self.url = sa.make_url(POSTGRES_URL).update_query_dict(
                {"options": f"-csearch_path={self._schema}"}).render_as_string(
                    hide_password=False)
        self.engine = make_engine(self.url)
        upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()
        if self._schema is not None:
            admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
            with admin.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{self._schema}" CASCADE'))
            admin.dispose()


def enroll(engine: sa.Engine, tables: Sequence[FakeTable]) -> None:
    with engine.begin() as connection:
        connection.execute(sa.insert(TableRecord), [
            {"table_id": t.table, "venue": VENUE, "public_key": t.key.public_key.base64,
             "enrolled_at": T0, "active": True} for t in tables])
