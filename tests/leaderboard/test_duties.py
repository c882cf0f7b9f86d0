"""Segregation of duties (leaderboard.desk.duties) at the desk functions, each enforced pair
both ways: refused for the person who took the first duty, allowed for another. SQLite and
PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import NotPermitted
from leaderboard.desk import dispute_records as disputes
from leaderboard.desk.duties import DUTY_PAIRS, DutyRefused, check_duty, duty_refusal
from leaderboard.desk.permissions import PERMISSIONS
from leaderboard.models import AuditEntry, IdentityHold, StaffRecord
from tests.leaderboard.desk_fields import qualifying_field, table_reports
from tests.leaderboard.desk_helpers import ADULT, FakeClock, local, settings
from tests.leaderboard.test_desk_identity import LISTED, import_list, supervisor
from tests.leaderboard.test_dispute_records import HAND, seated_with_a_hand

ROOT = Path(__file__).resolve().parents[2]


def refusal(actor: str, *, did: str, subject: str, who: str, then: str, pair: str) -> str:
    """The refusal's words, as docs/segregation-of-duties.md gives them."""
    return re.escape(f"{actor} {did} {subject}: {who} must {then}"
                     f" (segregation of duties: {pair})")


# ---- register / approve hold ---------------------------------------------------------------

def held_by(session: Session, clock: FakeClock, actor: str, card: str) -> int:
    """A patron registered by ``actor`` and held on a possible list match; the hold's id."""
    patron = desk.register_patron(session, settings(), clock, actor=actor,
                                  name="Thandi Mokoena", id_kind="rewards_card",
                                  id_number=card, birth_date=ADULT)
    return session.scalars(select(IdentityHold.id).where(
        IdentityHold.patron_id == patron.patron_id, IdentityHold.opened_by == actor)).one()


def test_who_raised_a_hold_does_not_decide_it(session: Session, clock: FakeClock) -> None:
    import_list(session, clock, LISTED)
    s1, s2 = supervisor(session, clock, "S1"), supervisor(session, clock, "S2")
    first = held_by(session, clock, s1, "60990000005500")
    words = refusal("S1", did="raised", subject="this hold's registration",
                    who="another supervisor", then="decide it", pair="register / approve hold")
    with pytest.raises(DutyRefused, match=words):
        desk.approve_hold(session, clock, actor=s1, hold_id=first, why="photo differs")
    with pytest.raises(DutyRefused, match=words):
        desk.refuse_hold(session, clock, actor=s1, hold_id=first, why="same person")
    hold = session.get(IdentityHold, first)
    assert hold is not None and hold.decision is None  # nothing was decided
    assert desk.approve_hold(session, clock, actor=s2, hold_id=first,
                             why="photo differs").decided_by == "S2"
    second = held_by(session, clock, s2, "60990000005501")
    with pytest.raises(DutyRefused, match="S2 raised this hold's registration"):
        desk.refuse_hold(session, clock, actor=s2, hold_id=second, why="same person")
    assert desk.refuse_hold(session, clock, actor=s1, hold_id=second,
                            why="same person").decided_by == "S1"


def test_who_imported_the_list_that_raised_a_hold_does_not_decide_it(
        session: Session, clock: FakeClock) -> None:
    patron = desk.register_patron(session, settings(), clock, actor="C1",
                                  name="Thandi Mokoena", id_kind="rewards_card",
                                  id_number="60990000005502", birth_date=ADULT)
    found = import_list(session, clock, LISTED)  # imported by "compliance": one hold
    (hold_id,) = found.held
    supervisor(session, clock, "compliance", role="manager")
    with pytest.raises(DutyRefused, match="compliance raised this hold's registration"):
        desk.approve_hold(session, clock, actor="compliance", hold_id=hold_id, why="differs")
    assert desk.approve_hold(session, clock, actor=supervisor(session, clock, "S1"),
                             hold_id=hold_id, why="differs").patron_id == patron.patron_id


# ---- raise / rule dispute -------------------------------------------------------------------

def test_who_recorded_a_dispute_does_not_rule_on_it(session: Session, clock: FakeClock) -> None:
    entry = seated_with_a_hand(session, clock)
    raised = disputes.raise_dispute(session, settings(), clock, actor="S3", entry_id=entry,
                                    claim="odds paid short", hand_ids=[HAND])
    with pytest.raises(DutyRefused, match=refusal(
            "S3", did="raised or recorded", subject="this dispute", who="another supervisor",
            then="rule on it", pair="raise / rule dispute")):
        disputes.rule_dispute(session, settings(), clock, actor="S3",
                              dispute_id=raised.dispute_id, ruling="dismissed",
                              why="camera shows it right")
    with pytest.raises(DutyRefused, match="S3 raised or recorded this dispute"):
        desk.resolve_dispute(session, clock, actor="S3", entry_id=entry, resolution="fine")
    assert disputes.dispute_record(session, raised.dispute_id).status == "open"
    ruled = disputes.rule_dispute(session, settings(), clock, actor="S4",
                                  dispute_id=raised.dispute_id, ruling="dismissed",
                                  why="camera shows it right")
    assert (ruled.status, ruled.ruled_by) == ("ruled", "S4")


def test_who_raised_a_dispute_at_the_table_does_not_rule_on_it(
        session: Session, clock: FakeClock) -> None:
    entry = seated_with_a_hand(session, clock)
    for seq, role, by in ((21, "supervisor", "S3"), (22, "participant", None)):
        body = {"hand_id": HAND, "entry_id": entry, "seat": 2, "claim": "paid short",
                "role": role, "heat_id": "heat-1", "stage": "qualifying"}
        table_reports(session, "hand.disputed" if by else "score.disputed",
                      {**body, "by": by} if by else {"entry_id": entry, "score": 1,
                                                     "note": "short", "stage": "qualifying",
                                                     "heat_id": "heat-1"},
                      table="t01", seq=seq)
    by_staff, by_player = disputes.dispute_records(session, entry_id=entry)
    assert (by_staff.raised_by, by_player.raised_by_role) == ("S3", "participant")
    with pytest.raises(DutyRefused, match="S3 raised or recorded this dispute"):
        disputes.rule_dispute(session, settings(), clock, actor="S3",
                              dispute_id=by_staff.dispute_id, ruling="dismissed", why="x")
    assert disputes.rule_dispute(session, settings(), clock, actor="S4",
                                 dispute_id=by_staff.dispute_id, ruling="dismissed",
                                 why="x").ruled_by == "S4"
    # The participant raised the other one: S3 took no part in it and may rule.
    assert disputes.rule_dispute(session, settings(), clock, actor="S3",
                                 dispute_id=by_player.dispute_id, ruling="dismissed",
                                 why="x").ruled_by == "S3"


# ---- award / pay prize ----------------------------------------------------------------------

def test_who_awarded_a_prize_does_not_pay_it(session: Session, clock: FakeClock) -> None:
    qualifying_field(session, clock)
    clock.now = local(2026, 7, 10, 9, 0)
    (award,) = desk.award_prizes(session, settings(), clock, actor="M1", kind="weekly",
                                 week=1, prize_cents=500_000)
    winner = "5001015009087"  # patron A of qualifying_field: the week's top score
    with pytest.raises(DutyRefused, match=refusal(
            "M1", did="awarded", subject="this prize", who="another supervisor or manager",
            then="pay it", pair="award / pay prize")):
        desk.claim_prize(session, settings(), clock, actor="M1", award_id=award.award_id,
                         id_number=winner)
    assert [p.status for p in desk.prizes(session, clock)] == ["unclaimed"]
    paid = desk.claim_prize(session, settings(), clock, actor="S2", award_id=award.award_id,
                            id_number=winner)
    assert paid.status == "claimed"
    row = session.scalars(select(AuditEntry).where(AuditEntry.action == "prize.claimed")).one()
    assert row.actor == "S2"


# ---- own staff record -----------------------------------------------------------------------

def test_nobody_changes_their_own_staff_record(session: Session, clock: FakeClock) -> None:
    m1, m2 = (supervisor(session, clock, m, role="manager") for m in ("M1", "M2"))
    words = refusal("M1", did="holds", subject="this staff record (their own)",
                    who="another manager", then="change it", pair="own staff record")
    for change in (
        lambda: desk.set_staff_active(session, clock, actor=m1, staff_id=m1, active=False),
        lambda: desk.change_staff_pin(session, clock, actor=m1, staff_id=m1, pin="1357"),
        lambda: desk.change_staff_card(session, clock, actor=m1, staff_id=m1,
                                       card="6099000000111"),
    ):
        with pytest.raises(DutyRefused, match=words):
            change()
    session.expire_all()
    member = session.get(StaffRecord, "M1")
    assert member is not None and member.active
    assert not desk.set_staff_active(session, clock, actor=m2, staff_id=m1,
                                     active=False).active
    with pytest.raises(DutyRefused, match="M2 holds this staff record"):
        desk.change_staff_pin(session, clock, actor=m2, staff_id=m2, pin="2468")
    assert desk.change_staff_pin(session, clock, actor=m2, staff_id=m1,
                                 pin="2468").staff_id == "M1"
    # One's own desk passphrase is one's own secret (passphrase.own): not a pair.
    assert desk.set_desk_passphrase(session, clock, actor=m2, staff_id=m2,
                                    new_passphrase="a long new passphrase",  # noqa: S106
                                    ).staff_id == "M2"


# ---- the table itself -----------------------------------------------------------------------

def test_a_refusal_is_a_desk_permission_refusal() -> None:
    assert issubclass(DutyRefused, NotPermitted)  # HTTP 403, the command line's exit 3
    assert duty_refusal("award / pay prize", actor="M1", earlier=("M2", None)) is None
    assert duty_refusal("award / pay prize", actor="M1", earlier=(" M1 ",)) is not None
    check_duty("award / pay prize", actor="M1", earlier=())
    with pytest.raises(KeyError):
        check_duty("no such pair", actor="M1", earlier=("M1",))


def test_each_enforced_pair_is_checked_where_its_second_duty_is_taken() -> None:
    doc = (ROOT / "docs" / "segregation-of-duties.md").read_text(encoding="utf-8")
    for pair in DUTY_PAIRS.values():
        assert f"`{pair.name}`" in doc, pair.name
        if pair.enforced_in is None:
            continue
        assert set(pair.second) <= PERMISSIONS.keys(), pair.name
        source = (ROOT / Path(*pair.enforced_in.split("."))).with_suffix(".py")
        assert f'check_duty("{pair.name}"' in source.read_text(encoding="utf-8"), pair.name
    assert {p.name for p in DUTY_PAIRS.values() if p.enforced_in} == {
        "register / approve hold", "raise / rule dispute", "award / pay prize",
        "own staff record"}
