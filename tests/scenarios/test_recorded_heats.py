"""Recorded full heats replayed through the real table path (issue 3 §5).

Each ``heats/*.toml`` file is a pit's paper record of one heat: per hand the cards in the order
the shoe read them, each seat's opening wagers and Play decision, and the net each seat is
expected to win or lose, with the reason; per entry the expected score and how it ended. Every
expected amount was worked out by hand from rules.md §5-§7 and §0 (see README.md), never by
running the code.

Two kinds of test:

- ``test_record_is_consistent`` checks the record against itself, without the game engine:
  the shoe is laid out in the deal sequence of rules.md §0 item 5 (written out again below, by
  hand), each seat's net is the sum of its wagers' nets, and each entry's score is R2,000 plus
  its nets.
- ``test_heat_replays`` plays the heat through ``TableSession`` with the shipped settings
  (config/tournament.toml, config/paytables.toml): RFID snapshots of the opening wagers, no
  more bets, the cards one by one, each Play put on the spot just before the card that takes
  the decision, settle, close. Every hand must settle with no alert, every seat's net (and each
  wager's) must equal the record, every hand must replay to an identical state, and every entry
  must end as recorded.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from game.hand import Hand, Phase
from game.hand.deal import DEFAULT_DEAL
from game.hand.events import PlayMade, SeatChecked, SeatFolded
from game.hand.replay import replay
from game.money import format_rand, parse_rand
from game.paytables.lines import Paytables
from game.poker.cards import Card, parse_card, parse_cards
from game.table.session import EntryEnded, TableSession
from game.tournament.entries import Entry, EntryStatus, Stage, StageRules
from game.wagers.settle import SIDE_BETS, SeatWagers
from runtime.settings_files import read_paytables, read_tournament

HEATS_DIR = Path(__file__).parent / "heats"
HEAT_FILES = sorted(HEATS_DIR.glob("*.toml"))

START_CENTS = 200_000  # R2,000 in tournament chips (tournament.md, every stage)
STAGE_HANDS = {"qualifying": 10, "semi_final": 12, "final": 12}
STAGE_MARKERS = {"qualifying": 0, "semi_final": 0, "final": 3}
MARKER_CENTS = 50_000  # R500 per Final bonus marker
MULTIPLE = {"preflop": 3, "flop": 2, "river": 1}
PLAYS = (*MULTIPLE, "fold")
OUTCOMES = ("win", "lose", "tie", "fold")
CATEGORIES = (
    "high_card", "pair", "two_pair", "three_of_a_kind", "straight", "flush", "full_house",
    "four_of_a_kind", "straight_flush", "royal_flush",
)
WAGER_FIELDS = ("ante", "odds", *SIDE_BETS)
EXPECT_FIELDS = ("ante", "odds", "play", *SIDE_BETS)


# ---- the record ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatRecord:
    """One seat in one recorded hand."""

    seat: int
    hole: tuple[Card, Card]
    wagers: SeatWagers  # opening wagers (Play 0)
    play: str  # preflop | flop | river | fold
    hand: str  # the seat's category key, e.g. "flush"
    outcome: str
    expect: Mapping[str, int]  # wager -> net in cents
    net: int
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HandRecord:
    """One recorded hand: the shoe as read, and every seat."""

    number: int
    summary: str
    dealer: tuple[Card, Card]
    board: tuple[Card, ...]
    burns: tuple[Card, ...]
    dealer_hand: str
    dealer_opens: bool
    shoe: tuple[Card, ...]
    seats: tuple[SeatRecord, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryRecord:
    """One entry of the heat: where it sits, from when, and how it is expected to end."""

    entry: str
    seat: int
    joins_before_hand: int
    ends: str  # finished | ended_early
    last_hand: int
    hands_played: int
    markers_forfeited: int
    score: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HeatRecord:
    """A whole recorded heat at one table."""

    path: Path
    id: str
    stage: str
    table: str
    summary: str
    entries: tuple[EntryRecord, ...]
    hands: tuple[HandRecord, ...]


def _cents(text: object, where: str) -> int:
    """A signed rand amount of the record ("+R37.50", "-R25", "0") in cents."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: expected an amount as text such as \"+R25\", got {text!r}")
    return parse_rand(text.strip().removeprefix("+"))


def _keys(data: Mapping[str, Any], where: str, required: set[str], optional: set[str]) -> None:
    missing = required - set(data)
    unknown = set(data) - required - optional
    if missing or unknown:
        raise ValueError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")


def _seat(data: Mapping[str, Any], where: str) -> SeatRecord:
    _keys(
        data, where,
        {"seat", "hole", "wagers", "play", "hand", "outcome", "expect", "net", "why"},
        {"markers"},
    )
    hole = parse_cards(data["hole"])
    if len(hole) != 2:
        raise ValueError(f"{where}: hole must be 2 cards")
    raw = data["wagers"]
    unknown = set(raw) - set(WAGER_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown wagers {sorted(unknown)}")
    amounts = {name: _cents(raw[name], f"{where}.wagers.{name}") for name in raw}
    markers = frozenset(data.get("markers", ()))
    expect_raw = data["expect"]
    unknown = set(expect_raw) - set(EXPECT_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown expect keys {sorted(unknown)}")
    return SeatRecord(
        seat=data["seat"],
        hole=(hole[0], hole[1]),
        wagers=SeatWagers(**amounts, markers=markers),
        play=data["play"],
        hand=data["hand"],
        outcome=data["outcome"],
        expect={k: _cents(v, f"{where}.expect.{k}") for k, v in expect_raw.items()},
        net=_cents(data["net"], f"{where}.net"),
        why=data["why"],
    )


def _hand(data: Mapping[str, Any], where: str) -> HandRecord:
    _keys(
        data, where,
        {"hand", "summary", "dealer", "board", "burns", "dealer_hand", "dealer_opens", "shoe",
         "seats"},
        set(),
    )
    dealer = parse_cards(data["dealer"])
    return HandRecord(
        number=data["hand"],
        summary=data["summary"],
        dealer=(dealer[0], dealer[1]),
        board=parse_cards(data["board"]),
        burns=parse_cards(data["burns"]),
        dealer_hand=data["dealer_hand"],
        dealer_opens=data["dealer_opens"],
        shoe=tuple(parse_card(c) for c in data["shoe"]),
        seats=tuple(
            _seat(s, f"{where} seat {s.get('seat')}") for s in data["seats"]
        ),
    )


def _entry(data: Mapping[str, Any], where: str) -> EntryRecord:
    _keys(
        data, where,
        {"entry", "seat", "joins_before_hand", "ends", "last_hand", "hands_played",
         "markers_forfeited", "score"},
        set(),
    )
    return EntryRecord(
        entry=data["entry"],
        seat=data["seat"],
        joins_before_hand=data["joins_before_hand"],
        ends=data["ends"],
        last_hand=data["last_hand"],
        hands_played=data["hands_played"],
        markers_forfeited=data["markers_forfeited"],
        score=_cents(data["score"], f"{where}.score"),
    )


def load_heat(path: Path) -> HeatRecord:
    """Read one recorded heat; an off-format record is a ValueError naming the place."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    _keys(data, path.name, {"heat", "entries", "hands"}, set())
    heat = data["heat"]
    _keys(heat, f"{path.name} [heat]", {"id", "stage", "table", "summary"}, set())
    return HeatRecord(
        path=path,
        id=heat["id"],
        stage=heat["stage"],
        table=heat["table"],
        summary=heat["summary"],
        entries=tuple(
            _entry(e, f"{path.name} entry {e.get('entry')}") for e in data["entries"]
        ),
        hands=tuple(_hand(h, f"{path.name} hand {h.get('hand')}") for h in data["hands"]),
    )


def shoe_layout(hand: HandRecord) -> tuple[Card, ...]:
    """The shoe order of rules.md §0 item 5, written out by hand (independent of game.hand.deal).

    Two passes of hole cards, the seats in the hand in seat order then the dealer in each pass;
    burn 1; flop 3; burn 1; turn and river.
    """
    seats = sorted(hand.seats, key=lambda s: s.seat)
    out: list[Card] = []
    for index in (0, 1):
        out.extend(s.hole[index] for s in seats)
        out.append(hand.dealer[index])
    out.append(hand.burns[0])
    out.extend(hand.board[:3])
    out.append(hand.burns[1])
    out.extend(hand.board[3:])
    return tuple(out)


def placed(wagers: SeatWagers) -> set[str]:
    """The wagers a seat placed: chips on it, or a bonus marker riding on it."""
    return {w for w in WAGER_FIELDS if wagers.amount(w) > 0 or w in wagers.markers}


def seated_at(heat: HeatRecord, number: int) -> dict[int, str]:
    """Which entry sits in which seat for table hand `number`, from the entries' records."""
    return {
        e.seat: e.entry
        for e in heat.entries
        if e.joins_before_hand <= number <= e.last_hand
    }


HEATS = [pytest.param(path, id=path.stem) for path in HEAT_FILES]


def test_heat_files_present() -> None:
    """The four recorded heats the issue asks for are in place."""
    stages = sorted(load_heat(p).stage for p in HEAT_FILES)
    assert len(HEAT_FILES) >= 4, HEAT_FILES
    assert stages.count("qualifying") >= 2
    assert "semi_final" in stages
    assert "final" in stages


# ---- the record against itself ---------------------------------------------------------------


@pytest.mark.parametrize("path", HEATS)
def test_record_is_consistent(path: Path) -> None:
    """Shoe layout, per-wager sums and scores of a record agree with each other."""
    heat = load_heat(path)
    assert heat.stage in STAGE_HANDS
    numbers = [h.number for h in heat.hands]
    assert numbers == list(range(1, len(numbers) + 1)), "hands are numbered 1, 2, 3, ..."
    nets: dict[str, list[int]] = {e.entry: [] for e in heat.entries}
    markers_used: dict[str, int] = {e.entry: 0 for e in heat.entries}
    assert len({e.entry for e in heat.entries}) == len(heat.entries)

    for hand in heat.hands:
        where = f"hand {hand.number}"
        seats = [s.seat for s in hand.seats]
        assert seats == sorted(set(seats)), f"{where}: seats listed once each, in seat order"
        assert set(seats) == set(seated_at(heat, hand.number)), (
            f"{where}: the seats in the hand are the entries seated for it"
        )
        assert len(hand.board) == 5 and len(hand.burns) == 2
        assert len(set(hand.shoe)) == len(hand.shoe), f"{where}: a card twice in the shoe"
        assert hand.shoe == shoe_layout(hand), f"{where}: shoe not in the deal sequence"
        assert hand.dealer_hand in CATEGORIES
        for s in hand.seats:
            at = f"{where} seat {s.seat}"
            assert s.play in PLAYS, at
            assert s.outcome in OUTCOMES, at
            assert s.hand in CATEGORIES, at
            assert (s.play == "fold") == (s.outcome == "fold"), at
            assert s.wagers.ante == s.wagers.odds > 0, at
            expected_keys = placed(s.wagers) | ({"play"} if s.play != "fold" else set())
            assert set(s.expect) == expected_keys, f"{at}: expect names exactly the wagers placed"
            assert sum(s.expect.values()) == s.net, f"{at}: net is not the sum of the wagers"
            assert s.why.strip(), at
            entry = seated_at(heat, hand.number)[s.seat]
            nets[entry].append(s.net)
            markers_used[entry] += len(s.wagers.markers)

    for e in heat.entries:
        at = f"entry {e.entry}"
        assert len(nets[e.entry]) == e.hands_played, at
        assert e.last_hand - e.joins_before_hand + 1 == e.hands_played, at
        assert e.score == START_CENTS + sum(nets[e.entry]), (
            f"{at}: score {format_rand(e.score)} is not R2,000 + its nets"
            f" ({format_rand(START_CENTS + sum(nets[e.entry]))})"
        )
        assert e.ends in ("finished", "ended_early"), at
        if e.ends == "finished":
            assert e.hands_played == STAGE_HANDS[heat.stage], at
        else:
            assert e.hands_played < STAGE_HANDS[heat.stage], at
            assert e.score < 3 * 2_500, f"{at}: ends early only below R75 (rules.md §0 item 9)"
        assert markers_used[e.entry] + e.markers_forfeited == STAGE_MARKERS[heat.stage], at


# ---- the record through the real table path ----------------------------------------------


@pytest.fixture(scope="module")
def paytables() -> Paytables:
    """The shipped paytables (config/paytables.toml): rules.md §0."""
    return read_paytables(None)


@pytest.fixture(scope="module")
def settings_rules() -> dict[str, StageRules]:
    """The shipped stage rules (config/tournament.toml), checked against what the records assume."""
    settings = read_tournament(None)
    out: dict[str, StageRules] = {}
    for stage in Stage:
        rules = settings.stage(stage).rules
        assert rules.hands == STAGE_HANDS[stage.value]
        assert rules.starting_chips_cents == START_CENTS
        assert rules.markers == STAGE_MARKERS[stage.value]
        assert rules.house.marker_value_cents == MARKER_CENTS
        assert rules.house.min_ante_cents == 2_500
        assert rules.unused_markers == "forfeit"
        out[stage.value] = rules
    return out


def _play_hand(hand: Hand, record: HandRecord) -> None:
    """Drive one hand as the table does: snapshots, no more bets, shoe reads, Play spots, settle."""
    for s in record.seats:
        hand.see_wagers(s.seat, s.wagers)
    hand.no_more_bets()
    first_flop = record.shoe.index(record.board[0])
    turn = record.shoe.index(record.board[3])

    def put_plays(street: str) -> None:
        for s in record.seats:
            if s.play == street:
                amount = MULTIPLE[street] * s.wagers.ante
                hand.see_wagers(s.seat, replace(s.wagers, play=amount))

    for position, card in enumerate(record.shoe):
        if position == first_flop:
            put_plays("preflop")  # decided when the first flop card is drawn
        if position == turn:
            put_plays("flop")  # decided when the turn is drawn
        hand.read_card(card)
    put_plays("river")  # decided at settle; nothing on the spot is a fold
    if hand.paused:
        pytest.fail(
            f"hand {hand.hand_id} paused before settle: {[a.message for a in hand.open_alerts]}"
        )
    hand.settle()


def _check_hand(hand: Hand, record: HandRecord, paytables: Paytables, where: str) -> None:
    assert not hand.open_alerts, f"{where}: alerts {[a.message for a in hand.open_alerts]}"
    assert not any(type(e).__name__ == "AlertRaised" for e in hand.events), f"{where}: alert"
    assert hand.phase is Phase.SETTLED, where
    settlement = hand.settlement
    assert settlement is not None
    # The code's deal sequence put every card where the record's layout says it belongs.
    dealt = {str(target): card for target, card in hand.cards()}
    assert len(dealt) == len(record.shoe), where
    for s in record.seats:
        for i in (0, 1):
            assert dealt[f"seat {s.seat} hole card {i + 1}"] == s.hole[i], where
    assert (dealt["dealer hole card 1"], dealt["dealer hole card 2"]) == record.dealer, where
    board = ("flop card 1", "flop card 2", "flop card 3", "turn", "river")
    assert tuple(dealt[name] for name in board) == record.board, where
    assert (dealt["burn card 1"], dealt["burn card 2"]) == record.burns, where

    decided: dict[int, str] = {}
    for event in hand.events:
        if isinstance(event, PlayMade):
            assert event.multiple == MULTIPLE[event.street], where
            decided[event.seat] = event.street
        elif isinstance(event, SeatFolded):
            decided[event.seat] = "fold"
        elif isinstance(event, SeatChecked):
            assert event.seat not in decided, f"{where}: seat {event.seat} checked after deciding"
    assert decided == {s.seat: s.play for s in record.seats}, f"{where}: decisions"

    assert settlement.dealer_opens is record.dealer_opens, f"{where}: dealer opens"
    assert settlement.dealer_hand.category.key == record.dealer_hand, f"{where}: dealer's hand"
    by_seat = {s.seat: s for s in settlement.seats}
    assert set(by_seat) == {s.seat for s in record.seats}, where
    for s in record.seats:
        got = by_seat[s.seat]
        at = f"{where} seat {s.seat} ({s.why})"
        assert got.hand.category.key == s.hand, f"{at}: hand {got.hand.name}"
        assert got.outcome == s.outcome, f"{at}: outcome"
        wagers = {r.wager: r.net_cents for r in got.results}
        assert wagers == dict(s.expect), (
            f"{at}: wager nets {wagers} != recorded {dict(s.expect)};"
            f" reasons: {[r.reason for r in got.results]}"
        )
        assert got.net_cents == s.net, at
        assert got.markers_used == s.wagers.markers, f"{at}: markers used"
    assert hand.nets_cents() == {s.seat: s.net for s in record.seats}, where

    rebuilt = replay(hand.events, paytables=paytables)
    assert rebuilt.state() == hand.state(), f"{where}: replay differs"
    assert rebuilt.events == hand.events, where


@pytest.mark.parametrize("path", HEATS)
def test_heat_replays(
    path: Path, paytables: Paytables, settings_rules: dict[str, StageRules]
) -> None:
    """Play the recorded heat through TableSession; every net, score and ending as recorded."""
    heat = load_heat(path)
    rules = settings_rules[heat.stage]
    table = TableSession(table_id=heat.table, rules=rules, paytables=paytables, deal=DEFAULT_DEAL)
    expected_ended: list[EntryEnded] = []
    for record in heat.hands:
        where = f"{heat.id} hand {record.number}"
        for e in heat.entries:
            if e.joins_before_hand == record.number:
                table.seat_entry(Entry.start(entry_id=e.entry, rules=rules), e.seat)
        assert {s: e.entry_id for s, e in table.seats.items()} == seated_at(heat, record.number)
        before = {s: e.balance_cents for s, e in table.seats.items()}

        hand = table.open_hand(f"{heat.id}-{heat.table}-H{record.number:02d}")
        _play_hand(hand, record)
        _check_hand(hand, record, paytables, where)
        ended = table.close_hand()

        for s in record.seats:
            entry_id = seated_at(heat, record.number)[s.seat]
            if s.seat in table.seats:
                assert table.seats[s.seat].balance_cents == before[s.seat] + s.net, where
            ending = next(e for e in heat.entries if e.entry == entry_id)
            if ending.last_hand == record.number:
                expected_ended.append(EntryEnded(
                    entry_id=entry_id, seat=s.seat,
                    status=EntryStatus(ending.ends), score_cents=ending.score,
                    hands_played=ending.hands_played,
                    markers_forfeited=ending.markers_forfeited, hand_id=hand.hand_id,
                ))
        assert [e.entry_id for e in ended] == [
            e.entry_id for e in expected_ended if e.hand_id == hand.hand_id
        ], f"{where}: entries ending after this hand"

    assert table.ended == tuple(expected_ended), _ended_diff(table.ended, expected_ended)
    assert not table.seats, "every entry has ended"


def _ended_diff(got: Sequence[EntryEnded], want: Sequence[EntryEnded]) -> str:
    lines = ["entries ended (got | recorded):"]
    for g, w in zip(got, want, strict=False):
        lines.append(
            f"  {g.entry_id} {g.status.value} {format_rand(g.score_cents)} {g.hands_played} hands"
            f" {g.markers_forfeited} forfeited | {w.entry_id} {w.status.value}"
            f" {format_rand(w.score_cents)} {w.hands_played} hands {w.markers_forfeited} forfeited"
        )
    return "\n".join(lines)
