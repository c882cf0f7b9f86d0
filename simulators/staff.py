"""The virtual table's people with credentials: its dealer and supervisor (enrolled by the
virtual desk in a staff roster, signing in at the console with their PINs), and the virtual
patrons' proofs for acknowledging a score (a rewards-card number and a PIN per entry).

Staff PINs are drawn per run with `secrets` (a new process sends a new roster); a patron's
card number and PIN are derived from the table's seed and the entry id, so a table PC that
restarts mid-heat can still acknowledge the scores of entries seated before the restart. Only
hashes (`game.staff.hash_secret`, fresh salts) leave this module, made at the simulator's
KDF cost (`game.staff.SIMULATOR_COST`, recorded in each hash): these PINs and cards are drawn
for the run and guard nothing, and only a table whose every device is a simulator accepts
them (a real credential keeps the house cost, enforced by every table with a real device).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import struct
import zlib
from dataclasses import dataclass

from game.staff import SIMULATOR_COST, Role, StaffMember, StaffRoster, hash_secret

__all__ = ["PatronProof", "StaffCredential", "VirtualStaff", "patron_proof", "seat_hashes",
           "signature_png"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StaffCredential:
    """One virtual staff member and the PIN they sign in with."""

    staff_id: str
    name: str
    role: Role
    pin: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PatronProof:
    """What a virtual patron proves themselves with: a rewards card (16 digits) and a PIN."""

    card_number: str
    pin: str


def _salt() -> bytes:
    return secrets.token_bytes(16)


class VirtualStaff:
    """The virtual dealer ("VD-<table>") and supervisor ("VS-<table>") of one table."""

    def __init__(self, table_id: str) -> None:
        tag = table_id.upper()
        self.dealer = StaffCredential(staff_id=f"VD-{tag}"[:40], name="virtual dealer",
                                      role="dealer", pin=f"{secrets.randbelow(10**6):06d}")
        self.supervisor = StaffCredential(staff_id=f"VS-{tag}"[:40],
                                          name="virtual supervisor", role="supervisor",
                                          pin=f"{secrets.randbelow(10**6):06d}")

    async def roster(self, version: int) -> StaffRoster:
        """The roster enrolling both (PINs hashed at the simulator's cost)."""
        members = tuple(StaffMember(staff_id=c.staff_id, name=c.name, role=c.role,
                                    pin_hash=hash_secret(c.pin, _salt(), cost=SIMULATOR_COST))
                        for c in (self.dealer, self.supervisor))
        card_salt = base64.urlsafe_b64encode(_salt()).decode().rstrip("=")
        return StaffRoster(version=version, members=members, card_salt=card_salt)


def patron_proof(seed: int, entry_id: str) -> PatronProof:
    """The virtual patron's card number and PIN for an entry (the same on every run)."""
    digest = hashlib.sha256(f"showdown-sim:{seed}:{entry_id}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    card = "9" + f"{number % 10**15:015d}"  # 9...: no bank's card range
    pin = f"{int.from_bytes(digest[8:12], 'big') % 10**4:04d}"
    return PatronProof(card_number=card, pin=pin)


async def seat_hashes(proof: PatronProof) -> dict[str, str]:
    """The Seat command's ``card_hash`` and ``pin_hash`` for a patron (the simulator's cost)."""
    return {"card_hash": hash_secret(proof.card_number, _salt(), cost=SIMULATOR_COST),
            "pin_hash": hash_secret(proof.pin, _salt(), cost=SIMULATOR_COST)}


def signature_png(seed: int, entry_id: str, *, width: int = 96, height: int = 32) -> str:
    """A signature "drawn on the screen": a small grey PNG scribble, as a data URL."""
    digest = hashlib.sha256(f"signature:{seed}:{entry_id}".encode()).digest()
    rows = bytearray()
    y = height // 2
    for row in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            wave = (digest[x % len(digest)] % 9) - 4
            ink = abs(row - (y + wave)) <= 1
            rows.append(0 if ink else 255 - (digest[(x + row) % len(digest)] % 7))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                             0, 0, 0))
           + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode()
