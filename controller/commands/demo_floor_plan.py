"""The demo floor's plan and report (`showdown demo`, controller.commands.demo_floor): what
it runs, what happened, the demo's tournament calendar and the central service's config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

from runtime.settings_files import default_tournament_path
from simulators.decks import DeckMode

__all__ = ["SERVICE_TOML", "FloorPlan", "FloorReport", "demo_tournament"]

_DEMO_HEAT_OPENED_AGO: Final = timedelta(hours=2)


def _shifted(now: datetime) -> dict[tuple[str, str], str]:
    # Today's heat opened 2 hours ago and lasts a day less a second, so that a demo never
    # runs into a heat's last buy-in or close (at 23:59 the old 00:00 heats refused buy-ins).
    opened = (now - _DEMO_HEAT_OPENED_AGO).replace(second=0, microsecond=0)
    heat_day = opened.date()
    first, last = heat_day - timedelta(days=6), heat_day + timedelta(days=21)
    finals = last + timedelta(days=2)
    return {
        ("venue", "name"): '"Showdown demo floor (simulated tables)"',
        ("qualifying", "first_day"): first.isoformat(),
        ("qualifying", "last_day"): last.isoformat(),
        ("qualifying", "ends"): last.isoformat(),
        ("qualifying", "heat_opens"): f"{opened:%H:%M:00}",
        ("qualifying", "heat_closes"): f"{opened - timedelta(seconds=1):%H:%M:%S}",
        ("qualifying", "last_buy_in"): f"{opened - timedelta(minutes=1):%H:%M:00}",
        ("semi_final", "starts"): f"{finals.isoformat()}T16:00:00",
        ("final", "starts"): f"{finals.isoformat()}T17:00:00",
    }


def demo_tournament(template: str, now: datetime) -> str:
    """The tournament settings `template` with its calendar moved around `now` (venue time):
    today's heat opened 2 hours ago and lasts a day (less a second), qualifying runs from 6
    heat days before to 3 weeks after it, the finals after that."""
    changes = _shifted(now)
    done: set[tuple[str, str]] = set()
    section = ""
    lines = [f"# showdown demo: {default_tournament_path().name} with the dates moved around"
             f" {now:%Y-%m-%d %H:%M}"]
    for line in template.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
        key, eq, rest = line.partition("=")
        where = (section, key.strip())
        if eq and where in changes:
            comment = rest[rest.index("#"):] if "#" in rest else ""
            lines.append(f"{key.rstrip()} = {changes[where]}" + (f"   {comment}" if comment
                                                                  else ""))
            done.add(where)
        else:
            lines.append(line)
    missing = ", ".join(".".join(m) for m in sorted(set(changes) - done))
    if missing:
        raise ValueError(f"the tournament template has no {missing}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorPlan:
    """What the floor runs: where its files go, how many tables, heats and players."""

    directory: Path
    tables: int = 3
    heats: int = 2  # per table
    players: int = 3  # per heat
    seed: int = 2026
    hand_pause: float = 0.5  # seconds between hands, so people can watch
    http_host: str = "127.0.0.1"
    http_port: int = 8080  # taken: any free port
    broker: str | None = None  # "host:port"; None = an embedded broker on a free port
    database: str | None = None  # URL; None = SQLite in `directory`
    venue: str = "demo"
    withdrawal: bool = True  # one patron leaves mid-heat: the first table's last heat
    overpay_hand: int | None = None  # the first table's dealer overpays in this hand (heat 1)
    deck_mode: DeckMode = "shuffled"  # the virtual dealers' decks (simulators.decks)

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 20:
            raise ValueError(f"tables must be 1..20, got {self.tables}")
        if not 1 <= self.players <= 6:
            raise ValueError(f"players must be 1..6, got {self.players}")
        if self.heats < 0:
            raise ValueError(f"heats must be >= 0, got {self.heats}")


@dataclass(slots=True)
class FloorReport:
    """What happened: heats played, scores that reached the leaderboard, problems."""

    url: str = ""
    heats_played: int = 0
    entries_seated: int = 0
    scores: dict[str, int] = field(default_factory=dict)  # entry -> score, as stored centrally
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
