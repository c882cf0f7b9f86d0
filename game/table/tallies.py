"""The table's tallies, a component the table core (`game.table.core.TableCore`) holds as
``core.tallies``: each heat's opening and closing chip counts (`game.chips.counts`: counted by
the dealer, confirmed by a supervisor, ``chips.counted``, a ``chip_count_discrepancy`` alert
over the house's tolerance) and the deck inventory (`game.decks.inventory`: ``decks.event``,
a ``deck_balance`` alert when a step breaks the balance).

The core passes in what a step reads (the heat and its session, the chip float, the staff,
the venue's day) and a `TallyOutput` for the messages and alerts; the component keeps no
reference to the core. Pure, like the core: every change comes from a journaled input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from game.chips.counts import ChipCount, CountBook, Stage, expected_of
from game.chips.float import ChipFloat
from game.decks.inventory import DeckBook, DeckRefused, DeckStep, load_steps, steps_state
from game.errors import GameError
from game.messages.chips import ChipsCounted
from game.messages.decks import DecksEvent
from game.messages.fields import format_ts
from game.messages.table import TableMessage
from game.money import format_rand
from game.table.people import TableStaff
from game.table.session import TableSession
from game.table.tally_inputs import ConfirmCount, CountChips, DeckStepped, TallyInput

__all__ = ["TableTallies", "TallyOutput", "TallyRefused"]

TallyAlert = Callable[[str, str, Mapping[str, Any] | None], None]
"""Raise an alert at the table: ``alert(kind, message, evidence)`` (the core counts it)."""


class TallyRefused(GameError):
    """A count or deck step that cannot be taken now; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TallyOutput:
    """Where a tally step reports, given by the core for one input."""

    heat_id: str | None
    session: TableSession | None
    at: datetime
    tz: tzinfo
    out: list[TableMessage]
    alert: TallyAlert


class TableTallies:
    """Chip counts and deck inventory of one table; see the module docstring."""

    def __init__(self) -> None:
        self.counts = CountBook()
        self.decks = DeckBook()

    def apply(self, given: TallyInput, chip_float: ChipFloat, staff: TableStaff,
              to: TallyOutput) -> dict[str, Any]:
        """Apply one tally input; the answer's detail (TallyRefused, or the rules' own
        refusals, say why not)."""
        match given:
            case CountChips():
                return self._count(given, chip_float, staff, to)
            case ConfirmCount():
                return self._confirm(given, staff, to)
            case DeckStepped():
                return self._deck(given, staff, to)

    # ---- chip counts --------------------------------------------------------------------

    def _count(self, given: CountChips, chip_float: ChipFloat, staff: TableStaff,
               to: TallyOutput) -> dict[str, Any]:
        heat = self._heat_for(given.stage, to)
        registry = chip_float.registry
        values = frozenset(c.value_cents for c in registry if c.chip_set == registry.chip_set)
        unknown = [v for v, _ in given.counted if values and v not in values]
        if unknown:
            shown = ", ".join(format_rand(v) for v in sorted(values))
            raise TallyRefused(f"counted: {format_rand(unknown[0])} is not a chip value of the"
                               f" set in play ({shown})")
        in_tray: dict[int, int] | None = None
        if values:
            in_tray = dict.fromkeys(values, 0)
            for uid in chip_float.in_float():
                chip = registry.lookup(uid)
                if chip is not None:
                    in_tray[chip.value_cents] += 1
        expected = expected_of(in_tray, stage=given.stage,
                               opening=self.counts.of_heat(heat, "opening"),
                               last_closing=self.counts.last_closing)
        member = None if given.by is None else staff.member(given.by)
        count = self.counts.record(heat_id=heat, stage=given.stage, counted=given.counted,
                                   expected=expected, dealer_id=given.by or "unknown",
                                   role=None if member is None else member.role,
                                   at=format_ts(to.at))
        return {"stage": count.stage, "heat_id": heat, "total_cents": count.total_cents,
                "expected_cents": count.expected_cents,
                "difference_cents": count.difference_cents, "confirmed": False,
                "say": count.summary() + ": a supervisor confirms it"}

    def _heat_for(self, stage: Stage, to: TallyOutput) -> str:
        """The open heat a count of ``stage`` may be taken for now (TallyRefused: none)."""
        session = to.session
        if session is None or to.heat_id is None:
            raise TallyRefused("no heat is open at this table: the tray is counted at a"
                               " heat's opening and before its close")
        if session.hand is not None:
            raise TallyRefused(f"hand {session.hand.hand_id} is in progress: count the tray"
                               " between hands")
        if stage == "opening" and (session.ended or any(
                e.hands_played for e in session.seats.values())):
            raise TallyRefused(f"heat {to.heat_id} has played hands: its opening count is"
                               " taken before the first hand")
        if stage == "closing" and session.seats:
            seated = ", ".join(e.entry_id for e in session.seats.values())
            raise TallyRefused(f"entries still seated ({seated}): the closing count is taken"
                               " when every entry has left")
        return to.heat_id

    def _confirm(self, given: ConfirmCount, staff: TableStaff,
                 to: TallyOutput) -> dict[str, Any]:
        if to.heat_id is None:
            raise TallyRefused("no heat is open at this table")
        if given.by is None:
            raise TallyRefused("a confirmation names the supervisor who gives it")
        member = staff.member(given.by)
        roster_less = staff.roster is None  # a table from before rosters names whoever
        done = self.counts.confirm(
            heat_id=to.heat_id, stage=given.stage, supervisor_id=given.by,
            role="supervisor" if roster_less else (None if member is None else member.role),
            active=roster_less or (member is not None and member.active),
            tolerance_cents=given.tolerance_cents, at=format_ts(to.at))
        to.out.append(ChipsCounted.of(done))
        if done.over:
            to.alert("chip_count_discrepancy",
                     f"{done.summary()}; over the house's tolerance of"
                     f" {format_rand(done.tolerance_cents)}",
                     {"heat_id": done.heat_id, "stage": done.stage,
                      "difference_cents": done.difference_cents,
                      "dealer_id": done.dealer_id, "supervisor_id": done.supervisor_id})
        return {"stage": done.stage, "heat_id": done.heat_id, "total_cents": done.total_cents,
                "expected_cents": done.expected_cents,
                "difference_cents": done.difference_cents, "confirmed": True,
                "confirmed_by": done.supervisor_id, "alert": done.over,
                "say": done.summary()}

    def heat_closing(self, heat_id: str, to: TallyOutput) -> None:
        """The heat closes: at a table that counts its tray (a count has been taken here), a
        missing confirmed count is an alert; it never blocks the close (D376)."""
        missing = self.counts.missing(heat_id)
        if missing and (self.counts.confirmed or self.counts.pending):
            to.alert("chip_count_missing",
                     f"heat {heat_id} closed without a confirmed {' and '.join(missing)}"
                     " chip count (dealer and supervisor)",
                     {"heat_id": heat_id, "stages": list(missing)})
        for stage in missing:  # a count begun and not confirmed is dropped with the heat
            self.counts.pending.pop((heat_id, stage), None)

    # ---- decks --------------------------------------------------------------------------

    def _deck(self, given: DeckStepped, staff: TableStaff, to: TallyOutput) -> dict[str, Any]:
        if given.by is None:
            raise TallyRefused(f"decks {given.kind}: the record names who did it")
        roster_less = staff.roster is None
        member = staff.signed_in.get(given.by)
        if member is None and not roster_less:
            raise TallyRefused(f"{given.by} is not signed in at this table")
        witness = None if given.witness is None else staff.member(given.witness)
        if witness is not None and not witness.active:
            raise DeckRefused(f"{given.witness}'s credential is disabled")
        step = DeckStep(kind=given.kind, decks=given.decks, day=_day(to), by=given.by,
                        at=format_ts(to.at), seals=given.seals, lot=given.lot,
                        source=given.source, witness=given.witness, note=given.note)
        problems = self.decks.record(
            step, role="supervisor" if roster_less else (None if member is None
                                                         else member.role),
            witness_role=("supervisor" if roster_less and given.witness is not None
                          else None if witness is None else witness.role))
        to.out.append(DecksEvent.of(step, self.decks.position, problems))
        if problems:
            to.alert("deck_balance", f"decks {given.kind} ({given.decks}) by {given.by}"
                     f" breaks the deck balance: {'; '.join(problems)}",
                     {"kind": given.kind, "decks": given.decks, "day": step.day,
                      "position": self.decks.position.encode(), "problems": problems})
        return {"kind": given.kind, "decks": given.decks, "day": step.day,
                **self.decks.position.encode(), "balanced": not problems,
                "problems": problems}

    # ---- views and the snapshot ---------------------------------------------------------

    def view(self, heat_id: str | None) -> dict[str, Any]:
        """The heat's counts and the decks (the figures of the last day a step was taken),
        for the screens and the status."""
        day = max(self.decks.days, default="")
        return {"counts": self.counts.view(heat_id), "decks": self.decks.view(day)}

    def state(self) -> dict[str, Any]:
        """Plain data for the table's snapshot."""
        return {"pending": [c.state() for c in self.counts.pending.values()],
                "confirmed": [c.state() for c in self.counts.confirmed.values()],
                "last_closing": None if self.counts.last_closing is None
                else self.counts.last_closing.state(),
                "deck_steps": steps_state(self.decks.steps)}

    def load(self, data: Mapping[str, Any]) -> None:
        """Load `state`'s data (ValueError or KeyError naming what is wrong)."""
        counts = CountBook()
        for name in ("pending", "confirmed"):
            raw = data[name]
            if not isinstance(raw, list):
                raise ValueError(f"{name} must be a list")
            for item in raw:
                count = ChipCount.load(item)
                getattr(counts, name)[(count.heat_id, count.stage)] = count
        last = data["last_closing"]
        counts.last_closing = None if last is None else ChipCount.load(last)
        decks = DeckBook()
        for step in load_steps(data["deck_steps"]):
            decks.apply(step)
        self.counts, self.decks = counts, decks


def _day(to: TallyOutput) -> str:
    return to.at.astimezone(to.tz).date().isoformat()
