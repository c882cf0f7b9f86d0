"""The deal sequence as data: which seat, dealer hole, burn or board slot each card read fills.

The reading shoe reports cards in the order they leave it; `DealSequence.targets(seats)` says
where the i-th card read belongs, for the seats in the hand only. rules.md §0 item 5 is the
default; rules.md §4.1 (a) (UTH style: five board cards read face down after the holes) and
(b) (Hold'em style, optional burns) are both expressible. Config format (a mapping, e.g. the
``[deal]`` table of a TOML file)::

    hole = "passes"     # "passes": one card at a time, two rounds; "packets": two at a time
    dealer = "last"     # the dealer's place in each round: "last" or "first"
    board = [{burn = 1, cards = 3}, {burn = 1, cards = 2}]   # read groups after the holes

The board groups, in shoe order, hold 5 cards in all. Either they end exactly at the flop
(3 cards) and at the river (5), with the turn and river together or apart; or there is one
group of all five, read face down right after the holes, whose streets the dealer reveals
from the console (`face_down`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from game.errors import ConfigError, IllegalAction

__all__ = [
    "BOARD_CARDS",
    "DEFAULT_DEAL",
    "MAX_BURN",
    "MAX_SEATS",
    "STREETS",
    "UTH_DEAL",
    "BoardGroup",
    "DealSequence",
    "Target",
    "TargetKind",
    "parse_deal_sequence",
    "street_of_board",
]

MAX_SEATS: Final = 6
BOARD_CARDS: Final = 5
MAX_BURN: Final = 3
STREETS: Final = ("flop", "turn_river")
_FLOP_CARDS: Final = 3

TargetKind = Literal["seat", "dealer", "burn", "board"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where one card read goes: a seat's or the dealer's hole card (0, 1), a burn or a board slot.

    ``seat`` is set for seat cards only; ``index`` is the hole card (0, 1), the burn (0, 1, ...)
    or the board slot (0..4: flop 0-2, turn 3, river 4).
    """

    kind: TargetKind
    index: int
    seat: int | None = None

    def __str__(self) -> str:
        if self.kind == "seat":
            return f"seat {self.seat} hole card {self.index + 1}"
        if self.kind == "dealer":
            return f"dealer hole card {self.index + 1}"
        if self.kind == "burn":
            return f"burn card {self.index + 1}"
        return ("flop card 1", "flop card 2", "flop card 3", "turn", "river")[self.index]


def street_of_board(index: int) -> str:
    """The street a board slot belongs to: "flop" (0-2) or "turn_river" (3-4)."""
    return STREETS[0] if index < _FLOP_CARDS else STREETS[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardGroup:
    """One read group after the holes: ``burn`` cards burned, then ``cards`` board cards."""

    burn: int
    cards: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DealSequence:
    """The canonical order of a deal; defaults to rules.md §0 item 5."""

    hole: Literal["passes", "packets"] = "passes"
    dealer: Literal["last", "first"] = "last"
    board: tuple[BoardGroup, ...] = (BoardGroup(burn=1, cards=3), BoardGroup(burn=1, cards=2))

    def __post_init__(self) -> None:
        _check_board(self.board, "<deal>")

    @property
    def face_down(self) -> bool:
        """True when all five board cards are read at once and the streets revealed by console."""
        return len(self.board) == 1

    def targets(self, seats: Sequence[int]) -> tuple[Target, ...]:
        """Where each card read goes, in shoe order, for these seats (1..6, in seat order)."""
        _check_seats(seats)
        order: list[int | None] = list(seats)
        if self.dealer == "last":
            order.append(None)
        else:
            order.insert(0, None)
        out: list[Target] = []
        if self.hole == "passes":
            for index in (0, 1):
                out.extend(_hole(who, index) for who in order)
        else:
            for who in order:
                out.extend(_hole(who, index) for index in (0, 1))
        burns = 0
        slot = 0
        for group in self.board:
            for _ in range(group.burn):
                out.append(Target(kind="burn", index=burns))
                burns += 1
            for _ in range(group.cards):
                out.append(Target(kind="board", index=slot))
                slot += 1
        return tuple(out)

    def describe(self) -> str:
        """The sequence in words, for logs and the dealer's screen."""
        holes = "one card at a time, two rounds" if self.hole == "passes" else "two-card packets"
        parts = [f"holes {holes}, dealer {self.dealer}"]
        for group in self.board:
            label = "board face down" if self.face_down else "board"
            burn = f"burn {group.burn}, " if group.burn else ""
            parts.append(f"{burn}{label} {group.cards}")
        return "; ".join(parts)


def _hole(who: int | None, index: int) -> Target:
    if who is None:
        return Target(kind="dealer", index=index)
    return Target(kind="seat", index=index, seat=who)


def _check_seats(seats: Sequence[int]) -> None:
    last = 0
    for seat in seats:
        if isinstance(seat, bool) or not isinstance(seat, int) or not 1 <= seat <= MAX_SEATS:
            raise IllegalAction(f"seat {seat!r} is not a seat number 1..{MAX_SEATS}")
        if seat <= last:
            raise IllegalAction(f"seats must be distinct and in seat order, got {list(seats)}")
        last = seat


def _check_board(board: object, source: str) -> None:
    if not isinstance(board, tuple) or not board:
        raise ConfigError(source, "board", "at least one read group of board cards is needed")
    bounds: list[int] = []
    total = 0
    for i, group in enumerate(board):
        key = f"board[{i}]"
        if not isinstance(group, BoardGroup):
            raise ConfigError(source, key, "a read group has 'burn' and 'cards'")
        for name, value, low, high in (
            ("burn", group.burn, 0, MAX_BURN),
            ("cards", group.cards, 1, BOARD_CARDS),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(source, f"{key}.{name}", f"must be a whole number {low}..{high}")
        total += group.cards
        bounds.append(total)
    if total != BOARD_CARDS:
        raise ConfigError(source, "board", f"the groups hold {total} board cards, not 5")
    if len(board) > 1 and (bounds[0] != _FLOP_CARDS or any(b < _FLOP_CARDS for b in bounds)):
        raise ConfigError(
            source,
            "board",
            "groups must end exactly at the flop (3 cards) and the river (5), or be one group "
            "of all five read face down",
        )


_KEYS: Final = frozenset({"hole", "dealer", "board"})
_GROUP_KEYS: Final = frozenset({"burn", "cards"})


def parse_deal_sequence(data: Mapping[str, object], *, source: str = "<deal>") -> DealSequence:
    """Build a DealSequence from a config mapping; refuses anything off-format with ConfigError."""
    if not isinstance(data, Mapping):
        raise ConfigError(source, "", "the deal sequence is a table of settings")
    unknown = sorted(str(k) for k in data if k not in _KEYS)
    if unknown:
        raise ConfigError(source, unknown[0], f"unknown setting; known: {', '.join(sorted(_KEYS))}")
    hole = data.get("hole", "passes")
    if hole not in ("passes", "packets"):
        raise ConfigError(source, "hole", f"{hole!r} is not 'passes' or 'packets'")
    dealer = data.get("dealer", "last")
    if dealer not in ("last", "first"):
        raise ConfigError(source, "dealer", f"{dealer!r} is not 'last' or 'first'")
    raw_board = data.get("board", [{"burn": 1, "cards": 3}, {"burn": 1, "cards": 2}])
    if isinstance(raw_board, str | bytes) or not isinstance(raw_board, Sequence):
        raise ConfigError(source, "board", "a list of read groups such as {burn = 1, cards = 3}")
    groups: list[BoardGroup] = []
    for i, raw in enumerate(raw_board):
        key = f"board[{i}]"
        if not isinstance(raw, Mapping):
            raise ConfigError(source, key, "a read group is a table {burn = N, cards = N}")
        extra = sorted(str(k) for k in raw if k not in _GROUP_KEYS)
        if extra:
            raise ConfigError(source, f"{key}.{extra[0]}", "unknown setting; known: burn, cards")
        if "cards" not in raw:
            raise ConfigError(source, f"{key}.cards", "missing: how many board cards")
        burn, cards = raw.get("burn", 0), raw["cards"]
        for name, value in (("burn", burn), ("cards", cards)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(source, f"{key}.{name}", f"{value!r} is not a whole number")
        assert isinstance(burn, int)
        assert isinstance(cards, int)
        groups.append(BoardGroup(burn=burn, cards=cards))
    board = tuple(groups)
    _check_board(board, source)
    return DealSequence(
        hole="passes" if hole == "passes" else "packets",
        dealer="last" if dealer == "last" else "first",
        board=board,
    )


DEFAULT_DEAL: Final = DealSequence()
UTH_DEAL: Final = DealSequence(board=(BoardGroup(burn=0, cards=5),))
