"""What a simulated floor runs, checked once for every command: the plan (`FloorPlan`, and
its three uses: `TournamentPlan`, the whole tournament `showdown demo` plays on a compressed
calendar, `LoadPlan`, the hands a table `showdown simulate floor` plays in virtual time, and
`RehearsalPlan`, the one table `showdown simulate table` rehearses with its faults),
the tournament settings it plays (`tournament_settings`), and the files it writes
(`write_files`: the central service's config and key, each table's home, key and config).

The demo's calendar (`plan_calendar`, `demo_tournament`): `days` qualifying heat days that
straddle a prize week's start, the finals two days after, written into the shipped settings;
the floor's clock (floor.clock) jumps from one to the next.
"""

from __future__ import annotations

import json
import secrets
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as dtime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final, Literal

from game.tournament.schedule import WEEKDAYS
from game.tournament.schema import parse_tournament
from runtime.settings_files import default_paytables_path, default_tournament_path, read_tournament
from simulators.decks import DeckMode
from simulators.table_toml import new_table_home, simulated_table_toml
from wire.signing import Signer, save_private_key

if TYPE_CHECKING:
    from floor.rehearsal_config import SimTableConfig
    from game.tournament.schema import TournamentSettings

__all__ = ["HEAT_HANDS", "HEAT_MARGIN", "LEADERBOARD_KEY_ID", "DemoCalendar", "FloorFiles",
           "FloorPlan", "LoadPlan", "RehearsalPlan", "TournamentPlan", "demo_tournament",
           "free_port", "plan_calendar", "tournament_settings", "write_files"]

LEADERBOARD_KEY_ID: Final = "leaderboard"
HEAT_HANDS: Final = 10  # a qualifying heat's hands as shipped (rule 14)
HEAT_MARGIN: Final = 1.5  # heats' length left in the day's window to open another
_SEMI_AT: Final = dtime(16, 0)  # as shipped: the semi-finals at 16:00, the Final at 17:00
_FINAL_AT: Final = dtime(17, 0)
_DAYS_AFTER: Final = 2  # as shipped: the finals two days after the last heat day


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorPlan:
    """A floor: where its files go, its tables and players a heat, the seed, the broker and
    the database, the venue id, the central service's page and settings files. Checked here
    for both commands; a ValueError names the option."""

    _VENUE: ClassVar[str] = "floor"
    directory: Path
    tables: int = 3
    players: int = 3  # per heat
    seed: int = 2026
    broker: str | None = None  # "host:port"; None: an embedded broker on a free port
    database: str | None = None  # URL; None: SQLite in `directory`
    # the venue id in topics and client ids; "": the command's own on the embedded broker,
    # and on a given (shared) broker one of this run's own, so that no retained message or
    # persistent session of an earlier run reaches it (a retained status signed by an
    # earlier run's table key was rejected centrally, at random, on the machine's Mosquitto)
    venue: str = ""
    http_host: str = "127.0.0.1"
    http_port: int = 0  # taken: any free port
    debounce_seconds: float = 0.0  # the standings' recomputation after changes
    tournament_file: Path | None = None  # the settings the floor's are made from; None: default
    paytables_file: Path | None = None  # the tables' paytables; None: the default ones

    def __post_init__(self) -> None:
        if not 1 <= self.tables <= 20:
            raise ValueError(f"--tables must be 1..20, got {self.tables}")
        if not 1 <= self.players <= 6:
            raise ValueError(f"--players must be 1..6, got {self.players}")
        if not self.venue:
            object.__setattr__(self, "venue", self._VENUE if self.broker is None
                               else f"{self._VENUE}-{secrets.token_hex(3)}")

    @property
    def table_ids(self) -> list[str]:
        """The tables' ids: t01, t02 ..."""
        return [f"t{n:02d}" for n in range(1, self.tables + 1)]


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentPlan(FloorPlan):
    """The demo's floor: the qualifying campaign (heat days, heats a table plays each day),
    the pace people can watch, the rules, and the faults put right on the way."""

    _VENUE: ClassVar[str] = "demo"
    http_port: int = 8080  # taken: any free port
    debounce_seconds: float = 0.2
    days: int = 2  # simulated qualifying heat days (they straddle a prize week's start)
    heats_per_day: int = 1  # heats each table plays each heat day
    hand_pause: float = 0.3  # seconds between hands, so people can watch
    stage_pause: float = 1.0  # seconds between the stages
    withdrawal: bool = True  # one patron leaves mid-heat: the first table's last heat
    overpay_hand: int | None = None  # the first table's dealer overpays in this hand (heat 1)
    deck_mode: DeckMode = "shuffled"  # the virtual dealers' decks (simulators.decks)
    rules: Mapping[str, object] = field(default_factory=dict)  # "section.key" -> value
    whole: bool = True  # semi-finals, the Final, prizes and claims after qualifying
    unclaimed: int = 1  # prizes nobody comes to claim (shown open until their deadline)
    progress: bool | None = None  # rich bars; None: when stdout is a terminal

    def __post_init__(self) -> None:
        FloorPlan.__post_init__(self)
        if not 1 <= self.days <= 28:
            raise ValueError(f"--days must be 1..28, got {self.days}")
        if not 0 <= self.heats_per_day <= 10:
            raise ValueError(f"--heats a day must be 0..10 (a heat day is 11 hours), got"
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
class LoadPlan(FloorPlan):
    """The load floor: hands per table (whole heats) at full speed in virtual time."""

    tables: int = 8
    hands: int = 20  # per table, played in whole heats (a heat ends when its entries do)
    hand_seconds: float = 60.0  # a hand's simulated length at one table
    sweep_on_change: bool = True  # the chip readers sweep as soon as chips move
    timeout: float = 30.0  # the virtual dealer's wait for its table (real seconds)
    # "demo": the pace `showdown demo` plays at (0.4 s between hands, chip readers that only
    # sweep every 50 ms, a dealer polling its table every 10 ms), a baseline for benches
    pace: Literal["full", "demo"] = "full"
    processes: bool = True  # each table in a process of its own (False: all in this one)
    profile: bool = False  # the first table samples its threads (bench/floor_rate.py)

    def __post_init__(self) -> None:
        FloorPlan.__post_init__(self)
        if not 1 <= self.hands <= 10_000:
            raise ValueError(f"--hands must be 1..10000 (per table), got {self.hands}")
        if not 1.0 <= self.hand_seconds <= 3600.0:
            raise ValueError(f"--hand-seconds must be 1..3600, got {self.hand_seconds:g}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RehearsalPlan(FloorPlan):
    """The rehearsal's floor: one table (`table`) on its simulated devices, its own journal in
    `directory` and its own broker (`broker` None: the table's embedded one), played by the
    virtual dealer with `settings` (the deck, the seats' scripts, the faults, the pace:
    floor.rehearsal_config). It has no central service: the database's, the page's and the
    standings' fields are unused. Build it with `of`."""

    _VENUE: ClassVar[str] = "rehearsal"
    tables: int = 1
    table: str = "t01"
    settings: SimTableConfig

    def __post_init__(self) -> None:
        FloorPlan.__post_init__(self)
        if self.tables != 1:
            raise ValueError(f"a rehearsal plays one table, got {self.tables}")

    @property
    def table_ids(self) -> list[str]:
        """The one table's id, as the config names it."""
        return [self.table]

    @classmethod
    def of(cls, settings: SimTableConfig, *, seed: int, directory: Path) -> RehearsalPlan:
        """The plan of a rehearsal config with the command line's options over it, its seed
        drawn and its directory made."""
        return cls(directory=directory, players=settings.players, seed=seed,
                   broker=None if settings.broker == "embedded" else settings.broker,
                   venue=settings.venue, table=settings.table,
                   tournament_file=settings.tournament, paytables_file=settings.paytables,
                   settings=settings)


def tournament_settings(plan: FloorPlan, *, today: date | None = None
                        ) -> tuple[DemoCalendar | None, str, TournamentSettings]:
    """The settings the floor plays: (the demo's calendar, the settings file's text, the
    settings). A `TournamentPlan` plays the shipped ones (or its `tournament_file`) on the
    demo's calendar with its `rules`; a `LoadPlan` plays them as they are, and its hands
    must fit in qualifying's heat days. ValueError (a ConfigError for a bad setting) says
    what does not fit, e.g. fewer entries than semi-final places."""
    template = plan.tournament_file or default_tournament_path()
    shipped = read_tournament(template)
    if isinstance(plan, LoadPlan):
        _check_days(plan, shipped)
        return None, template.read_text("utf-8"), shipped
    assert isinstance(plan, TournamentPlan)
    starts_on = str(plan.rules.get("weekly_prizes.week_starts_on",
                                   WEEKDAYS[shipped.weekly_prizes.starts_on]))
    if starts_on not in WEEKDAYS:
        raise ValueError(f"weekly_prizes.week_starts_on: {starts_on!r} is not a weekday")
    calendar = plan_calendar(plan.days, today=today or datetime.now(shipped.tz).date(),
                             week_starts_on=starts_on, tz=shipped.tz)
    text = demo_tournament(template.read_text("utf-8"), calendar, plan.rules)
    settings = parse_tournament(tomllib.loads(text), "the demo's tournament settings",
                                tz=shipped.tz)
    entries = plan.tables * plan.players * plan.heats - (1 if plan.withdrawal else 0)
    advance = settings.qualifying.advance or 0
    if plan.whole and entries < advance:
        raise ValueError(
            f"{plan.tables} tables x {plan.players} players x {plan.heats} heats give"
            f" {entries} qualifying scores, but the semi-finals take {advance}"
            " (qualifying.advance): play more days or heats, or qualifying only")
    return calendar, text, settings


def _check_days(plan: LoadPlan, settings: TournamentSettings) -> None:
    """Refuse a run whose hands cannot be played in qualifying's heat days."""
    schedule = settings.schedule
    heat = HEAT_HANDS * plan.hand_seconds
    window = schedule.window.length.total_seconds()
    per_day = max(1, int((window - HEAT_MARGIN * heat) // heat) + 1)
    heats = -(-plan.hands // HEAT_HANDS)
    days = (schedule.last_day - schedule.first_day).days + 1
    if -(-heats // per_day) > days:
        raise ValueError(
            f"{plan.hands} hands a table at {plan.hand_seconds:g} s a hand need"
            f" {-(-heats // per_day)} heat days; qualifying has {days}: ask for fewer"
            " hands or shorter ones (--hand-seconds)")


# ---- the files ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FloorFiles:
    """What `write_files` wrote: the central service's config, each table's config and
    journal, the settings file in force and the central database's URL."""

    service: Path
    tables: dict[str, Path]
    journals: dict[str, Path]
    tournament: Path
    database: str


def write_files(plan: FloorPlan, broker: str, *, tournament_text: str | None = None,
                hand_pause: float = 0.0, log_level: str = "error") -> FloorFiles:
    """Write the floor's files into `plan.directory`: the settings (`tournament_text`, else
    the plan's file as it is), the central service's key and config, and each table's home
    (its key and a simulated table's config enrolling the central service's key as its
    desk's); the service's page on `plan.http_port` if free, else on any."""
    d = plan.directory
    d.mkdir(parents=True, exist_ok=True)
    if tournament_text is None:
        tournament = plan.tournament_file or default_tournament_path()
    else:
        tournament = d / "tournament-demo.toml"
        tournament.write_text(tournament_text, encoding="utf-8")
    lb_key = Signer.generate(LEADERBOARD_KEY_ID)
    save_private_key(lb_key, d / "leaderboard.key")
    paytables = plan.paytables_file or default_paytables_path()
    tables: dict[str, Path] = {}
    journals: dict[str, Path] = {}
    keys: dict[str, str] = {}
    for n, table in enumerate(plan.table_ids, start=1):
        home, keys[table] = new_table_home(d, table)
        tables[table], journals[table] = home / "table.toml", home / "journal.sqlite"
        tables[table].write_text(simulated_table_toml(
            venue=plan.venue, table=table, broker=broker, tournament=tournament,
            paytables=paytables, journal="journal.sqlite",
            desk_keys={LEADERBOARD_KEY_ID: lb_key.public_key.base64},
            seed=plan.seed * 100 + n, players=plan.players, hand_pause=hand_pause,
            virtual_dealer=False, log_level=log_level), encoding="utf-8")
    database = plan.database or f"sqlite:///{d / 'leaderboard.sqlite3'}"
    service = d / "leaderboard.toml"
    service.write_text(_SERVICE_TOML.format(
        venue=plan.venue, database=database, tournament=tournament, broker=broker,
        debounce=plan.debounce_seconds, host=plan.http_host,
        port=free_port(plan.http_host, plan.http_port) if plan.http_port else 0,
        level="warning" if isinstance(plan, TournamentPlan) else "error",
        tables="\n".join(f'{t} = "{k}"' for t, k in keys.items())), encoding="utf-8")
    return FloorFiles(service=service, tables=tables, journals=journals, tournament=tournament,
                      database=database)


_SERVICE_TOML: Final = """\
# The central leaderboard service of a simulated floor (written by `showdown demo` or
# `showdown simulate floor`).
[service]
venue = "{venue}"
database = "{database}"
tournament = "{tournament}"
debounce_seconds = {debounce}
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
level = "{level}"
"""


def free_port(host: str, wanted: int) -> int:
    """`wanted` if it can be listened on now, else 0 (any free port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, wanted))
        except OSError:
            return 0
    return wanted


# ---- the demo's calendar -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoCalendar:
    """The simulated days: qualifying heat days, and when the finals are."""

    days: tuple[date, ...]  # the qualifying heat days, one after the other
    semi_final: datetime  # venue time
    final: datetime
    weeks: int = 1  # the prize weeks the heat days touch

    @property
    def first_day(self) -> date:
        """The first heat day."""
        return self.days[0]

    @property
    def last_day(self) -> date:
        """The last heat day (qualifying ends after its heat)."""
        return self.days[-1]


def plan_calendar(days: int, *, today: date, week_starts_on: str, tz: tzinfo) -> DemoCalendar:
    """`days` heat days from the first suitable day on or after `today`: they straddle a
    prize week's start (half before it, half from it), so that two or more days give two
    prize weeks; the finals as shipped, two days after the last heat day."""
    if days < 1:
        raise ValueError(f"the qualifying campaign needs at least one day, got {days}")
    start_weekday = (WEEKDAYS.index(week_starts_on) - days // 2) % 7
    first = today + timedelta(days=(start_weekday - today.weekday()) % 7)
    heat_days = tuple(first + timedelta(days=n) for n in range(days))
    finals = heat_days[-1] + timedelta(days=_DAYS_AFTER)
    week_one = first - timedelta(days=(first.weekday() - WEEKDAYS.index(week_starts_on)) % 7)
    return DemoCalendar(days=heat_days, semi_final=datetime.combine(finals, _SEMI_AT, tzinfo=tz),
                        final=datetime.combine(finals, _FINAL_AT, tzinfo=tz),
                        weeks=(heat_days[-1] - week_one).days // 7 + 1)


def _toml_value(key: str, value: object) -> str:
    """One settings value as TOML (rand amounts are strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list | tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "[" + ", ".join(str(v) for v in value) + "]"
    raise ValueError(f"setting {key}: {value!r} is not a whole number, text, true/false or a"
                     " list of whole numbers")


def _changes(calendar: DemoCalendar, rules: Mapping[str, object]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {
        ("venue", "name"): '"Showdown demo floor (simulated tables)"',
        ("qualifying", "first_day"): calendar.first_day.isoformat(),
        ("qualifying", "last_day"): calendar.last_day.isoformat(),
        ("qualifying", "ends"): calendar.last_day.isoformat(),
        ("semi_final", "starts"): f"{calendar.semi_final:%Y-%m-%dT%H:%M:%S}",
        ("final", "starts"): f"{calendar.final:%Y-%m-%dT%H:%M:%S}",
    }
    if "weekly_prizes.weeks" not in rules:  # a prize for each week with heats
        out[("weekly_prizes", "weeks")] = str(calendar.weeks)
    for dotted, value in rules.items():
        section, dot, key = dotted.partition(".")
        if not dot or not key:
            raise ValueError(f"setting {dotted!r}: name it as section.key (e.g."
                             " qualifying.advance)")
        if (section, key) in out:
            raise ValueError(f"setting {dotted}: the demo sets the calendar itself")
        out[(section, key)] = _toml_value(dotted, value)
    return out


def demo_tournament(template: str, calendar: DemoCalendar,
                    rules: Mapping[str, object] | None = None) -> str:
    """The tournament settings `template` with the demo's calendar (its heat days, a weekly
    prize for each week they touch, the finals two days after) and the `rules` overrides
    ("section.key" -> value); the heat window and every other rule stay as in the template.
    ValueError names a key the template lacks."""
    changes = _changes(calendar, rules or {})
    done: set[tuple[str, str]] = set()
    section = ""
    lines = [f"# showdown demo: the shipped settings on a simulated calendar of"
             f" {len(calendar.days)} heat days from {calendar.first_day:%Y-%m-%d}"]
    for line in template.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
        key, eq, rest = line.partition("=")
        where = (section, key.strip())
        if eq and not stripped.startswith("#") and where in changes:
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
