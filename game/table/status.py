"""The table core's state as plain data: what `showdown table status`, the status message,
the simulators and the table's screens read (heat, seats, spots, the hand in play, the payout
waiting to be checked, who is signed in, scores waiting for acknowledgement).

Read-only: nothing here changes the core. It reads the core through `TableState`, the
Protocol below of what it reads, and imports nothing of `game.table.core`: the core calls
`core_status(self)` for its ``status()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from game.chips.spot_book import SpotBook
from game.decks.check import DeckWatch
from game.hand import Hand
from game.messages.desk import DeskOrder, Seat
from game.messages.table import ScoreRecorded
from game.table.chip_duties import TableChips
from game.table.payout_check import PayoutCheck
from game.table.people import TableStaff
from game.table.session import TableSession
from game.table.tallies import TableTallies
from game.wagers.settle import WAGERS

__all__ = ["StatusView", "TableState", "core_status", "held_view"]


class TableState(Protocol):
    """What the status reads of the table core (`game.table.core.TableCore` is one)."""

    @property
    def session(self) -> TableSession | None: ...
    @property
    def hand(self) -> Hand | None: ...
    @property
    def heat_id(self) -> str | None: ...
    @property
    def spots(self) -> SpotBook: ...
    @property
    def chips(self) -> TableChips: ...
    @property
    def payout(self) -> PayoutCheck | None: ...
    @property
    def device_faults(self) -> Mapping[str, str]: ...
    @property
    def decks(self) -> DeckWatch: ...
    @property
    def staff(self) -> TableStaff: ...
    @property
    def hands_opened(self) -> int: ...
    @property
    def alerts_raised(self) -> int: ...
    @property
    def inputs_applied(self) -> int: ...
    @property
    def unacknowledged(self) -> Mapping[str, ScoreRecorded]: ...
    @property
    def disputed(self) -> Mapping[str, str]: ...
    @property
    def held(self) -> Sequence[DeskOrder]: ...
    @property
    def last_hand_at(self) -> Mapping[str, str]: ...
    @property
    def proofs(self) -> Mapping[str, Seat]: ...
    @property
    def tallies(self) -> TableTallies: ...


def core_status(core: TableState) -> dict[str, Any]:
    """A summary of the core's state (JSON-ready)."""
    return dict(StatusView(core))


class StatusView(Mapping[str, Any]):
    """`core_status`, each part built only when it is first read (the virtual dealer reads
    one or two parts after every input; the whole summary costs a spot book walk and more).
    Taken at one moment: read it before the core's next input, never after."""

    __slots__ = ("_built", "_core", "_head")

    def __init__(self, core: TableState, head: Mapping[str, Any] | None = None) -> None:
        self._core = core
        self._head = dict(head or {})  # parts given whole, read before the core's
        self._built: dict[str, Any] = dict(self._head)

    def __getitem__(self, key: str) -> Any:
        if key not in self._built:
            part = _PARTS.get(key)
            if part is None:
                raise KeyError(key)
            self._built[key] = part(self._core)
        return self._built[key]

    def __contains__(self, key: object) -> bool:
        return key in self._head or key in _PARTS

    def __iter__(self) -> Iterator[str]:
        yield from self._head
        yield from (k for k in _PARTS if k not in self._head)

    def __len__(self) -> int:
        return len(self._head) + sum(k not in self._head for k in _PARTS)


def _seats(core: TableState) -> dict[str, Any]:
    session = core.session
    seatings = core.proofs
    return {str(s): {"entry_id": e.entry_id, "balance": e.balance_cents,
                     "entry_code": (seatings[e.entry_id].entry_code
                                    if e.entry_id in seatings else None),
                     "hands_played": e.hands_played, "markers_left": e.markers_left,
                     "last_hand_at": core.last_hand_at.get(e.entry_id)}
            for s, e in sorted(session.seats.items())} if session else {}


def _hand(core: TableState) -> dict[str, Any] | None:
    hand = core.hand
    return None if hand is None else {
        "hand_id": hand.hand_id, "phase": hand.phase.value, "paused": hand.paused,
        "seats_in_hand": list(hand.seats_in_hand),
        "cards_read": len(hand.cards()),
        "next_target": None if hand.next_target is None else str(hand.next_target),
        "open_alerts": [{"id": a.alert_id, "kind": a.kind, "message": a.message}
                        for a in hand.open_alerts],
    }


def spots_view(core: TableState) -> dict[str, dict[str, Any]]:
    """Each seated entry's spots: wager -> cents, and "markers" -> the side bets marked."""
    if core.session is None:
        return {}
    view: dict[str, dict[str, Any]] = {}
    for seat, entry in sorted(core.session.seats.items()):
        wagers, _ = core.spots.wagers(seat, entry.entry_id, report=False)
        view[str(seat)] = {w: wagers.amount(w) for w in WAGERS if wagers.amount(w)}
        if wagers.markers:
            view[str(seat)]["markers"] = sorted(wagers.markers)
    return view


def held_view(order: DeskOrder) -> dict[str, Any]:
    """A desk command held until the hand ends, as the status shows it."""
    shown = {"command": order.name, **order.command.args()}
    return {k: shown[k] for k in ("command", "seat", "entry_id", "hand_id", "reason")
            if shown.get(k) is not None}


def _heat(c: TableState) -> Any:
    return c.heat_id


def _stage(c: TableState) -> Any:
    return c.session.rules.stage.value if c.session else None


def _payout(c: TableState) -> Any:
    return None if c.payout is None else c.payout.view()


def _device_faults(c: TableState) -> Any:
    return dict(sorted(c.device_faults.items()))


def _deck(c: TableState) -> Any:
    return c.decks.status()


def _staff(c: TableState) -> Any:
    return c.staff.view()


def _roster_version(c: TableState) -> Any:
    return None if c.staff.roster is None else c.staff.roster.version


def _hands_opened(c: TableState) -> Any:
    return c.hands_opened


def _alerts(c: TableState) -> Any:
    return c.alerts_raised


def _inputs(c: TableState) -> Any:
    return c.inputs_applied


def _unacknowledged_scores(c: TableState) -> Any:
    return sorted(c.unacknowledged)


def _disputed_scores(c: TableState) -> Any:
    return sorted(c.disputed)


def _held_commands(c: TableState) -> Any:
    return [held_view(h) for h in c.held]


def _chips(c: TableState) -> Any:
    return c.chips.view(c.session)


def _tallies(c: TableState) -> Any:
    return c.tallies.view(c.heat_id)


_PARTS: dict[str, Callable[[TableState], Any]] = {
    "heat": _heat,
    "stage": _stage,
    "seats": _seats,
    "spots": spots_view,
    "hand": _hand,
    "payout": _payout,
    "device_faults": _device_faults,
    "deck": _deck,
    "staff": _staff,
    "roster_version": _roster_version,
    "hands_opened": _hands_opened,
    "alerts": _alerts,
    "inputs": _inputs,
    "unacknowledged_scores": _unacknowledged_scores,
    "disputed_scores": _disputed_scores,
    "held_commands": _held_commands,
    "chips": _chips,
    "tallies": _tallies,
}
