"""The demo floor's plan and report (`showdown demo`, floor.demo): what
it runs (tables, the qualifying campaign, the rules), what happened (every stage, prize and
fault), and the central service's config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from simulators.decks import DeckMode

__all__ = ["SERVICE_TOML", "FloorPlan", "FloorReport", "PlaceLine", "PrizeLine"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorPlan:
    """What the floor runs: where its files go, the tables, the qualifying campaign (heat
    days, heats a table plays each day, players a heat), the pace, and the rules."""

    directory: Path
    tables: int = 3
    days: int = 2  # simulated qualifying heat days (they straddle a prize week's start)
    heats_per_day: int = 1  # heats each table plays each heat day
    players: int = 3  # per qualifying heat
    seed: int = 2026
    hand_pause: float = 0.3  # seconds between hands, so people can watch
    stage_pause: float = 1.0  # seconds between the stages
    http_host: str = "127.0.0.1"
    http_port: int = 8080  # taken: any free port
    broker: str | None = None  # "host:port"; None = an embedded broker on a free port
    database: str | None = None  # URL; None = SQLite in `directory`
    venue: str = "demo"
    withdrawal: bool = True  # one patron leaves mid-heat: the first table's last heat
    overpay_hand: int | None = None  # the first table's dealer overpays in this hand (heat 1)
    deck_mode: DeckMode = "shuffled"  # the virtual dealers' decks (simulators.decks)
    rules: Mapping[str, object] = field(default_factory=dict)  # "section.key" -> value
    whole: bool = True  # semi-finals, the Final, prizes and claims after qualifying
    unclaimed: int = 1  # prizes nobody comes to claim (shown open until their deadline)
    progress: bool | None = None  # rich bars; None: when stdout is a terminal
    tournament_file: Path | None = None  # the settings the demo's are made from; None: default
    paytables_file: Path | None = None  # the tables' paytables; None: the default ones

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 20:
            raise ValueError(f"tables must be 1..20, got {self.tables}")
        if not 1 <= self.players <= 6:
            raise ValueError(f"players must be 1..6, got {self.players}")
        if not 1 <= self.days <= 28:
            raise ValueError(f"days must be 1..28, got {self.days}")
        if not 0 <= self.heats_per_day <= 10:
            raise ValueError(f"heats a day must be 0..10 (a heat day is 11 hours), got"
                             f" {self.heats_per_day}")
        if self.hand_pause < 0 or self.stage_pause < 0:
            raise ValueError("pauses must be 0 seconds or more")
        if self.unclaimed < 0:
            raise ValueError(f"unclaimed prizes must be 0 or more, got {self.unclaimed}")

    @property
    def heats(self) -> int:
        """Qualifying heats each table plays in the whole campaign."""
        return self.days * self.heats_per_day


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaceLine:
    """A semi-final or Final place as it was played: who, where, the score, the prize."""

    stage: str
    position: int | None  # its rank in that stage's standings (None: no counted score)
    entry_id: str
    holder: str  # the patron who won the place (and any prize)
    played_by: str  # the patron who played it (the holder, or a proxy)
    heat: str
    seat: int
    score_cents: int | None
    prize_cents: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PrizeLine:
    """One prize awarded: what, to whom, how much, and whether it was claimed."""

    award_id: int
    kind: str  # weekly, top_score, final
    place: int  # the week for a weekly prize, else the position
    entry_id: str
    patron_id: str
    winner: str  # the patron's name
    amount_cents: int
    status: str  # claimed, unclaimed, expired, withheld
    deadline: datetime  # aware UTC
    claimed_at: datetime | None = None


@dataclass(slots=True)
class FloorReport:
    """What happened: every stage, the scores, places and prizes the central database holds,
    the faults injected, the problems found, and where the run's files are."""

    url: str = ""
    heats_played: int = 0  # qualifying heats
    entries_seated: int = 0  # qualifying entries
    scores: dict[str, int] = field(default_factory=dict)  # qualifying entry -> score, centrally
    withdrawn: dict[str, int] = field(default_factory=dict)  # entry -> hands played, centrally
    refused: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    payouts_verified: int = 0  # hands whose payout the chip readers verified
    overpays: int = 0  # faults injected: one chip too many paid
    overrides: int = 0  # payouts a supervisor overrode
    hands_refused: int = 0  # next hands the tables refused while a payout was wrong
    deck_holds: int = 0  # suspect decks the tables held and a supervisor cleared
    chips_reconciled: int = 0  # entries whose chips were returned to their table's float
    chips_missing: int = 0  # chips not returned (rule 19)
    seed: int = 0
    stages: list[str] = field(default_factory=list)  # stages completed, in order
    calendar: list[tuple[str, datetime]] = field(default_factory=list)  # (what, venue time)
    hands_played: int = 0  # hands dealt at every table, every stage
    semi_places: list[PlaceLine] = field(default_factory=list)  # by semi-final position
    final_places: list[PlaceLine] = field(default_factory=list)  # by final position
    prizes: list[PrizeLine] = field(default_factory=list)
    pools: dict[str, int] = field(default_factory=dict)  # cents: buy_ins, final_pool, ...
    remainders: dict[str, int] = field(default_factory=dict)  # prize book -> cents kept back
    proxies: dict[str, str] = field(default_factory=dict)  # place -> the proxy playing it
    names: dict[str, str] = field(default_factory=dict)  # patron id -> name
    draw: dict[str, object] = field(default_factory=dict)  # the Final's seat draw
    database: str = ""  # the central database's URL
    tournament: Path | None = None  # the settings file in force
    journals: dict[str, Path] = field(default_factory=dict)  # table -> its journal


SERVICE_TOML = """\
# The central leaderboard service of the showdown demo floor (written by `showdown demo`).
[service]
venue = "{venue}"
database = "{database}"
tournament = "{tournament}"
debounce_seconds = 0.2
[mqtt]
broker = "{broker}"
[keys]
signing_key = "leaderboard.key"
[keys.tables]
{tables}
[http]
host = "{host}"
port = {port}
desk_api = true
[page]
rows = 12
names = "first_name_initial"
[log]
format = "console"
level = "warning"
"""
