"""A table's chip counts and deck steps, as it reports them: ``chips.counted`` -> a
ChipCountRecord row, ``decks.event`` -> a DeckEventRecord row. One row per message, keyed by
(table, seq); it touches no other row, so the order messages arrive in does not matter and
``bulk`` applies them all at once (as `leaderboard.projections.chips` does)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from game.messages.chips import read_time
from leaderboard.projections.results import Projected
from leaderboard.projections.sql import CHIP_COUNTS, DECK_EVENTS, insert_new, wall_of
from wire.envelope import Envelope
from wire.messages import ChipsCounted, DecksEvent

__all__ = ["count_values", "deck_values", "tally_rows"]

_KEY: Final = ("table_id", "seq")
_COUNT_JSON: Final = ("counted", "expected")  # given as JSON text
_DECK_JSON: Final = ("seals", "problems")


def _text(value: object) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def count_values(envelope: Envelope, message: ChipsCounted) -> dict[str, Any]:
    """The ChipCountRecord row of a ``chips.counted`` message (counts as JSON text)."""
    body = message.encode()
    return {"table_id": envelope.table, "seq": envelope.seq, "heat_id": message.heat_id,
            "stage": message.stage, "counted": _text(body["counted"]),
            "expected": _text(body["expected"]), "total_cents": message.total_cents,
            "expected_cents": message.expected_cents,
            "difference_cents": message.difference_cents,
            "tolerance_cents": message.tolerance_cents,
            "over_tolerance": message.over_tolerance, "dealer_id": message.dealer_id,
            "supervisor_id": message.supervisor_id,
            "counted_at": read_time(message.counted_at),
            "confirmed_at": read_time(message.confirmed_at), "at": wall_of(envelope)}


def deck_values(envelope: Envelope, message: DecksEvent) -> dict[str, Any]:
    """The DeckEventRecord row of a ``decks.event`` message (lists as JSON text)."""
    return {"table_id": envelope.table, "seq": envelope.seq, "day": message.day,
            "kind": message.kind, "decks": message.decks, "by": message.by,
            "witness": message.witness, "seals": _text(list(message.seals)),
            "lot": message.lot, "source": message.source, "note": message.note,
            "sealed": message.sealed, "in_play": message.in_play,
            "awaiting": message.awaiting, "problems": _text(list(message.problems)),
            "at": wall_of(envelope)}


def tally_rows(connection: Connection,
               chosen: Sequence[tuple[int, Envelope, ChipsCounted | DecksEvent]]
               ) -> dict[int, Projected]:
    """Insert the rows of these messages (by their index in the caller's list); returns the
    projection of each one inserted (a message whose row is stored already changes nothing)."""
    done: dict[int, Projected] = {}
    counts = [(i, e, m) for i, e, m in chosen if isinstance(m, ChipsCounted)]
    decks = [(i, e, m) for i, e, m in chosen if isinstance(m, DecksEvent)]
    if counts:
        inserted = insert_new(connection, CHIP_COUNTS, [count_values(e, m) for _, e, m in counts],
                              key=_KEY, json_text=_COUNT_JSON)
        done.update({i: Projected(changes=(e.type,)) for i, e, _ in counts
                     if (e.table, e.seq) in inserted})
    if decks:
        inserted = insert_new(connection, DECK_EVENTS, [deck_values(e, m) for _, e, m in decks],
                              key=_KEY, json_text=_DECK_JSON)
        done.update({i: Projected(changes=(e.type,)) for i, e, _ in decks
                     if (e.table, e.seq) in inserted})
    return done
