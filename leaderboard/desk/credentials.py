"""The secrets people prove themselves with at a table: PINs and card numbers, checked here
and kept only as game.staff hashes, each PIN and participant card with a salt of its own from
`secrets` (an employee card with the roster's one card salt: leaderboard.desk.staff)."""

from __future__ import annotations

import base64
import re
import secrets
from typing import Final

from game.card_forms import CARD_FORMS, CardForm, read_card
from game.staff import hash_secret
from leaderboard.desk.errors import DeskError
from leaderboard.eligibility import normalize_id

__all__ = ["SALT_BYTES", "card_number", "hashed", "new_card_salt", "pin_number",
           "rewards_card_number", "salt_bytes"]

SALT_BYTES: Final = 16
_PIN: Final = re.compile(r"[0-9]{4,8}")


def pin_number(pin: str, whose: str) -> str:
    """A PIN of 4 to 8 digits, or DeskError (the PIN itself is never repeated)."""
    text = str(pin).strip()
    if not _PIN.fullmatch(text):
        raise DeskError(f"{whose} PIN must be 4 to 8 digits")
    return text


def card_number(number: str, whose: str) -> str:
    """A card number in one form (upper case, no separators), or DeskError."""
    try:
        return normalize_id(str(number))
    except ValueError:
        raise DeskError(f"{whose} card number must be 4 to 64 letters and digits") from None


def rewards_card_number(number: str, forms: tuple[CardForm, ...] = CARD_FORMS, *,
                        field: str = "rewards_card") -> str:
    """A rewards card in the form the table's reader reports a tap of it (the digits, or
    the UID in upper-case hex: game.card_forms), or DeskError saying why this venue's
    readers (``forms``, tournament.toml ``[venue] card_forms``) can never read it."""
    try:
        return read_card(str(number), forms)
    except ValueError as exc:
        raise DeskError(f"field {field!r}: {exc}") from None


def hashed(secret: str) -> str:
    """The stored form of a secret, with a fresh random salt."""
    return hash_secret(secret, secrets.token_bytes(SALT_BYTES))


def new_card_salt() -> str:
    """A roster card salt: 16 random bytes, base64url without padding."""
    return base64.urlsafe_b64encode(secrets.token_bytes(SALT_BYTES)).decode().rstrip("=")


def salt_bytes(salt: str) -> bytes:
    """The bytes of a base64url salt written by `new_card_salt`."""
    return base64.urlsafe_b64decode(salt + "=" * (-len(salt) % 4))
