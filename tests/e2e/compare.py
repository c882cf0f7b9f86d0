"""Recomputed vs shown: every difference between the independent recomputation
(`tests.e2e.recompute`) and what the system shows (`tests.e2e.observed`, the tables' own score
messages), one `Difference` (entry, what, expected, got) each.

Checked: each entry's score (the table's record, the central row: figure, counted figure,
hands, status, recording and acknowledgement times, void), every stage's board (order,
position, score, acknowledged, advancing), each prize week's leaders, the semi-final and
Final allocations (which entries, their positions and scores, their holders), the chosen
semi-final seats and the drawn Final seats against the tables' seatings, the draw against its
replay, the pools and their place shares, every prize award (amount, holder, deadline),
the remainders recorded with each award, the claims, and any problem found in the records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from game.money import format_rand
from tests.e2e.observed import Observed
from tests.e2e.recompute import Expected, Place
from tests.e2e.records import Evidence
from tests.e2e.rules import Rules
from tests.e2e.scoring import ENDED_EARLY, FINISHED

__all__ = ["Difference", "differences", "report"]


@dataclass(frozen=True, slots=True)
class Difference:
    """One thing the system shows otherwise than the recomputation."""

    entry: str
    what: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.entry}: {self.what}: expected {self.expected}, got {self.got}"


def _money(cents: int | None) -> str:
    return "none" if cents is None else format_rand(cents)


def _when(at: datetime | None) -> str:
    return "none" if at is None else at.astimezone(UTC).isoformat(timespec="milliseconds")


class _Diff:
    def __init__(self) -> None:
        self.found: list[Difference] = []

    def check(self, entry: str, what: str, expected: object, got: object) -> None:
        """Record a difference when `got` is not `expected`."""
        if expected != got:
            self.found.append(Difference(entry, what, str(expected), str(got)))


def _scores(d: _Diff, expected: Expected, observed: Observed, evidence: Evidence,
            rules: Rules) -> None:
    recorded: dict[str, list[Any]] = {}
    for m in evidence.scores:
        recorded.setdefault(m.entry_id, []).append(m)
    for entry_id, s in sorted(expected.scores.items()):
        row = observed.scores.get(entry_id)
        scored = s.status in (FINISHED, ENDED_EARLY)
        if not scored:
            if row is not None:
                d.check(entry_id, "central score", f"none ({s.status} after {s.hands} hands)",
                        _money(row.score_cents))
            continue
        mine = [m for m in recorded.get(entry_id, []) if m.table == s.table]
        for m in mine[:1]:
            d.check(entry_id, f"{m.table}'s score.recorded", _money(s.score_cents),
                    _money(m.score_cents))
            d.check(entry_id, f"{m.table}'s score.recorded hands", s.hands, m.hands)
            d.check(entry_id, f"{m.table}'s score.recorded status", s.status, m.status)
            if m.markers_forfeited is not None:
                d.check(entry_id, f"{m.table}'s score.recorded markers forfeited",
                        max(rules.stage(s.stage).markers - s.markers_used, 0),
                        m.markers_forfeited)
        if row is None:
            d.check(entry_id, "central score", _money(s.score_cents), "none")
            continue
        d.check(entry_id, "central score", _money(s.score_cents), _money(row.score_cents))
        d.check(entry_id, "central counted score", _money(s.counted_cents),
                _money(row.counted_cents))
        d.check(entry_id, "central hands", s.hands, row.hands)
        d.check(entry_id, "central status", s.status, row.status)
        d.check(entry_id, "central table", s.table, row.table)
        d.check(entry_id, "central recorded at", _when(s.recorded_at), _when(row.recorded_at))
        d.check(entry_id, "central acknowledged at", _when(s.acknowledged_at),
                _when(row.acknowledged_at))
        d.check(entry_id, "central voided", s.why_not == "voided", row.voided)


def _board(d: _Diff, what: str, places: Sequence[Place], rows: Sequence[Mapping[str, Any]],
           advance: int | None, *, expected: Expected) -> None:
    got = {r["entry_id"]: r for r in rows}
    for p in places:
        r = got.pop(p.entry_id, None)
        if r is None:
            d.check(p.entry_id, f"{what} board", f"position {p.position} with"
                    f" {_money(p.score_cents)}", "not on the board")
            continue
        d.check(p.entry_id, f"{what} board rank", p.rank, r["rank"])
        d.check(p.entry_id, f"{what} board position", p.position, r["position"])
        d.check(p.entry_id, f"{what} board score", _money(p.score_cents),
                _money(r["score_cents"]))
        mine = expected.scores.get(p.entry_id)
        d.check(p.entry_id, f"{what} board acknowledged",
                mine is not None and mine.acknowledged_at is not None, r["acknowledged"])
        if advance is not None:
            d.check(p.entry_id, f"{what} board advancing", p.rank <= advance, r["advancing"])
    for entry_id, r in sorted(got.items()):
        d.check(entry_id, f"{what} board", "not on the board",
                f"position {r['position']} with {_money(r['score_cents'])}")


def _cut_line(d: _Diff, stage: str, places: Sequence[Place], advance: int | None,
              note: str | None) -> None:
    """A tie across the cut is noted, naming every tied entry; none otherwise."""
    if advance is None or len(places) <= advance:
        d.check(stage, "cut-line tie note", None, note)
        return
    last = places[advance - 1].score_cents
    tied = [p.entry_id for p in places if p.score_cents == last]
    if places[advance].score_cents != last:
        d.check(stage, "cut-line tie note", None, note)
        return
    d.check(stage, "cut-line tie note", "a note", "a note" if note else None)
    for entry_id in tied:
        d.check(entry_id, f"{stage} cut-line tie note names the entry", True,
                entry_id in (note or ""))


def _around_board(d: _Diff, stage: str, expected: Expected, doc: Mapping[str, Any], *,
                  places: Sequence[Place], advance: int | None, rules: Rules) -> None:
    """What the page shows beside a board: the cut-line note, the counts of scores awaiting
    acknowledgement and voided, the pending list, and the scores it cannot rank."""
    board = doc["board"]
    _cut_line(d, stage, places, advance, board.get("cut_line_tie"))
    mine = [s for s in expected.scores.values() if s.stage == stage]
    waiting = sorted(s.entry_id for s in mine if s.why_not == "unacknowledged")
    d.check(stage, "scores awaiting acknowledgement", len(waiting),
            board["awaiting_acknowledgement"])
    d.check(stage, "voided scores", sum(1 for s in mine if s.why_not == "voided"),
            board["voided"])
    if rules.acknowledged_only and len(waiting) <= 10:  # the page lists the latest 10
        d.check(stage, "scores pending acknowledgement", waiting,
                sorted(p["entry_id"] for p in doc.get("pending", [])))


def _unranked(d: _Diff, expected: Expected, doc: Mapping[str, Any]) -> None:
    """Stored scores the page cannot rank: a refunded entry's, a disqualified patron's."""
    unranked = sorted(s.entry_id for s in expected.scores.values()
                      if s.why_not in ("refunded", "disqualified") and s.table is not None)
    shown = sorted(x["entry_id"] for x in doc.get("excluded", []))
    d.check("scores", "scores not ranked (refunded, disqualified)", unranked, shown)


def _boards(d: _Diff, expected: Expected, observed: Observed, rules: Rules) -> None:
    for stage, places, advance in (
            ("qualifying", expected.qualifying, rules.stage("qualifying").advance),
            ("semi_final", expected.semi, rules.stage("semi_final").advance),
            ("final", expected.final, None)):
        doc = observed.documents.get(stage)
        if doc is None:
            continue
        board = doc["board"]
        d.check(stage, "board counted", len(places), board["counted"])
        _board(d, stage, places, board["rows"], advance, expected=expected)
        _around_board(d, stage, expected, doc, places=places, advance=advance, rules=rules)
        if stage == "qualifying":
            _unranked(d, expected, doc)
    for week, shown in sorted(observed.weeks.items()):
        places = expected.weekly.get(week, [])
        leaders = sorted(p.entry_id for p in places if p.position == 1)
        d.check(f"week {week}", "weekly leaders", leaders,
                sorted(r["entry_id"] for r in shown["leaders"]))
        d.check(f"week {week}", "weekly counted scores", len(places), shown["counted"])


def _allocation(d: _Diff, stage: str, wanted: Sequence[str], before: Sequence[Place], *,
                observed: Observed, evidence: Evidence, complete: bool) -> None:
    allocated = observed.allocations.get(stage)
    if allocated is None:
        if wanted and complete:
            d.check(stage, "places allocated", ", ".join(wanted), "none")
        return
    got = [str(p["entry_id"]) for p in allocated]
    d.check(stage, "places allocated", sorted(wanted), sorted(got))
    source = {p.entry_id: p for p in before}
    for p in allocated:  # as the desk recorded them when it allocated
        earned = source.get(str(p.get("won_by")))
        if earned is not None:
            d.check(str(p["entry_id"]), f"{stage} allocation: position and score recorded",
                    (earned.position, earned.score_cents), (p.get("position"),
                                                            p.get("score_cents")))
    for shown in observed.desk_places.get(stage, []):
        won_by = source.get(str(shown["won_by"]))
        place_id = str(shown["entry_id"])
        if won_by is None:
            d.check(place_id, f"{stage} place earned by", "a counted score",
                    f"{shown['won_by']}, not counted")
            continue
        d.check(place_id, f"{stage} place: position of {won_by.entry_id}", won_by.position,
                shown["position"])
        d.check(place_id, f"{stage} place: score of {won_by.entry_id}",
                _money(won_by.score_cents), _money(shown["score_cents"]))
        d.check(place_id, f"{stage} place holder", won_by.patron_id, shown["holder"])
        fact = evidence.entries.get(place_id)
        d.check(place_id, f"{stage} place holder at the desk", won_by.patron_id,
                fact.patron_id if fact else "no entry")


def _seats(d: _Diff, stage: str, evidence: Evidence, draw: Mapping[str, int] | None) -> None:
    """The seats the desk gave (chosen or drawn) are where the tables seated the places."""
    seated = {s.entry_id: s for s in evidence.seatings}
    for fact in sorted(evidence.entries.values(), key=lambda e: e.entry_id):
        if fact.stage != stage:
            continue
        if draw is not None:
            d.check(fact.entry_id, "Final seat at the desk vs the draw", draw.get(fact.entry_id),
                    fact.seat)
        at = seated.get(fact.entry_id)
        if at is None:
            d.check(fact.entry_id, f"{stage} seating", f"seat {fact.seat}", "never seated")
            continue
        d.check(fact.entry_id, f"{stage} seat at {at.table}", fact.seat, at.seat)
        d.check(fact.entry_id, f"{stage} heat at {at.table}", fact.heat_id, at.heat_id)
        d.check(fact.entry_id, f"{stage} table", fact.table, at.table)


def _lineups(d: _Diff, expected: Expected, observed: Observed, evidence: Evidence) -> None:
    """The page's semi-final and Final line-ups: each place's heat, seat and table as the
    tables seated it, whether a proxy plays it, and its counted score."""
    seated = {s.entry_id: s for s in evidence.seatings}
    boards = {"semi_final": expected.semi, "final": expected.final}
    for stage, places in boards.items():
        doc = observed.documents.get(stage)
        if doc is None:
            continue
        shown = {s["entry_id"]: (h, s) for h in doc[stage]["heats"] for s in h["seats"]}
        scores = {p.entry_id: p.score_cents for p in places}
        facts = [e for e in evidence.entries.values()
                 if e.stage == stage and e.status != "refunded"]
        d.check(stage, "line-up places", sorted(e.entry_id for e in facts), sorted(shown))
        for e in facts:
            if e.entry_id not in shown:
                continue
            heat, seat = shown[e.entry_id]
            at = seated.get(e.entry_id)
            d.check(e.entry_id, f"{stage} line-up seat", at.seat if at else e.seat,
                    seat["seat"])
            d.check(e.entry_id, f"{stage} line-up heat", at.heat_id if at else e.heat_id,
                    heat["heat_id"])
            d.check(e.entry_id, f"{stage} line-up table", at.table if at else e.table,
                    heat["table"])
            d.check(e.entry_id, f"{stage} line-up proxy", e.played_by is not None,
                    seat["proxy"])
            score = seat["score"]["cents"] if seat["score"] is not None else None
            d.check(e.entry_id, f"{stage} line-up score", _money(scores.get(e.entry_id)),
                    _money(score))


def _draw(d: _Diff, expected: Expected, evidence: Evidence, rules: Rules,
          complete: bool) -> None:
    if evidence.draw is None:
        if complete and expected.final_places:
            d.check("final", "seat draw", "a stored draw", "none")
        return
    stored = evidence.draw
    d.check("final", "draw finalists", sorted(expected.final_places), sorted(stored.finalists))
    seats = rules.stage("final").seats_per_heat or 6
    d.check("final", "draw seats", list(range(1, seats + 1)), sorted(stored.seats))
    replayed = expected.draw or {}
    for finalist in sorted(set(replayed) | set(stored.result)):
        d.check(finalist, "drawn seat (stored vs replayed from the bytes)",
                replayed.get(finalist), stored.result.get(finalist))


def _pools(d: _Diff, expected: Expected, observed: Observed) -> None:
    doc = observed.documents.get("final") or observed.documents.get("qualifying")
    if doc is None:
        return
    pools, mine = doc["pools"], expected.pools
    d.check("pools", "paid entries", mine.entries, pools["entries"])
    d.check("pools", "buy-ins", _money(mine.total_cents), _money(pools["total"]["cents"]))
    d.check("pools", "Final Prize Pool", _money(mine.final_pool_cents),
            _money(pools["final_pool"]["cents"]))
    d.check("pools", "Top Score Progressive", _money(mine.top_score_cents),
            _money(pools["top_score"]["cents"]))
    d.check("pools", "pool split remainder", _money(mine.remainder_cents),
            _money(pools["remainder"]["cents"]))
    for key, kind in (("final_pool", "final"), ("top_score", "top_score")):
        book = expected.book(kind)
        if book is None:
            continue
        projected = sorted((p["entry_id"], p["cents"]) for p in pools[key]["projected"])
        d.check(kind, "projected prizes on the page",
                sorted((a.entry_id, a.amount_cents) for a in book.awards), projected)


def _awards(d: _Diff, expected: Expected, observed: Observed, *, complete: bool,
            now: datetime) -> None:
    kinds = ({"weekly", "top_score", "final"} if complete
             else {a.kind for a in observed.awards})
    want = {(a.kind, a.place, a.entry_id): a for b in expected.books if b.kind in kinds
            for a in b.awards}
    got = {(a.kind, a.place, a.entry_id): a for a in observed.awards}
    for key in sorted(set(want) | set(got), key=str):
        w, g = want.get(key), got.get(key)
        who = f"{key[0]} {key[1]}"
        if g is None:
            assert w is not None
            d.check(key[2], f"{who} prize", _money(w.amount_cents), "not awarded")
            continue
        if w is None:
            d.check(key[2], f"{who} prize", "not awarded", _money(g.amount_cents))
            continue
        d.check(key[2], f"{who} prize amount", _money(w.amount_cents), _money(g.amount_cents))
        d.check(key[2], f"{who} prize holder", w.patron_id, g.patron_id)
        d.check(key[2], f"{who} prize deadline", _when(w.deadline), _when(g.deadline))
        if g.claimed_at is not None:
            d.check(key[2], f"{who} prize claimed before its deadline", True,
                    g.claimed_at < g.deadline)
            d.check(key[2], f"{who} prize claimed by the holder", True,
                    w.patron_id in (g.claimed_by or ""))
        elif not g.withheld:
            d.check(key[2], f"{who} prize unclaimed: still open", now < g.deadline, True)
    for book in expected.books:
        if book.kind not in kinds:
            continue
        key2 = (book.kind, book.week)
        if key2 not in observed.award_remainders:
            if book.awards:
                d.check(book.kind, f"{book.kind} {book.week or ''} award record", "recorded",
                        "none")
            continue
        d.check(book.kind, f"{book.kind} {book.week or ''} remainders",
                sorted((r.reason, r.amount_cents) for r in book.remainders),
                observed.award_remainders[key2])


def differences(expected: Expected, observed: Observed, evidence: Evidence, rules: Rules, *,
                now: datetime, complete: bool = True,
                journals: Sequence[str] = ()) -> list[Difference]:
    """Every difference between the recomputation and what the system shows. `complete`: the
    tournament is over, so every allocation, the draw and every prize must be there; else only
    what was done so far is compared (prizes not yet awarded are only projected)."""
    d = _Diff()
    for problem in expected.problems:
        d.found.append(Difference("records", "consistency", "none", problem))
    for problem in journals:
        d.found.append(Difference("journal", "journal vs central", "same", problem))
    _scores(d, expected, observed, evidence, rules)
    _boards(d, expected, observed, rules)
    _allocation(d, "semi_final", expected.semi_places, expected.qualifying,
                observed=observed, evidence=evidence, complete=complete)
    _allocation(d, "final", expected.final_places, expected.semi,
                observed=observed, evidence=evidence, complete=complete)
    _seats(d, "semi_final", evidence, None)
    _seats(d, "final", evidence, expected.draw)
    _lineups(d, expected, observed, evidence)
    _draw(d, expected, evidence, rules, complete)
    _pools(d, expected, observed)
    _awards(d, expected, observed, complete=complete, now=now)
    return d.found


def report(found: Sequence[Difference]) -> str:
    """The differences, one a line (for an assertion message)."""
    return "\n".join(str(x) for x in found) or "no differences"
