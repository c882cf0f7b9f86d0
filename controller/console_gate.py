"""The console's gate: who is signed in, and the proofs a participant gives.

Staff sign in with their staff id and PIN or by tapping their employee card on the table's ID
reader; the gate checks the secret against the roster the desk sent (slow salted hashes, in a
worker thread), journals the outcome (never the secret) with the terminal it came from through
the daemon's one way in, and hands the console a random session token. Repeated failures from
one terminal for one staff id make that terminal wait before the next try (the back-off,
D344; the same person signs in at another terminal); a manager may lift a wait
(``unlock_staff``, journaled). Every later staff action carries the token; the
daemon puts the token's person in the record. A participant acknowledges a score with the
proofs the house configures (``[console] acknowledge_with``): a tap of the rewards card the
desk named at seating, a PIN, a signature drawn on the screen (kept on disk, its SHA-256
journaled and published).

Sessions live in memory only: a restart signs everyone out (journaled), so a token never
outlives the process that issued it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import math
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from controller.console_config import ConsoleConfig
from controller.table_service import Applied
from drivers.readings import IdTap, masked
from game.staff import StaffMember, is_simulator_hash, secret_matches
from game.table.core import TableCore
from runtime.logs import get_logger

__all__ = ["GATE_ACTIONS", "LOCAL_TERMINAL", "ConsoleGate", "Session"]

_log = get_logger("showdown.console")
_SIMULATOR_ONLY: Final = ("was hashed at the simulator's KDF cost, which a table with a real"
                          " device refuses: enrol it again at the desk")

GATE_ACTIONS: Final = frozenset({"sign_in", "sign_out", "whoami", "acknowledge", "dispute",
                                 "cancel_tap", "unlock_staff"})
LOCAL_TERMINAL: Final = "local socket"  # sign-ins through the technicians' local API
_MAX_TERMINAL: Final = 80
MAX_SIGNATURE_BYTES: Final = 256 * 1024
_PNG: Final = b"\x89PNG\r\n\x1a\n"
_MIN_SIGNATURE_BYTES: Final = 200  # a blank canvas compresses to less
Ingest = Callable[[str, Mapping[str, Any]], Awaitable[Applied]]


@dataclass(slots=True, kw_only=True)
class Session:
    """One signed-in person at the console."""

    token: str
    staff_id: str
    name: str
    role: str
    method: str
    last_used: datetime


def _error(text: str) -> dict[str, Any]:
    return {"ok": False, "error": text}


class ConsoleGate:
    """Sign-ins, sessions, card taps and participants' proofs for one table's console."""

    def __init__(self, *, config: ConsoleConfig, core: Callable[[], TableCore | None],
                 ingest: Ingest, now: Callable[[], datetime], signatures: Path,
                 simulated: bool = False) -> None:
        """``simulated``: every device of the table is a simulator, so the credentials of
        its virtual people, hashed at the simulator's cost, are accepted."""
        self.config = config
        self.simulated = simulated
        self._core = core
        self._ingest = ingest
        self._now = now
        self.signatures = signatures
        self.sessions: dict[str, Session] = {}
        self._tap: asyncio.Future[IdTap] | None = None
        self.waiting_for: str | None = None  # what a pending tap is for (shown on screen)

    # ---- sessions -----------------------------------------------------------------------

    async def session(self, token: object) -> Session | None:
        """The live session of a token (an expired one is signed out, journaled)."""
        if not isinstance(token, str) or token not in self.sessions:
            return None
        found = self.sessions[token]
        now = self._now()
        if now - found.last_used > timedelta(minutes=self.config.session_minutes):
            await self._end(found, "session expired")
            return None
        found.last_used = now
        return found

    async def sign_out_everyone(self, detail: str) -> None:
        """Journal a sign-out for everyone the core still has signed in (after a restart)."""
        core = self._core()
        for staff_id in [] if core is None else list(core.staff.signed_in):
            await self._ingest("staff", {"event": "signed_out", "staff_id": staff_id,
                                         "method": "system", "detail": detail})
        self.sessions.clear()

    async def _end(self, found: Session, detail: str) -> None:
        """End a session; the person is signed out when their last session ends (one person
        may be signed in on the screen and on the technicians' socket at once)."""
        self.sessions.pop(found.token, None)
        if any(s.staff_id == found.staff_id for s in self.sessions.values()):
            return
        await self._ingest("staff", {"event": "signed_out", "staff_id": found.staff_id,
                                     "method": found.method, "detail": detail})

    # ---- card taps ----------------------------------------------------------------------

    def offer_tap(self, tap: IdTap) -> bool:
        """A card tapped on the ID reader: True when something was waiting for it."""
        waiter = self._tap
        if waiter is None or waiter.done():
            _log.info("card tapped with nothing waiting for it", card=masked(tap.number))
            return False
        waiter.set_result(tap)
        return True

    async def _wait_tap(self, purpose: str, seconds: object) -> IdTap | None:
        if self._tap is not None and not self._tap.done():
            self._tap.cancel()
        limit = self.config.tap_seconds
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            limit = max(0.5, min(float(seconds), self.config.tap_seconds))
        self._tap = asyncio.get_running_loop().create_future()
        self.waiting_for = purpose
        try:
            return await asyncio.wait_for(asyncio.shield(self._tap), limit)
        except (TimeoutError, asyncio.CancelledError):
            return None
        finally:
            self.waiting_for = None

    # ---- the gate's actions ---------------------------------------------------------------

    async def handle(self, action: str, request: Mapping[str, Any], *,
                     terminal: str = LOCAL_TERMINAL) -> Mapping[str, Any]:
        """Answer one of GATE_ACTIONS; ``terminal``: where the request came from (the
        console client's address; the technicians' local socket otherwise), never a field
        of the request."""
        core = self._core()
        if core is None:
            return _error("the table is not running")
        if action == "cancel_tap":
            if self._tap is not None and not self._tap.done():
                self._tap.cancel()
            return {"ok": True}
        if action == "whoami":
            found = await self.session(request.get("session"))
            if found is None:
                return _error("not signed in")
            return {"ok": True, "detail": _who(found)}
        if action == "sign_out":
            found = await self.session(request.get("session"))
            if found is None:
                return _error("not signed in (the session has ended)")
            await self._end(found, "signed out")
            return {"ok": True, "detail": {"signed_out": found.staff_id}}
        if action == "sign_in":
            return await self._sign_in(core, request, terminal[:_MAX_TERMINAL])
        if action == "unlock_staff":
            return await self._unlock(request)
        if action == "dispute":
            return await self._participant(core, request, dispute=True)
        return await self._participant(core, request, dispute=False)

    async def _wait_refused(self, core: TableCore, terminal: str, staff_id: str | None,
                            method: str, now: datetime) -> Mapping[str, Any] | None:
        """The refusal of an attempt made while its terminal must wait for this id (the
        attempt journaled, not counted); None when it may be tried now."""
        until = core.staff.wait_until(terminal, staff_id, now)
        if until is None:
            return None
        wait = max(1, math.ceil((until - now).total_seconds()))
        who = staff_id if staff_id is not None else "unknown staff ids and cards"
        await self._ingest("staff", {
            "event": "sign_in_failed", "method": method, "staff_id": staff_id,
            "terminal": terminal, "waited": True,
            "detail": f"refused unchecked: this terminal must wait {wait} s for {who}"})
        return _error(f"too many failed sign-ins from this screen for {who}: wait {wait} s"
                      f" and try again (until {until:%H:%M:%S} UTC), sign in at another"
                      " screen, or a manager can lift the wait")

    async def _sign_in(self, core: TableCore, request: Mapping[str, Any],
                       terminal: str) -> Mapping[str, Any]:
        member = await self.credential(core, request, terminal)
        if not isinstance(member, StaffMember):
            return member
        now = self._now()
        method = "card" if request.get("method") == "card" else "pin"
        await self._ingest("staff", {"event": "signed_in", "staff_id": member.staff_id,
                                     "method": method, "terminal": terminal, "detail": ""})
        token = secrets.token_urlsafe(32)
        found = Session(token=token, staff_id=member.staff_id, name=member.name,
                        role=member.role, method=method, last_used=now)
        self.sessions[token] = found
        return {"ok": True, "detail": {"session": token, **_who(found)}}

    async def credential(self, core: TableCore, request: Mapping[str, Any], terminal: str,
                         *, purpose: str = "staff sign-in") -> StaffMember | Mapping[str, Any]:
        """The enrolled, active person whose staff id and PIN (or tapped card, ``method``
        card) the request gives, or the refusal; a failure is journaled and counts towards
        the terminal's back-off as a failed sign-in does (D344). ``purpose``: what the proof
        is for (a sign-in, a supervisor's confirmation, a witness), shown while a tap waits
        and in the record of a failure."""
        roster = core.staff.roster
        if roster is None:
            return _error("no staff roster has reached this table yet: the desk sends it"
                          " (showdown desk staff send)")
        now = self._now()
        method = "card" if request.get("method") == "card" else "pin"
        for_what = "" if purpose == "staff sign-in" else f"{purpose}: "
        member: StaffMember | None
        if method == "pin":
            staff_id, pin = request.get("staff_id"), request.get("pin")
            if not isinstance(staff_id, str) or not staff_id.strip() or len(staff_id) > 40:
                return _error("give your staff id")
            if not isinstance(pin, str) or not pin:
                return _error("give your PIN")
            staff_id = staff_id.strip()
            member = roster.member(staff_id)
            key = None if member is None else member.staff_id  # unknown ids: the terminal's
            refused = await self._wait_refused(core, terminal, key, "pin", now)
            if refused is not None:
                return refused
            good = (member is not None and member.active and member.pin_hash is not None
                    and await self._matches(pin, member.pin_hash))
            if not good:
                known = member is not None
                await self._ingest("staff", {
                    "event": "sign_in_failed", "method": "pin", "terminal": terminal,
                    "staff_id": staff_id if known else None,
                    "detail": for_what + (
                        f"the PIN {_SIMULATOR_ONLY}" if known and member and member.active
                        and member.pin_hash and self._refuses(member.pin_hash)
                        else "wrong PIN" if known and member and member.active else
                        "credential disabled" if known else
                        f"unknown staff id {staff_id[:40]!r}")})
                return _error("wrong staff id or PIN" + self._waits(core, terminal, key))
        else:
            refused = await self._wait_refused(core, terminal, None, "card", now)
            if refused is not None:
                return refused
            tap = await self._wait_tap(purpose, request.get("wait"))
            if tap is None:
                return _error("no card was tapped in time")
            key = await asyncio.to_thread(roster.card_key, tap.number)
            member = None if key is None else roster.by_card_key(key)
            if member is None or not member.active:
                await self._ingest("staff", {
                    "event": "sign_in_failed", "method": "card", "terminal": terminal,
                    "staff_id": None if member is None else member.staff_id,
                    "detail": f"{for_what}card {masked(tap.number)} "
                              + ("is not an enrolled employee card" if member is None
                                 else "belongs to a disabled credential")})
                return _error("this card is not an enrolled employee card"
                              + self._waits(core, terminal, None))
        assert member is not None
        return member

    async def vouch(self, request: Mapping[str, Any], terminal: str,
                    purpose: str) -> StaffMember | Mapping[str, Any]:
        """A second person's own credential for an act they vouch for (a supervisor's
        confirmation of a chip count, a witness to decks destroyed): `credential`."""
        core = self._core()
        if core is None:
            return _error("the table is not running")
        return await self.credential(core, request, terminal[:_MAX_TERMINAL], purpose=purpose)

    def _waits(self, core: TableCore, terminal: str, staff_id: str | None) -> str:
        """What a failure left this terminal to wait, as the refusal's end ("" if nothing)."""
        now = self._now()
        until = core.staff.wait_until(terminal, staff_id, now)
        if until is None:
            return ""
        wait = max(1, math.ceil((until - now).total_seconds()))
        return (f"; too many failed sign-ins from this screen: the next attempt waits"
                f" {wait} s")

    async def _unlock(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """A manager lifts a sign-in back-off: journaled under the session's person (the
        table refuses anyone but a manager, and a lift where nothing is backed off)."""
        found = await self.session(request.get("session"))
        if found is None:
            return _error("'unlock_staff' needs a signed-in manager: sign in first")
        staff_id, terminal, reason = (request.get("staff_id"), request.get("terminal"),
                                      request.get("reason"))
        if staff_id is not None and (not isinstance(staff_id, str) or not staff_id.strip()
                                     or len(staff_id) > 40):
            return _error("staff_id: give the staff id whose sign-in wait to lift (text of"
                          " at most 40 characters; null: unknown ids and cards)")
        if terminal is not None and (not isinstance(terminal, str)
                                     or len(terminal) > _MAX_TERMINAL):
            return _error(f"terminal: give the terminal's address (at most {_MAX_TERMINAL}"
                          " characters), or leave it out for every terminal")
        if staff_id is None and terminal is None:
            return _error("staff_id: name the staff id, or give the terminal whose unknown-id"
                          " and card wait to lift")
        if not isinstance(reason, str) or not reason.strip():
            return _error("reason: say why the wait is lifted (a reason is required)")
        if len(reason) > 1000:
            return _error("reason: at most 1000 characters")
        applied = await self._ingest("staff", {
            "event": "unlocked", "method": "console", "by": found.staff_id,
            "staff_id": None if staff_id is None else staff_id.strip(),
            "terminal": terminal, "detail": reason.strip()})
        return applied.answer()

    def _refuses(self, stored: str) -> bool:
        """True when this table refuses the credential for its cost: hashed at the
        simulator's, and the table has a real device."""
        if self.simulated or not is_simulator_hash(stored):
            return False
        _log.warning("credential refused", reason=_SIMULATOR_ONLY)
        return True

    async def _matches(self, secret: str, stored: str) -> bool:
        """Whether ``secret`` is the credential ``stored``, at the cost the hash carries (the
        house's in a worker thread; a virtual person's cheap one, only at a simulated table,
        inline: microseconds)."""
        if self._refuses(stored):
            return False
        if is_simulator_hash(stored):
            return secret_matches(secret, stored, simulated=True)
        return await asyncio.to_thread(secret_matches, secret, stored)

    async def _participant(self, core: TableCore, request: Mapping[str, Any], *,
                           dispute: bool) -> Mapping[str, Any]:
        entry_id = request.get("entry_id")
        if not isinstance(entry_id, str) or entry_id not in core.unacknowledged:
            return _error(f"entry {str(entry_id)[:40]!r} has no score waiting for"
                          " acknowledgement at this table")
        if dispute:
            note = request.get("note")
            if not isinstance(note, str) or not note.strip():
                return _error("say what is wrong with the score (a note is required)")
            if len(note) > 1000:
                return _error("the note is over 1000 characters")
            applied = await self._ingest("participant", {"action": "dispute",
                                                         "entry_id": entry_id,
                                                         "note": note.strip()})
            return applied.answer()
        seating = core.proofs.get(entry_id)
        used: list[str] = []
        evidence: str | None = None
        for method in self.config.acknowledge_with:
            if method == "pin":
                pin = request.get("pin")
                if seating is None or seating.pin_hash is None:
                    return _error(f"no PIN is on record for entry {entry_id}: acknowledge"
                                  " at the desk")
                if self._refuses(seating.pin_hash):
                    return _error(f"entry {entry_id}'s PIN {_SIMULATOR_ONLY}")
                if not isinstance(pin, str) or not await self._matches(pin, seating.pin_hash):
                    return _error("that PIN is not the PIN of this entry's player")
            elif method == "signature":
                stored = self._store_signature(entry_id, request.get("signature"))
                if isinstance(stored, dict):
                    return stored
                evidence = stored
            elif method == "card":
                if seating is None or seating.card_hash is None:
                    return _error(f"no rewards card is on record for entry {entry_id}:"
                                  " acknowledge at the desk")
                if self._refuses(seating.card_hash):
                    return _error(f"entry {entry_id}'s rewards card {_SIMULATOR_ONLY}")
                tap = await self._wait_tap(f"acknowledgement of {entry_id}",
                                           request.get("wait"))
                if tap is None:
                    return _error("no card was tapped in time")
                if not await self._matches(tap.number, seating.card_hash):
                    _log.warning("acknowledgement refused: wrong card", entry_id=entry_id,
                                 card=masked(tap.number))
                    return _error(f"card {masked(tap.number)} is not the rewards card of"
                                  f" entry {entry_id}'s player")
            used.append(method)
        payload: dict[str, Any] = {"action": "acknowledge", "entry_id": entry_id,
                                   "method": "+".join(used)}
        if evidence is not None:
            payload["evidence"] = evidence
        return (await self._ingest("participant", payload)).answer()

    def _store_signature(self, entry_id: str, data: object) -> str | dict[str, Any]:
        """Keep a drawn signature (a PNG data URL); its SHA-256, or the refusal."""
        if not isinstance(data, str) or not data.startswith("data:image/png;base64,"):
            return _error("sign on the screen first (a PNG signature is required)")
        if len(data) > MAX_SIGNATURE_BYTES * 4 // 3 + 64:
            return _error("the signature image is too large")
        try:
            png = base64.b64decode(data.partition(",")[2], validate=True)
        except (binascii.Error, ValueError):
            return _error("the signature is not a valid image")
        if not png.startswith(_PNG) or len(png) < _MIN_SIGNATURE_BYTES:
            return _error("the signature is empty or not a PNG image: sign on the screen")
        digest = hashlib.sha256(png).hexdigest()
        self.signatures.mkdir(parents=True, exist_ok=True)
        path = self.signatures / f"{entry_id}-{digest[:16]}.png"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(png)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
        return digest


def _who(found: Session) -> dict[str, Any]:
    return {"staff_id": found.staff_id, "name": found.name, "role": found.role}
