"""The table's decision core: one typed input (`game.table.inputs`) in, the messages it causes
(`game.messages.table`) and the answer for its sender out.

Pure: no I/O, no clock (the time comes with the input), so replaying the same inputs rebuilds
the identical state. It holds the heat (`TableSession`), the spots (`SpotBook`), the payout
being checked after a hand settles (D72: spot by spot as the readers report, before the next
hand opens), the scores waiting for acknowledgement and the desk commands held until the hand
ends. Its chip duties are a component it holds, ``self.chips`` (`game.table.chip_duties`),
called with what each step reads of the core; the status (`game.table.status`) reads the
core through a Protocol of its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal

from game.chips.float import ChipFloat
from game.chips.registry import ChipRegistry
from game.chips.spot_book import CloneReport, SpotBook
from game.decks.check import DECK_ROLE, DeckWatch
from game.errors import GameError
from game.hand import Hand, Phase
from game.hand.deal import DealSequence
from game.hand.events import AlertRaised
from game.hand.record import hand_record
from game.messages.console import PayoutChecked, ScoreDisputed
from game.messages.desk import (
    AckScore,
    CloseHeat,
    CorrectHand,
    DeskOrder,
    OpenHeat,
    ParticipantProofs,
    Resend,
    Seat,
    TableCommand,
    Unseat,
    VoidHand,
)
from game.messages.fields import format_ts
from game.messages.table import (
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
    TableMessage,
)
from game.paytables.lines import Paytables
from game.staff import LockoutPolicy, StaffRoster
from game.table.chip_duties import ChipOutput, TableChips
from game.table.corrections import HandLedger
from game.table.inputs import (
    Acknowledge,
    Boot,
    CardSeen,
    ChipsSeen,
    ClearFault,
    CorrectCard,
    DeviceTrouble,
    Dispute,
    DisputeHand,
    IssueChips,
    NoMoreBets,
    PayoutCheckPressed,
    PayoutOverride,
    ResolveAlert,
    ResolveAlerts,
    ReturnChips,
    RevealHand,
    RuleHand,
    SettleHand,
    ShoeReported,
    SlipPrinted,
    StaffChange,
    TableInput,
    Unreadable,
    VoidByDealer,
    WagerKeyed,
    reason_of,
)
from game.table.payout_check import PayoutCheck
from game.table.people import TableStaff
from game.table.session import TableSession
from game.table.status import core_status
from game.table.tallies import TableTallies, TallyOutput
from game.table.tally_inputs import ConfirmCount, CountChips, DeckStepped
from game.tournament.entries import Entry, Stage
from game.tournament.schema import TournamentSettings
from game.wagers.settle import WAGERS, SeatWagers

__all__ = ["Decision", "Refused", "TableCore"]

_GOOD_NEWS: Final = frozenset({"connected", "reconnected"})  # a device alert that is not one
# A shoe or chip reader down: no hand opens or settles until it is back or a supervisor clears
# the fault (to go on by manual entry, rule 58). "reads_lost": a reader that keeps nothing for
# later (a text-line shoe, D303) is back after a gap in which a card may have gone unread: it
# stays a fault until a supervisor has checked the layout against the hand and clears it.
_FAULTS: Final = frozenset({"disconnected", "lost", "stalled", "not_found", "reads_lost"})
_PLAY_DEVICES: Final = frozenset({"shoe", "rfid"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What one input did: the messages it causes and the answer for its sender."""

    messages: tuple[TableMessage, ...] = ()
    ok: bool = True
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


class Refused(GameError):
    """An input that is recorded but not acted on; the message says why."""


_FAILURES: Final = (GameError, KeyError, TypeError, ValueError)
RECENT_HANDS: Final = 10  # game recall on the dealer's screen
Out = list[TableMessage]


class TableCore:
    """Seats, entries, spots and the hand in progress at one table; see the module docstring."""

    def __init__(self, *, table_id: str, settings: TournamentSettings, paytables: Paytables,
                 deal: DealSequence, registry: ChipRegistry,
                 marker_set: str = "bonus-marker", verify_payouts: bool = False,
                 lockout: LockoutPolicy | None = None) -> None:
        self.table_id = table_id
        self.settings = settings
        self.paytables = paytables
        self.deal = deal
        # A float chip on a seated entry's spot is an alert (D346) only where the payout check
        # binds the float chips paid as wins to their entry.
        chip_float = ChipFloat(registry, require_issued=registry.require_issued and verify_payouts)
        self.spots = SpotBook(registry, marker_set=marker_set, chip_float=chip_float)
        self.chips = TableChips(chip_float, self.spots)  # the chip duties (rule 19)
        self.session: TableSession | None = None
        self.heat_id: str | None = None
        self.hands_opened = 0
        self.inputs_applied = 0
        self.alerts_raised = 0
        self.unacknowledged: dict[str, ScoreRecorded] = {}  # entry id -> its score
        self.held: list[DeskOrder] = []  # desk commands waiting for the hand to end
        self._fed: dict[int, SeatWagers] = {}  # what the open hand last saw per seat
        self._commands_seen: set[tuple[str, int]] = set()  # (desk signer, envelope seq)
        self.staff = TableStaff(lockout)
        self.verify_payouts = verify_payouts
        self.payout: PayoutCheck | None = None  # the last settled hand's, until it is paid
        self.proofs: dict[str, Seat] = {}  # entry id -> its seating (the ack credentials)
        self.disputed: dict[str, str] = {}  # entry id -> the participant's note
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_HANDS)
        self.device_faults: dict[str, str] = {}  # shoe / rfid -> what is wrong
        self.last_hand_at: dict[str, str] = {}  # entry id -> when its last hand ended
        self.decks = DeckWatch()  # each shuffle's cards checked (game.decks.check)
        self.ledger = HandLedger()  # the heat's settled hands, for rulings on them
        self.tallies = TableTallies()  # chip counts and deck inventory (game.table.tallies)

    # ---- the one entry point ----------------------------------------------------------

    def apply(self, given: TableInput, at: datetime) -> Decision:
        """Apply one input at time ``at``; never raises for bad input (it is refused)."""
        self.inputs_applied += 1
        out: Out = []
        if isinstance(given, Unreadable):
            if given.desk:
                out.append(CommandResult(command_id=given.command_id, command=given.command,
                                         accepted=False, reason=given.reason))
            return Decision(messages=tuple(out), ok=False, error=given.reason)
        try:
            self.chips.refresh(self.session)
            detail = self._dispatch(given, at, out)
        except _FAILURES as exc:
            self.chips.refresh(self.session)
            reason = reason_of(exc)
            if isinstance(given, DeskOrder):
                out.append(_result(given, accepted=False, reason=reason))
            return Decision(messages=tuple(out), ok=False, error=reason)
        self.chips.refresh(self.session)
        if isinstance(given, DeskOrder):
            out.append(_result(given, accepted=True, reason=None,
                               held=(detail or {}).get("held_until")))
        return Decision(messages=tuple(out), ok=True, detail=detail or {})

    def _dispatch(self, given: TableInput, at: datetime, out: Out) -> dict[str, Any] | None:
        match given:
            case Boot():
                return None
            case CardSeen():
                self._card(given, at, out)
            case ChipsSeen():
                if given.spot in WAGERS:  # else an antenna that is no wager spot (marker rest)
                    self._chips_seen(given, at, out)
            case WagerKeyed():
                self.staff.authorize("manual_wager", given.by)
                if given.spot not in WAGERS or given.amount_cents < 0:
                    raise Refused(f"cannot key {given.amount_cents} on {given.spot!r}")
                self._refeed(self.spots.key_amount(given.seat, given.spot, given.amount_cents),
                             given.seat, at, out)
                self._wagers_changed(given.seat, out, at, source="manual")
                self._payout_seen(given.seat, given.spot, out, at, keyed=True)
            case ShoeReported():
                out.append(DeviceState(device=given.device, state=given.state,
                                       detail=given.detail, at=format_ts(at)))
            case DeviceTrouble():
                self._trouble(given, at, out)
            case Acknowledge():
                self._acknowledge(given.entry_id, given.method, given.by, at, out,
                                  evidence=given.evidence)
            case Dispute():
                self._dispute(given, at, out)
            case DisputeHand():
                out.append(self.ledger.dispute(given, staff=self.staff, at=format_ts(at)))
            case StaffChange():
                out.extend(self.staff.change(given, at))
            case SlipPrinted():  # a record of the paper trail: the table's state is the same
                return {"printed": given.printed}
            case DeskOrder():
                return self._desk(given, at, out)
            case CountChips() | ConfirmCount() | DeckStepped():
                return self._tally(given, at, out)
            case _:
                return self._dealer(given, at, out)
        return None

    # ---- views --------------------------------------------------------------------------

    @property
    def hand(self) -> Hand | None:
        """The hand in progress, if any."""
        return self.session.hand if self.session else None

    def status(self) -> dict[str, Any]:
        """A summary for the status message and `showdown table status` (game.table.status)."""
        return core_status(self)

    # ---- devices ------------------------------------------------------------------------

    def _card(self, given: CardSeen, at: datetime, out: Out) -> None:
        if given.source == "manual":
            self.staff.authorize("manual_card", given.by)
        hand = self.hand
        if hand is None:
            self._alert(out, "card_without_hand", f"card {given.card} read (shoe read"
                        f" {given.read_index}) with no hand open", at)
            return
        before = len(hand.events)
        hand.read_card(given.card, source=given.source, at=at)
        self._hand_alerts(hand, before, out, at)

    def _chips_seen(self, given: ChipsSeen, at: datetime, out: Out) -> None:
        """An antenna's inventory: clones reported, every spot whose count changed re-fed."""
        before = self.spots.uids_on(given.seat, given.spot)
        report = self.spots.see_chips(given.seat, given.spot, given.uids)
        for clone in report.alerts:
            self._alert(out, clone.kind, clone.detail, at, source="chips", seat=clone.seat)
        self.chips.spot_changed(given.seat, given.spot, before, self.session)
        self.chips.refresh(self.session)
        self.chips.auto_issue(given.seat, self.session)
        self._wagers_changed(given.seat, out, at, source="rfid")
        self._payout_seen(given.seat, given.spot, out, at, keyed=False)
        self._refeed(report, given.seat, at, out)

    def _refeed(self, report: CloneReport, seat: int, at: datetime, out: Out) -> None:
        """The other spots whose count a new inventory (or a keyed amount) changed, because a
        UID there started or stopped being duplicated, are fed again."""
        for other in sorted({s for s, _ in report.spots} - {seat}):
            self._wagers_changed(other, out, at, source="rfid")
        for key in sorted(report.spots):
            self._payout_seen(*key, out, at, keyed=False)
        self.chips.note_paid(self.payout)

    def _trouble(self, given: DeviceTrouble, at: datetime, out: Out) -> None:
        if given.role in _PLAY_DEVICES:
            if given.kind in _GOOD_NEWS:
                self.device_faults.pop(given.role, None)
            elif given.kind in _FAULTS:
                self.device_faults[given.role] = (f"{given.device or given.role} {given.kind}:"
                                                  f" {given.detail}")
        if given.kind in _GOOD_NEWS:
            out.append(DeviceState(device=given.device, state=given.kind, detail=given.detail,
                                   at=format_ts(at)))
            return
        evidence = None
        if given.counts:  # a recovery notice (D347): what the driver healed, counted
            evidence = {"device": given.device, "role": given.role,
                        "counts": dict(given.counts)}
        self._alert(out, f"device_{given.kind}", f"{given.device}: {given.detail}", at,
                    source="device", evidence=evidence)

    # ---- the dealer's console ----------------------------------------------------------

    def _tally(self, given: CountChips | ConfirmCount | DeckStepped, at: datetime,
               out: Out) -> dict[str, Any]:
        """A chip count, its confirmation (by the supervisor's own credential, checked before
        it was journaled) or a deck step (game.table.tallies)."""
        if isinstance(given, CountChips):
            self.staff.authorize("count_chips", given.by)
        elif isinstance(given, ConfirmCount):
            self.staff.authorize("confirm_count", given.via)
        else:
            self.staff.authorize(f"decks_{given.kind}", given.by)
        return self.tallies.apply(given, self.chips.chip_float, self.staff,
                                  self._to_tallies(at, out))

    def _to_tallies(self, at: datetime, out: Out) -> TallyOutput:
        """Where the tallies report for this input; their alerts are the table's."""
        def alert(kind: str, message: str, evidence: Mapping[str, Any] | None) -> None:
            self._alert(out, kind, message, at, source="tally", evidence=evidence)

        return TallyOutput(heat_id=self.heat_id, session=self.session, at=at,
                           tz=self.settings.tz, out=out, alert=alert)

    def _dealer(self, given: TableInput, at: datetime, out: Out) -> dict[str, Any]:
        self.staff.authorize(_ACTION_NAMES.get(type(given), "?"), getattr(given, "by", None))
        if isinstance(given, PayoutCheckPressed | PayoutOverride):
            if self.payout is None:
                if isinstance(given, PayoutCheckPressed):  # nothing to check (D335)
                    return {"payout": None, "message": "no payout is waiting to be checked"}
                raise Refused("no payout is waiting to be checked")
            return self._payout_action(given, at, out)
        if isinstance(given, IssueChips):
            issued = self.chips.issue(given.seat, self.session, self._to_chips(at, out))
            self._wagers_changed(given.seat, out, at, source="rfid")
            return issued
        if isinstance(given, ReturnChips):
            return self.chips.give_back(given.seat, self.session, self._to_chips(at, out))
        if isinstance(given, ClearFault):
            return self._clear_fault(given, at, out)
        if isinstance(given, RuleHand):
            return self._rule_hand(given, at, out)
        if isinstance(given, NoMoreBets | SettleHand) and self.device_faults:
            faults = "; ".join(f"{role}: {why}" for role, why in sorted(self.device_faults.items()))
            raise Refused(f"a device is down ({faults}): reconnect it, or a supervisor clears"
                          " the fault with a reason to go on by manual entry")
        if self.session is None:
            raise Refused("no heat is open at this table")
        if isinstance(given, NoMoreBets):
            if self.payout is not None and self.session.hand is None:
                raise Refused(self.payout.refusal())
            if self.session.hand is None:
                self._chips_ready(out, at)
            if self.decks.held and self.session.hand is None:
                raise Refused(self.decks.refusal())
            hand = self._open_hand(at)
            before = len(hand.events)
            hand.no_more_bets(at=at)
            self._hand_alerts(hand, before, out, at)
            return {"hand_id": hand.hand_id, "seats": list(hand.seats_in_hand)}
        current = self.hand
        if current is None:
            raise Refused(f"no hand is open for {_ACTION_NAMES.get(type(given), '?')!r}")
        hand = current
        before = len(hand.events)
        match given:
            case SettleHand():
                hand.settle(at=at)
            case RevealHand():
                hand.reveal(at=at)
            case VoidByDealer():
                hand.void(given.reason, by=given.by, at=at)
            case CorrectCard():
                hand.correct_card(given.position, given.card, given.reason, by=given.by, at=at)
            case ResolveAlert() | ResolveAlerts():
                _resolve(hand, given, at)
            case _:  # pragma: no cover - decode_input gives only the actions above
                raise Refused(f"unknown dealer action {given!r}")
        self._hand_alerts(hand, before, out, at)
        self._close_if_ended(out, at)
        return {"hand_id": hand.hand_id, "phase": hand.phase.value}

    def _clear_fault(self, given: ClearFault, at: datetime, out: Out) -> dict[str, Any]:
        """A supervisor clears a device fault (or the deck hold) with a reason."""
        if given.role == DECK_ROLE:
            self.decks.clear()
        elif self.device_faults.pop(given.role, None) is None:
            raise Refused(f"no {given.role!r} fault is open")
        out.append(DeviceState(device=given.role, state="fault_cleared",
                               detail=f"cleared by {given.by}: {given.reason}",
                               at=format_ts(at)))
        return {"cleared": given.role}

    def _rule_hand(self, given: RuleHand, at: datetime, out: Out) -> dict[str, Any]:
        """A supervisor's ruling on a settled hand at the table (D342): between hands only,
        then the desk's path (`HandLedger.correct`) with the supervisor named."""
        session = self._session()
        if session.hand is not None:
            raise Refused(f"hand {session.hand.hand_id} is in progress: rule on a settled"
                          " hand between hands")
        corrected, notice = self.ledger.rule(given, session=session, at=format_ts(at))
        out.extend((corrected, notice))
        return {"hand_id": corrected.hand_id, "entry_id": corrected.entry_id,
                "ruling": corrected.ruling, "moved": corrected.moved_cents}

    def _chips_ready(self, out: Out, at: datetime) -> None:
        """Before a hand opens (D346): every starting stack issued, change ended."""
        self._stacks_issued()
        self._end_change(out, at)

    def _end_change(self, out: Out, at: datetime) -> None:
        """A hand opens: change not finished is none, its tray chips no wager (D346)."""
        changing = sorted({seat for seat, _spot in self.chips.change})
        self.chips.end_change()
        self.chips.refresh(self.session)
        for seat in changing:
            self._wagers_changed(seat, out, at, source="rfid")

    def _stacks_issued(self) -> None:
        """No hand opens while a seated entry waits for its starting stack (D346), at a table
        that requires issued chips; a seat whose wagers are keyed by hand (the chip reader
        out of service, rule 58) cannot be issued one and does not wait."""
        if not self.chips.chip_float.require_issued:
            return
        waiting = [(seat, entry) for seat, entry in self.chips.unissued(self.session).items()
                   if not any(self.spots.keyed(seat, w) for w in WAGERS)]
        if waiting:
            lines = "; ".join(line["say"] for line in self.chips.to_issue(self.session)
                              if line["seat"] in dict(waiting))
            raise Refused("no hand opens until every seated entry's starting stack is issued:"
                          f" {lines} (the reader issues it once it reads exactly the stack)")

    # ---- the payout check (D72) ---------------------------------------------------------

    def _start_payout(self, hand: Hand, entries: Mapping[int, str], at: datetime,
                      out: Out) -> None:
        def held(seat: int, spot: str) -> tuple[int, bool]:
            wagers, _ = self.spots.wagers(seat, entries.get(seat), report=False)
            return wagers.amount(spot), self.spots.keyed(seat, spot)

        assert hand.settlement is not None
        self.payout = PayoutCheck.of(hand_id=hand.hand_id, heat_id=self.heat_id,
                                     settlement=hand.settlement, held=held)
        self.chips.payout_started(self.payout, entries)
        self.chips.refresh(self.session)
        self._payout_done(out, at)

    def _payout_seen(self, seat: int, spot: str, out: Out, at: datetime, *,
                     keyed: bool) -> None:
        check = self.payout
        if check is None or (seat, spot) not in check.spots:
            return
        entry = self.session.seats.get(seat) if self.session else None
        wagers, _ = self.spots.wagers(seat, entry.entry_id if entry else None, report=False)
        over = check.see(seat, spot, wagers.amount(spot), keyed=keyed)
        if over is not None:
            kind, words = over.problem()
            self._alert(out, kind, words, at, source="payout", seat=seat,
                        hand_id=check.hand_id)
        self._payout_done(out, at)

    def _payout_done(self, out: Out, at: datetime) -> None:
        check = self.payout
        if check is None or not check.complete:
            return
        self.chips.payout_ended(check)
        out.append(PayoutChecked(hand_id=check.hand_id, heat_id=check.heat_id,
                                 outcome="verified",
                                 unverifiable=tuple(s.line for s in check.keyed()),
                                 at=format_ts(at)))
        self.payout = None

    def _payout_action(self, given: PayoutCheckPressed | PayoutOverride, at: datetime,
                       out: Out) -> dict[str, Any]:
        check = self.payout
        assert check is not None, "the core refuses a payout action with no payout waiting"
        if isinstance(given, PayoutOverride):
            self.chips.payout_ended(check)
            out.append(PayoutChecked(hand_id=check.hand_id, heat_id=check.heat_id,
                                     outcome="overridden",
                                     mismatches=tuple(s.line for s in check.unpaid()),
                                     unverifiable=tuple(s.line for s in check.keyed()),
                                     by=given.by, reason=given.reason, at=format_ts(at)))
            self.payout = None
            return {"hand_id": check.hand_id, "payout": "overridden"}
        if check.complete:  # pragma: no cover - a complete check is closed at once
            return {"hand_id": check.hand_id, "payout": check.view()}
        for spot in check.unpaid():
            kind, words = spot.problem()
            self._alert(out, kind, words, at, source="payout", seat=spot.seat,
                        hand_id=check.hand_id)
        # The alerts above stay in `out` (journaled and published with the refusal); the
        # dealer's answer is the truth: the payout is not verified and the next hand waits.
        raise Refused(check.refusal())

    # ---- the tournament desk ------------------------------------------------------------

    def _desk(self, order: DeskOrder, at: datetime, out: Out) -> dict[str, Any] | None:
        if order.command_seq is not None:  # QoS 1 may deliver a command twice
            key = (str(order.signer), order.command_seq)
            if key in self._commands_seen:
                raise Refused(f"duplicate command {key[1]} from {key[0]}: already applied")
            self._commands_seen.add(key)
        return self._command(order, at, out)

    def _command(self, order: DeskOrder, at: datetime, out: Out) -> dict[str, Any] | None:
        command = order.command
        match command:
            case OpenHeat():
                self._open_heat(command, at, out)
                return None
            case Resend():
                return None  # the link publishes again from the journal
            case AckScore():
                self._acknowledge(command.entry_id, command.method, order.signer, at, out)
                return None
            case StaffRoster():
                self.staff.take_roster(command)
                return {"roster_version": command.version, "staff": len(command.members)}
            case ParticipantProofs():
                return self._credentials(command)
        session = self._session()
        if isinstance(command, Unseat | CloseHeat | CorrectHand) and session.hand is not None:
            return self._hold(order, session)
        handlers: dict[type[TableCommand], Callable[[Any, str | None, datetime, Out], None]] = {
            Seat: self._seat, Unseat: self._unseat, VoidHand: self._void_hand,
            CloseHeat: self._close_heat, CorrectHand: self._correct_hand,
        }
        handlers[type(command)](command, order.signer, at, out)
        return None

    def _open_heat(self, command: OpenHeat, at: datetime, out: Out) -> None:
        if self.session is not None:
            raise Refused(f"heat {self.heat_id} is still open")
        stage = Stage(command.stage)
        self.session = TableSession(table_id=self.table_id,
                                    rules=self.settings.stage(stage).rules,
                                    paytables=self.paytables, deal=self.deal)
        self.heat_id, self.ledger = command.heat_id, HandLedger(command.heat_id, stage.value)
        out.append(HeatOpened(heat_id=self.heat_id, stage=stage.value, at=format_ts(at)))

    def _seat(self, command: Seat, signer: str | None, at: datetime, out: Out) -> None:
        del signer
        session = self._session()
        entry = Entry.start(entry_id=command.entry_id, rules=session.rules)
        session.seat_entry(entry, command.seat)
        self.proofs[entry.entry_id] = command
        self.chips.seated(entry.entry_id, command.seat, self._to_chips(at, out))
        self.chips.refresh(session)
        self.chips.auto_issue(command.seat, session)
        out.append(EntrySeated(entry_id=entry.entry_id, seat=command.seat, heat_id=self.heat_id,
                               at=format_ts(at)))

    def _credentials(self, command: ParticipantProofs) -> dict[str, Any]:
        """Replace a seated (or scored, unacknowledged) entry's proofs with the desk's new
        ones (D330); any other entry is refused: the table holds no proofs for it."""
        seating = self.proofs.get(command.entry_id)
        if seating is None:
            raise Refused(f"entry {command.entry_id} is not seated at this table and has no"
                          " score waiting for acknowledgement here")
        self.proofs[command.entry_id] = replace(seating, card_hash=command.card_hash,
                                                pin_hash=command.pin_hash)
        return {"entry_id": command.entry_id, "card": command.card_hash is not None,
                "pin": command.pin_hash is not None}

    def _unseat(self, command: Unseat, signer: str | None, at: datetime, out: Out) -> None:
        del signer
        session = self._session()
        sitting = session.seats.get(command.seat)
        expected = command.entry_id
        if sitting is not None and expected is not None and sitting.entry_id != expected:
            raise Refused(f"seat {command.seat} holds entry {sitting.entry_id}, not {expected}")
        entry = session.unseat(command.seat)
        self.spots.clear_seat(command.seat)
        out.append(EntryUnseated(entry_id=entry.entry_id, seat=command.seat,
                                 hands_played=entry.hands_played,
                                 reason="" if command.reason is None else command.reason,
                                 at=format_ts(at)))

    def _void_hand(self, command: VoidHand, signer: str | None, at: datetime, out: Out) -> None:
        hand = self._session().hand
        if hand is None or hand.hand_id != command.hand_id:
            raise Refused(f"hand {command.hand_id} is not the hand in progress")
        hand.void(command.reason, by=signer, at=at)
        self._close_if_ended(out, at)

    def _correct_hand(self, command: CorrectHand, signer: str | None, at: datetime,
                      out: Out) -> None:
        out.extend(self.ledger.correct(command, by=signer, session=self._session(),
                                       at=format_ts(at)))

    def _close_heat(self, command: CloseHeat, signer: str | None, at: datetime,
                    out: Out) -> None:
        del command, signer
        session = self._session()
        if session.hand is not None:
            raise Refused("a hand is in progress")
        if session.seats:
            seated = ", ".join(e.entry_id for e in session.seats.values())
            raise Refused(f"entries still seated: {seated}")
        assert self.heat_id is not None
        self.chips.reconcile_heat(self._to_chips(at, out))
        self.tallies.heat_closing(self.heat_id, self._to_tallies(at, out))
        out.append(HeatClosed(heat_id=self.heat_id, at=format_ts(at)))
        self.session, self.heat_id = None, None

    def _hold(self, order: DeskOrder, session: TableSession) -> dict[str, Any]:
        """Keep an `unseat` or `close_heat` that arrives during a hand until the hand ends
        (a table back from a fault mid-hand gets them queued); refused now if it could never
        apply."""
        assert session.hand is not None
        command = order.command
        if isinstance(command, Unseat):
            sitting = session.seats.get(command.seat)
            if sitting is None:
                raise Refused(f"seat {command.seat} is empty")
            if command.entry_id is not None and sitting.entry_id != command.entry_id:
                raise Refused(f"seat {command.seat} holds entry {sitting.entry_id},"
                              f" not {command.entry_id}")
        if any(_held_key(h) == _held_key(order) for h in self.held):
            raise Refused(f"{order.name} is already held until hand"
                          f" {session.hand.hand_id} ends")
        self.held.append(order)
        return {"held_until": session.hand.hand_id}

    def _apply_held(self, out: Out, at: datetime) -> None:
        """Apply the held desk commands, in the order they came, now that the hand has ended;
        each gets its final command.result."""
        held, self.held = self.held, []
        for order in held:
            try:
                self._command(order, at, out)
            except _FAILURES as exc:
                out.append(_result(order, accepted=False, reason=reason_of(exc)))
            else:
                out.append(_result(order, accepted=True, reason=None))

    # ---- helpers ----------------------------------------------------------------------

    def _session(self) -> TableSession:
        if self.session is None:
            raise Refused("no heat is open at this table")
        return self.session

    def _open_hand(self, at: datetime) -> Hand:
        session = self._session()
        if session.hand is not None:
            return session.hand
        self.hands_opened += 1
        hand = session.open_hand(f"{self.table_id}-{self.hands_opened:06d}", at=at)
        self._fed = {}
        for seat, entry in sorted(session.seats.items()):
            wagers, _ = self.spots.wagers(seat, entry.entry_id)
            if wagers.staked_cents or wagers.markers:
                keyed = any(self.spots.keyed(seat, spot) for spot in WAGERS)
                hand.see_wagers(seat, wagers, source="manual" if keyed else "rfid", at=at)
                self._fed[seat] = wagers
        return hand

    def _wagers_changed(self, seat: int, out: Out, at: datetime,
                        source: Literal["rfid", "manual"]) -> None:
        session = self.session
        entry = session.seats.get(seat) if session else None
        wagers, problems = self.spots.wagers(seat, entry.entry_id if entry else None)
        for problem in problems:
            self._alert(out, problem.kind, problem.detail, at, source="chips", seat=seat)
        hand = self.hand
        if hand is None or seat not in hand.seats or hand.phase in (Phase.SETTLED, Phase.VOID):
            return
        if self._fed.get(seat, SeatWagers()) == wagers:
            return
        before = len(hand.events)
        hand.see_wagers(seat, wagers, source=source, at=at)
        self._fed[seat] = wagers
        self._hand_alerts(hand, before, out, at)

    def _to_chips(self, at: datetime, out: Out) -> ChipOutput:
        """Where the chip component reports for this input; its alerts come from the chips."""
        def alert(kind: str, message: str, seat: int) -> None:
            self._alert(out, kind, message, at, source="chips", seat=seat)

        return ChipOutput(heat_id=self.heat_id, at=at, out=out, alert=alert)

    def _hand_alerts(self, hand: Hand, before: int, out: Out, at: datetime) -> None:
        for event in hand.events[before:]:
            if isinstance(event, AlertRaised):
                self._alert(out, event.kind, event.message, at, source="hand",
                            seat=event.seat, hand_id=hand.hand_id, alert_id=event.alert_id)

    def _alert(self, out: Out, kind: str, message: str, at: datetime, *,
               source: str = "table", seat: int | None = None, hand_id: str | None = None,
               alert_id: int | None = None, evidence: Mapping[str, Any] | None = None) -> None:
        self.alerts_raised += 1
        out.append(Alert(kind=kind, message=message, source=source, at=format_ts(at),
                         seat=seat, hand_id=hand_id, alert_id=alert_id, evidence=evidence))

    def _close_if_ended(self, out: Out, at: datetime) -> None:
        session = self.session
        hand = session.hand if session else None
        if session is None or hand is None or hand.phase not in (Phase.SETTLED, Phase.VOID):
            return
        entries = {s: e.entry_id for s, e in session.seats.items()}
        record = hand_record(hand, entries=entries, table=self.table_id)
        record["heat_id"], record["stage"] = self.heat_id, session.rules.stage.value
        settled = hand.phase is Phase.SETTLED
        record["settled_at" if settled else "voided_at"] = format_ts(at)
        kind = HandSettled if settled else HandVoided
        out.append(kind(hand_id=hand.hand_id, heat_id=self.heat_id, record=record))
        self.recent.appendleft(record)
        self.ledger.settled(hand, entries)
        for found in self.decks.hand_ended(hand):
            self._alert(out, found.kind, found.message, at, source="deck",
                        hand_id=hand.hand_id, evidence=found.evidence)
        for entry_id in entries.values():
            self.last_hand_at[entry_id] = format_ts(at)
        assert self.heat_id is not None
        if settled and self.verify_payouts and hand.settlement is not None:
            self._start_payout(hand, entries, at, out)
        elif settled and hand.settlement is not None:
            self.chips.losses_taken(hand.settlement, entries)
        for ended in session.close_hand():
            self.spots.clear_seat(ended.seat)
            seated = self.proofs.get(ended.entry_id)
            score = ScoreRecorded(
                entry_id=ended.entry_id, stage=session.rules.stage.value,
                heat_id=self.heat_id, table=self.table_id, seat=ended.seat,
                score=ended.score_cents, hands=ended.hands_played, status=ended.status.value,
                markers_forfeited=ended.markers_forfeited, last_hand_id=ended.hand_id,
                at=format_ts(at), entry_code=None if seated is None else seated.entry_code,
                name=None if seated is None else seated.name)
            self.unacknowledged[ended.entry_id] = score
            out.append(score)
        self._fed = {}
        self._apply_held(out, at)

    def _acknowledge(self, entry_id: str, method: str, by: str | None, at: datetime,
                     out: Out, *, evidence: str | None = None) -> None:
        score = self.unacknowledged.pop(entry_id, None)
        if score is None:
            raise Refused(f"entry {entry_id} has no unacknowledged score at this table")
        self.disputed.pop(entry_id, None)
        self.proofs.pop(entry_id, None)
        out.append(ScoreAcknowledged(entry_id=entry_id, score=score.score, stage=score.stage,
                                     method=method, by=by, at=format_ts(at),
                                     evidence=evidence))

    def _dispute(self, given: Dispute, at: datetime, out: Out) -> None:
        score = self.unacknowledged.get(given.entry_id)
        if score is None:
            raise Refused(f"entry {given.entry_id} has no unacknowledged score at this table")
        self.disputed[given.entry_id] = given.note
        out.append(ScoreDisputed(entry_id=given.entry_id, score=score.score, note=given.note,
                                 stage=score.stage, heat_id=score.heat_id, at=format_ts(at)))


_ACTION_NAMES: Final[Mapping[type, str]] = {
    NoMoreBets: "no_more_bets", SettleHand: "settle", RevealHand: "reveal",
    VoidByDealer: "void", CorrectCard: "correct_card", ResolveAlert: "resolve_alert",
    PayoutCheckPressed: "payout_check", PayoutOverride: "payout_override",
    ClearFault: "clear_fault", IssueChips: "issue_chips", ReturnChips: "return_chips",
    ResolveAlerts: "resolve_alerts", RuleHand: "rule_hand",
}


def _resolve(hand: Hand, given: ResolveAlert | ResolveAlerts, at: datetime) -> None:
    """Resolve one alert, or several as one act: those tried first on a copy of the hand, so
    one that cannot be resolved (not open, or not fixed yet) refuses them all, naming it."""
    if isinstance(given, ResolveAlert):
        hand.resolve_alert(given.alert_id, given.reason, by=given.by, at=at)
        return
    trial = deepcopy(hand, {id(hand.paytables): hand.paytables})  # the paytables are shared
    blocked: list[tuple[int, str]] = []
    for alert_id in given.alert_ids:
        try:
            trial.resolve_alert(alert_id, given.reason, by=given.by, at=at)
        except GameError as exc:
            blocked.append((alert_id, reason_of(exc)))
    if blocked:
        ids = ", ".join(str(i) for i, _ in blocked)
        raise Refused(f"alert_ids: {ids} cannot be resolved ({blocked[0][1]}); none was"
                      " resolved")
    for alert_id in given.alert_ids:
        hand.resolve_alert(alert_id, given.reason, by=given.by, at=at)


def _result(order: DeskOrder, *, accepted: bool, reason: str | None,
            held: str | None = None) -> CommandResult:
    return CommandResult(command_id=order.command_id, command=order.name, accepted=accepted,
                         reason=reason, held_until_hand_ends=held)


def _held_key(order: DeskOrder) -> tuple[Any, ...]:
    """Held commands that would do the same thing share a key."""
    command = order.command
    return (order.name, getattr(command, "seat", None), getattr(command, "entry_id", None),
            getattr(command, "hand_id", None))
