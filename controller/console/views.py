"""What the console's pages read from the daemon: the screen document (`game.table.view` plus
the daemon's own state: faults, devices, a pending card tap, the acknowledgement methods), who
the request's session belongs to, and a score slip's facts with its verification code.

The document is built between inputs (`TableDaemon.read_state`) and kept per daemon version,
so every open screen shares one encoding of each version.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, timedelta
from typing import Any, Final

from controller.ports import ConsoleTable
from controller.slip_layout import Slip, local_time
from game.money import format_rand
from game.table.core import TableCore
from game.table.view import screen_view
from wire.messages import Alert, ScoreAcknowledged, ScoreDisputed, ScoreRecorded
from wire.verification import grouped, verification_code

__all__ = ["ConsoleViews", "Slip", "local_time"]

_NOTICES: Final = 30  # recent alert messages looked at for table-level alerts
_SLIP_SCAN: Final = 5000  # score messages looked through for a slip
_RECENT_SLIPS: Final = 8  # the latest scores the dealer's screen offers to print


class ConsoleViews:
    """The console's reads of one daemon."""

    def __init__(self, daemon: ConsoleTable) -> None:
        self.daemon = daemon
        self._cached: tuple[int, bytes] | None = None
        self._lockouts: tuple[int, bytes] = (-1, b"[]")

    def _document(self) -> dict[str, Any]:
        daemon = self.daemon
        service = daemon.service
        now = daemon.clock().wall
        doc: dict[str, Any] = {"table": daemon.config.table}
        if service is not None and not daemon.faults:
            notices: list[Mapping[str, Any]] = []
            if daemon.journal is not None:
                notices = [m.body for m in daemon.journal.latest_messages([Alert.TYPE], _NOTICES)
                           if m.body is not None]
            doc.update(screen_view(service.core, now=now, notices=notices))
            doc["lockouts"] = service.core.staff.backed_off(now)
            doc["tallies"] = _tallies(service.core)
        doc.update({
            "version": daemon.version,
            "state": "error" if daemon.faults else "running",
            "faults": list(daemon.faults),
            "console": {"acknowledge_with": list(daemon.config.console.acknowledge_with)},
            "devices": self._devices(),
        })
        return doc

    def _devices(self) -> dict[str, Any]:
        devices = self.daemon.devices
        out: dict[str, Any] = {}
        if devices is None:
            return out
        for name in ("shoe", "rfid", "ids"):
            device = getattr(devices, name, None)
            if device is not None:
                health = device.health()
                out[name] = {"device": health.device, "connected": health.connected}
        return out

    async def encoded(self) -> tuple[int, bytes]:
        """The daemon's version and its screen document as compact JSON."""
        cached = self._cached
        if cached is not None and cached[0] == self.daemon.version:
            return cached
        doc = await self.daemon.read_state(self._document)
        lockouts = doc.pop("lockouts", [])
        data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self._cached = (int(doc["version"]), data)
        self._lockouts = (int(doc["version"]), json.dumps(lockouts).encode("utf-8"))
        return self._cached

    def staff_view(self, version: int, data: bytes) -> bytes:
        """The document of ``version`` for a signed-in screen: with the sign-in back-offs in
        force (``lockouts``: staff_id, terminal, failures, wait_until), which the
        participant's view never carries."""
        seen, lockouts = self._lockouts
        if seen != version or not data.endswith(b"}"):
            return data
        return data[:-1] + b',"lockouts":' + lockouts + b"}"

    def me(self, token: str | None) -> dict[str, Any] | None:
        """The signed-in person of a session token, without touching the session (the idle
        clock runs on actions, not on an open screen); None when not signed in."""
        gate = self.daemon.gate
        if gate is None or not token:
            return None
        found = gate.sessions.get(token)
        if found is None:
            return None
        idle = self.daemon.clock().wall - found.last_used
        if idle > timedelta(minutes=gate.config.session_minutes):
            return None
        return {"staff_id": found.staff_id, "name": found.name, "role": found.role,
                "method": found.method}

    async def slip(self, entry_id: str) -> Slip | None:
        """The score slip of an entry whose score this table recorded (None: no such score)."""
        journal = self.daemon.journal
        if journal is None:
            return None
        types = [ScoreRecorded.TYPE, ScoreAcknowledged.TYPE, ScoreDisputed.TYPE]
        found = await asyncio.to_thread(journal.latest_messages, types, _SLIP_SCAN)
        mine = [m for m in found if m.body is not None and m.body.get("entry_id") == entry_id]
        recorded = [m for m in mine if m.type == ScoreRecorded.TYPE]
        if not recorded:
            return None
        score = recorded[-1]
        body = dict(score.body or {})
        later = [m for m in mine if m.seq > score.seq]
        acks = [m for m in later if m.type == ScoreAcknowledged.TYPE]
        disputes = [m for m in later if m.type == ScoreDisputed.TYPE]
        ack = acks[-1].body if acks else None
        dispute = disputes[-1] if disputes else None
        if dispute is not None and acks and acks[-1].seq > dispute.seq:
            dispute = None
        code = verification_code(self.daemon.config.table, score.seq, score.type, body)
        service = self.daemon.service
        tz = UTC if service is None else service.core.settings.tz
        cents = int(body.get("score", 0))
        return Slip(
            entry_id=entry_id, table=str(body.get("table") or self.daemon.config.table),
            seat=body.get("seat"), entry_code=_text(body.get("entry_code")),
            name=_text(body.get("name")), tz=tz, stage=str(body.get("stage", "")),
            heat_id=str(body.get("heat_id", "")), score_cents=cents, score=format_rand(cents),
            hands=int(body.get("hands", 0)), status=str(body.get("status", "")),
            at=body.get("at"), seq=score.seq, code=code, code_grouped=grouped(code),
            acknowledged=None if ack is None else str(ack.get("method")),
            acknowledged_at=None if ack is None else ack.get("at"),
            disputed=None if dispute is None or dispute.body is None
            else str(dispute.body.get("note", "")),
            problems=tuple(score.problems))

    async def recent_slips(self, limit: int = _RECENT_SLIPS) -> list[dict[str, Any]]:
        """The latest scores recorded at this table, newest first, one per entry (what the
        dealer's screen offers to print): code, name, score, time in the venue's zone and
        whether it was acknowledged."""
        journal = self.daemon.journal
        if journal is None:
            return []
        types = [ScoreRecorded.TYPE, ScoreAcknowledged.TYPE]
        found = await asyncio.to_thread(journal.latest_messages, types, 40 * limit)
        service = self.daemon.service
        tz = UTC if service is None else service.core.settings.tz
        acked = {str(m.body.get("entry_id")): m.seq for m in found
                 if m.type == ScoreAcknowledged.TYPE and m.body is not None}
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for m in reversed(found):
            body = m.body
            if m.type != ScoreRecorded.TYPE or body is None:
                continue
            entry = str(body.get("entry_id"))
            if entry in seen:
                continue
            seen.add(entry)
            cents = int(body.get("score", 0))
            out.append({"entry_id": entry, "entry_code": _text(body.get("entry_code")),
                        "name": _text(body.get("name")), "score": format_rand(cents),
                        "hands": int(body.get("hands", 0)),
                        "at": local_time(body.get("at"), tz),
                        "acknowledged": acked.get(entry, -1) > m.seq})
            if len(out) >= limit:
                break
        return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None



def _tallies(core: TableCore) -> dict[str, Any]:
    """The heat's tray counts and the decks for counts.js and decks.js, with the chip values
    of the set in play to count by (what the table expects is shown only once a count is
    recorded: the dealer counts blind, D375)."""
    registry = core.chips.chip_float.registry
    values = sorted({c.value_cents for c in registry if c.chip_set == registry.chip_set})
    return {**core.tallies.view(core.heat_id), "chip_values": values}
