"""One table over many hands: which entry sits in which seat, the open hand, and the ledgers.

Pure, like the rest of `game/`: the daemon feeds it seat assignments and hand inputs and
journals what it returns. Entries join between any two hands; each hand's settlement moves
every seated entry's chips, and an entry that has played its stage's hands (or can no longer
cover the minimum) leaves its seat with its score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from game.errors import IllegalAction
from game.hand import Hand, Phase
from game.hand.deal import MAX_SEATS, DealSequence
from game.hand.events import SeatStart
from game.paytables.lines import Paytables
from game.tournament.entries import Entry, EntryStatus, StageRules

__all__ = ["EntryEnded", "TableSession"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryEnded:
    """An entry's stage is over at this table: its score and how it ended."""

    entry_id: str
    seat: int
    status: EntryStatus
    score_cents: int
    hands_played: int
    markers_forfeited: int
    hand_id: str


class TableSession:
    """Seats, entries and hands of one table in one stage."""

    def __init__(
        self, *, table_id: str, rules: StageRules, paytables: Paytables, deal: DealSequence
    ) -> None:
        self.table_id = table_id
        self.rules = rules
        self.paytables = paytables
        self.deal = deal
        self._seats: dict[int, Entry] = {}
        self._hand: Hand | None = None
        self._hands_opened = 0
        self._ended: list[EntryEnded] = []

    @property
    def seats(self) -> Mapping[int, Entry]:
        """The entries seated now, by seat number."""
        return dict(self._seats)

    @property
    def hand(self) -> Hand | None:
        """The hand in progress (not yet closed), if any."""
        return self._hand

    @property
    def ended(self) -> tuple[EntryEnded, ...]:
        """Every entry that has ended at this table, in order."""
        return tuple(self._ended)

    def verify_seat_entry(self, entry: Entry, seat: int) -> None:
        """Raise IllegalAction unless `entry` may take `seat` now (between hands, seat free)."""
        if self._hand is not None:
            raise IllegalAction("seats are assigned between hands; close the open hand first")
        if isinstance(seat, bool) or not isinstance(seat, int) or not 1 <= seat <= MAX_SEATS:
            raise IllegalAction(f"seat must be 1..{MAX_SEATS}, not {seat!r}")
        if seat in self._seats:
            raise IllegalAction(f"seat {seat} is taken by entry {self._seats[seat].entry_id}")
        if not entry.is_active:
            raise IllegalAction(f"entry {entry.entry_id} has ended; it cannot take a seat")
        if entry.rules != self.rules:
            raise IllegalAction(
                f"entry {entry.entry_id} plays the {entry.stage.value} stage; this table runs"
                f" {self.rules.stage.value} hands"
            )
        if any(e.entry_id == entry.entry_id for e in self._seats.values()):
            raise IllegalAction(f"entry {entry.entry_id} is already seated at this table")

    def seat_entry(self, entry: Entry, seat: int) -> None:
        """Seat an entry (it plays from the next hand on)."""
        self.verify_seat_entry(entry, seat)
        self._seats[seat] = entry

    def unseat(self, seat: int) -> Entry:
        """Take an entry out of its seat between hands (it keeps its chips and hands played)."""
        if self._hand is not None:
            raise IllegalAction("seats change between hands; close the open hand first")
        if seat not in self._seats:
            raise IllegalAction(f"seat {seat} is empty")
        return self._seats.pop(seat)

    def replace_entry(self, seat: int, entry: Entry) -> None:
        """Put a seated entry's ruled ledger in its place between hands (a supervisor's
        correction of a settled hand, game.table.corrections); the entry must be the same."""
        if self._hand is not None:
            raise IllegalAction("an entry's chips are corrected between hands")
        seated = self._seats.get(seat)
        if seated is None or seated.entry_id != entry.entry_id or not entry.is_active:
            raise IllegalAction(f"seat {seat} does not hold active entry {entry.entry_id}")
        self._seats[seat] = entry

    def open_hand(self, hand_id: str, *, at: datetime | None = None) -> Hand:
        """Open the next hand for every seated entry."""
        if self._hand is not None:
            raise IllegalAction(f"hand {self._hand.hand_id} is still open")
        if not self._seats:
            raise IllegalAction("no entry is seated")
        starts = [
            SeatStart(seat=s, balance_cents=e.balance_cents, markers_left=e.markers_left)
            for s, e in sorted(self._seats.items())
        ]
        self._hand = Hand(
            hand_id=hand_id, seats=starts, rules=self.rules.house, paytables=self.paytables,
            deal=self.deal, at=at,
        )
        self._hands_opened += 1
        return self._hand

    def close_hand(self) -> tuple[EntryEnded, ...]:
        """Apply the settled hand to the entries (a void counts for nobody); free ended seats."""
        hand = self._hand
        if hand is None:
            raise IllegalAction("no hand is open")
        if hand.phase not in (Phase.SETTLED, Phase.VOID):
            raise IllegalAction(f"hand {hand.hand_id} is {hand.phase.value}, not settled or void")
        ended: list[EntryEnded] = []
        settlement = hand.settlement
        if settlement is not None:
            for seat_result in settlement.seats:
                entry = self._seats[seat_result.seat].apply(seat_result)
                self._seats[seat_result.seat] = entry
                if not entry.is_active:
                    ended.append(EntryEnded(
                        entry_id=entry.entry_id, seat=seat_result.seat, status=entry.status,
                        score_cents=entry.score_cents or 0, hands_played=entry.hands_played,
                        markers_forfeited=entry.markers_forfeited, hand_id=hand.hand_id,
                    ))
                    del self._seats[seat_result.seat]
        self._hand = None
        self._ended.extend(ended)
        return tuple(ended)
