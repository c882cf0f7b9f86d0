"""Hand-made tournaments for the recomputation's unit tests: entries sold at the desk, hands
played at tables, scores recorded and acknowledged, each message one second after the last."""

from __future__ import annotations

import tomllib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.e2e.records import (
    Acknowledgement,
    EntryFact,
    Evidence,
    HandSeat,
    RecordedHand,
    ScoreMessage,
    Unseating,
)
from tests.e2e.rules import Rules, rules_from_mapping

__all__ = ["SHIPPED", "HandMade", "shipped_rules"]

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "tournament.toml"
START = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)  # Friday 3 July 2026, 13:00 in Johannesburg


def shipped_rules(changes: Mapping[str, Any] | None = None) -> Rules:
    """The shipped settings with ``{"section.key": value}`` changes."""
    with SHIPPED.open("rb") as handle:
        data = tomllib.load(handle)
    for path, value in (changes or {}).items():
        section, key = path.split(".")
        data[section][key] = value
    return rules_from_mapping(data)


class HandMade:
    """Builds an `Evidence`: ``sell`` entries, ``play`` their hands, ``record`` and
    ``acknowledge`` their scores."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.evidence = Evidence()
        self.now = START
        self._seq: dict[str, int] = defaultdict(int)
        self._hands = 0

    def tick(self, seconds: int = 1) -> datetime:
        """Move the clock on and return the new time."""
        self.now += timedelta(seconds=seconds)
        return self.now

    def _next(self, table: str) -> int:
        self._seq[table] += 1
        return self._seq[table]

    def sell(self, entry_id: str, patron_id: str, *, stage: str = "qualifying",
             day: date = date(2026, 7, 3), table: str | None = None, **facts: Any) -> None:
        """The desk sells an entry (or allocates a place) on heat day `day`."""
        buy_in = self.rules.buy_in_cents if stage == "qualifying" else 0
        self.evidence.entries[entry_id] = EntryFact(
            entry_id=entry_id, patron_id=patron_id, stage=stage, heat_day=day,
            buy_in_cents=facts.pop("buy_in_cents", buy_in), table=table, **facts)

    def hand(self, table: str, nets: Mapping[str, int], *, status: str = "settled",
             wagered: Mapping[str, int] | None = None,
             markers: Mapping[str, int] | None = None) -> RecordedHand:
        """One hand at `table`: each entry's net (a voided hand: nets 0)."""
        self._hands += 1
        seats = tuple(
            HandSeat(seat=i, entry_id=entry, net_cents=0 if status == "void" else net,
                     chips_wagered_cents=(wagered or {}).get(entry, 5000),
                     markers_used=(markers or {}).get(entry, 0))
            for i, (entry, net) in enumerate(nets.items(), 1))
        hand = RecordedHand(table=table, seq=self._next(table), hand_id=f"{table}-{self._hands}",
                            heat_id="h1", stage=None, status=status, at=self.tick(),
                            seats=seats)
        self.evidence.hands.append(hand)
        return hand

    def play(self, table: str, entry_id: str, nets: Sequence[int]) -> int:
        """The entry plays one hand per net; returns its chips after them."""
        for net in nets:
            self.hand(table, {entry_id: net})
        stage = self.evidence.entries[entry_id].stage
        return self.rules.stage(stage).starting_cents + sum(nets)

    def record(self, table: str, entry_id: str, cents: int, *, hands: int | None = None,
               status: str = "finished") -> ScoreMessage:
        """The table records the entry's score."""
        stage = self.evidence.entries[entry_id].stage
        message = ScoreMessage(
            table=table, seq=self._next(table), entry_id=entry_id, stage=stage, heat_id="h1",
            score_cents=cents, hands=hands if hands is not None else self.rules.stage(stage).hands,
            status=status, at=self.tick())
        self.evidence.scores.append(message)
        return message

    def acknowledge(self, table: str, entry_id: str, cents: int) -> Acknowledgement:
        """The participant taps their card for the score."""
        ack = Acknowledgement(table=table, seq=self._next(table), entry_id=entry_id,
                              score_cents=cents, method="card", at=self.tick())
        self.evidence.acknowledgements.append(ack)
        return ack

    def finish(self, table: str, entry_id: str, nets: Sequence[int], *,
               acknowledge: bool = True) -> int:
        """Play, record and (by default) acknowledge: the whole stage of one entry."""
        cents = self.play(table, entry_id, nets)
        self.record(table, entry_id, cents, hands=len(nets))
        if acknowledge:
            self.acknowledge(table, entry_id, cents)
        return cents

    def leave(self, table: str, entry_id: str, hands: int) -> None:
        """The entry leaves its seat after `hands` hands (withdrawn)."""
        self.evidence.unseatings.append(Unseating(table=table, seq=self._next(table),
                                                  entry_id=entry_id, hands_played=hands,
                                                  at=self.tick()))
