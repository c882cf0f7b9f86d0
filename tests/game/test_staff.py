"""Staff credentials: slow salted hashes, the roster the desk sends, who may do what."""

from __future__ import annotations

import pytest

from game.messages.fields import MessageError
from game.staff import (
    HOUSE_COST,
    SIMULATOR_COST,
    SUPERVISOR_ONLY,
    KdfCost,
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
