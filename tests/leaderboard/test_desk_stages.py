"""The desk allocates the semi-final and Final places: proxies, seat choice, the seat draw.

Scores are stored the way ingest stores them (tests.leaderboard.desk_helpers.add_score); the
expected line-ups and prize amounts are worked out by hand from the rules.
"""


import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from game.tournament.draw import RECOMMENDED_BYTES, draw_seats
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound, Refused, seat_draw
from leaderboard.models import (
    Draw,
    Entry,
    Proxy,
    Refusal,
    Score,
)
from leaderboard.projections import Projected
from tests.leaderboard.desk_fields import (
    AFTER_QUALIFYING,
    SEMI_SCORES,
    audit_actions,
    exclude,
    final_field,
    qualifying_field,
    semis,
    table_reports,
    table_reports_seated,
)
from tests.leaderboard.desk_helpers import (
    FakeClock,
    add_score,
    local,
    settings,
)

# ---- the qualifying field, semi-finals and Final ---------------------------------------------


def test_semi_final_places_go_to_the_top_12_entries(session: Session, clock: FakeClock) -> None:
    f = qualifying_field(session, clock)
    clock.now = local(2026, 7, 30, 23, 59)
    with pytest.raises(Conflict, match="qualifying ends at 2026-07-31 00:00"):
        desk.allocate_semis(session, settings(), clock, actor="desk-1")
    assert desk.places(session, settings(), Stage.SEMI_FINAL) == ()
    clock.now = AFTER_QUALIFYING
    places = desk.allocate_semis(session, settings(), clock, actor="desk-1")
    # By hand: A 9000, A 8000, O0..O3, O4 4000, A 3600, O5..O8; O9 and O10 are out, and O9's
    # unacknowledged R9,900 does not count.
    expected = [f.a_entries[0], f.a_entries[1], *f.other_entries[:5], f.a_entries[2],
                *f.other_entries[5:9]]
    assert [p.won_by for p in places] == expected
    assert [p.position for p in places] == list(range(1, 13))
    assert all(p.entry_id == "S-" + p.won_by[2:] for p in places)
    assert [p.holder for p in places].count(f.a) == 3
    assert [p.score_cents for p in places][:3] == [900_000, 800_000, 700_000]
    assert desk.allocate_semis(session, settings(), clock, actor="desk-1") == places
    assert audit_actions(session).count("semi_final.allocated") == 1


def test_proxies_for_a_patron_holding_three_places(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    x, y, z = f.spare
    with pytest.raises(DeskError, match="holds one semi_final place"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=places[2].entry_id,
                            proxy_patron_id=x)
    with pytest.raises(DeskError, match="their own proxy"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=f.a)
    with pytest.raises(Conflict, match="already holds or plays"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=f.others[0])
    exclude(session, "refusal_of_entry", "7001015000002", at=AFTER_QUALIFYING)
    with pytest.raises(Refused, match="refusal-of-entry"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=z)
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.patron_id) == ("proxy", z)
    desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                        proxy_patron_id=x)
    with pytest.raises(Conflict, match="already has proxy"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                            proxy_patron_id=y)
    with pytest.raises(Conflict, match="already holds or plays"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[2],
                            proxy_patron_id=x)
    desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[2],
                        proxy_patron_id=y)
    with pytest.raises(Conflict, match="holder plays the remaining place"):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[0],
                            proxy_patron_id=f.others[10])
    proxies = session.scalars(select(Proxy).order_by(Proxy.id)).all()
    assert [(p.entry_id, p.holder_patron_id, p.proxy_patron_id) for p in proxies] == [
        (a_places[1], f.a, x), (a_places[2], f.a, y)]
    now = {p.entry_id: p for p in desk.places(session, s, Stage.SEMI_FINAL)}
    assert [now[e].player for e in a_places] == [f.a, x, y]
    assert all(now[e].holder == f.a for e in a_places)
    assert audit_actions(session).count("proxy.nominated") == 2


def test_heat_and_seat_choice_and_semi_final_seating(session: Session, clock: FakeClock) -> None:
    s = settings()
    f, places = semis(session, clock)
    first, second = places[0].entry_id, places[2].entry_id
    chosen = desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=4)
    assert (chosen.heat, chosen.seat) == (1, 4)
    with pytest.raises(Conflict, match=f"heat 1 seat 4 is taken by place {first}"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=1, seat=4)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=2, seat=4)
    for bad, match in (((3, 1), "heat must be 1 to 2"), ((1, 7), "seat must be 1 to 6"),
                       ((1, 0), "seat must be 1 to 6")):
        with pytest.raises(DeskError, match=match):
            desk.choose_seat(session, s, clock, actor="desk-1", entry_id=second, heat=bad[0],
                             seat=bad[1])
    with pytest.raises(DeskError, match="qualifying entry"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=f.a_entries[0], heat=1,
                         seat=1)
    # A changes their mind before playing: the old seat is free again.
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=5)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=places[3].entry_id, heat=1,
                     seat=4)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t05")
    assert (seating.seat, seating.heat_id, seating.player) == (5, "semi-final-1", f.a)
    with pytest.raises(Conflict, match="plays heat semi-final-2"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=second, table="t05")
    with pytest.raises(Conflict, match="has seat 4, not 2"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=places[3].entry_id,
                        table="t05", seat=2)
    with pytest.raises(Conflict, match="no seat yet: choose its heat and seat"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=places[4].entry_id,
                        table="t05")
    with pytest.raises(Conflict, match="already been seated"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=6)


def test_a_semi_final_table_out_of_service_frees_its_places_to_be_played_again(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f, places = semis(session, clock)
    first = places[0].entry_id
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=first, heat=1, seat=5)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t05")
    fault = desk.table_fault(session, clock, actor="td", table="t05", why="power")
    assert (dict(fault.refunded), fault.released) == ({}, (first,))
    assert [c.command for c in fault.commands] == ["unseat", "close_heat"]
    place = session.get(Entry, first)
    assert place is not None
    assert (place.status, place.table_id, place.seat, place.heat_id) == (
        "registered", None, 5, "semi-final-1")
    # The heat is played again from the start at another table, in the chosen seat.
    desk.open_heat(session, s, clock, actor="desk-1", table="t06", stage="semi_final",
                   heat_id="semi-final-1")
    # The failed table's seating report, delayed until now, does not take the place back
    # (D62): the freed seat stays free for the replay.
    late = table_reports_seated(session, first, table="t05", seat=5, seq=2)
    assert (late.changes, late.notes) == ((), (
        f"entry {first}: t05 reports seat 5, but the desk released it from table t05 (out of"
        " service); the report is stored, the entry stays as the desk has it",))
    session.expire_all()
    assert (place.status, place.table_id) == ("registered", None)
    seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=first, table="t06")
    assert (seating.table, seating.seat, seating.player) == ("t06", 5, f.a)
    # Nor does it, arriving later still, move the place off the table that replays it; the
    # replaying table's own report applies.
    assert table_reports_seated(session, first, table="t05", seat=5, seq=3).changes == ()
    assert table_reports_seated(session, first, table="t06", seat=5, seq=1).changes == (
        "entry.seated",)
    session.expire_all()
    assert (place.status, place.table_id, place.seat) == ("seated", "t06", 5)
    assert audit_actions(session)[-3:] == ["entry.seat_stale", "entry.seated", "entry.seat_stale"]
    # A score the failed table publishes for the place is not counted (D64); the replay's is.
    def score(table: str, cents: int, seq: int) -> Projected:
        return table_reports(session, "score.recorded", {
            "entry_id": first, "stage": "semi_final", "heat_id": "semi-final-1", "seat": 5,
            "score": cents, "hands": 12, "status": "finished"}, table=table, seq=seq)

    stale = score("t05", 900_000, 4)
    assert stale.changes == ()
    assert [(r.reason, r.detail) for r in stale.refused] == [(
        "score_stale", f"entry {first}: this score of 900000 cents from t05 seq 4 is not"
        " counted: the desk has it seated at table t06")]
    assert score("t06", 250_000, 2).changes == ("score.recorded",)
    assert session.get(Score, first).score_cents == 250_000  # type: ignore[union-attr]


def test_a_holder_without_a_proxy_plays_only_one_place(session: Session, clock: FakeClock
                                                       ) -> None:
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[0], heat=1, seat=1)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[1], heat=2, seat=1)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage="semi_final",
                   heat_id="semi-final-1")
    desk.open_heat(session, s, clock, actor="desk-1", table="t06", stage="semi_final",
                   heat_id="semi-final-2")
    desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[0], table="t05")
    with pytest.raises(Conflict, match="already playing"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[1], table="t06")
    add_score(session, a_places[0], 300_000, stage="semi_final", acknowledged=clock.now,
              recorded=clock.now)
    with pytest.raises(Conflict, match="each extra place needs a proxy"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[1], table="t06")


def test_the_final_goes_to_the_top_6_of_the_semis(session: Session, clock: FakeClock) -> None:
    f, semi_places = semis(session, clock)
    clock.now = local(2026, 8, 1, 15, 0)
    with pytest.raises(Conflict, match="semi-finals start at 2026-08-01 16:00"):
        desk.allocate_final(session, settings(), clock, actor="desk-1")
    del f, semi_places


def test_final_places_and_the_seat_draw(session: Session, engine: Engine, clock: FakeClock,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    s = settings()
    f, finals = final_field(session, clock)
    semi = {p.entry_id: p for p in desk.places(session, s, Stage.SEMI_FINAL)}
    # By hand from SEMI_SCORES: places 5, 1, 3, 7, 6, 11 (by index 4, 0, 2, 6, 5, 10).
    order = list(semi)  # places() is best-first on the qualifying board
    ranked = sorted(range(12), key=lambda i: -SEMI_SCORES[i])[:6]
    assert ranked == [4, 0, 2, 6, 5, 10]
    expected = [order[i] for i in ranked]
    assert [p.won_by for p in finals] == expected
    assert [p.entry_id for p in finals] == ["F-" + e[2:] for e in expected]
    assert all(p.seat is None for p in finals)
    desk.open_heat(session, s, clock, actor="desk-1", table="t07", stage="final")
    with pytest.raises(Conflict, match="draw the Final's seats first"):
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=finals[0].entry_id,
                        table="t07")
    with pytest.raises(DeskError, match="drawn"):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=finals[0].entry_id,
                         heat=1, seat=1)

    # The desk "crashes" right after the draw is stored: the seats were never given out.
    calls: list[int] = []
    data = bytes(range(7, 7 + RECOMMENDED_BYTES))

    def source(n: int) -> bytes:
        calls.append(n)
        return data

    def crash(*_: object) -> None:
        raise RuntimeError("power cut")

    with monkeypatch.context() as m:
        m.setattr(seat_draw, "_apply_draw", crash)
        with pytest.raises(RuntimeError, match="power cut"):
            desk.draw_final(session, s, clock, actor="desk-1", random_bytes=source)
    assert calls == [RECOMMENDED_BYTES]
    with Session(engine) as fresh:  # what survived the crash
        row = fresh.scalars(select(Draw)).one()
        assert (row.stage, row.random_hex, row.drawn_by) == ("final", data.hex(), "desk-1")
        assert sorted(row.finalists) == sorted(p.entry_id for p in finals)
        assert all(e.seat is None for e in fresh.scalars(
            select(Entry).where(Entry.stage == "final")))

    def no_new_draw(n: int) -> bytes:
        raise AssertionError(f"drew {n} bytes again")

    session.expire_all()
    outcome = desk.draw_final(session, s, clock, actor="desk-2", random_bytes=no_new_draw)
    assert outcome.reused and outcome.random_hex == data.hex()
    expected_draw = draw_seats([p.entry_id for p in finals], [1, 2, 3, 4, 5, 6], data)
    assert dict(outcome.seats) == {a.finalist: a.seat for a in expected_draw.assignments}
    assert sorted(outcome.seats.values()) == [1, 2, 3, 4, 5, 6]
    assert session.scalar(select(func.count()).select_from(Draw)) == 1
    placed = {p.entry_id: p.seat for p in desk.places(session, s, Stage.FINAL)}
    assert placed == dict(outcome.seats)
    again = desk.draw_final(session, s, clock, actor="desk-2", random_bytes=no_new_draw)
    assert again.seats == outcome.seats and again.draw_id == outcome.draw_id

    replay = desk.replay_draw(session, outcome.draw_id)
    assert replay.matches and replay.stored == tuple(sorted(outcome.seats.items()))
    actions = audit_actions(session)
    assert actions.count("final.drawn") == 1 and actions.count("final.seats_applied") == 1

    # A tampered record no longer replays to the stored result.
    stored = session.get(Draw, outcome.draw_id)
    assert stored is not None
    result = dict(stored.result)
    swapped = [dict(a) for a in result["assignments"]]
    swapped[0]["seat"], swapped[1]["seat"] = swapped[1]["seat"], swapped[0]["seat"]
    stored.result = {**result, "assignments": swapped}
    session.commit()
    assert not desk.replay_draw(session, outcome.draw_id).matches
    with pytest.raises(NotFound):
        desk.replay_draw(session, outcome.draw_id + 1)
    del f


def test_the_draw_uses_the_os_csprng_by_default(session: Session, clock: FakeClock) -> None:
    _, finals = final_field(session, clock)
    outcome = desk.draw_final(session, settings(), clock, actor="desk-1")
    assert len(outcome.random_hex) == 2 * RECOMMENDED_BYTES and not outcome.reused
    assert sorted(outcome.seats) == sorted(p.entry_id for p in finals)
    assert desk.replay_draw(session, outcome.draw_id).matches
