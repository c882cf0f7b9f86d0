"""Deck integrity at one table: every shuffle's dealt cards checked for composition and for
being unshuffled or preset (issue 13 point 2; docs/deck-integrity.md).

The game deals one hand from each shuffle of one 52-card deck (rules.md §0, §4.1), so a hand's
cards are one shuffle's. When a hand ends, `DeckWatch.hand_ended` looks at what left the shoe:

* **composition**: the cards placed (after corrections) and the shoe reads the hand set aside
  as a repeat (`duplicate_card`), beyond the deal (`extra_card`) or before no more bets: a card
  twice, or more than 52, means a foreign card or a second deck. (The hand itself already
  refuses to place a card twice; this catches the repeated read a dealer set aside.)
* **successions** (`game.decks.statistics`): near pairs in a new-deck order, suit or rank;
* **repeats**: a long run in the same order as, or many positions equal to, one of the
  ``repeat_window`` shuffles before (a preset or stacked deck);
* **chi-square**: every ``chi_window`` shuffles, rank by position over the first
  ``chi_positions`` cards, at the 95% level Maryland COMAR 36.05.02.17 F asks for.

A per-deck finding is a ``deck_suspect`` alert carrying its evidence; it holds the next hand
(no more bets is refused) until a supervisor clears the ``deck`` hold with a reason after
counting or replacing the deck. One failing chi-square window (5% of windows by definition)
is a ``deck_review`` alert that blocks nothing; two failing windows in a row are a
``deck_suspect``. Pure: the state is rebuilt by replaying the same hands.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final

from game.decks.statistics import (
    ORDERS,
    chi_square_by_position,
    longest_common_run,
    run_chance,
    same_positions,
    same_positions_chance,
    successions,
)
from game.errors import IllegalAction
from game.hand import Hand
from game.hand.events import AlertRaised, CardRead
from game.poker.cards import Card

__all__ = ["DECK_ROLE", "DeckFinding", "DeckLimits", "DeckWatch", "Shuffle", "shuffle_of"]

DECK_ROLE: Final = "deck"  # the role a supervisor's clear_fault names to lift a deck hold
_STRAY_KINDS: Final = frozenset({"duplicate_card", "extra_card", "card_before_bets"})
_DECK: Final = 52
_RANK_CHARS: Final = "23456789TJQKA"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeckLimits:
    """The thresholds (docs/deck-integrity.md gives the false-alarm arithmetic)."""

    alarm_p: float = 1e-5  # a per-deck test alarms when chance alone explains it less often
    gap: int = 3  # successions: adjacent pairs, and pairs at most this many positions apart
    repeat_window: int = 50  # earlier shuffles a deck is compared with
    chi_window: int = 100  # shuffles per chi-square window (expected count 100/13 >= 5)
    chi_positions: int = 9  # the first positions (every deal sequence deals at least 9)
    chi_level: float = 0.05  # 95% confidence


@dataclass(frozen=True, slots=True, kw_only=True)
class Shuffle:
    """What one shuffle dealt: the cards placed in shoe order and the reads set aside."""

    hand_id: str
    cards: tuple[Card, ...]
    strays: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeckFinding:
    """One suspicious result: ``kind`` is the alert (deck_suspect or deck_review), ``test``
    which check, ``evidence`` the statistic, cards, positions and hand ids."""

    kind: str
    test: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def blocking(self) -> bool:
        """True when the next hand waits for a supervisor."""
        return self.kind == "deck_suspect"


def shuffle_of(hand: Hand) -> Shuffle:
    """The shuffle a finished hand dealt: its placed cards and the shoe reads it set aside."""
    strays: list[Card] = []
    last: CardRead | None = None
    for event in hand.events:
        if isinstance(event, CardRead):
            last = event
        elif (isinstance(event, AlertRaised) and event.kind in _STRAY_KINDS and last is not None
              and last.source == "shoe" and event.card == last.card):
            strays.append(last.card)
    return Shuffle(hand_id=hand.hand_id, cards=tuple(c for _, c in hand.cards()),
                   strays=tuple(strays))


@dataclass(frozen=True, slots=True)
class _Trace:
    """What the repeat checks compare of one shuffle, made once: its cards' indices, its
    pairs of successive cards, and (position, card) for each position."""

    cards: tuple[Card, ...]
    indices: frozenset[int]
    pairs: frozenset[tuple[int, int]]
    placed: frozenset[tuple[int, int]]

    @classmethod
    def of(cls, cards: tuple[Card, ...]) -> _Trace:
        order = [c.index for c in cards]
        return cls(cards, frozenset(order), frozenset(pairwise(order)),
                   frozenset(enumerate(order)))


class DeckWatch:
    """The checks and their window state for one table; see the module docstring."""

    def __init__(self, limits: DeckLimits | None = None) -> None:
        self.limits = limits or DeckLimits()
        self.recent: deque[Shuffle] = deque(maxlen=self.limits.repeat_window)
        self.window: list[Shuffle] = []  # the chi-square window being filled
        self.windows_failed_in_row = 0
        self.windows_tested = 0
        self.windows_failed = 0
        self.last_window: dict[str, Any] | None = None
        self.holds: list[DeckFinding] = []  # blocking findings not yet cleared
        self.shuffles = 0
        self._traces: dict[int, _Trace] = {}  # id of a shuffle's cards -> its trace

    # ---- one hand's end -----------------------------------------------------------------

    def hand_ended(self, hand: Hand) -> tuple[DeckFinding, ...]:
        """Check the finished hand's shuffle; blocking findings hold the next hand."""
        return self.check(shuffle_of(hand))

    def check(self, shuffle: Shuffle) -> tuple[DeckFinding, ...]:
        """Check one shuffle and add it to the windows; the findings, blocking ones held."""
        self.shuffles += 1
        found = [*self._composition(shuffle), *self._successions(shuffle),
                 *self._repeats(shuffle), *self._chi_square(shuffle)]
        if shuffle.cards:
            self.recent.append(shuffle)
        self.holds.extend(f for f in found if f.blocking)
        return tuple(found)

    # ---- the supervisor -----------------------------------------------------------------

    @property
    def held(self) -> bool:
        """True while a deck finding holds the next hand."""
        return bool(self.holds)

    def refusal(self) -> str:
        """Why no more bets is refused while a deck is held."""
        tests = ", ".join(sorted({f.test for f in self.holds}))
        hands = ", ".join(sorted({h for f in self.holds for h in f.evidence.get("hand_ids", [])}))
        return (f"the deck is suspect ({tests}; hands {hands}): count or replace the deck, then"
                f" a supervisor clears the {DECK_ROLE!r} hold with a reason")

    def clear(self) -> tuple[DeckFinding, ...]:
        """Lift the hold (the caller records who and why); refused when nothing is held."""
        if not self.holds:
            raise IllegalAction(f"no {DECK_ROLE!r} hold is open")
        cleared, self.holds = tuple(self.holds), []
        return cleared

    def status(self) -> dict[str, Any]:
        """A summary for the table status: holds, shuffles checked, the last window."""
        return {"held": [f.test for f in self.holds], "shuffles": self.shuffles,
                "windows_tested": self.windows_tested, "windows_failed": self.windows_failed,
                "window_fill": len(self.window),
                "failed_in_row": self.windows_failed_in_row, "last_window": self.last_window}

    # ---- the checks ---------------------------------------------------------------------

    def _composition(self, shuffle: Shuffle) -> list[DeckFinding]:
        out = shuffle.cards + shuffle.strays
        twice = sorted(c for c, n in Counter(out).items() if n > 1)
        found: list[DeckFinding] = []
        if twice:
            names = " ".join(str(c) for c in twice)
            found.append(_suspect("composition", f"{names} left the shoe twice in one shuffle"
                                  " (a foreign card or a second deck): count the deck",
                                  shuffle, duplicates=[str(c) for c in twice],
                                  cards_out=len(out)))
        if len(out) > _DECK:
            found.append(_suspect("composition", f"{len(out)} cards left the shoe in one"
                                  f" shuffle of a {_DECK}-card deck", shuffle, cards_out=len(out)))
        return found

    def _successions(self, shuffle: Shuffle) -> list[DeckFinding]:
        found = []
        gaps = sorted({1, self.limits.gap})  # runs (adjacent pairs) and near pairs (riffles)
        for order in ORDERS:
            result = min((successions(shuffle.cards, order, gap=g) for g in gaps),
                         key=lambda r: r.p_value)
            p_value = min(1.0, result.p_value * len(gaps))  # Bonferroni over the two gaps
            if p_value >= self.limits.alarm_p:
                continue
            pairs = [{"positions": [i, j], "cards": [str(shuffle.cards[i]),
                                                    str(shuffle.cards[j])]}
                     for i, j in result.pairs]
            found.append(_suspect(
                f"succession_{order}",
                f"{result.count} pairs of cards at most {result.gap} apart dealt in new-deck"
                f" {order} order (chance expects {result.expected:.1f}; p = {p_value:.2g}):"
                " the deck looks unshuffled", shuffle, statistic=result.count,
                expected=_sig(result.expected), p_value=_sig(p_value),
                threshold=self.limits.alarm_p, gap=result.gap, pairs=pairs))
        return found

    def _trace(self, cards: tuple[Card, ...]) -> _Trace:
        """The shuffle's trace, made once while it is in the window."""
        trace = self._traces.get(id(cards))
        if trace is None or trace.cards is not cards:
            if len(self._traces) > 2 * (self.limits.repeat_window + 1):  # keep the window's
                live = {id(s.cards) for s in self.recent}  # (a trace holds its cards: ids stay)
                self._traces = {k: t for k, t in self._traces.items() if k in live}
            trace = self._traces[id(cards)] = _Trace.of(cards)
        return trace

    def _repeats(self, shuffle: Shuffle) -> list[DeckFinding]:
        cards, alarm = shuffle.cards, self.limits.alarm_p
        window = len(self.recent)
        found: list[DeckFinding] = []
        mine = self._trace(cards)
        for earlier in reversed(self.recent):
            theirs = self._trace(earlier.cards)
            n, m = len(cards), len(earlier.cards)
            # No pair of successive cards in common: the longest common run is one card at
            # most, and a run's chance only falls as it grows, so one card's decides.
            if mine.pairs.isdisjoint(theirs.pairs) and (
                    mine.indices.isdisjoint(theirs.indices)
                    or window * run_chance(1, n, m) >= alarm):
                run = None
            else:
                run = longest_common_run(cards, earlier.cards)
                chance = window * run_chance(run.length, n, m)
            if run is not None and run.length and chance < alarm:
                dealt = cards[run.start:run.start + run.length]
                found.append(_suspect(
                    "repeated_run", f"{run.length} cards dealt in the same order as hand"
                    f" {earlier.hand_id} (chance {chance:.2g}): a preset or repeated deck",
                    shuffle, earlier, statistic=run.length, p_value=_sig(chance),
                    threshold=alarm, cards=[str(c) for c in dealt],
                    positions=[run.start, run.earlier_start]))
                break
            if mine.placed.isdisjoint(theirs.placed):
                continue  # no position holds the same card
            same = same_positions(cards, earlier.cards)
            chance = window * same_positions_chance(len(same), n, m)
            if same and chance < alarm:
                found.append(_suspect(
                    "repeated_positions", f"{len(same)} positions hold the same cards as in"
                    f" hand {earlier.hand_id} (chance {chance:.2g}): a stacked deck",
                    shuffle, earlier, statistic=len(same), p_value=_sig(chance),
                    threshold=alarm, positions=list(same),
                    cards=[str(cards[i]) for i in same]))
                break
        return found

    def _chi_square(self, shuffle: Shuffle) -> list[DeckFinding]:
        limits = self.limits
        if len(shuffle.cards) < limits.chi_positions:
            return []  # a void hand that dealt too few cards counts for the per-deck tests only
        self.window.append(shuffle)
        if len(self.window) < limits.chi_window:
            return []
        window, self.window = self.window, []
        result = chi_square_by_position([s.cards for s in window], limits.chi_positions)
        self.windows_tested += 1
        failed = result.p_value < limits.chi_level
        self.windows_failed_in_row = self.windows_failed_in_row + 1 if failed else 0
        self.windows_failed += failed
        evidence: dict[str, Any] = {
            "test": "chi_square", "statistic": round(result.statistic, 3), "df": result.df,
            "p_value": _sig(result.p_value), "level": limits.chi_level, "shuffles": len(window),
            "positions": limits.chi_positions, "failed_in_row": self.windows_failed_in_row,
            "hand_ids": [window[0].hand_id, window[-1].hand_id],
            "worst_cells": [{"position": p, "rank": _RANK_CHARS[r], "observed": o,
                             "expected": round(e, 2)} for p, r, o, e in result.worst],
        }
        self.last_window = {k: evidence[k] for k in ("statistic", "df", "p_value", "hand_ids")}
        if not failed:
            return []
        words = (f"chi-square {result.statistic:.1f} on {result.df} df (p = {result.p_value:.3g})"
                 f" for rank by position over hands {window[0].hand_id}..{window[-1].hand_id}")
        if self.windows_failed_in_row < 2:
            return [DeckFinding(kind="deck_review", test="chi_square", evidence=evidence,
                                message=f"{words} fails at 95%: review the shuffle (one window"
                                        " in twenty fails by chance)")]
        return [DeckFinding(kind="deck_suspect", test="chi_square", evidence=evidence,
                            message=f"{words} fails at 95%, {self.windows_failed_in_row}"
                                    " windows in a row: check the shuffler")]


def _suspect(test: str, message: str, shuffle: Shuffle, earlier: Shuffle | None = None,
             **evidence: Any) -> DeckFinding:
    hands = [shuffle.hand_id] + ([earlier.hand_id] if earlier is not None else [])
    return DeckFinding(kind="deck_suspect", test=test, message=message,
                       evidence={"test": test, "hand_ids": hands, **evidence})


def _sig(value: float) -> float:
    """Three significant figures, for the evidence (the message and the journal keep it)."""
    return float(f"{value:.3g}")
