"""A settled hand disputed and ruled on while its entry still plays at the table (rules 22,
23, 37, 53): the hands each entry played in the open heat, a dealer's or supervisor's
dispute of one (``hand.disputed``), and a supervisor's ruling applied as a correcting record
(``hand.corrected``) that moves the entry's chips. The hand's own record is never changed.

A ruling concerns one entry's result in the hand (the entry that disputed it): ``void``
takes the hand's net back and gives back the markers it used, and the hand no longer counts
among the entry's hands (it plays one more, as for a hand voided before settlement);
``correct`` makes the hand count the ruled net instead. The ruling comes from the desk (a
signed `CorrectHand`) or from a supervisor at the table's console (`RuleHand`, D342): the
same checks, the same correcting record, which then says ``made_at: "table"``. Pure: the
table core (game.table.core) keeps one `HandLedger` per heat and calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from game.errors import IllegalAction
from game.hand import Hand, Phase
from game.messages.corrections import HandCorrected, HandDisputed
from game.messages.desk import CorrectHand
from game.messages.table import Alert
from game.money import format_rand
from game.table.inputs import DisputeHand, RuleHand
from game.table.people import TableStaff
from game.table.session import TableSession
from game.tournament.entries import Entry

__all__ = ["HandLedger", "PlayedHand"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayedHand:
    """One entry's result in one settled hand of the heat, and the ruling on it if any."""

    hand_id: str
    entry_id: str
    seat: int
    settled_net: int  # as the hand settled (its record)
    net: int  # what it counts for now
    markers_used: frozenset[str]
    ruling: str | None = None  # hand_voided | hand_corrected


class HandLedger:
    """The settled hands of the table's heat (the open one, or the last one until the next
    opens), per entry, in the order each entry played them."""

    def __init__(self, heat_id: str | None = None, stage: str | None = None) -> None:
        self.heat_id, self.stage = heat_id, stage
        self._played: dict[tuple[str, str], PlayedHand] = {}  # (hand id, entry id) -> result
        self._order: dict[str, list[str]] = {}  # entry id -> its counted hands, in order

    def settled(self, hand: Hand, entries: Mapping[int, str]) -> None:
        """Remember a hand as it ended (the core calls this once per hand; a void is no
        result to rule on)."""
        settlement, hand_id = hand.settlement, hand.hand_id
        if hand.phase is not Phase.SETTLED or settlement is None:
            return
        for result in settlement.seats:
            entry_id = entries.get(result.seat)
            if entry_id is None:
                continue
            self._played[(hand_id, entry_id)] = PlayedHand(
                hand_id=hand_id, entry_id=entry_id, seat=result.seat,
                settled_net=result.net_cents, net=result.net_cents,
                markers_used=result.markers_used)
            self._order.setdefault(entry_id, []).append(hand_id)

    def results(self, hand_id: str) -> tuple[PlayedHand, ...]:
        """Each entry's result in one settled hand of the heat, by seat (none: not one)."""
        return tuple(sorted((p for (h, _), p in self._played.items() if h == hand_id),
                            key=lambda p: p.seat))

    def rule(self, given: RuleHand, *, session: TableSession,
             at: str) -> tuple[HandCorrected, Alert]:
        """A supervisor's ruling made at the table on the result of the entry that played
        ``given.seat`` in the hand: the desk's ruling path (`correct`), naming the supervisor."""
        played = self.results(given.hand_id)
        if not played:
            raise IllegalAction(f"hand {given.hand_id} is not a settled hand of this table's"
                                " heat")
        chosen = [p for p in played if p.seat == given.seat]
        if not chosen:
            seats = ", ".join(f"seat {p.seat} ({p.entry_id})" for p in played)
            raise IllegalAction(f"seat {given.seat} did not play hand {given.hand_id}; it was"
                                f" played by {seats}")
        command = CorrectHand(hand_id=given.hand_id, entry_id=chosen[0].entry_id,
                              ruling=given.ruling, reason=given.reason, net=given.net)
        corrected, notice = self.correct(command, by=given.by, session=session, at=at)
        return replace(corrected, made_at="table"), replace(notice, source="console")

    def dispute(self, given: DisputeHand, *, staff: TableStaff, at: str) -> HandDisputed:
        """A dealer's or supervisor's dispute of one entry's result in a settled hand."""
        staff.authorize("dispute_hand", given.by)
        member = staff.signed_in.get(given.by) if given.by is not None else None
        role = None if member is None else member.role
        in_hand = [p for (h, _), p in self._played.items() if h == given.hand_id]
        if not in_hand:
            raise IllegalAction(f"hand {given.hand_id} is not a settled hand of this table's"
                                " heat")
        chosen = [p for p in in_hand
                  if (given.seat is None or p.seat == given.seat)
                  and (given.entry_id is None or p.entry_id == given.entry_id)]
        if given.seat is None and given.entry_id is None:
            raise IllegalAction(f"say whose result in hand {given.hand_id} is disputed: a seat"
                                " or an entry")
        if len(chosen) != 1:
            seats = ", ".join(f"seat {p.seat} ({p.entry_id})" for p in in_hand)
            raise IllegalAction(f"hand {given.hand_id} has no such seat or entry; it was"
                                f" played by {seats}")
        claim = " ".join(given.claim.split())
        if not claim or len(claim) > 1000:
            raise IllegalAction("a dispute needs a claim of 1 to 1000 characters")
        played = chosen[0]
        return HandDisputed(hand_id=played.hand_id, entry_id=played.entry_id, seat=played.seat,
                            claim=claim, by=given.by, role=role, heat_id=self.heat_id,
                            stage=self.stage, at=at)

    def correct(self, command: CorrectHand, *, by: str | None, session: TableSession,
                at: str) -> tuple[HandCorrected, Alert]:
        """Apply a supervisor's ruling to a seated entry's chips, between hands: the correcting
        record, journaled and published, and the dealer's notice of the chips to move
        (IllegalAction if it cannot apply)."""
        played = self._played.get((command.hand_id, command.entry_id))
        if played is None:
            raise IllegalAction(f"hand {command.hand_id} is not a settled hand of entry"
                                f" {command.entry_id} in this heat at this table")
        if played.ruling == "hand_voided":
            raise IllegalAction(f"hand {command.hand_id} was already voided for entry"
                                f" {command.entry_id}")
        seat, entry = _seated(session, command.entry_id)
        order = self._order[command.entry_id]
        index = order.index(command.hand_id)
        if len(order) != len(entry.nets_cents) or entry.nets_cents[index] != played.net:
            raise IllegalAction(f"entry {command.entry_id}'s ledger does not match its hands"
                                " at this table: rule on the recorded score at the desk")
        if command.ruling == "void":
            nets = entry.nets_cents[:index] + entry.nets_cents[index + 1:]
            markers = entry.markers_left + len(played.markers_used)
            ruled = replace(played, net=0, ruling="hand_voided")
            returned = tuple(sorted(played.markers_used))
        else:
            if command.net is None:
                raise IllegalAction("a corrected hand needs the net it counts for")
            if command.net == played.net:
                raise IllegalAction(f"hand {command.hand_id} already counts"
                                    f" {format_rand(played.net)} for entry {command.entry_id}")
            nets = (*entry.nets_cents[:index], command.net, *entry.nets_cents[index + 1:])
            markers = entry.markers_left
            ruled = replace(played, net=command.net, ruling="hand_corrected")
            returned = ()
        balance = entry.rules.starting_chips_cents + sum(nets)
        if balance < 0:
            raise IllegalAction(
                f"entry {command.entry_id} holds {format_rand(entry.balance_cents)}: the ruling"
                f" would take {format_rand(entry.balance_cents - balance)}, leaving it below"
                " nothing; rule on the recorded score at the desk instead")
        after = replace(entry, nets_cents=nets, balance_cents=balance,
                        markers_left=min(markers, entry.rules.markers))
        session.replace_entry(seat, after)
        self._played[(command.hand_id, command.entry_id)] = ruled
        if command.ruling == "void":
            order.pop(index)
        corrected = HandCorrected(
            hand_id=command.hand_id, entry_id=command.entry_id, seat=seat,
            ruling=ruled.ruling or "", recorded_net=played.settled_net, counted_net=ruled.net,
            balance_before=entry.balance_cents, balance_after=after.balance_cents,
            hands_played=after.hands_played, markers_returned=returned,
            dispute_id=command.dispute_id, by=by, reason=command.reason,
            heat_id=self.heat_id, at=at)
        moved = corrected.moved_cents
        todo = (f"give seat {seat} {format_rand(moved)} from the float" if moved > 0 else
                f"take {format_rand(-moved)} from seat {seat} to the float" if moved < 0 else
                "no chips move")
        what = "voided" if command.ruling == "void" else "corrected"
        return corrected, Alert(kind="hand_corrected", source="desk", at=at, seat=seat,
                                message=f"hand {command.hand_id} {what} for entry"
                                f" {command.entry_id} by a supervisor's ruling: {todo}")


def _seated(session: TableSession, entry_id: str) -> tuple[int, Entry]:
    for seat, entry in session.seats.items():
        if entry.entry_id == entry_id:
            return seat, entry
    raise IllegalAction(f"entry {entry_id} is no longer playing at this table (its score is"
                        " recorded): the desk rules on the recorded score")
