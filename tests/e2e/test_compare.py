"""The comparison catches what a wrong system would show: a hand-made whole tournament
(qualifying, semi-finals, the Final with its draw, every prize), what a correct system shows
(built here from the recomputation, field by field), then one thing altered at a time."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from tests.e2e.compare import Difference, differences
from tests.e2e.handmade import HandMade, shipped_rules
from tests.e2e.observed import AwardRow, Observed, ScoreRow
from tests.e2e.recompute import Expected, Place, recompute
from tests.e2e.records import Draw, Evidence, Seating
from tests.e2e.rules import Rules
from tests.e2e.scoring import ENDED_EARLY, FINISHED

SMALL = {"qualifying.hands": 2, "qualifying.advance": 4, "semi_final.hands": 2,
         "semi_final.heats": 2, "semi_final.seats_per_heat": 2, "semi_final.advance": 2,
         "final.hands": 2, "final.seats_per_heat": 2, "prizes.final_places": [70, 30]}
DRAW_BYTES = bytes([7] * 64)


def _tournament() -> tuple[HandMade, Expected]:
    f = HandMade(shipped_rules(SMALL))
    for i in range(6):
        f.sell(f"E-{i}", f"P-{i}", table="t01")
        f.finish("t01", f"E-{i}", [2500 * (6 - i), 0])
    first = recompute(f.evidence, f.rules)
    for n, place in enumerate(first.semi_places):
        heat, seat = n % 2 + 1, n // 2 + 1
        table = f"t0{heat}"
        f.sell(place, f"P-{place[-1]}", stage="semi_final", heat_id=f"semi-final-{heat}",
               seat=seat, table=table)
        f.evidence.seatings.append(Seating(table=table, seq=900 + n, entry_id=place,
                                           seat=seat, heat_id=f"semi-final-{heat}",
                                           at=f.tick()))
        f.finish(table, place, [5000 * n, 0])
    second = recompute(f.evidence, f.rules)
    finalists = second.final_places
    f.evidence.draw = Draw(random_hex=DRAW_BYTES.hex(), finalists=tuple(sorted(finalists)),
                           seats=(1, 2), result={})
    seats = recompute(f.evidence, f.rules).draw
    assert seats is not None
    f.evidence.draw = dataclasses.replace(f.evidence.draw, result=dict(seats))
    for place in finalists:
        f.sell(place, f"P-{place[-1]}", stage="final", heat_id="final-1", seat=seats[place],
               table="t01")
        f.evidence.seatings.append(Seating(table="t01", seq=950, entry_id=place,
                                           seat=seats[place], heat_id="final-1", at=f.tick()))
        f.finish("t01", place, [10_000 if place == finalists[-1] else 0, 0])
    return f, recompute(f.evidence, f.rules)


def _rows(places: list[Place], advance: int | None) -> list[dict[str, Any]]:
    return [{"entry_id": p.entry_id, "rank": p.rank, "position": p.position,
             "score_cents": p.score_cents, "acknowledged": True,
             "advancing": advance is not None and p.rank <= advance} for p in places]


def _lineup(evidence: Evidence, stage: str, places: list[Place]) -> dict[str, Any]:
    scores = {p.entry_id: p.score_cents for p in places}
    heats: dict[str, list[dict[str, Any]]] = {}
    for e in evidence.entries.values():
        if e.stage == stage:
            heats.setdefault(e.heat_id or "", []).append(
                {"seat": e.seat, "entry_id": e.entry_id, "proxy": e.played_by is not None,
                 "score": ({"cents": scores[e.entry_id]} if e.entry_id in scores else None)})
    return {"heats": [{"heat_id": h, "table": next(e.table for e in evidence.entries.values()
                                                    if e.heat_id == h), "seats": seats}
                      for h, seats in sorted(heats.items())]}


def _honest(expected: Expected, rules: Rules, evidence: Evidence) -> Observed:
    """What a correct system shows for `expected`."""
    o = Observed()
    for s in expected.scores.values():
        if s.status in (FINISHED, ENDED_EARLY) and s.table is not None:
            assert s.score_cents is not None and s.counted_cents is not None
            assert s.recorded_at is not None
            o.scores[s.entry_id] = ScoreRow(
                entry_id=s.entry_id, table=s.table, score_cents=s.score_cents,
                counted_cents=s.counted_cents, hands=s.hands, status=s.status,
                recorded_at=s.recorded_at, acknowledged_at=s.acknowledged_at,
                voided=s.why_not == "voided")
    p = expected.pools
    final_book, top_book = expected.book("final"), expected.book("top_score")
    assert final_book is not None and top_book is not None
    pools = {"entries": p.entries, "total": {"cents": p.total_cents},
             "final_pool": {"cents": p.final_pool_cents, "projected": [
                 {"entry_id": a.entry_id, "cents": a.amount_cents} for a in final_book.awards]},
             "top_score": {"cents": p.top_score_cents, "projected": [
                 {"entry_id": a.entry_id, "cents": a.amount_cents} for a in top_book.awards]},
             "remainder": {"cents": p.remainder_cents}}
    for stage, places, advance in (
            ("qualifying", expected.qualifying, rules.stage("qualifying").advance),
            ("semi_final", expected.semi, rules.stage("semi_final").advance),
            ("final", expected.final, None)):
        o.documents[stage] = {"board": {"counted": len(places), "rows": _rows(places, advance),
                                        "awaiting_acknowledgement": 0, "voided": 0,
                                        "cut_line_tie": None},
                              "pools": pools, "pending": [], "excluded": []}
        if stage != "qualifying":
            o.documents[stage][stage] = _lineup(evidence, stage, places)
    for week, places in expected.weekly.items():
        o.weeks[week] = {"counted": len(places), "leaders": [
            {"entry_id": x.entry_id} for x in places if x.position == 1]}
    for stage, wanted, before in (("semi_final", expected.semi_places, expected.qualifying),
                                  ("final", expected.final_places, expected.semi)):
        o.allocations[stage] = [
            {"entry_id": w, "won_by": b.entry_id, "position": b.position,
             "score_cents": b.score_cents} for w, b in zip(wanted, before, strict=False)]
        o.desk_places[stage] = [
            {"entry_id": w, "won_by": b.entry_id, "holder": b.patron_id, "position": b.position,
             "score_cents": b.score_cents} for w, b in zip(wanted, before, strict=False)]
    for n, book in enumerate(expected.books):
        o.award_remainders[(book.kind, book.week)] = sorted(
            (r.reason, r.amount_cents) for r in book.remainders)
        for i, a in enumerate(book.awards):
            o.awards.append(AwardRow(
                award_id=10 * n + i, kind=a.kind, place=a.place, entry_id=a.entry_id,
                patron_id=a.patron_id, amount_cents=a.amount_cents, deadline=a.deadline,
                claimed_at=a.deadline - timedelta(days=3), claimed_by=f"Someone ({a.patron_id})",
                withheld=False))
    return o


def _diff(evidence: Evidence, expected: Expected, observed: Observed,
          rules: Rules) -> list[Difference]:
    last = max(m.at for m in evidence.scores)
    return differences(expected, observed, evidence, rules, now=last + timedelta(hours=1))


def test_an_honest_system_shows_no_difference() -> None:
    f, expected = _tournament()
    assert len(expected.books) == 3  # week 1, the Top Score Progressive and the Final
    assert [p.entry_id for p in expected.final] == ["F-2", "F-3"]
    assert _diff(f.evidence, expected, _honest(expected, f.rules, f.evidence), f.rules) == []


def _altered(change: str) -> list[Difference]:
    f, expected = _tournament()
    o = _honest(expected, f.rules, f.evidence)
    evidence = f.evidence
    if change == "score":
        row = o.scores["E-0"]
        o.scores["E-0"] = dataclasses.replace(row, score_cents=row.score_cents + 2500)
    elif change == "board":
        rows = o.documents["qualifying"]["board"]["rows"]
        rows[0]["entry_id"], rows[1]["entry_id"] = rows[1]["entry_id"], rows[0]["entry_id"]
    elif change == "prize":
        o.awards[0] = dataclasses.replace(o.awards[0], amount_cents=o.awards[0].amount_cents - 1)
    elif change == "missing_prize":
        del o.awards[-1]
    elif change == "seat":
        s = next(s for s in evidence.seatings if s.entry_id.startswith("F-"))
        evidence.seatings[evidence.seatings.index(s)] = dataclasses.replace(s, seat=3 - s.seat)
    elif change == "draw":
        assert evidence.draw is not None
        flipped = {k: 3 - v for k, v in evidence.draw.result.items()}
        evidence.draw = dataclasses.replace(evidence.draw, result=flipped)
    elif change == "allocation":
        o.allocations["semi_final"][-1] = {"entry_id": "S-5", "won_by": "E-5"}
    elif change == "late_claim":
        o.awards[1] = dataclasses.replace(o.awards[1], claimed_at=o.awards[1].deadline)
    elif change == "cut_line":
        o.documents["qualifying"]["board"]["cut_line_tie"] = "cut-line tie at R2,000.00 ..."
    elif change == "pending":
        o.documents["qualifying"]["pending"].append({"entry_id": "E-5"})
        o.documents["qualifying"]["board"]["awaiting_acknowledgement"] = 1
    elif change == "lineup":
        heat = o.documents["final"]["final"]["heats"][0]
        heat["seats"][0]["seat"] = 3 - heat["seats"][0]["seat"]
    elif change == "pool":
        o.documents["final"]["pools"]["final_pool"]["cents"] += 100
    return _diff(evidence, expected, o, f.rules)


@pytest.mark.parametrize(("change", "entry", "what"), [
    ("score", "E-0", "central score"),
    ("board", "E-0", "qualifying board rank"),
    ("prize", "E-0", "weekly 1 prize amount"),
    ("missing_prize", "F-3", "final 2 prize"),
    ("seat", "F-3", "final seat at t01"),
    ("draw", "F-2", "drawn seat (stored vs replayed from the bytes)"),
    ("allocation", "semi_final", "places allocated"),
    ("late_claim", "E-0", "top_score 1 prize claimed before its deadline"),
    ("pool", "pools", "Final Prize Pool"),
    ("cut_line", "qualifying", "cut-line tie note"),
    ("lineup", "F-3", "final line-up seat"),
    ("pending", "qualifying", "scores awaiting acknowledgement"),
])
def test_an_altered_figure_is_caught(change: str, entry: str, what: str) -> None:
    found = _altered(change)
    assert any(d.entry == entry and d.what == what for d in found), found
