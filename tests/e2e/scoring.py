"""Each entry's score recomputed from its recorded hands (rules 14, 15, 34, 50
and the decisions in docs/decisions/), and whether it counts on its stage's board.

The score is the entry's chips after its last hand: the stage's starting chips plus the net of
every hand it played, where a voided hand counts for nobody (no chips, no hand) and a
supervisor's ruling at the table (``hand.corrected``) replaces the hand's net or voids it.
Unused Final markers add their value only under ``unused_markers = "count_at_value"``. A
score counts on the board when the entry's buy-in was not refunded, the patron was not
disqualified, neither the table nor a supervisor voided it, it came from the table the entry
played at, and (with ``acknowledged_only``) the participant acknowledged it; a supervisor's
correction counts in place of the table's figure and, if never acknowledged, counts as
acknowledged at the ruling.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime

from game.money import format_rand
from tests.e2e.records import (
    Acknowledgement,
    DeskRuling,
    EntryFact,
    Evidence,
    HandCorrection,
    RecordedHand,
    ScoreMessage,
)
from tests.e2e.rules import Rules

__all__ = ["ENDED_EARLY", "FINISHED", "UNFINISHED", "WITHDRAWN", "EntryScore", "score_entries"]

FINISHED = "finished"
ENDED_EARLY = "ended_early"
WITHDRAWN = "withdrawn"
UNFINISHED = "unfinished"
_REFUNDED = "refunded"


@dataclass(slots=True, kw_only=True)
class EntryScore:
    """One entry's stage recomputed: chips, hands, how it ended, and how it stands."""

    entry_id: str
    patron_id: str
    stage: str
    heat_day: date | None
    hands: int = 0
    balance_cents: int = 0
    markers_used: int = 0
    status: str = UNFINISHED
    score_cents: int | None = None  # the table's figure, as the hands give it
    counted_cents: int | None = None  # what the board counts (a supervisor's correction)
    table: str | None = None  # the table whose score.recorded is taken
    recorded_at: datetime | None = None
    acknowledged_at: datetime | None = None  # as the board counts it
    counts: bool = False
    why_not: str | None = None  # why it is not on the board
    problems: list[str] = field(default_factory=list)


def _corrections(evidence: Evidence) -> dict[tuple[str, str], HandCorrection]:
    out: dict[tuple[str, str], HandCorrection] = {}
    for c in sorted(evidence.corrections, key=lambda c: (c.table, c.seq)):
        out[(c.hand_id, c.entry_id)] = c  # a hand is ruled on once per entry
    return out


def _play(score: EntryScore, hands: list[RecordedHand], rules: Rules,
          corrections: dict[tuple[str, str], HandCorrection]) -> list[str]:
    """Apply the entry's hands in order; returns the tables it played at (in order)."""
    stage = rules.stage(score.stage)
    score.balance_cents = stage.starting_cents
    tables: list[str] = []
    least = rules.least_stake_cents
    for hand in sorted(hands, key=lambda h: (h.at, h.table, h.seq)):
        seat = next(s for s in hand.seats if s.entry_id == score.entry_id)
        if hand.status != "settled":
            if seat.net_cents != 0:
                score.problems.append(f"voided hand {hand.hand_id} has a net of"
                                      f" {format_rand(seat.net_cents)}")
            continue
        net = seat.net_cents
        ruling = corrections.get((hand.hand_id, score.entry_id))
        if ruling is not None:
            if ruling.recorded_net != seat.net_cents:
                score.problems.append(
                    f"hand {hand.hand_id}: the ruling says it was settled at"
                    f" {format_rand(ruling.recorded_net)}, the hand says"
                    f" {format_rand(seat.net_cents)}")
            if ruling.ruling == "hand_voided":
                continue
            net = ruling.counted_net
        if score.hands >= stage.hands:
            score.problems.append(f"hand {hand.hand_id} is beyond the stage's {stage.hands}")
        elif score.balance_cents < least:
            score.problems.append(
                f"hand {hand.hand_id} was dealt to an entry holding"
                f" {format_rand(score.balance_cents)}, below the least stake"
                f" {format_rand(least)}")
        if seat.chips_wagered_cents > score.balance_cents:
            score.problems.append(
                f"hand {hand.hand_id}: {format_rand(seat.chips_wagered_cents)} wagered with"
                f" {format_rand(score.balance_cents)} held")
        score.balance_cents += net
        score.hands += 1
        score.markers_used += seat.markers_used
        if score.balance_cents < 0:
            score.problems.append(f"hand {hand.hand_id} leaves"
                                  f" {format_rand(score.balance_cents)}")
        if not tables or tables[-1] != hand.table:
            tables.append(hand.table)
    if score.markers_used > stage.markers:
        score.problems.append(f"{score.markers_used} markers used of {stage.markers}")
    return tables


def _ending(score: EntryScore, rules: Rules, withdrawn: bool) -> None:
    stage = rules.stage(score.stage)
    if score.hands >= stage.hands:
        score.status = FINISHED
    elif score.balance_cents < rules.least_stake_cents:
        score.status = ENDED_EARLY
    elif withdrawn:
        score.status = WITHDRAWN
    else:
        score.status = UNFINISHED
    if score.status in (FINISHED, ENDED_EARLY):
        unused = max(stage.markers - score.markers_used, 0)
        extra = unused * rules.marker_value_cents if rules.unused_markers == "count_at_value" else 0
        score.score_cents = score.balance_cents + extra


def _acknowledgement(message: ScoreMessage, acks: list[Acknowledgement],
                     figure: int) -> Acknowledgement | None:
    for ack in sorted(acks, key=lambda a: (a.table, a.seq)):
        if ack.table == message.table and ack.seq > message.seq and ack.score_cents == figure:
            return ack
    return None


def _standing(score: EntryScore, entry: EntryFact, rules: Rules, *,
              messages: list[ScoreMessage], acks: list[Acknowledgement],
              table_voided: set[tuple[str, str]], rulings: list[DeskRuling],
              played_at: list[str]) -> None:
    """Which recorded score is the entry's, and whether (and as what) the board counts it."""
    if score.score_cents is None:
        score.why_not = score.status
        if messages:
            score.problems.append(
                f"a score was recorded ({', '.join(format_rand(m.score_cents) for m in messages)})"
                f" but the hands leave the entry {score.status} after {score.hands} hands")
        return
    home = entry.table or (played_at[-1] if played_at else None)
    mine = [m for m in messages if home is None or m.table == home]
    if not mine:
        score.why_not = "no score recorded" if not messages else "stale"
        return
    message = min(mine, key=lambda m: m.seq)
    score.table, score.recorded_at = message.table, message.at
    ack = _acknowledgement(message, acks, message.score_cents)
    score.acknowledged_at = ack.at if ack is not None else None
    score.counted_cents = score.score_cents
    ruled = sorted(rulings, key=lambda r: r.at)
    if any(r.kind == "voided" for r in ruled):
        score.why_not = "voided"
    corrected = [r for r in ruled if r.kind == "corrected" and r.cents is not None]
    if corrected:
        score.counted_cents = corrected[-1].cents
        if score.acknowledged_at is None:
            score.acknowledged_at = corrected[-1].at
    if entry.status == _REFUNDED:
        score.why_not = "refunded"
    elif entry.disqualified:
        score.why_not = "disqualified"
    elif (message.table, message.entry_id) in table_voided:
        score.why_not = "voided"
    elif score.why_not is None and rules.acknowledged_only and score.acknowledged_at is None:
        score.why_not = "unacknowledged"
    score.counts = score.why_not is None


def score_entries(evidence: Evidence, rules: Rules) -> dict[str, EntryScore]:
    """Every entry's (and place's) stage recomputed from the recorded hands and desk facts."""
    hands_of: dict[str, list[RecordedHand]] = defaultdict(list)
    for hand in evidence.hands:
        for seat in hand.seats:
            if seat.entry_id is not None:
                hands_of[seat.entry_id].append(hand)
    messages: dict[str, list[ScoreMessage]] = defaultdict(list)
    for m in evidence.scores:
        messages[m.entry_id].append(m)
    acks: dict[str, list[Acknowledgement]] = defaultdict(list)
    for a in evidence.acknowledgements:
        acks[a.entry_id].append(a)
    rulings: dict[str, list[DeskRuling]] = defaultdict(list)
    for r in evidence.rulings:
        rulings[r.entry_id].append(r)
    voided = {(v.table, v.entry_id) for v in evidence.table_voids}
    withdrawn = {u.entry_id for u in evidence.unseatings}
    corrections = _corrections(evidence)
    out: dict[str, EntryScore] = {}
    for entry_id in sorted(set(evidence.entries) | set(hands_of)):
        entry = evidence.entries.get(entry_id)
        if entry is None:
            unknown = EntryScore(entry_id=entry_id, patron_id="?", stage="?", heat_day=None,
                                 why_not="no such entry at the desk")
            unknown.problems.append("hands were played by an entry the desk never sold")
            out[entry_id] = unknown
            continue
        score = EntryScore(entry_id=entry_id, patron_id=entry.patron_id, stage=entry.stage,
                           heat_day=entry.heat_day)
        played_at = _play(score, hands_of.get(entry_id, []), rules, corrections)
        if not hands_of.get(entry_id) and not messages.get(entry_id):
            score.status, score.why_not = UNFINISHED, "never played"
            out[entry_id] = score
            continue
        _ending(score, rules, entry_id in withdrawn)
        _standing(score, entry, rules, messages=messages.get(entry_id, []),
                  acks=acks.get(entry_id, []), table_voided=voided,
                  rulings=rulings.get(entry_id, []), played_at=played_at)
        out[entry_id] = score
    return out
