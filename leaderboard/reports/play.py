"""The play reports, per table, per dealer and per heat: hands played and voided, dealing time,
hands and player decisions per hour, side-bet take-up, alerts by kind and manual entries.

Pure: it counts `PlayFacts` (leaderboard.reports.reading). Dealing time is the sum of the
group's sittings: a sitting is a run of consecutive hands at one table in one heat (for a
dealer: also by the same dealer), from its first hand's no-more-bets to its last hand's
settlement or void. Hands per hour count settled hands; a voided hand counts for nobody but
its time is in the sitting.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

from game.wagers.settle import SIDE_BETS
from leaderboard.reports.attribution import (
    NO_DEALER,
    NO_HEAT,
    Dealer,
    DealerTimeline,
    HeatTimeline,
)
from leaderboard.reports.facts import DECISIONS, HandFact
from leaderboard.reports.reading import PlayFacts

__all__ = ["CHOICES", "MANUAL", "GroupBy", "PlayReport", "PlayRow", "SideBetUse",
           "play_report"]

GroupBy = Literal["table", "dealer", "heat"]
CHOICES: Final = ("play_3x", "play_2x", "play_1x", "check", "fold")
MANUAL: Final = ("cards_keyed", "wagers_keyed", "card_corrections", "alert_resolutions",
                 "payout_overrides", "rulings", "voids", "faults_cleared", "hands_marked_manual")


@dataclass(frozen=True, slots=True, kw_only=True)
class SideBetUse:
    """One side bet's take-up: seat-hands with the bet, the chips on it, the markers."""

    seat_hands: int
    share: float | None  # of all seat-hands of settled hands
    wagered_cents: int
    markers: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayRow:
    """One table's, dealer's or heat's figures."""

    key: str
    name: str | None  # the dealer's name, the table's venue, the heat's stage
    role: str | None  # a dealer's role when signed in
    tables: tuple[str, ...]
    hands_settled: int
    hands_voided: int
    seat_hands: int
    entries: int
    first: datetime | None
    last: datetime | None
    dealing_seconds: float
    hands_per_hour: float | None
    decisions: Mapping[str, int]
    decisions_total: int
    decisions_per_hour: float | None
    side_bets: Mapping[str, SideBetUse]
    alerts: Mapping[str, int]
    manual: Mapping[str, int]

    @property
    def alerts_total(self) -> int:
        """Every alert of the group."""
        return sum(self.alerts.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayReport:
    """The rows of one report and what the reader must know about the data."""

    by: GroupBy
    rows: tuple[PlayRow, ...]
    notes: tuple[str, ...]


@dataclass(slots=True)
class _Tally:
    hands: list[HandFact] = field(default_factory=list)
    runs: dict[int, list[HandFact]] = field(default_factory=lambda: defaultdict(list))
    alerts: Counter[str] = field(default_factory=Counter)
    manual: Counter[str] = field(default_factory=Counter)
    tables: set[str] = field(default_factory=set)
    role: str | None = None


def _per_hour(count: int, seconds: float) -> float | None:
    return None if seconds <= 0 else round(count * 3600 / seconds, 1)


def _row(key: str, name: str | None, tally: _Tally) -> PlayRow:
    settled = [h for h in tally.hands if h.settled]
    seats = [s for h in settled for s in h.seats]
    decisions: Counter[str] = Counter(dict.fromkeys(CHOICES, 0))
    for choice, times in Counter(s.choice for s in seats if s.choice is not None).items():
        for made, n in DECISIONS[choice].items():
            decisions[made] += n * times
    seconds = 0.0
    for run in tally.runs.values():
        start = min(h.opened for h in run)
        end = max(h.ended for h in run)
        seconds += max(0.0, (end - start).total_seconds())
    bets = {}
    for bet in SIDE_BETS:
        with_bet = [s for s in seats if s.has_bet(bet)]
        bets[bet] = SideBetUse(
            seat_hands=len(with_bet),
            share=None if not seats else round(len(with_bet) / len(seats), 4),
            wagered_cents=sum(s.wagers.get(bet, 0) for s in with_bet),
            markers=sum(1 for s in with_bet if bet in s.markers))
    manual = Counter(dict.fromkeys(MANUAL, 0))
    manual.update(tally.manual)
    for hand in tally.hands:
        manual["cards_keyed"] += hand.cards_keyed
        manual["wagers_keyed"] += sum(1 for s in hand.seats if s.keyed)
        manual["card_corrections"] += hand.corrections
        manual["alert_resolutions"] += hand.resolutions
        manual["voids"] += 0 if hand.settled else 1
        manual["hands_marked_manual"] += 1 if hand.manual else 0
    total = sum(decisions.values())
    opened = [h.opened for h in tally.hands]
    ended = [h.ended for h in tally.hands]
    return PlayRow(
        key=key, name=name, role=tally.role, tables=tuple(sorted(tally.tables)),
        hands_settled=len(settled), hands_voided=len(tally.hands) - len(settled),
        seat_hands=len(seats),
        entries=len({s.entry_id for h in tally.hands for s in h.seats if s.entry_id}),
        first=min(opened, default=None), last=max(ended, default=None),
        dealing_seconds=round(seconds, 3), hands_per_hour=_per_hour(len(settled), seconds),
        decisions=dict(decisions), decisions_total=total,
        decisions_per_hour=_per_hour(total, seconds), side_bets=bets,
        alerts=dict(sorted(tally.alerts.items())), manual=dict(manual))


def play_report(facts: PlayFacts, by: GroupBy) -> PlayReport:
    """The report of ``facts`` grouped by table, dealer or heat."""
    dealers = DealerTimeline(facts.staff)
    heats = HeatTimeline(facts.heats)
    dealt: dict[str, Dealer | None] = {}
    run_of: dict[str, int] = {}
    runs = 0
    by_table: dict[str, list[HandFact]] = defaultdict(list)
    for hand in facts.hands:
        by_table[hand.table].append(hand)
    for table in sorted(by_table):
        previous: tuple[str | None, Dealer | None] | None = None
        for hand in sorted(by_table[table], key=lambda h: (h.opened, h.hand_id)):
            dealt[hand.hand_id] = dealers.at(table, hand.opened)
            now = (hand.heat_id, dealt[hand.hand_id] if by == "dealer" else None)
            if now != previous:
                runs += 1
                previous = now
            run_of[hand.hand_id] = runs
    hand_by_id = {h.hand_id: h for h in facts.hands}

    def key_of(table: str, hand: HandFact | None, at: datetime | None) -> tuple[str, str | None]:
        if by == "table":
            return table, facts.tables.get(table)
        if by == "heat":
            heat = hand.heat_id if hand else (heats.at(table, at) if at else None)
            return heat or NO_HEAT, None
        who = dealt.get(hand.hand_id) if hand else (dealers.at(table, at) if at else None)
        if who is None:
            return NO_DEALER, None
        return who.staff_id, who.role

    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for hand in facts.hands:
        key, role = key_of(hand.table, hand, hand.opened)
        tally = tallies[key]
        tally.hands.append(hand)
        tally.runs[run_of[hand.hand_id]].append(hand)
        tally.tables.add(hand.table)
        tally.role = tally.role if by != "dealer" else role
    for alert in facts.alerts:
        of = hand_by_id.get(alert.hand_id or "")
        key, role = key_of(alert.table, of, alert.at)
        tallies[key].alerts[alert.kind] += 1
        tallies[key].tables.add(alert.table)
        if by == "dealer" and tallies[key].role is None:
            tallies[key].role = role
    for event in facts.events:
        of = hand_by_id.get(event.hand_id or "")
        if event.hand_id and of is None:
            continue  # an override or ruling of a hand outside the window
        key, _ = key_of(event.table, of, event.at)
        tallies[key].manual[_EVENT_FIELD[event.kind]] += 1
        tallies[key].tables.add(event.table)
    name: Callable[[str], str | None] = {
        "table": facts.tables.get,
        "dealer": facts.staff_names.get,
        "heat": lambda k: heats.stages.get(k) or _stage_of(tallies[k]),
    }[by]
    rows = tuple(_row(k, name(k), tallies[k]) for k in sorted(tallies, key=_order))
    return PlayReport(by=by, rows=rows, notes=_notes(facts, rows, by))


_EVENT_FIELD: Final = {"payout_override": "payout_overrides", "ruling": "rulings",
                       "fault_cleared": "faults_cleared"}


def _stage_of(tally: _Tally) -> str | None:
    stages = {h.stage for h in tally.hands if h.stage}
    return stages.pop() if len(stages) == 1 else None


def _order(key: str) -> tuple[bool, str]:
    return key.startswith("("), key


def _notes(facts: PlayFacts, rows: tuple[PlayRow, ...], by: GroupBy) -> tuple[str, ...]:
    notes: list[str] = []
    if not facts.hands:
        notes.append("no hands in this period")
    if by == "dealer":
        nobody = next((r for r in rows if r.key == NO_DEALER), None)
        if nobody is not None and nobody.hands_settled + nobody.hands_voided:
            hands = nobody.hands_settled + nobody.hands_voided
            notes.append(f"dealer not recorded for {hands} hand(s): nobody was signed in at"
                         f" the console of {', '.join(nobody.tables)} when they opened (no"
                         " staff.session sign-in published); they are not attributed")
        stand_ins = [r.key for r in rows if r.role not in (None, "dealer")]
        if stand_ins:
            notes.append(f"no dealer was signed in for some hands; attributed to the"
                         f" supervisor signed in: {', '.join(stand_ins)}")
    notes += [f"unreadable record: {u}" for u in facts.unreadable]
    return tuple(notes)
