"""Desk passphrases: what a clerk, supervisor or manager signs in to the desk with, checked
for length and kept only as a salted scrypt hash (the parameters of game.staff's).

Unlike a PIN or a card number a passphrase is compared exactly as typed (case and spaces
count); only surrounding whitespace (a file's newline) is dropped.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Final

from leaderboard.desk.errors import DeskError

__all__ = ["MAX_PASSPHRASE", "MIN_PASSPHRASE", "hash_passphrase", "passphrase",
           "passphrase_matches"]

MIN_PASSPHRASE: Final = 12  # characters (NIST SP 800-63B asks for at least 8)
MAX_PASSPHRASE: Final = 200
_SCHEME: Final = "scrypt"
_N: Final = 2**14
_R: Final = 8
_P: Final = 1
_SALT: Final = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def passphrase(text: str, whose: str) -> str:
    """A passphrase fit to be set: MIN_PASSPHRASE to MAX_PASSPHRASE characters, not blank
    and not one character repeated; DeskError otherwise (the passphrase is never repeated)."""
    value = str(text).strip()
    if len(value) < MIN_PASSPHRASE:
        raise DeskError(f"{whose} desk passphrase must be at least {MIN_PASSPHRASE}"
                        f" characters (it has {len(value)})")
    if len(value) > MAX_PASSPHRASE:
        raise DeskError(f"{whose} desk passphrase must be at most {MAX_PASSPHRASE} characters")
    if len(set(value)) < 4:
        raise DeskError(f"{whose} desk passphrase needs at least 4 different characters")
    return value


def _digest(value: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(value.encode(), salt=salt, n=n, r=r, p=p, dklen=32)


def hash_passphrase(value: str) -> str:
    """The stored form, ``scrypt$N$r$p$salt$hash``, with a fresh random salt."""
    salt = secrets.token_bytes(_SALT)
    return f"{_SCHEME}${_N}${_R}${_P}${_b64(salt)}${_b64(_digest(value, salt, _N, _R, _P))}"


def passphrase_matches(value: str, stored: str | None) -> bool:
    """True when ``value`` (stripped) hashes to ``stored``; False for junk or no hash."""
    value = str(value).strip()
    if stored is None or not value or len(value) > MAX_PASSPHRASE:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        params = (int(n), int(r), int(p))
        raw_salt, raw_digest = _unb64(salt), _unb64(digest)
    except (ValueError, binascii.Error):
        return False
    if scheme != _SCHEME or params != (_N, _R, _P):
        return False
    return hmac.compare_digest(_digest(value, raw_salt, *params), raw_digest)
