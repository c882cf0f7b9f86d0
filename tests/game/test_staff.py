"""Staff credentials: slow salted hashes, the roster the desk sends, who may do what, and the
sign-in back-off per terminal and staff id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from game.messages.fields import MessageError
from game.staff import (
    ACTIONS,
    HOUSE_COST,
    MANAGER_ONLY,
    SIMULATOR_COST,
    SUPERVISOR_ONLY,
    KdfCost,
    Lockout,
    LockoutPolicy,
    StaffMember,
    StaffRoster,
    check_hash,
    hash_secret,
    is_simulator_hash,
    may,
    refusal,
    secret_matches,
)

SALT = b"0123456789abcdef"


def test_a_secret_is_kept_only_as_a_salted_hash_and_checked_against_it() -> None:
    stored = hash_secret("4821", SALT)
    assert "4821" not in stored and stored.startswith("scrypt$16384$8$1$")
    assert secret_matches("4821", stored)
    assert not secret_matches("4822", stored)
    assert hash_secret("4821", b"another-salt-123") != stored
    # card numbers compare without spaces and case (a UID's hex)
    card = hash_secret("04a1 b2c3", SALT)
    assert secret_matches("04A1B2C3", card)


@pytest.mark.parametrize("junk", ["", "plain", "scrypt$1$2$3$x$y", "md5$a$b$c$d$e",
                                  "scrypt$16384$8$1$!!$??"])
def test_junk_never_matches_and_is_named(junk: str) -> None:
    assert not secret_matches("4821", junk)
    assert check_hash(junk) is not None


def test_a_virtual_persons_cheap_hash_is_accepted_only_by_a_simulated_table() -> None:
    cheap = hash_secret("4821", SALT, cost=SIMULATOR_COST)
    assert cheap.startswith("scrypt$16$8$1$") and check_hash(cheap) is None
    assert is_simulator_hash(cheap) and not is_simulator_hash(hash_secret("4821", SALT))
    assert secret_matches("4821", cheap, simulated=True)
    assert not secret_matches("4822", cheap, simulated=True)
    assert not secret_matches("4821", cheap)  # a table with a real device refuses it
    # the house's hash is checked at a simulated table too, at its own cost
    assert secret_matches("4821", hash_secret("4821", SALT), simulated=True)


@pytest.mark.parametrize("n", [2**13, 2**5, 2**15])
def test_only_the_house_and_the_simulator_costs_are_credential_hashes(n: int) -> None:
    odd = hash_secret("4821", SALT).replace("scrypt$16384$", f"scrypt${n}$")
    assert check_hash(odd) == "a credential hash with unexpected parameters"
    assert not secret_matches("4821", odd, simulated=True)
    with pytest.raises(ValueError, match="not a credential cost"):
        hash_secret("4821", SALT, cost=KdfCost(n=n, r=8, p=1))
    assert KdfCost(n=2**14, r=8, p=1) == HOUSE_COST


def test_an_empty_or_huge_secret_never_matches() -> None:
    stored = hash_secret("4821", SALT)
    assert not secret_matches("", stored)
    assert not secret_matches("4" * 65, stored)
    with pytest.raises(ValueError, match="at least 8 bytes"):
        hash_secret("4821", b"short")


def test_dealers_may_run_the_game_and_only_supervisors_the_rest() -> None:
    assert may("dealer", "settle") and may("supervisor", "settle")
    assert all(may("supervisor", a) and not may("dealer", a) for a in SUPERVISOR_ONLY)
    assert not may("dealer", "launch_rockets") and not may("janitor", "settle")
    dealer = StaffMember(staff_id="D1", name="D", role="dealer")
    assert refusal(dealer, "settle") is None
    assert "supervisor's action" in str(refusal(dealer, "void"))
    disabled = StaffMember(staff_id="D2", name="D", role="supervisor", active=False)
    assert refusal(disabled, "void") == "D2's credential is disabled"


def test_a_manager_may_all_a_supervisor_may_and_lift_a_sign_in_back_off() -> None:
    assert all(may("manager", a) for a in ACTIONS)
    assert may("manager", "unlock_staff") and {"unlock_staff"} == MANAGER_ONLY
    assert not may("supervisor", "unlock_staff") and not may("dealer", "unlock_staff")
    assert refusal(None, "unlock_staff") == "'unlock_staff' needs a signed-in manager"
    supervisor = StaffMember(staff_id="S1", name="S", role="supervisor")
    assert refusal(supervisor, "unlock_staff") == (
        "'unlock_staff' is a manager's action; S1 is signed in as supervisor: call a manager"
        " to sign in")
    roster = StaffRoster(version=1, members=(
        StaffMember(staff_id="M1", name="M", role="manager"),))
    assert StaffRoster.decode(roster.args()) == roster


T0 = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
POLICY = LockoutPolicy(free=3, first=timedelta(seconds=30), cap=timedelta(minutes=4),
                       forget=timedelta(hours=1))


def test_the_back_off_doubles_after_the_free_failures_up_to_its_cap() -> None:
    waits = [POLICY.delay(n).total_seconds() for n in range(8)]
    assert waits == [0, 0, 0, 30, 60, 120, 240, 240]
    assert POLICY.delay(10_000) == timedelta(minutes=4)  # no overflow, the cap


def test_failures_back_off_one_terminal_for_one_id_and_a_good_sign_in_clears_them() -> None:
    lock = Lockout(POLICY)
    at = T0
    for n in range(1, 3):
        assert lock.failed("A", "S1", at).wait_until is None and n < 3
    third = lock.failed("A", "S1", at)
    assert (third.failures, third.wait_until) == (3, at + timedelta(seconds=30))
    assert lock.wait_until("A", "S1", at + timedelta(seconds=29)) == at + timedelta(seconds=30)
    assert lock.wait_until("A", "S1", at + timedelta(seconds=30)) is None  # waited
    assert lock.wait_until("B", "S1", at) is None  # the same id at another terminal
    assert lock.wait_until("A", "S2", at) is None and lock.wait_until("A", None, at) is None
    later = at + timedelta(seconds=31)
    assert lock.failed("A", "S1", later).wait_until == later + timedelta(seconds=60)
    assert [(b.staff_id, b.terminal, b.failures) for b in lock.backed_off(later)] == [
        ("S1", "A", 4)]
    lock.succeeded("A", "S1")
    assert lock.wait_until("A", "S1", later) is None and lock.backed_off(later) == []


def test_wrong_cards_and_unknown_ids_back_off_the_terminal_and_a_quiet_hour_forgets() -> None:
    lock = Lockout(POLICY)
    for _ in range(3):
        lock.failed("A", None, T0)
    assert lock.wait_until("A", None, T0) is not None
    assert lock.wait_until("A", "S1", T0) is None  # a real id's PIN is not held up
    quiet = T0 + timedelta(hours=1)
    assert lock.backed_off(quiet) == [] and lock.wait_until("A", None, quiet) is None
    assert lock.failed("A", None, quiet).failures == 1  # a fresh count
    for _ in range(2):
        lock.failed("A", None, quiet)
    lock.succeeded("A", "S9")  # anyone's good sign-in at the terminal clears its count
    assert lock.wait_until("A", None, quiet) is None


def test_a_lift_clears_the_back_offs_of_an_id_at_one_or_every_terminal() -> None:
    lock = Lockout(POLICY)
    for terminal in ("A", "B"):
        for _ in range(3):
            lock.failed(terminal, "S1", T0)
    lock.failed("C", "S1", T0)  # one failure: no back-off to lift
    assert lock.lift("S2", None, T0) == []
    assert [b.terminal for b in lock.lift("S1", "A", T0)] == ["A"]
    assert lock.lift("S1", "A", T0) == [] and lock.lift("S1", "C", T0) == []
    assert [b.terminal for b in lock.lift("S1", None, T0)] == ["B"]
    assert lock.wait_until("B", "S1", T0) is None and set(lock.known()) == {("C", "S1")}


def test_a_roster_round_trips_and_finds_a_member_by_card() -> None:
    salt = "c2FsdC1mb3ItY2FyZHM"
    roster = StaffRoster(version=3, card_salt=salt, members=(
        StaffMember(staff_id="D1", name="Dineo", role="dealer",
                    card_hash=hash_secret("6001234567890123", b"salt-for-cards")),))
    again = StaffRoster.decode(roster.args())
    assert again == roster
    key = roster.card_key("6001234567890123")
    assert key is not None and roster.by_card_key(key) is not None
    assert roster.by_card_key(str(roster.card_key("6001234567890124"))) is None


@pytest.mark.parametrize(("body", "field"), [
    ({"version": 1, "members": "all"}, "members"),
    ({"version": 1, "members": [{"staff_id": "D1", "name": "x", "role": "dealer"},
                                {"staff_id": "D1", "name": "y", "role": "dealer"}]}, "members"),
    ({"version": 1, "members": [{"staff_id": "D1", "name": "x", "role": "boss"}]}, "role"),
    ({"version": 1, "members": [{"staff_id": "D1", "name": "x", "role": "dealer",
                                 "pin_hash": "1234"}]}, "pin_hash"),
    ({"version": -1, "members": []}, "version"),
    ({"version": 1, "members": [], "card_salt": "a"}, "card_salt"),
])
def test_a_bad_roster_is_refused_naming_the_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(MessageError) as caught:
        StaffRoster.decode(body)
    assert caught.value.field == field
