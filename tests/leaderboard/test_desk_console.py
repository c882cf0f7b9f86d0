"""The desk's side of the tables' consoles (issue 12): staff enrolment and the roster a table
is sent, a participant's rewards card and PIN carried in the `seat` command (a proxy's own),
a score acknowledged at the desk, disputes resolved and payout checks listed.

What a table does with what the desk sends is checked with the table's own rules
(game.table.people, game.staff): the command body decoded as the table decodes it.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.desk import DeskOrder, StaffRoster
from game.staff import refusal, secret_matches
from game.table.people import NotAllowed, TableStaff
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import Conflict, DeskError, NotFound
from leaderboard.models import AuditEntry, Dispute, PayoutCheck, RosterState, StaffRecord
from leaderboard.models import Patron as PatronRow
from tests.leaderboard.desk_fields import buy, semis
from tests.leaderboard.desk_helpers import (
    FakeClock,
    add_score,
    command_audit,
    local,
    register,
    settings,
)
from tests.leaderboard.ingest_support import FakeTable, enroll

PIN, CARD = "4821", "04 A1 B2 C3"


def roster_at_table(command: desk.DeskCommand) -> StaffRoster:
    """The roster as a table reads it from the command's body."""
    order = DeskOrder.decode(command.body("desk-a"))
    assert isinstance(order.command, StaffRoster)
    return order.command


def enrol_two(session: Session, clock: FakeClock) -> None:
    desk.enrol_staff(session, clock, actor="desk-1", staff_id="D12", name="Nandi Dlamini",
                     role="dealer", pin=PIN, card=CARD)
    desk.enrol_staff(session, clock, actor="desk-1", staff_id="S1", name="Sipho Khumalo",
                     role="supervisor", pin="99887766")


# ---- staff ------------------------------------------------------------------------------------


def test_enrolment_keeps_only_hashes_and_each_change_raises_the_version(
    session: Session, clock: FakeClock
) -> None:
    enrol_two(session, clock)
    rows = {r.staff_id: r for r in session.scalars(select(StaffRecord))}
    d12 = rows["D12"]
    assert d12.pin_hash is not None and d12.card_hash is not None
    assert PIN not in d12.pin_hash and "04A1B2C3" not in d12.card_hash
    assert secret_matches(PIN, d12.pin_hash) and not secret_matches("4822", d12.pin_hash)
    assert rows["S1"].card_hash is None
    views = desk.list_staff(session)
    assert [(v.staff_id, v.role, v.has_pin, v.has_card, v.active, v.roster_version)
            for v in views] == [("D12", "dealer", True, True, True, 2),
                                ("S1", "supervisor", True, False, True, 2)]
    shown = json.dumps([asdict(v) for v in views], default=str)
    assert "hash" not in shown and "scrypt" not in shown
    salt = session.get(RosterState, 1)
    assert salt is not None
    first_salt = salt.card_salt
    assert desk.set_staff_active(session, clock, actor="desk-1", staff_id="D12",
                                 active=False).roster_version == 3
    assert desk.set_staff_active(session, clock, actor="desk-1", staff_id="D12",
                                 active=True).roster_version == 4
    assert desk.change_staff_pin(session, clock, actor="desk-1", staff_id="S1",
                                 pin="1234").roster_version == 5
    assert desk.change_staff_card(session, clock, actor="desk-1", staff_id="S1",
                                  card="0099AABB").roster_version == 6
    current = desk.roster(session)
    assert current.version == 6 and current.card_salt == first_salt  # drawn once
    s1 = current.member("S1")
    assert s1 is not None and s1.pin_hash is not None and secret_matches("1234", s1.pin_hash)
    actions = [r.action for r in session.scalars(select(AuditEntry).order_by(AuditEntry.id))]
    assert actions == ["staff.enrolled", "staff.enrolled", "staff.disabled", "staff.enabled",
                       "staff.pin_changed", "staff.card_changed"]
    audit = json.dumps([r.detail for r in session.scalars(select(AuditEntry))])
    assert PIN not in audit and "A1" not in audit and "scrypt" not in audit


def test_the_roster_a_table_reads_has_no_raw_secret_and_finds_a_tapped_card(
    session: Session, clock: FakeClock
) -> None:
    enrol_two(session, clock)
    desk.set_staff_active(session, clock, actor="desk-1", staff_id="S1", active=False)
    t01, t02, t03 = FakeTable("t01"), FakeTable("t02"), FakeTable("t03")
    enroll(session.get_bind(), t01, t02)  # type: ignore[arg-type]
    enroll(session.get_bind(), t03, active=False)  # type: ignore[arg-type]
    commands = desk.send_roster(session, clock, actor="desk-1")
    assert [(c.table, c.command) for c in commands] == [("t01", StaffRoster.NAME),
                                                        ("t02", StaffRoster.NAME)]
    body = json.dumps(commands[0].body("desk-a"))
    for raw in (PIN, "99887766", "04A1B2C3", "04 A1 B2 C3", "Dlamini" + "x"):
        assert raw not in body
    roster = roster_at_table(commands[0])
    assert roster.version == 3
    assert [(m.staff_id, m.role, m.active) for m in roster.members] == [
        ("D12", "dealer", True), ("S1", "supervisor", False)]
    key = roster.card_key("04A1B2C3")  # what the table hashes a tap into
    assert key is not None
    found = roster.by_card_key(key)
    assert found is not None and found.staff_id == "D12"
    assert roster.by_card_key(roster.card_key("04A1B2C4") or "") is None
    d12 = roster.member("D12")
    assert d12 is not None and d12.pin_hash is not None and secret_matches(PIN, d12.pin_hash)
    # A table takes a roster once: the same version again is refused (its command result).
    table = TableStaff()
    table.take_roster(roster)
    with pytest.raises(NotAllowed, match="version 3 is not newer"):
        table.take_roster(roster_at_table(commands[1]))
    # Recorded like every command: sent again unchanged from the audit.
    assert desk.recorded_command(session, commands[0].seq) == commands[0]
    one = desk.send_roster(session, clock, actor="desk-1", table="t02")
    assert [(c.table, c.args["version"]) for c in one] == [("t02", 3)]


def test_a_manager_is_sent_to_the_tables_as_a_manager_and_a_clerk_not_at_all(
    session: Session, clock: FakeClock
) -> None:
    enrol_two(session, clock)
    phrase = "a desk phrase of " + "words " * 3
    desk.enrol_staff(session, clock, actor="desk-1", staff_id="M1", name="Mpho Ndlovu",
                     role="manager", pin="55443322", desk_passphrase=phrase)
    desk.enrol_staff(session, clock, actor="desk-1", staff_id="C1", name="Cara Clerk",
                     role="clerk", desk_passphrase=phrase)
    enroll(session.get_bind(), FakeTable("t01"))  # type: ignore[arg-type]
    [command] = desk.send_roster(session, clock, actor="desk-1")
    roster = roster_at_table(command)
    assert [(m.staff_id, m.role) for m in roster.members] == [
        ("D12", "dealer"), ("M1", "manager"), ("S1", "supervisor")]
    # the table takes it, and the manager may lift a sign-in back-off there
    table = TableStaff()
    table.take_roster(roster)
    manager = table.member("M1")
    assert manager is not None and refusal(manager, "unlock_staff") is None
    assert refusal(manager, "void") is None


def test_bad_staff_input_is_refused_and_changes_nothing(
    session: Session, clock: FakeClock
) -> None:
    def enrol(**given: str | None) -> None:
        fields: dict[str, str | None] = {"staff_id": "D1", "name": "A Dealer",
                                         "role": "dealer", "pin": "1234", **given}
        desk.enrol_staff(session, clock, actor="desk-1", **fields)  # type: ignore[arg-type]

    for given, match in (({"pin": "12"}, "PIN must be 4 to 8 digits"),
                         ({"pin": "123456789"}, "PIN must be 4 to 8 digits"),
                         ({"pin": "12a4"}, "PIN must be 4 to 8 digits"),
                         ({"pin": None}, "needs a PIN or an employee card"),
                         ({"role": "pit_boss"}, "role 'pit_boss' is not one of"),
                         ({"staff_id": "D 1"}, "staff id 'D 1' must be"),
                         ({"name": "  "}, "name is empty"),
                         ({"card": "x"}, "card number must be 4 to 64")):
        with pytest.raises(DeskError, match=match):
            enrol(**given)
        assert "123456789" not in str(match)
    assert session.scalars(select(StaffRecord)).all() == []
    assert desk.roster(session).version == 0
    with pytest.raises(Conflict, match="nothing to send"):
        desk.send_roster(session, clock, actor="desk-1")
    enrol(card=CARD)
    with pytest.raises(Conflict, match="already enrolled"):
        enrol()
    with pytest.raises(Conflict, match="card is already enrolled for D1"):
        enrol(staff_id="D2", card="04-a1-b2-c3")
    with pytest.raises(NotFound, match="no staff member 'D9'"):
        desk.change_staff_pin(session, clock, actor="desk-1", staff_id="D9", pin="1234")
    with pytest.raises(Conflict, match="already enabled"):
        desk.set_staff_active(session, clock, actor="desk-1", staff_id="D1", active=True)
    with pytest.raises(Conflict, match="no table is enrolled"):
        desk.send_roster(session, clock, actor="desk-1")
    with pytest.raises(NotFound, match="no enrolled table 't07'"):
        desk.send_roster(session, clock, actor="desk-1", table="t07")
    with pytest.raises(DeskError, match="name who performs"):
        desk.send_roster(session, clock, actor=" ")
    assert desk.roster(session).version == 1
    assert [r.action for r in session.scalars(select(AuditEntry))] == ["staff.enrolled"]


# ---- participants' proof ----------------------------------------------------------------------


def test_registration_and_an_update_record_the_participants_proof_as_hashes(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    by_card = desk.register_patron(session, s, clock, actor="desk-1", name="R Card",
                                   id_kind="rewards_card", id_number="6099-0000-7788-99",
                                   birth_date="1980-01-01")
    assert by_card.card_hash is not None and secret_matches("60990000778899", by_card.card_hash)
    assert by_card.pin_hash is None
    by_id = desk.register_patron(session, s, clock, actor="desk-1", name="I Document",
                                 id_kind="id_document", id_number="8001015009087",
                                 birth_date="1980-01-01", rewards_card="5555 6666", pin="0042")
    assert by_id.card_hash is not None and secret_matches("55556666", by_id.card_hash)
    assert by_id.pin_hash is not None and secret_matches("0042", by_id.pin_hash)
    assert not secret_matches("8001015009087", by_id.card_hash)  # never the ID number
    with pytest.raises(DeskError, match="PIN must be 4 to 8 digits"):
        desk.register_patron(session, s, clock, actor="desk-1", name="Bad Pin",
                             id_kind="id_document", id_number="7001015009087",
                             birth_date="1970-01-01", pin="12")
    assert session.scalar(select(PatronRow).where(PatronRow.name == "Bad Pin")) is None
    old_card = by_id.card_hash
    desk.set_patron_credentials(session, clock, actor="desk-1", patron_id=by_id.patron_id,
                                rewards_card="5555 7777")
    assert by_id.card_hash != old_card and secret_matches("55557777", by_id.card_hash or "")
    assert by_id.pin_hash is not None and secret_matches("0042", by_id.pin_hash)  # kept
    with pytest.raises(DeskError, match="give a rewards card number or a PIN"):
        desk.set_patron_credentials(session, clock, actor="desk-1", patron_id=by_id.patron_id)
    with pytest.raises(NotFound, match="no patron 'P-none'"):
        desk.set_patron_credentials(session, clock, actor="desk-1", patron_id="P-none",
                                    pin="1234")
    audit = [r.detail for r in session.scalars(select(AuditEntry).order_by(AuditEntry.id))
             if r.action in ("patron.registered", "patron.credentials")]
    assert [{k: v for k, v in d.items() if k in ("card", "pin")} for d in audit] == [
        {"card": True}, {"card": True, "pin": True}, {"card": True}]
    assert "5555" not in json.dumps(audit)


def test_seating_carries_the_players_hashes_a_proxys_own(
    session: Session, clock: FakeClock
) -> None:
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    proxy = f.spare[0]
    desk.set_patron_credentials(session, clock, actor="desk-1", patron_id=f.a,
                                rewards_card="AAAA1111", pin="1111")
    desk.set_patron_credentials(session, clock, actor="desk-1", patron_id=proxy,
                                rewards_card="BBBB2222", pin="2222")
    desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=a_places[1],
                        proxy_patron_id=proxy)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[0], heat=1, seat=1)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=a_places[1], heat=1, seat=2)
    no_proof = next(p.entry_id for p in places if p.holder != f.a)
    desk.choose_seat(session, s, clock, actor="desk-1", entry_id=no_proof, heat=1, seat=3)
    clock.now = local(2026, 8, 1, 15, 55)
    desk.open_heat(session, s, clock, actor="desk-1", table="t05", stage=Stage.SEMI_FINAL,
                   heat_id="semi-final-1")
    own = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[0],
                          table="t05").command
    by_proxy = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=a_places[1],
                               table="t05").command
    plain = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=no_proof,
                            table="t05").command
    for command, card, pin in ((own, "AAAA1111", "1111"), (by_proxy, "BBBB2222", "2222")):
        order = DeskOrder.decode(command.body("desk-a"))  # as the table reads it
        seat = order.command
        assert secret_matches(card, getattr(seat, "card_hash", "") or "")
        assert secret_matches(pin, getattr(seat, "pin_hash", "") or "")
    assert not secret_matches("AAAA1111", str(by_proxy.args["card_hash"]))
    assert set(plain.args) == {"entry_id", "seat", "entry_code"}  # no proof recorded: none sent


# ---- acknowledgement at the desk, disputes, payout checks -------------------------------------


def test_desk_acknowledgement_goes_to_the_scores_table(session: Session, clock: FakeClock
                                                       ) -> None:
    patron = register(session, clock, "8001015009087")
    scored, acked, voided, unscored = (buy(session, clock, patron) for _ in range(4))
    recorded = local(2026, 7, 3, 15, 0)
    add_score(session, scored, 23_450, stage="qualifying", recorded=recorded,
              acknowledged=None, table="t04", seq=7)
    add_score(session, acked, 1_000, stage="qualifying", recorded=recorded,
              acknowledged=recorded, seq=8)
    add_score(session, voided, 2_000, stage="qualifying", recorded=recorded,
              acknowledged=None, seq=9)
    desk.void_score(session, settings(), clock, actor="supervisor-1", entry_id=voided,
                    why="misdeal")
    command = desk.acknowledge_score(session, clock, actor="desk-1", entry_id=scored,
                                     method="desk_signature", why="signed the slip")
    assert (command.table, command.command, dict(command.args)) == (
        "t04", "ack_score", {"entry_id": scored, "method": "desk_signature"})
    row = command_audit(session, command.seq)
    assert row is not None and (row.actor, row.action) == ("desk-1", "score.ack_sent")
    assert row.detail["why"] == "signed the slip"
    for entry_id, error, match in (
        (unscored, NotFound, "has no recorded score to acknowledge"),
        (acked, Conflict, "already acknowledged"),
        (voided, Conflict, "is voided"),
        ("E-none", NotFound, "no entry 'E-none'"),
    ):
        with pytest.raises(error, match=match):
            desk.acknowledge_score(session, clock, actor="desk-1", entry_id=entry_id,
                                   method="desk_id_check")
    with pytest.raises(DeskError, match="method 'card' is not one of desk_signature"):
        desk.acknowledge_score(session, clock, actor="desk-1", entry_id=scored, method="card")


def test_disputes_are_listed_and_resolved_once(session: Session, clock: FakeClock) -> None:
    at = datetime(2026, 7, 3, 13, 0, tzinfo=UTC)
    session.add_all([
        Dispute(entry_id="E1", table_id="t01", seq=5, stage="qualifying", heat_id="h",
                score_cents=23_450, note="hand 12 paid short", at=at),
        Dispute(entry_id="E2", table_id="t01", seq=6, stage="qualifying", heat_id="h",
                score_cents=100, note="wrong seat", at=at)])
    session.add(PayoutCheck(hand_id="t01-000002", table_id="t01", seq=7, heat_id="h",
                            outcome="overridden", mismatches=[{"seat": 2, "spot": "ante",
                                                               "expected": 2, "held": 3}],
                            unverifiable=[], by="S1", reason="walked away", at=at))
    session.add(PayoutCheck(hand_id="t01-000001", table_id="t01", seq=4, heat_id="h",
                            outcome="verified", mismatches=[], unverifiable=[],
                            at=at - timedelta(minutes=5)))
    session.commit()
    assert [d.entry_id for d in desk.disputes(session, open_only=True)] == ["E1", "E2"]
    with pytest.raises(DeskError, match="say how the dispute was resolved"):
        desk.resolve_dispute(session, clock, actor="supervisor-1", entry_id="E1",
                             resolution="  ")
    with pytest.raises(NotFound, match="no dispute on record"):
        desk.resolve_dispute(session, clock, actor="supervisor-1", entry_id="E9",
                             resolution="x")
    done = desk.resolve_dispute(session, clock, actor="supervisor-1", entry_id="E1",
                                resolution="replayed the hand: the score stands")
    assert [(d.entry_id, d.resolved_by, d.open) for d in done] == [
        ("E1", "supervisor-1", False)]
    with pytest.raises(Conflict, match="already resolved by supervisor-1"):
        desk.resolve_dispute(session, clock, actor="supervisor-1", entry_id="E1",
                             resolution="again")
    assert [d.entry_id for d in desk.disputes(session, open_only=True)] == ["E2"]
    assert len(desk.disputes(session)) == 2
    audit = session.scalars(select(AuditEntry)).one()
    assert (audit.action, audit.detail["disputes"]) == ("score.dispute_resolved", [["t01", 5]])
    assert [p.hand_id for p in desk.payout_checks(session)] == ["t01-000002", "t01-000001"]
    over = desk.payout_checks(session, overridden_only=True)
    assert [(p.hand_id, p.by, p.reason, p.mismatches[0]["held"]) for p in over] == [
        ("t01-000002", "S1", "walked away", 3)]
