"""The config file of `showdown simulate table` (docs/simulate-table.md,
config/simulate-table.example.toml): the run, the table, the deck, each seat's script and the
faults, with the command line's options over it (`SimTableConfig.with_overrides`). Read
strictly: an unknown key, a wrong type, a card that is not a card or a wager that is not an
amount is refused with the file and the key. The rehearsal (floor.rehearsal) makes its plan
(floor.plan.RehearsalPlan) from it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from game.errors import ConfigError, GameError
from game.money import parse_rand
from game.poker.cards import Card, parse_cards
from runtime.config_paths import config_path
from runtime.settings_files import default_paytables_path, default_tournament_path
from simulators.decks import DECK_MODES
from simulators.scripted_play import DECISIONS, HandScript
from simulators.table_faults import parse_fault

__all__ = ["DECK_CHOICES", "SeatConfig", "SimTableConfig", "parse_sim_table", "read_sim_table"]

DECK_CHOICES: Final = ("random", "scripted", *(m for m in DECK_MODES if m != "shuffled"))
STYLES: Final = ("random", "cautious", "bold")
_SIDE_BETS: Final = ("trips_plus", "pocket_bonus", "sweet16")
_HAND_KEYS: Final = {"ante", "play", *_SIDE_BETS}


@dataclass(frozen=True, slots=True)
class SeatConfig:
    """One seat: its style once its script runs out, and its script hand by hand."""

    style: Literal["random", "cautious", "bold"] = "random"
    hands: tuple[HandScript, ...] = ()


@dataclass(frozen=True, slots=True)
class SimTableConfig:
    """A rehearsal of one table, as the config file and the command line set it."""

    source: str = "(defaults)"
    seed: int | None = None  # None: drawn and printed
    hands: int | None = None  # None: play the heats out
    heats: int = 1
    players: int = 2
    stage: str = "qualifying"
    virtual_dealer: bool = True
    pause: float = 0.0
    timeout: float = 15.0
    broker: str = "embedded"
    directory: Path | None = None  # None: a fresh temporary directory
    faults: tuple[str, ...] = ()
    overpay_fix: Literal["override", "take_back"] = "override"
    log_level: str = "error"
    venue: str = "rehearsal"
    table: str = "t01"
    tournament: Path = field(default_factory=default_tournament_path)
    paytables: Path = field(default_factory=default_paytables_path)
    stall_seconds: float = 2.0  # above the shoe's 1 s heartbeat: a quiet shoe is not a hung one
    acknowledge_with: tuple[str, ...] = ("card",)
    deck: str = "random"
    deck_hands: tuple[tuple[Card, ...], ...] = ()
    seats: Mapping[int, SeatConfig] = field(default_factory=dict)

    def with_overrides(self, **changes: Any) -> SimTableConfig:
        """The same run with the command line's options (None: not given)."""
        given = {k: v for k, v in changes.items() if v is not None}
        extra = tuple(given.pop("extra_faults", ()))
        return replace(self, **given, faults=(*self.faults, *extra))


class _Reader:
    def __init__(self, source: str, base: Path) -> None:
        self.source, self.base = source, base

    def fail(self, key: str, why: str) -> ConfigError:
        return ConfigError(self.source, key, why)

    def table(self, data: Any, key: str, known: set[str]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(key, "must be a table")
        unknown = sorted(set(data) - known)
        if unknown:
            where = f"{key}.{unknown[0]}" if key else unknown[0]
            raise self.fail(where, f"unknown key (known: {', '.join(sorted(known))})")
        return data

    def get(self, d: Mapping[str, Any], sec: str, key: str, kind: type, default: Any) -> Any:
        if key not in d:
            return default
        value = d[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(f"{sec}.{key}", f"expected {kind.__name__}, got"
                            f" {type(value).__name__}")
        return value

    def bounded(self, d: Mapping[str, Any], sec: str, key: str, kind: type, default: Any, *,
                low: float, high: float) -> Any:
        value = self.get(d, sec, key, kind, default)
        if value is not None and not low <= value <= high:
            raise self.fail(f"{sec}.{key}", f"must be {low:g}..{high:g}, got {value}")
        return value

    def choice(self, d: Mapping[str, Any], sec: str, key: str, default: str,
               choices: Sequence[str]) -> str:
        value = self.get(d, sec, key, str, default)
        if value not in choices:
            raise self.fail(f"{sec}.{key}", f"must be one of {', '.join(choices)}, got"
                            f" {value!r}")
        return str(value)

    def path(self, d: Mapping[str, Any], sec: str, key: str, default: Path | None
             ) -> Path | None:
        text = self.get(d, sec, key, str, None)
        if text is None:
            return default
        return config_path(text, self.base)

    def amount(self, value: Any, key: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        try:
            cents = parse_rand(value)
        except GameError as exc:
            raise self.fail(key, f"an amount in rand, e.g. \"R25\" or 25 ({exc})") from None
        if cents < 0:
            raise self.fail(key, "an amount is not negative")
        return cents


def read_sim_table(path: Path) -> SimTableConfig:
    """Read and check a rehearsal config file (ConfigError naming the file and key)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read it: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), "", f"not valid TOML: {exc}") from None
    return parse_sim_table(data, source=str(path), base=path.resolve().parent)


def parse_sim_table(data: Mapping[str, Any], *, source: str, base: Path) -> SimTableConfig:
    """Validate a parsed rehearsal config."""
    r = _Reader(source, base)
    top = r.table(dict(data), "", {"run", "table", "deck", "seats"})
    run = r.table(top.get("run", {}), "run", {
        "seed", "hands", "heats", "players", "stage", "virtual_dealer", "pause", "timeout",
        "broker", "dir", "faults", "overpay_fix", "log_level"})
    tab = r.table(top.get("table", {}), "table", {
        "venue", "id", "tournament", "paytables", "stall_seconds", "acknowledge_with"})
    deck = r.table(top.get("deck", {}), "deck", {"mode", "hands"})
    d = SimTableConfig()
    faults = r.get(run, "run", "faults", list, [])
    for i, written in enumerate(faults):
        if not isinstance(written, str):
            raise r.fail(f"run.faults[{i}]", "a fault is text, e.g. \"rfid.unplug@hand3\"")
        try:
            parse_fault(written)
        except ValueError as exc:
            raise r.fail(f"run.faults[{i}]", str(exc)) from None
    ack = r.get(tab, "table", "acknowledge_with", list, list(d.acknowledge_with))
    if not ack or any(m not in ("card", "pin", "signature") for m in ack):
        raise r.fail("table.acknowledge_with", "a list of card, pin, signature")
    players = r.bounded(run, "run", "players", int, d.players, low=1, high=6)
    mode = r.choice(deck, "deck", "mode", d.deck, DECK_CHOICES)
    hands = _deck_hands(r, deck.get("hands", []))
    if mode == "scripted" and not hands:
        raise r.fail("deck.hands", "a scripted deck lists each hand's cards")
    if hands and mode != "scripted":
        raise r.fail("deck.hands", f"cards are listed only for mode = \"scripted\", not"
                     f" {mode!r}")
    return SimTableConfig(
        source=source,
        seed=r.get(run, "run", "seed", int, None),
        hands=r.bounded(run, "run", "hands", int, None, low=1, high=10_000),
        heats=r.bounded(run, "run", "heats", int, d.heats, low=1, high=100),
        players=players,
        stage=r.choice(run, "run", "stage", d.stage, ("qualifying", "semi_final", "final")),
        virtual_dealer=r.get(run, "run", "virtual_dealer", bool, True),
        pause=r.bounded(run, "run", "pause", float, 0.0, low=0.0, high=60.0),
        timeout=r.bounded(run, "run", "timeout", float, d.timeout, low=1.0, high=600.0),
        broker=_broker(r, r.get(run, "run", "broker", str, d.broker)),
        directory=r.path(run, "run", "dir", None),
        faults=tuple(faults),
        overpay_fix=r.choice(run, "run", "overpay_fix", d.overpay_fix,  # type: ignore[arg-type]
                             ("override", "take_back")),
        log_level=r.choice(run, "run", "log_level", d.log_level,
                           ("debug", "info", "warning", "error")),
        venue=_ident(r, r.get(tab, "table", "venue", str, d.venue), "table.venue"),
        table=_ident(r, r.get(tab, "table", "id", str, d.table), "table.id"),
        tournament=r.path(tab, "table", "tournament", d.tournament) or d.tournament,
        paytables=r.path(tab, "table", "paytables", d.paytables) or d.paytables,
        stall_seconds=r.bounded(tab, "table", "stall_seconds", float, d.stall_seconds,
                                low=2.0, high=60.0),
        acknowledge_with=tuple(ack),
        deck=mode, deck_hands=hands,
        seats=_seats(r, top.get("seats", {}), players),
    )


def _broker(r: _Reader, text: str) -> str:
    host, sep, port = text.rpartition(":")
    if text != "embedded" and not (sep and host and port.isdigit()):
        raise r.fail("run.broker", f"\"embedded\" or HOST:PORT, got {text!r}")
    return text


def _ident(r: _Reader, value: str, key: str) -> str:
    if not value or not all(c.islower() or c.isdigit() or c == "-" for c in value):
        raise r.fail(key, "use lower-case letters, digits and '-'")
    return value


def _deck_hands(r: _Reader, value: Any) -> tuple[tuple[Card, ...], ...]:
    if not isinstance(value, list):
        raise r.fail("deck.hands", "a list of texts, one a hand, e.g. \"Ah Kd 7c 7s ...\"")
    out: list[tuple[Card, ...]] = []
    for i, text in enumerate(value):
        if not isinstance(text, str):
            raise r.fail(f"deck.hands[{i}]", "a text of cards, e.g. \"Ah Kd 7c\"")
        try:
            out.append(tuple(parse_cards(text)))
        except GameError as exc:
            raise r.fail(f"deck.hands[{i}]", str(exc)) from None
    return tuple(out)


def _seats(r: _Reader, value: Any, players: int) -> dict[int, SeatConfig]:
    if not isinstance(value, dict):
        raise r.fail("seats", "a table of seats: [seats.1], [seats.2] ...")
    out: dict[int, SeatConfig] = {}
    for name, body in value.items():
        if not (name.isdigit() and 1 <= int(name) <= players):
            raise r.fail(f"seats.{name}", f"a seat is 1..{players} (run.players)")
        sec = f"seats.{name}"
        seat = r.table(body, sec, {"style", "hands"})
        style = r.choice(seat, sec, "style", "random", STYLES)
        hands = r.get(seat, sec, "hands", list, [])
        out[int(name)] = SeatConfig(style=style,  # type: ignore[arg-type]
                                    hands=tuple(_hand(r, h, f"{sec}.hands[{i}]")
                                                for i, h in enumerate(hands)))
    return out


def _hand(r: _Reader, value: Any, key: str) -> HandScript:
    hand = r.table(value, key, _HAND_KEYS)
    if "ante" not in hand:
        raise r.fail(f"{key}.ante", "missing (0 sits the hand out)")
    decision = r.choice(hand, key, "play", "river", DECISIONS)
    sides = {bet: r.amount(hand[bet], f"{key}.{bet}") for bet in _SIDE_BETS if bet in hand}
    return HandScript(ante_cents=r.amount(hand["ante"], f"{key}.ante"),
                      side_bets={k: v for k, v in sides.items() if v},
                      decision=decision)  # type: ignore[arg-type]
