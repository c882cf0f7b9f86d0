"""Who dealt, from the sign-ins a table published; hand records the reports cannot read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from leaderboard.reports.attribution import Dealer, DealerTimeline, HeatTimeline
from leaderboard.reports.facts import HeatMark, StaffMark, hand_fact

T = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def mark(minute: int, staff: str, role: str, signed_in: bool = True,
         table: str = "t01") -> StaffMark:
    return StaffMark(table=table, at=T + timedelta(minutes=minute), seq=minute, staff_id=staff,
                     role=role, signed_in=signed_in)


def test_the_dealer_signed_in_last_deals_and_a_supervisor_stands_in() -> None:
    timeline = DealerTimeline([
        mark(0, "D1", "dealer"), mark(5, "S1", "supervisor"), mark(10, "D2", "dealer"),
        mark(12, "D1", "dealer", False), mark(20, "D2", "dealer", False),
        mark(30, "S1", "supervisor", False), mark(0, "D9", "dealer", table="t02")])

    def at(minute: float, table: str = "t01") -> Dealer | None:
        return timeline.at(table, T + timedelta(minutes=minute))
    assert at(-1) is None  # before anyone signed in
    assert at(0) == at(7) == Dealer("D1", "dealer")  # a supervisor beside a dealer deals not
    assert at(11) == Dealer("D2", "dealer")  # the relief dealer, signed in last
    assert at(25) == Dealer("S1", "supervisor")  # no dealer left: the supervisor stands in
    assert at(31) is None
    assert at(31, "t02") == Dealer("D9", "dealer") and at(1, "t03") is None


def test_the_heat_open_at_a_moment() -> None:
    heats = HeatTimeline([
        HeatMark(table="t01", at=T, seq=1, heat_id="H1", opened=True, stage="qualifying"),
        HeatMark(table="t01", at=T + timedelta(hours=1), seq=9, heat_id="H1", opened=False)])
    assert heats.at("t01", T - timedelta(seconds=1)) is None
    assert heats.at("t01", T + timedelta(minutes=59)) == "H1"
    assert heats.at("t01", T + timedelta(hours=2)) is None
    assert heats.stages == {"H1": "qualifying"}


def test_a_record_that_cannot_be_read_says_why() -> None:
    good = {"hand_id": "t01-000001", "status": "settled", "table": "t01", "heat_id": "H1",
            "opened_at": "2026-07-03T12:00:00Z", "settled_at": "2026-07-03T12:01:00Z",
            "seats": [{"seat": 1, "entry_id": "E1", "wagers": {"ante": 2500, "odds": 2500},
                       "decision": {"play": 2, "street": "flop", "amount": 5000},
                       "wager_source": "rfid"}]}
    fact = hand_fact("t01", good)
    assert not isinstance(fact, str)
    assert (fact.seats[0].choice, fact.ended - fact.opened) == ("play_2x", timedelta(minutes=1))
    other = hand_fact("t02", good)  # a record naming another table than its sender
    assert isinstance(other, str) and other.startswith("hand.settled") and "'t02'" in other
    assert hand_fact("t01", {**good, "settled_at": None}) == (
        "hand t01-000001: no end time in its record")
    bad_wager = {**good, "seats": [{"seat": 1, "wagers": {"ante": -5}}]}
    assert hand_fact("t01", bad_wager) == "hand t01-000001: seat 1: wager 'ante' is not whole cents"
