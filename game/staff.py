"""Who may act at a table: the staff roster the desk sends, the secrets (PINs and card
numbers) kept only as slow salted hashes, which role may do what, and how long a terminal must
wait after repeated failed sign-ins (the back-off, per terminal and staff id).

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
    "MANAGER_ONLY",
    "ROLES",
    "SIMULATOR_COST",
    "SUPERVISOR_ONLY",
    "BackOff",
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

Role = Literal["dealer", "supervisor", "manager"]
ROLES: Final[tuple[Role, ...]] = ("dealer", "supervisor", "manager")

# Every console action a person can take, and the ones a dealer may not (issue 12, §3).
ACTIONS: Final = frozenset({
    "no_more_bets", "settle", "reveal", "payout_check", "void", "correct_card",
    "resolve_alert", "manual_card", "manual_wager", "payout_override", "clear_fault",
    "dispute_hand",
    "issue_chips", "return_chips", "unlock_staff",
    "resolve_alerts", "rule_hand",
    "print_slip",  # a score slip on the receipt printer (journaled; controller.slip_printing)
    # the tray counted at a heat's opening and closing, confirmed by a supervisor's own
    # credential; the deck inventory (game.table.tallies, D375-D379)
    "count_chips", "confirm_count",
    "decks_received", "decks_opened", "decks_used", "decks_destroyed",
})
SUPERVISOR_ONLY: Final = frozenset({
    "void", "correct_card", "resolve_alert", "manual_card", "manual_wager",
    "payout_override", "clear_fault",
    "resolve_alerts", "rule_hand",  # several alerts in one act; a settled hand ruled (D342)
    "decks_received", "decks_destroyed",  # a supervisor's (the witness: a second person)
})
# A manager may do all a supervisor may, and these (D345).
MANAGER_ONLY: Final = frozenset({"unlock_staff"})

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
    if action in MANAGER_ONLY:
        return role == "manager"
    return role != "dealer" or action not in SUPERVISOR_ONLY


def refusal(member: StaffMember | None, action: str) -> str | None:
    """Why ``member`` may not take ``action`` (None: allowed)."""
    if member is None:
        if action in MANAGER_ONLY:
            return f"{action!r} needs a signed-in manager"
        return f"{action!r} needs a signed-in dealer or supervisor"
    if not member.active:
        return f"{member.staff_id}'s credential is disabled"
    if not may(member.role, action):
        if action in MANAGER_ONLY:
            return (f"{action!r} is a manager's action; {member.staff_id} is signed in as"
                    f" {member.role}: call a manager to sign in")
        if action in SUPERVISOR_ONLY:
            return (f"{action!r} is a supervisor's action; {member.staff_id} is signed in as"
                    f" {member.role}: call a supervisor to sign in")
        return f"unknown console action {action!r}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffMember:
    """One dealer, supervisor or manager as the desk enrolled them (secrets only as hashes)."""

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


_MAX_DOUBLINGS: Final = 30  # 2**30 first delays: far past any cap (no overflow)


@dataclass(frozen=True, slots=True, kw_only=True)
class LockoutPolicy:
    """The sign-in back-off (D344): after ``free`` failed sign-ins from one terminal for one
    staff id, each further attempt there waits ``first``, doubled for every further failure,
    never more than ``cap``; a count with no failure for ``forget`` starts again at zero."""

    free: int = 3
    first: timedelta = timedelta(seconds=30)
    cap: timedelta = timedelta(minutes=15)
    forget: timedelta = timedelta(hours=1)

    def delay(self, failures: int) -> timedelta:
        """How long the next attempt waits after ``failures`` failures in a row."""
        if failures < self.free:
            return timedelta(0)
        doublings: int = min(failures - self.free, _MAX_DOUBLINGS)
        return min(self.cap, self.first * (1 << doublings))


BackOffKey = tuple[str, str | None]  # (terminal, staff id; None: an unknown id or card)


@dataclass(frozen=True, slots=True, kw_only=True)
class BackOff:
    """One terminal's failures for one staff id (None: unknown ids and wrong cards there)."""

    terminal: str
    staff_id: str | None
    failures: int
    last: datetime  # the last failure
    wait_until: datetime | None  # when the next attempt may be made (None: no wait)

    def view(self) -> dict[str, Any]:
        """The back-off as the screen lists it."""
        return {"staff_id": self.staff_id, "terminal": self.terminal,
                "failures": self.failures,
                "wait_until": None if self.wait_until is None else self.wait_until.isoformat()}


@dataclass(slots=True)
class Lockout:
    """Failed sign-ins per (terminal, staff id), rebuilt from the journal, and how long the
    next attempt from a terminal for an id must wait (deterministic: times are arguments)."""

    policy: LockoutPolicy = field(default_factory=LockoutPolicy)
    _failures: dict[BackOffKey, tuple[int, datetime]] = field(default_factory=dict)

    def _count(self, key: BackOffKey, at: datetime) -> tuple[int, datetime] | None:
        found = self._failures.get(key)
        if found is not None and at - found[1] >= self.policy.forget:
            return None
        return found

    def failed(self, terminal: str, staff_id: str | None, at: datetime) -> BackOff:
        """Record a failure; the back-off it leaves (``wait_until`` None: no wait yet)."""
        key = (terminal, staff_id)
        found = self._count(key, at)
        failures = 1 if found is None else found[0] + 1
        self._failures[key] = (failures, at)
        return self._back_off(key, failures, at)

    def _back_off(self, key: BackOffKey, failures: int, last: datetime) -> BackOff:
        delay = self.policy.delay(failures)
        return BackOff(terminal=key[0], staff_id=key[1], failures=failures, last=last,
                       wait_until=last + delay if delay else None)

    def succeeded(self, terminal: str, staff_id: str) -> None:
        """A good sign-in clears that terminal's count for the id and for unknown ids."""
        self._failures.pop((terminal, staff_id), None)
        self._failures.pop((terminal, None), None)

    def wait_until(self, terminal: str, staff_id: str | None, at: datetime) -> datetime | None:
        """When an attempt from ``terminal`` for ``staff_id`` may be made, if later than
        ``at`` (None: it may be made now)."""
        found = self._count((terminal, staff_id), at)
        if found is None:
            return None
        until = found[1] + self.policy.delay(found[0])
        return until if at < until else None

    def backed_off(self, at: datetime) -> list[BackOff]:
        """Every count that has reached the back-off at ``at`` (by staff id, terminal)."""
        out = [self._back_off(key, n, last) for key, (n, last) in self._failures.items()
               if n >= self.policy.free and self._count(key, at) is not None]
        return sorted(out, key=lambda b: (b.staff_id or "", b.terminal))

    def lift(self, staff_id: str | None, terminal: str | None, at: datetime) -> list[BackOff]:
        """Clear the back-offs of ``staff_id`` (at ``terminal``; None: every terminal); the
        ones cleared (empty: nothing was backed off)."""
        lifted = [b for b in self.backed_off(at) if b.staff_id == staff_id
                  and (terminal is None or b.terminal == terminal)]
        for b in lifted:
            del self._failures[(b.terminal, b.staff_id)]
        return lifted

    def known(self) -> Iterable[BackOffKey]:
        """The (terminal, staff id) keys with failures on record."""
        return tuple(self._failures)
