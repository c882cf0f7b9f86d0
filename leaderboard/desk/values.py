"""What desk actions return: commands for a table, seatings, places, draws, prizes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from game.messages.desk import TableCommand, command_body
from game.tournament.entries import Stage


@dataclass(frozen=True, slots=True, kw_only=True)
class DeskCommand:
    """A command for one table, recorded before it is sent; `seq` is its audit row id."""

    seq: int
    table: str
    command: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, *, seq: int, table: str, command: TableCommand) -> DeskCommand:
        """The recorded form of a typed command (`game.messages.desk`)."""
        return cls(seq=seq, table=table, command=command.NAME, args=command.args())

    def body(self, key_id: str) -> dict[str, Any]:
        """The envelope body: table, command, a command id unique per desk key, the args."""
        return command_body(table=self.table, name=self.command,
                            command_id=f"{key_id}-{self.seq}", args=self.args)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFault:
    """A table taken out of service mid-heat: what the desk did and what the table is sent."""

    table: str
    heat_id: str
    refunded: Mapping[str, int]  # qualifying entry -> the buy-in returned, cents
    released: tuple[str, ...]  # semi-final and Final places, free to be seated again
    commands: tuple[DeskCommand, ...]  # unseat each, then close_heat: applied if it returns


@dataclass(frozen=True, slots=True, kw_only=True)
class Seating:
    """An entry seated at a table and the `seat` command to send."""

    entry_id: str
    table: str
    seat: int
    heat_id: str
    player: str  # the patron who plays: the holder or a proxy
    command: DeskCommand
    entry_code: str | None = None  # the short code people see (D331)


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """A semi-final or Final place: its entry, where it came from, who holds and plays it."""

    entry_id: str
    stage: Stage
    won_by: str  # the entry of the previous stage that earned the place
    holder: str
    played_by: str | None
    position: int | None  # on the previous stage's board (None if that score was voided since)
    score_cents: int | None
    heat: int | None
    seat: int | None
    table: str | None
    status: str

    @property
    def player(self) -> str:
        """Who plays the place: the proxy if one is nominated, else the holder."""
        return self.played_by or self.holder


@dataclass(frozen=True, slots=True, kw_only=True)
class DrawOutcome:
    """The Final's seat draw: its stored row, the seats, and whether it was reused."""

    draw_id: int
    seats: Mapping[str, int]  # entry id -> seat
    random_hex: str
    reused: bool
    commitment: Commitment | None = None  # the seed's commitment (revision 0017)


@dataclass(frozen=True, slots=True, kw_only=True)
class Commitment:
    """A seat draw's seed committed before the draw: its SHA-256 (shown at once), the witness
    and the times; ``used_at`` once a draw revealed and used the seed."""

    commitment_id: int
    stage: str
    seed_sha256: str
    witness: str
    committed_by: str
    committed_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A stored draw recomputed from its stored inputs."""

    draw_id: int
    stored: tuple[tuple[str, int], ...]
    replayed: tuple[tuple[str, int], ...]
    bytes_used: int
    random_hex: str = ""
    drawn_by: str = ""
    drawn_at: datetime | None = None
    commitment: Commitment | None = None
    seed_matches_commitment: bool | None = None  # sha256(seed) == the committed digest

    @property
    def matches(self) -> bool:
        """Whether the recomputation gives the stored result."""
        return self.stored == self.replayed


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeView:
    """An awarded prize and its claim status at a given moment."""

    award_id: int
    kind: str
    place: int
    entry_id: str
    patron_id: str
    amount_cents: int
    awarded_at: datetime
    deadline: datetime
    claimed_at: datetime | None
    claimed_by: str | None
    status: str  # claimed | unclaimed | expired


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreRuling:
    """A supervisor's ruling on a score: `voided` (counts nothing) or `corrected`."""

    entry_id: str
    ruling: str
    stage: str
    table: str
    recorded_cents: int  # the table's figure, kept in the record
    counted_cents: int | None  # what the standings count now (None: voided)
    at: datetime
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DisputeView:
    """A participant's dispute of a score at the table, and its resolution if any."""

    dispute_id: int
    entry_id: str
    table: str | None  # None: recorded at the desk (leaderboard.desk.dispute_records)
    seq: int | None
    stage: str | None
    heat_id: str | None
    score_cents: int | None  # None: no score recorded when it was raised
    note: str
    at: datetime
    resolved_at: datetime | None
    resolved_by: str | None
    resolution: str | None

    @property
    def open(self) -> bool:
        """Whether a supervisor has yet to resolve it."""
        return self.resolved_at is None


@dataclass(frozen=True, slots=True, kw_only=True)
class PayoutCheckView:
    """A hand's payout as the chip readers checked it: verified, or overridden (with the
    spots that did not hold what they had to, who overrode and why)."""

    hand_id: str
    table: str
    seq: int
    heat_id: str | None
    outcome: str
    mismatches: tuple[Mapping[str, Any], ...]
    unverifiable: tuple[Mapping[str, Any], ...]
    by: str | None
    reason: str | None
    at: datetime
