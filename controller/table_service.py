"""The table daemon's deterministic core: one journaled input in, the messages it causes out.

`TableService.apply(kind, payload, wall)` is the only way state changes. It is deterministic
(the time comes with the input), so replaying the journal rebuilds the identical state after a
crash. Inputs are plain JSON payloads (docs/table-config.md, "Inputs"):

- devices: ``card``, ``chips``, ``manual_wager``, ``shoe_status``, ``device_alert``
- the dealer's console (local API): ``dealer`` with an ``action``
- the tournament desk (signed, verified by the MQTT link): ``desk`` with a ``command``
- the daemon itself: ``start`` (a boot record; no state change)

Every input returns an `Applied`: the outgoing messages (for the outbox, same transaction) and
a result for whoever sent it (accepted, or refused with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from controller.wagers import SpotBook
from drivers.chip_registry import ChipRegistry, parse_uid
from game.cards import parse_card
from game.codec import hand_record
from game.deal import DealSequence
from game.errors import GameError
from game.events import AlertRaised
from game.hand import Hand, Phase
from game.message_fields import format_ts
from game.paytables import Paytables
from game.settle import WAGERS, SeatWagers
from game.table import TableSession
from game.table_messages import (
    Alert,
    CommandResult,
    DeviceState,
    EntrySeated,
    EntryUnseated,
    HandSettled,
    HandVoided,
    HeatClosed,
    HeatOpened,
    ScoreAcknowledged,
    ScoreRecorded,
)
from game.tournament import Entry, Stage
from game.tournament_schema import TournamentSettings
from wire.outbox import Outgoing

__all__ = ["Applied", "Outgoing", "TableService"]

@dataclass(frozen=True, slots=True, kw_only=True)
class Applied:
    """What one input did: the messages it causes and the answer for its sender."""

    messages: tuple[Outgoing, ...] = ()
    ok: bool = True
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


class _Refused(Exception):
    """An input that is recorded but not acted on; the message says why."""


class TableService:
    """Seats, entries, spots and the hand in progress at one table; see the module docstring."""

    def __init__(
        self,
        *,
        table_id: str,
        settings: TournamentSettings,
        paytables: Paytables,
        deal: DealSequence,
        registry: ChipRegistry,
        marker_set: str = "bonus-marker",
    ) -> None:
        self.table_id = table_id
        self.settings = settings
        self.paytables = paytables
        self.deal = deal
        self.spots = SpotBook(registry, marker_set=marker_set)
        self.session: TableSession | None = None
        self.heat_id: str | None = None
        self.hands_opened = 0
        self.inputs_applied = 0
        self.alerts_raised = 0
        self.unacknowledged: dict[str, ScoreRecorded] = {}  # entry id -> its score
        self._fed: dict[int, SeatWagers] = {}  # what the open hand last saw per seat
        self._commands_seen: set[tuple[str, int]] = set()  # (desk signer, envelope seq)
        self.held: list[dict[str, Any]] = []  # desk commands waiting for the hand to end

    # ---- the one entry point ----------------------------------------------------------

    def apply(self, kind: str, payload: Mapping[str, Any], wall: datetime) -> Applied:
        """Apply one journaled input; never raises for bad input (it is refused with a reason)."""
        self.inputs_applied += 1
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return Applied(ok=False, error=f"unknown input kind {kind!r}")
        out: list[Outgoing] = []
        try:
            detail = handler(payload, wall, out)
        except (_Refused, GameError, KeyError, TypeError, ValueError) as exc:
            reason = _reason(exc)
            if kind == "desk":
                out.append(self._command_result(payload, accepted=False, reason=reason))
            return Applied(messages=tuple(out), ok=False, error=reason)
        if kind == "desk":
            out.append(self._command_result(payload, accepted=True, reason=None,
                                            held=(detail or {}).get("held_until")))
        return Applied(messages=tuple(out), ok=True, detail=detail or {})

    # ---- views --------------------------------------------------------------------------

    @property
    def hand(self) -> Hand | None:
        """The hand in progress, if any."""
        return self.session.hand if self.session else None

    def status(self) -> dict[str, Any]:
        """A summary for the status message and `showdown table status`."""
        hand = self.hand
        return {
            "heat": self.heat_id,
            "stage": self.session.rules.stage.value if self.session else None,
            "seats": {str(s): {"entry_id": e.entry_id, "balance": e.balance_cents,
                               "hands_played": e.hands_played, "markers_left": e.markers_left}
                      for s, e in sorted(self.session.seats.items())} if self.session else {},
            "spots": self._spots_view(),
            "hand": None if hand is None else {
                "hand_id": hand.hand_id, "phase": hand.phase.value, "paused": hand.paused,
                "seats_in_hand": list(hand.seats_in_hand),
                "cards_read": len(hand.cards()),
                "next_target": None if hand.next_target is None else str(hand.next_target),
                "open_alerts": [{"id": a.alert_id, "kind": a.kind, "message": a.message}
                                for a in hand.open_alerts],
            },
            "hands_opened": self.hands_opened,
            "alerts": self.alerts_raised,
            "inputs": self.inputs_applied,
            "unacknowledged_scores": sorted(self.unacknowledged),
            "held_commands": [{k: h[k] for k in ("command", "seat", "entry_id", "reason")
                               if h.get(k) is not None} for h in self.held],
        }

    def _spots_view(self) -> dict[str, dict[str, Any]]:
        if self.session is None:
            return {}
        view: dict[str, dict[str, Any]] = {}
        for seat, entry in sorted(self.session.seats.items()):
            wagers, _ = self.spots.wagers(seat, entry.entry_id, report=False)
            view[str(seat)] = {w: wagers.amount(w) for w in WAGERS if wagers.amount(w)}
            if wagers.markers:
                view[str(seat)]["markers"] = sorted(wagers.markers)
        return view

    # ---- devices ------------------------------------------------------------------------

    def _on_start(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        del p, wall, out  # a boot record: nothing changes

    def _on_card(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        card = parse_card(p["card"])
        source: Literal["shoe", "manual"] = "manual" if p.get("source") == "manual" else "shoe"
        hand = self.hand
        if hand is None:
            self._alert(out, "card_without_hand",
                        f"card {card} read (shoe read {p.get('read_index')}) with no hand open",
                        wall)
            return
        before = len(hand.events)
        hand.read_card(card, source=source, at=wall)
        self._hand_alerts(hand, before, out, wall)

    def _on_chips(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        seat, spot = int(p["seat"]), str(p["spot"])
        uids = frozenset(parse_uid(u) for u in p["uids"])
        if spot not in WAGERS:
            return  # an antenna that is not a wager spot (e.g. the marker rest)
        self.spots.see_chips(seat, spot, uids)
        self._wagers_changed(seat, out, wall, source="rfid")

    def _on_manual_wager(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        seat, spot, amount = int(p["seat"]), str(p["spot"]), int(p["amount"])
        if spot not in WAGERS or amount < 0:
            raise _Refused(f"cannot key {amount} on {spot!r}")
        self.spots.key_amount(seat, spot, amount)
        self._wagers_changed(seat, out, wall, source="manual")

    def _on_shoe_status(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        out.append(Outgoing(message=DeviceState(
            device=p.get("device"), state=p["state"], detail=p.get("detail", ""),
            at=format_ts(wall))))

    def _on_device_alert(self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]) -> None:
        if p["kind"] in ("connected", "reconnected"):  # good news is not an alert
            out.append(Outgoing(message=DeviceState(
                device=p.get("device"), state=p["kind"], detail=p.get("detail", ""),
                at=format_ts(wall))))
            return
        self._alert(out, f"device_{p['kind']}", f"{p.get('device')}: {p.get('detail', '')}",
                    wall, source="device")

    # ---- the dealer's console ----------------------------------------------------------

    def _on_dealer(
        self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]
    ) -> dict[str, Any] | None:
        action, by = p["action"], p.get("by")
        if action == "acknowledge":
            self._acknowledge(str(p["entry_id"]), str(p.get("method", "card_tap")), by, wall, out)
            return None
        if self.session is None:
            raise _Refused("no heat is open at this table")
        if action == "no_more_bets":
            hand = self._open_hand(wall)
            before = len(hand.events)
            hand.no_more_bets(at=wall)
            self._hand_alerts(hand, before, out, wall)
            return {"hand_id": hand.hand_id, "seats": list(hand.seats_in_hand)}
        current = self.hand
        if current is None:
            raise _Refused(f"no hand is open for {action!r}")
        hand = current
        before = len(hand.events)
        if action == "settle":
            hand.settle(at=wall)
        elif action == "reveal":
            hand.reveal(at=wall)
        elif action == "void":
            hand.void(str(p["reason"]), by=by, at=wall)
        elif action == "correct_card":
            hand.correct_card(int(p["position"]), parse_card(p["card"]), str(p["reason"]),
                              by=by, at=wall)
        elif action == "resolve_alert":
            hand.resolve_alert(int(p["alert_id"]), str(p["reason"]), by=by, at=wall)
        else:
            raise _Refused(f"unknown dealer action {action!r}")
        self._hand_alerts(hand, before, out, wall)
        self._close_if_ended(out, wall)
        return {"hand_id": hand.hand_id, "phase": hand.phase.value}

    # ---- the tournament desk ------------------------------------------------------------

    def _on_desk(
        self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]
    ) -> dict[str, Any] | None:
        if p.get("command_seq") is not None:  # QoS 1 may deliver a command twice
            key = (str(p.get("signer")), int(p["command_seq"]))
            if key in self._commands_seen:
                raise _Refused(f"duplicate command {key[1]} from {key[0]}: already applied")
            self._commands_seen.add(key)
        return self._desk_command(p, wall, out)

    def _desk_command(
        self, p: Mapping[str, Any], wall: datetime, out: list[Outgoing]
    ) -> dict[str, Any] | None:
        command = p["command"]
        if command == "open_heat":
            if self.session is not None:
                raise _Refused(f"heat {self.heat_id} is still open")
            stage = Stage(p["stage"])
            self.session = TableSession(table_id=self.table_id,
                                        rules=self.settings.stage(stage).rules,
                                        paytables=self.paytables, deal=self.deal)
            self.heat_id = str(p["heat_id"])
            out.append(Outgoing(message=HeatOpened(
                heat_id=self.heat_id, stage=stage.value, at=format_ts(wall))))
            return None
        if command == "resend":
            int(p["from_seq"])  # validated here; the link re-publishes from the journal
            return None
        if command == "ack_score":
            self._acknowledge(str(p["entry_id"]), str(p.get("method", "desk")),
                              p.get("signer"), wall, out)
            return None
        session = self._session()
        if command in _HELD_DURING_A_HAND and session.hand is not None:
            return self._hold(p, session)
        if command == "seat":
            entry = Entry.start(entry_id=str(p["entry_id"]), rules=session.rules)
            seat = int(p["seat"])
            session.seat_entry(entry, seat)
            out.append(Outgoing(message=EntrySeated(
                entry_id=entry.entry_id, seat=seat, heat_id=self.heat_id, at=format_ts(wall))))
        elif command == "unseat":
            seat = int(p["seat"])
            sitting = session.seats.get(seat)
            expected = p.get("entry_id")
            if sitting is not None and expected is not None and sitting.entry_id != expected:
                raise _Refused(f"seat {seat} holds entry {sitting.entry_id}, not {expected}")
            entry = session.unseat(seat)
            self.spots.clear_seat(seat)
            out.append(Outgoing(message=EntryUnseated(
                entry_id=entry.entry_id, seat=seat, hands_played=entry.hands_played,
                reason=p.get("reason", ""), at=format_ts(wall))))
        elif command == "void_hand":
            hand = session.hand
            if hand is None or hand.hand_id != p["hand_id"]:
                raise _Refused(f"hand {p['hand_id']} is not the hand in progress")
            hand.void(str(p["reason"]), by=p.get("signer"), at=wall)
            self._close_if_ended(out, wall)
        elif command == "close_heat":
            if session.hand is not None:
                raise _Refused("a hand is in progress")
            if session.seats:
                seated = ", ".join(e.entry_id for e in session.seats.values())
                raise _Refused(f"entries still seated: {seated}")
            assert self.heat_id is not None
            out.append(Outgoing(message=HeatClosed(heat_id=self.heat_id, at=format_ts(wall))))
            self.session, self.heat_id = None, None
        else:
            raise _Refused(f"unknown desk command {command!r}")
        return None

    def _hold(self, p: Mapping[str, Any], session: TableSession) -> dict[str, Any]:
        """Keep an `unseat` or `close_heat` that arrives during a hand until the hand ends
        (a table back from a fault mid-hand gets them queued, D63); refused now if it could
        never apply."""
        assert session.hand is not None
        if p["command"] == "unseat":
            seat = int(p["seat"])
            sitting = session.seats.get(seat)
            if sitting is None:
                raise _Refused(f"seat {seat} is empty")
            if p.get("entry_id") is not None and sitting.entry_id != p["entry_id"]:
                raise _Refused(f"seat {seat} holds entry {sitting.entry_id}, not {p['entry_id']}")
        same = [h for h in self.held if _held_key(h) == _held_key(p)]
        if same:
            raise _Refused(f"{p['command']} is already held until hand"
                           f" {session.hand.hand_id} ends")
        self.held.append(dict(p))
        return {"held_until": session.hand.hand_id}

    def _apply_held(self, out: list[Outgoing], wall: datetime) -> None:
        """Apply the held desk commands, in the order they came, now that the hand has ended;
        each gets its final command.result."""
        held, self.held = self.held, []
        for p in held:
            try:
                self._desk_command(p, wall, out)
            except (_Refused, GameError, KeyError, TypeError, ValueError) as exc:
                out.append(self._command_result(p, accepted=False, reason=_reason(exc)))
            else:
                out.append(self._command_result(p, accepted=True, reason=None))

    # ---- helpers ----------------------------------------------------------------------

    def _session(self) -> TableSession:
        if self.session is None:
            raise _Refused("no heat is open at this table")
        return self.session

    def _open_hand(self, wall: datetime) -> Hand:
        session = self._session()
        if session.hand is not None:
            return session.hand
        self.hands_opened += 1
        hand = session.open_hand(f"{self.table_id}-{self.hands_opened:06d}", at=wall)
        self._fed = {}
        for seat, entry in sorted(session.seats.items()):
            wagers, _ = self.spots.wagers(seat, entry.entry_id)
            if wagers.staked_cents or wagers.markers:
                hand.see_wagers(seat, wagers, source="rfid", at=wall)
                self._fed[seat] = wagers
        return hand

    def _wagers_changed(self, seat: int, out: list[Outgoing], wall: datetime,
                        source: Literal["rfid", "manual"]) -> None:
        session = self.session
        entry = session.seats.get(seat) if session else None
        wagers, problems = self.spots.wagers(seat, entry.entry_id if entry else None)
        for problem in problems:
            self._alert(out, problem.kind, problem.detail, wall, source="chips", seat=seat)
        hand = self.hand
        if hand is None or seat not in hand.seats or hand.phase in (Phase.SETTLED, Phase.VOID):
            return
        if self._fed.get(seat, SeatWagers()) == wagers:
            return
        before = len(hand.events)
        hand.see_wagers(seat, wagers, source=source, at=wall)
        self._fed[seat] = wagers
        self._hand_alerts(hand, before, out, wall)

    def _hand_alerts(self, hand: Hand, before: int, out: list[Outgoing], wall: datetime) -> None:
        for event in hand.events[before:]:
            if isinstance(event, AlertRaised):
                self._alert(out, event.kind, event.message, wall, source="hand",
                            seat=event.seat, hand_id=hand.hand_id, alert_id=event.alert_id)

    def _alert(self, out: list[Outgoing], kind: str, message: str, wall: datetime, *,
               source: str = "table", seat: int | None = None, hand_id: str | None = None,
               alert_id: int | None = None) -> None:
        self.alerts_raised += 1
        out.append(Outgoing(message=Alert(kind=kind, message=message, source=source,
                                          at=format_ts(wall), seat=seat, hand_id=hand_id,
                                          alert_id=alert_id)))

    def _close_if_ended(self, out: list[Outgoing], wall: datetime) -> None:
        session = self.session
        hand = session.hand if session else None
        if session is None or hand is None or hand.phase not in (Phase.SETTLED, Phase.VOID):
            return
        entries = {s: e.entry_id for s, e in session.seats.items()}
        record = hand_record(hand, entries=entries, table=self.table_id)
        record["heat_id"], record["stage"] = self.heat_id, session.rules.stage.value
        record["settled_at" if hand.phase is Phase.SETTLED else "voided_at"] = format_ts(wall)
        kind = HandSettled if hand.phase is Phase.SETTLED else HandVoided
        out.append(Outgoing(message=kind(hand_id=hand.hand_id, heat_id=self.heat_id,
                                         record=record)))
        for ended in session.close_hand():
            self.spots.clear_seat(ended.seat)
            assert self.heat_id is not None
            score = ScoreRecorded(
                entry_id=ended.entry_id, stage=session.rules.stage.value,
                heat_id=self.heat_id, table=self.table_id, seat=ended.seat,
                score=ended.score_cents, hands=ended.hands_played,
                status=ended.status.value, markers_forfeited=ended.markers_forfeited,
                last_hand_id=ended.hand_id, at=format_ts(wall),
            )
            self.unacknowledged[ended.entry_id] = score
            out.append(Outgoing(message=score))
        self._fed = {}
        self._apply_held(out, wall)

    def _acknowledge(self, entry_id: str, method: str, by: object, wall: datetime,
                     out: list[Outgoing]) -> None:
        score = self.unacknowledged.pop(entry_id, None)
        if score is None:
            raise _Refused(f"entry {entry_id} has no unacknowledged score at this table")
        out.append(Outgoing(message=ScoreAcknowledged(
            entry_id=entry_id, score=score.score, stage=score.stage, method=method,
            by=None if by is None else str(by), at=format_ts(wall))))

    def _command_result(self, p: Mapping[str, Any], *, accepted: bool, reason: str | None,
                        held: str | None = None) -> Outgoing:
        return Outgoing(message=CommandResult(
            command_id=p.get("command_id"), command=p.get("command"), accepted=accepted,
            reason=reason, held_until_hand_ends=held))


_HELD_DURING_A_HAND: Final = frozenset({"unseat", "close_heat"})


def _held_key(p: Mapping[str, Any]) -> tuple[Any, ...]:
    """Held commands that would do the same thing share a key."""
    return (p.get("command"), p.get("seat"), p.get("entry_id"))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return " ".join(str(exc).split()) or type(exc).__name__


def replay(service: TableService, records: Sequence[tuple[str, Mapping[str, Any], datetime]]
           ) -> list[Applied]:
    """Apply journaled inputs in order (rebuilding state after a restart)."""
    return [service.apply(kind, payload, wall) for kind, payload, wall in records]
