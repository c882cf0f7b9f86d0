"""Who may act at a table: the staff roster the desk sends, the secrets (PINs and card
numbers) kept only as slow salted hashes, which role may do what, and when repeated failed
sign-ins lock a credential.

Pure: hashing is the standard library's scrypt, times come in as arguments, and a salt is
passed in by whoever enrols (the desk draws it with `secrets`). The same hash form serves a
staff member's PIN or employee card and a participant's rewards card or PIN (sent at seating).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, Final, Literal

from game.errors import GameError
from game.messages.fields import BodyReader, MessageError

__all__ = [
    "ACTIONS",
    "HOUSE_COST",
    "ROLES",
    "SIMULATOR_COST",
    "SUPERVISOR_ONLY",
    "CredentialError",
    "KdfCost",
    "Lockout",
    "LockoutPolicy",
    "Role",
    "StaffMember",
    "StaffRoster",
    "check_hash",
    "hash_secret",
    "is_simulator_hash",
    "may",
    "refusal",
    "secret_matches",
]

Role = Literal["dealer", "supervisor"]
ROLES: Final[tuple[Role, ...]] = ("dealer", "supervisor")

# Every console action a person can take, and the ones a dealer may not (issue 12, §3).
ACTIONS: Final = frozenset({
    "no_more_bets", "settle", "reveal", "payout_check", "void", "correct_card",
    "resolve_alert", "manual_card", "manual_wager", "payout_override", "clear_fault",
    "dispute_hand",
    "issue_chips", "return_chips",
    "print_slip",  # a score slip on the receipt printer (journaled; controller.slip_printing)
})
SUPERVISOR_ONLY: Final = frozenset({
    "void", "correct_card", "resolve_alert", "manual_card", "manual_wager",
    "payout_override", "clear_fault",
})

_SCHEME: Final = "scrypt"
_MAX_SECRET: Final = 64


@dataclass(frozen=True, slots=True)
class KdfCost:
    """scrypt's parameters for a stored credential (the hash carries them)."""

    n: int
    r: int
    p: int


# Every real credential: about 16 MiB and tens of milliseconds a check, slow for a guesser.
HOUSE_COST: Final = KdfCost(n=2**14, r=8, p=1)
# Only the virtual people of a simulated table (made-up PINs and cards drawn for the run): a
# table with any real device refuses a credential hashed at this cost (`secret_matches`).
SIMULATOR_COST: Final = KdfCost(n=2**4, r=8, p=1)
_COSTS: Final = frozenset({HOUSE_COST, SIMULATOR_COST})


class CredentialError(GameError):
    """A stored credential hash that cannot be read."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_secret(secret: str, salt: bytes, *, cost: KdfCost = HOUSE_COST) -> str:
    """The stored form of a PIN or card number: ``scrypt$N$r$p$salt$hash`` (base64url), at
    the house cost unless a simulator asks for `SIMULATOR_COST` for its virtual people."""
    if not salt or len(salt) < 8:
        raise ValueError("a credential salt must be at least 8 bytes")
    if cost not in _COSTS:
        raise ValueError(f"not a credential cost a table checks: {cost}")
    digest = hashlib.scrypt(_normal(secret).encode(), salt=salt, n=cost.n, r=cost.r,
                            p=cost.p, dklen=32)
    return f"{_SCHEME}${cost.n}${cost.r}${cost.p}${_b64(salt)}${_b64(digest)}"


def _normal(secret: str) -> str:
    """Card numbers are compared without spaces and case (a UID's hex); PINs as typed."""
    return "".join(secret.split()).upper()


def _parts(stored: str) -> tuple[int, int, int, bytes, bytes]:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != _SCHEME:
            raise ValueError(scheme)
        return int(n), int(r), int(p), _unb64(salt), _unb64(digest)
    except (ValueError, binascii.Error) as exc:
        raise CredentialError(f"not a credential hash: {stored[:20]!r}") from exc


def check_hash(stored: str) -> str | None:
    """Why ``stored`` is not a credential hash this table can check; None when it is."""
    try:
        n, r, p, salt, digest = _parts(stored)
    except CredentialError as exc:
        return str(exc)
    if KdfCost(n, r, p) not in _COSTS or len(salt) < 8 or len(digest) != 32:
        return "a credential hash with unexpected parameters"
    return None


def is_simulator_hash(stored: str) -> bool:
    """True when ``stored`` is a credential hash made at `SIMULATOR_COST` (a virtual
    person's, which only a simulated table accepts)."""
    if check_hash(stored) is not None:
        return False
    n, r, p, _salt, _digest = _parts(stored)
    return KdfCost(n, r, p) == SIMULATOR_COST


def secret_matches(secret: str, stored: str, *, simulated: bool = False) -> bool:
    """True when ``secret`` hashes to ``stored`` (constant-time compare); False for junk, and
    for a hash at the simulator's cost unless the table is ``simulated`` (every device a
    simulator)."""
    if not secret or len(secret) > _MAX_SECRET or check_hash(stored) is not None:
        return False
    if not simulated and is_simulator_hash(stored):
        return False
    n, r, p, salt, digest = _parts(stored)
    candidate = hashlib.scrypt(_normal(secret).encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    return hmac.compare_digest(candidate, digest)


def may(role: str, action: str) -> bool:
    """True when a person of ``role`` may take ``action`` at the console."""
    if action not in ACTIONS or role not in ROLES:
        return False
    return role == "supervisor" or action not in SUPERVISOR_ONLY


def refusal(member: StaffMember | None, action: str) -> str | None:
    """Why ``member`` may not take ``action`` (None: allowed)."""
    if member is None:
        return f"{action!r} needs a signed-in dealer or supervisor"
    if not member.active:
        return f"{member.staff_id}'s credential is disabled"
    if not may(member.role, action):
        if action in SUPERVISOR_ONLY:
            return (f"{action!r} is a supervisor's action; {member.staff_id} is signed in as"
                    f" {member.role}: call a supervisor to sign in")
        return f"unknown console action {action!r}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffMember:
    """One dealer or supervisor as the desk enrolled them (secrets only as hashes)."""

    staff_id: str
    name: str
    role: Role
    pin_hash: str | None = None
    card_hash: str | None = None
    active: bool = True

    def encode(self) -> dict[str, Any]:
        """The member's part of a roster body."""
        return {"staff_id": self.staff_id, "name": self.name, "role": self.role,
                "pin_hash": self.pin_hash, "card_hash": self.card_hash, "active": self.active}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> StaffMember:
        """Read one member (MessageError naming the field)."""
        r = BodyReader("staff member", body)
        pin, card = r.opt_text("pin_hash", 200), r.opt_text("card_hash", 200)
        for name, value in (("pin_hash", pin), ("card_hash", card)):
            problem = None if value is None else check_hash(value)
            if problem is not None:
                raise MessageError("staff member", name, problem, value)
        role = r.choice("role", ROLES)
        return cls(staff_id=r.text("staff_id", 40), name=r.text("name", 200),
                   role=role, pin_hash=pin, card_hash=card,  # type: ignore[arg-type]
                   active=r.flag("active") if "active" in body else True)


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffRoster:
    """The desk's list of who may act at tables: replaces the table's roster when newer.

    Employee cards are hashed with one salt for the whole roster (``card_salt``) so a tap is
    hashed once and looked up; PINs each carry their own salt.
    """

    NAME: ClassVar[str] = "staff_roster"
    version: int
    members: tuple[StaffMember, ...] = ()
    card_salt: str | None = None

    def args(self) -> dict[str, Any]:
        """The command's arguments in its body."""
        return {"version": self.version, "card_salt": self.card_salt,
                "members": [m.encode() for m in self.members]}

    @classmethod
    def decode(cls, body: Mapping[str, Any]) -> StaffRoster:
        """Read a roster body (MessageError naming the field)."""
        r = BodyReader(cls.NAME, body)
        raw = r.raw("members")
        if not isinstance(raw, list) or len(raw) > 2000:
            raise MessageError(cls.NAME, "members", "must be a list of at most 2000", raw)
        members = tuple(StaffMember.decode(m) for m in raw)
        ids = [m.staff_id for m in members]
        if len(set(ids)) != len(ids):
            raise MessageError(cls.NAME, "members", "must not name a staff id twice", ids)
        salt = r.opt_text("card_salt", 100)
        if salt is not None:
            try:
                if len(_unb64(salt)) < 8:
                    raise ValueError(salt)
            except (ValueError, binascii.Error) as exc:
                raise MessageError(cls.NAME, "card_salt", "must be base64url of 8+ bytes",
                                   salt) from exc
        return cls(version=r.count("version"), members=members, card_salt=salt)

    def member(self, staff_id: str) -> StaffMember | None:
        """The member with this id, if enrolled."""
        return next((m for m in self.members if m.staff_id == staff_id), None)

    def card_key(self, number: str) -> str | None:
        """The roster's hash of a tapped card number (None without a card salt)."""
        if self.card_salt is None or not number or len(number) > _MAX_SECRET:
            return None
        return hash_secret(number, _unb64(self.card_salt))

    def by_card_key(self, key: str) -> StaffMember | None:
        """The member whose employee card hashes to ``key``."""
        return next((m for m in self.members
                     if m.card_hash is not None and hmac.compare_digest(m.card_hash, key)),
                    None)


@dataclass(frozen=True, slots=True, kw_only=True)
class LockoutPolicy:
    """``failures`` failed sign-ins within ``window`` lock the credential for ``lock``."""

    failures: int = 5
    window: timedelta = timedelta(minutes=10)
    lock: timedelta = timedelta(minutes=5)


@dataclass(slots=True)
class Lockout:
    """Failed sign-ins per staff id (from the journal), and whether one is locked now."""

    policy: LockoutPolicy = field(default_factory=LockoutPolicy)
    _failures: dict[str, list[datetime]] = field(default_factory=dict)

    def failed(self, staff_id: str, at: datetime) -> bool:
        """Record a failure; True when it locks the credential."""
        recent = [t for t in self._failures.get(staff_id, []) if at - t < self.policy.window]
        recent.append(at)
        self._failures[staff_id] = recent
        return len(recent) >= self.policy.failures

    def succeeded(self, staff_id: str) -> None:
        """A good sign-in clears the count."""
        self._failures.pop(staff_id, None)

    def locked_until(self, staff_id: str, at: datetime) -> datetime | None:
        """When the credential unlocks, if it is locked at ``at``."""
        recent = [t for t in self._failures.get(staff_id, []) if at - t < self.policy.window]
        if len(recent) < self.policy.failures:
            return None
        until = recent[-1] + self.policy.lock
        return until if at < until else None

    def known(self) -> Iterable[str]:
        """Staff ids with failures on record."""
        return tuple(self._failures)
