"""Identities at the desk (issue 13): every document, lists matched by name too, possible
matches held for a supervisor, a later list screening the registered patrons, rule 57
disqualification, and the payment method of each buy-in (rule 6). SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, Held, NotPermitted, Refused
from leaderboard.eligibility import parse_list
from leaderboard.models import AuditEntry, Entry, IdentityHold, Patron, PrizeAward, Refusal
from tests.leaderboard.desk_fields import buy, counted, qualifying_field, snapshot
from tests.leaderboard.desk_helpers import ADULT, FakeClock, local, register, settings

ID_NUMBER = "8005175009087"
LISTED = f"id_number,name,birth_date\n{ID_NUMBER},Thandí Mokoena,{ADULT.isoformat()}\n"


def import_list(session: Session, clock: FakeClock, text: str, *, kind: str = "self_exclusion",
                source: str = "NRGP", day: date = date(2026, 7, 1)) -> desk.Rescreen:
    """Import a list through the desk (which screens the registered patrons again)."""
    _, found = desk.import_and_rescreen(session, settings(), clock, actor="compliance",
                                        kind=kind, rows=parse_list(text, "list.csv"),
                                        source=source, source_date=day)
    return found


def supervisor(session: Session, clock: FakeClock, staff_id: str = "S1",
               role: str = "supervisor") -> str:
    desk.enrol_staff(session, clock, actor="manager", staff_id=staff_id, name=f"N {staff_id}",
                     role=role, pin="4821")
    return staff_id


def register_by_card(session: Session, clock: FakeClock, card: str, name: str,
                     born: date = ADULT) -> Patron:
    return desk.register_patron(session, settings(), clock, actor="desk-1", name=name,
                                id_kind="rewards_card", id_number=card, birth_date=born)


def entries(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(Entry)) or 0


# ---- the symptom --------------------------------------------------------------------


def test_refused_on_her_id_then_a_rewards_card_in_her_name_is_held_and_not_sold(
        session: Session, clock: FakeClock) -> None:
    import_list(session, clock, LISTED)
    with pytest.raises(Refused, match="self-exclusion"):
        register(session, clock, ID_NUMBER, name="Thandi Mokoena")
    patron = register_by_card(session, clock, "6099-7700-1234", "THANDI  mokoena")
    assert patron.standing == "held"
    hold = session.scalars(select(IdentityHold)).one()
    assert (hold.patron_id, hold.context, hold.decision) == (patron.patron_id, "registration",
                                                             None)
    assert [(m["list_name"], m["how"], m["list_birth_date"]) for m in hold.matches] == [
        ("Thandí Mokoena", "name", ADULT.isoformat())]
    with pytest.raises(Held, match=rf"held for a supervisor's decision \(hold {hold.id}\)"):
        buy(session, clock, patron.patron_id)
    assert entries(session) == 0
    actions = list(session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))
    assert actions == ["list.imported", "list.rescreened", "eligibility.refused",
                       "patron.registered", "identity.held"]


def test_another_birth_date_needs_the_same_name_and_a_list_without_dates_matches_names(
        session: Session, clock: FakeClock) -> None:
    import_list(session, clock, LISTED)
    other_born = date(1981, 5, 17)
    same_name = register_by_card(session, clock, "60990000001001", "Thandi Mokoena",
                                 born=other_born)
    pet_form = register_by_card(session, clock, "60990000001000", "Thandeka Mokoena",
                                born=other_born)
    other_name = register_by_card(session, clock, "60990000001002", "Lindiwe Mokoena")
    assert (same_name.standing, pet_form.standing, other_name.standing) == (
        "held", "clear", "clear")  # issue 33: another birth date holds only the same name
    import_list(session, clock, "id_number,name\nX99887766,Sipho van der Merwe\n",
                kind="excluded", source="court")
    undated = register_by_card(session, clock, "60990000001003", "Van Der Merwe, Sipho",
                               born=date(1990, 1, 2))
    initials = register_by_card(session, clock, "60990000001004", "S. van der Merwe",
                                born=date(1970, 3, 4))
    assert (undated.standing, initials.standing) == ("held", "held")
    how = [h.matches[0]["how"] for h in session.scalars(
        select(IdentityHold).order_by(IdentityHold.id))]
    assert how == ["name", "name", "initials"]


# ---- supervisor's decisions ----------------------------------------------------------------


def test_a_supervisor_approves_a_hold_with_a_reason_and_the_patron_plays(
        session: Session, clock: FakeClock) -> None:
    import_list(session, clock, LISTED)
    patron = register_by_card(session, clock, "60990000005500", "Thandi Mokoena")
    hold_id = session.scalars(select(IdentityHold.id)).one()
    dealer = supervisor(session, clock, "D1", role="dealer")
    with pytest.raises(NotPermitted, match="supervisor's decision; D1 is a dealer"):
        desk.approve_hold(session, clock, actor=dealer, hold_id=hold_id, why="looks fine")
    boss = supervisor(session, clock)
    with pytest.raises(DeskError, match="say why"):
        desk.approve_hold(session, clock, actor=boss, hold_id=hold_id, why=" ")
    view = desk.approve_hold(session, clock, actor=boss, hold_id=hold_id,
                             why="ID shows a different ID number; photo differs")
    assert (view.decision, view.decided_by, view.open) == ("approved", "S1", False)
    session.refresh(patron)
    assert patron.standing == "clear"
    entry = buy(session, clock, patron.patron_id)  # sold now
    assert session.get(Entry, entry) is not None
    audit = session.scalars(select(AuditEntry).where(
        AuditEntry.action == "identity.hold_approved")).one()
    assert (audit.actor, audit.detail["supervisor"], audit.detail["reason"]) == (
        "S1", "S1", "ID shows a different ID number; photo differs")
    with pytest.raises(Conflict, match="already approved by S1"):
        desk.refuse_hold(session, clock, actor=boss, hold_id=hold_id, why="changed my mind")
    # The same list imported again (a newer issue) does not raise the approved match again.
    clock.now += timedelta(minutes=5)
    found = import_list(session, clock, LISTED, day=date(2026, 7, 8))
    assert found.held == () and found.refused == ()
    buy(session, clock, patron.patron_id)


def test_a_supervisor_refuses_a_hold_the_patron_is_refused_and_unplayed_entries_refunded(
        session: Session, clock: FakeClock) -> None:
    patron = register_by_card(session, clock, "60990000005501", "Thandi Mokoena")
    entry = buy(session, clock, patron.patron_id)
    found = import_list(session, clock, LISTED)
    assert found.checked == 1 and len(found.held) == 1 and found.refused == ()
    boss = supervisor(session, clock)
    view = desk.refuse_hold(session, clock, actor=boss, hold_id=found.held[0],
                            why="same person: photo on the register matches")
    assert (view.decision, view.decided_by) == ("refused", "S1")
    session.refresh(patron)
    assert patron.standing == "refused"
    refusal = session.scalars(select(Refusal)).one()
    assert (refusal.context, refusal.patron_id) == ("hold", patron.patron_id)
    assert "supervisor S1 judged" in refusal.reason
    stored = session.get(Entry, entry)
    assert stored is not None and stored.status == "refunded"
    with pytest.raises(Conflict, match="refused by a supervisor"):
        buy(session, clock, patron.patron_id)
    audit = session.scalars(select(AuditEntry).where(
        AuditEntry.action == "identity.hold_refused")).one()
    assert (audit.actor, audit.detail["refunded"]) == ("S1", [entry])


# ---- a list imported later -------------------------------------------------------------------


def test_a_later_list_refuses_by_document_and_holds_by_name(
        session: Session, clock: FakeClock) -> None:
    by_doc = register(session, clock, "9001015009087", name="Lerato Khumalo")
    by_name = register(session, clock, "9101015009087", name="Sipho Dlamini")
    bystander = register(session, clock, "9201015009087", name="Ayanda Zulu")
    e_doc, e_name = buy(session, clock, by_doc), buy(session, clock, by_name)
    desk.open_heat(session, settings(), clock, actor="desk-1", table="t01", stage="qualifying")
    found = import_list(session, clock, "id_number,name\n9001015009087,L Khumalo\n"
                        "AB123456,DLAMINI Sipho\n", kind="refusal_of_entry", source="casino")
    assert (found.checked, found.refused, found.refunded, found.seated) == (
        3, (by_doc,), (e_doc,), ())
    assert len(found.held) == 1
    hold = session.get(IdentityHold, found.held[0])
    assert hold is not None and (hold.patron_id, hold.context) == (by_name, "rescreen")
    assert session.scalars(select(Refusal.context)).all() == ["rescreen"]
    with pytest.raises(Held):
        desk.seat_entry(session, settings(), clock, actor="desk-1", entry_id=e_name,
                        table="t01", seat=1)
    stored = session.get(Entry, e_name)
    assert stored is not None and stored.status == "registered"
    buy(session, clock, bystander)
    rescreened = session.scalars(select(AuditEntry).where(
        AuditEntry.action == "list.rescreened")).one()
    assert rescreened.detail["refused"] == [by_doc]


# ---- documents -----------------------------------------------------------------------------


def test_every_document_is_one_patrons_and_each_is_checked(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", name="Naledi Sithole")
    other = register(session, clock, "8101015009087", name="Zanele Nkosi")
    row = desk.add_document(session, settings(), clock, actor="desk-1", patron_id=pid,
                            kind="passport", number="m 1234-5678")
    assert (row.kind, row.number) == ("passport", "M12345678")
    with pytest.raises(Conflict, match=f"belongs to patron {pid}"):
        desk.add_document(session, settings(), clock, actor="desk-1", patron_id=other,
                          kind="passport", number="M12345678")
    with pytest.raises(Conflict, match="already registered"):
        register(session, clock, "M1234 5678", name="Someone Else")
    with pytest.raises(DeskError, match="unknown document kind"):
        desk.add_document(session, settings(), clock, actor="desk-1", patron_id=pid,
                          kind="library_card", number="L12345")
    import_list(session, clock, "id_number,name\nDL55443322,Z N\n", kind="staff",
                source="HR")
    with pytest.raises(Refused, match="staff"):
        desk.add_document(session, settings(), clock, actor="desk-1", patron_id=other,
                          kind="licence", number="DL55443322")
    with pytest.raises(Refused, match="staff"):
        buy(session, clock, other)  # matched on the licence, not the ID she registered with
    assert session.scalars(select(Refusal.context).order_by(Refusal.id)).all() == [
        "document", "buy_in"]


# ---- rule 57 ---------------------------------------------------------------------------------


def test_disqualification_takes_every_score_out_and_withholds_prizes(
        session: Session, clock: FakeClock) -> None:
    f = qualifying_field(session, clock)
    before = [e for e, _ in counted(session)]
    assert before[:2] == f.a_entries[:2]
    award = PrizeAward(kind="weekly", place=1, entry_id=f.a_entries[0], patron_id=f.a,
                       amount_cents=50_000, awarded_at=local(2026, 7, 10),
                       deadline=local(2026, 7, 25))
    session.add(award)
    session.commit()
    boss = supervisor(session, clock)
    with pytest.raises(NotPermitted):
        desk.disqualify_patron(session, clock, actor=supervisor(session, clock, "D2", "dealer"),
                               patron_id=f.a, why="chip passing")
    result = desk.disqualify_patron(session, clock, actor=boss, patron_id=f.a,
                                    why="passed chips to another entry (rule 19)")
    assert set(result.entries) == set(f.a_entries) and result.withheld == (award.id,)
    assert result.commands == ()  # none seated
    after = [e for e, _ in counted(session)]
    assert not set(after) & set(f.a_entries) and len(after) == len(before) - 3
    view = snapshot(session)
    assert {x.entry_id for x in view.excluded} >= set(f.a_entries)
    assert view.paid_entries == 15  # the buy-ins stay in the pools
    with pytest.raises(Conflict, match="withheld"):
        desk.claim_prize(session, settings(), clock, actor="desk-1", award_id=award.id,
                         id_number="5001015009087")
    with pytest.raises(Conflict, match="disqualified"):
        buy(session, clock, f.a)
    with pytest.raises(Conflict, match="already disqualified"):
        desk.disqualify_patron(session, clock, actor=boss, patron_id=f.a, why="again")


def test_a_seated_entry_of_a_disqualified_patron_is_unseated(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    entry = buy(session, clock, pid)
    desk.open_heat(session, settings(), clock, actor="desk-1", table="t02", stage="qualifying")
    desk.seat_entry(session, settings(), clock, actor="desk-1", entry_id=entry, table="t02",
                    seat=4)
    boss = supervisor(session, clock, "floor-manager", role="manager")
    result = desk.disqualify_patron(session, clock, actor=boss, patron_id=pid,
                                    why="collusion seen on camera")
    assert result.unseated == (entry,)
    (command,) = result.commands
    assert (command.table, command.command, command.args) == (
        "t02", "unseat", {"seat": 4, "entry_id": entry, "reason": "disqualified (rule 57)"})
    stored = session.get(Entry, entry)
    assert stored is not None and stored.disqualified_reason == "collusion seen on camera"


# ---- rule 6 ----------------------------------------------------------------------------------


def test_each_buy_in_records_how_it_was_paid_and_fees_are_summed_by_method(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087")
    for payment in (None, "", "bitcoin"):
        with pytest.raises(DeskError, match="say how the buy-in is paid"):
            desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment=payment)
    assert entries(session) == 0
    paid = [desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                           payment=p).entry_id for p in ("cash", "Value Chips", "cash")]
    stored = [session.get(Entry, e) for e in paid]
    assert [e.payment for e in stored if e is not None] == ["cash", "value_chips", "cash"]
    desk.refund_entry(session, clock, actor="desk-1", entry_id=paid[2], why="by mistake")
    fees = {f.payment: (f.entries, f.cents) for f in desk.entry_fees(session)}
    assert fees == {"cash": (1, 10_000), "value_chips": (1, 10_000)}


def test_a_prize_is_claimed_with_any_of_the_winners_documents(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", name="Naledi Sithole")
    entry = buy(session, clock, pid)
    award = PrizeAward(kind="weekly", place=1, entry_id=entry, patron_id=pid,
                       amount_cents=50_000, awarded_at=local(2026, 7, 3, 15),
                       deadline=local(2026, 7, 18))
    session.add(award)
    session.commit()
    desk.add_document(session, settings(), clock, actor="desk-1", patron_id=pid,
                      kind="licence", number="DL-7788-99")
    with pytest.raises(Conflict, match="not that of the prize winner"):
        desk.claim_prize(session, settings(), clock, actor="desk-1", award_id=award.id,
                         id_number="DL778800")
    view = desk.claim_prize(session, settings(), clock, actor="desk-1", award_id=award.id,
                            id_number="dl 7788 99")
    assert view.status == "claimed"
