"""The table's chip float at run time (promotion rule 19): every chip of the set in play is
either in the float (the dealer's tray) or issued to one entry.

An entry's starting stack is issued as specific UIDs at seating (the dealer places it on the
seat's spots and presses "issue chips"); a loss the dealer takes returns those chips to the
float; a verified payout binds the float chips paid onto a spot to the spot's entry. A chip
bound to one entry on another entry's spot is `chip_pooling` and counts for nobody. At the end
of the heat each entry's chips are returned (placed on its seat's spots and read): the
`Reconciliation` says what was issued, held, returned and is missing.

Pure and journaled-input driven: the table core calls it with what the readers saw, so a replay
of the journal rebuilds the same bindings. A registry that issues chips statically
(``issued_to``) starts the float with those bindings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from game.chips.registry import ChipProblem, ChipRegistry, format_uid
from game.money import format_rand

__all__ = ["ChipFloat", "FloatError", "Reconciliation", "fewest_chips", "suggest_stack"]


class FloatError(ValueError):
    """An issue of chips that cannot be done as the chips lie; the message says what is wrong."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconciliation:
    """One entry's chips at the end of its heat: what it was issued at seating, what it held
    (issued, plus chips won, minus chips lost), what came back, and what is missing."""

    entry_id: str
    seat: int
    issued: tuple[bytes, ...]
    held: tuple[bytes, ...]
    returned: tuple[bytes, ...]
    missing: tuple[bytes, ...]
    foreign: tuple[bytes, ...]  # chips of other entries among those returned (rule 19)
    issued_cents: int
    held_cents: int
    returned_cents: int
    missing_cents: int

    def summary(self) -> str:
        """One line for the supervisor."""
        words = (f"entry {self.entry_id} (seat {self.seat}): held {len(self.held)} chips"
                 f" {format_rand(self.held_cents)}, returned {len(self.returned)}"
                 f" {format_rand(self.returned_cents)}")
        if self.missing:
            shown = ", ".join(format_uid(u) for u in self.missing[:10])
            more = f" and {len(self.missing) - 10} more" if len(self.missing) > 10 else ""
            words += (f"; MISSING {len(self.missing)} chips {format_rand(self.missing_cents)}:"
                      f" {shown}{more}")
        if self.foreign:
            words += f"; {len(self.foreign)} chips of other entries among them"
        return words


class ChipFloat:
    """Who holds each chip of the set in play: an entry id, or nobody (the float).

    ``require_issued`` (the registry's, unless the table says otherwise): a float chip on a
    seated entry's spot is a `not_issued` problem, except on the seats in ``open_seats``
    (a starting stack being placed, a payout being paid: float chips belong there).
    """

    def __init__(self, registry: ChipRegistry, *, require_issued: bool | None = None) -> None:
        self.registry = registry
        self.require_issued = (registry.require_issued if require_issued is None
                               else require_issued)
        self.open_seats: frozenset[int] = frozenset()
        self.open_spots: frozenset[tuple[int, str]] = frozenset()  # change being made there
        self._static: dict[bytes, str] = {
            c.uid: c.issued_to for c in registry
            if c.issued_to is not None and c.chip_set == registry.chip_set}
        self._owner: dict[bytes, str] = dict(self._static)
        self._in_play = sum(1 for c in registry if c.chip_set == registry.chip_set)
        self.issued: dict[str, tuple[bytes, ...]] = {}  # entry -> its starting stack's UIDs
        self.reconciled: dict[str, Reconciliation] = {}
        self.version = 0  # moves on with every change of who holds a chip (a cache's key)

    # ---- lookups ------------------------------------------------------------------------

    def owner(self, uid: bytes) -> str | None:
        """The entry this chip is issued to now (None: it is in the float)."""
        return self._owner.get(uid)

    def holders(self) -> dict[bytes, str]:
        """Every chip issued to an entry now, UID -> entry id (a copy)."""
        return dict(self._owner)

    def holds_any(self, entry: str) -> bool:
        """True when at least one chip is issued to ``entry`` now."""
        return entry in self._owner.values()

    def held_by(self, entry: str) -> tuple[bytes, ...]:
        """The chips issued to ``entry`` now, in UID order."""
        return tuple(sorted(u for u, e in self._owner.items() if e == entry))

    def issued_to(self, entry: str) -> tuple[bytes, ...]:
        """The entry's starting stack: the UIDs issued at seating (or by the registry)."""
        found = self.issued.get(entry)
        if found is not None:
            return found
        return tuple(sorted(u for u, e in self._static.items() if e == entry))

    def value(self, uids: Iterable[bytes]) -> int:
        """Cents of the registered chips of the set in play among ``uids``."""
        total = 0
        for uid in set(uids):
            chip = self.registry.lookup(uid)
            if chip is not None and chip.chip_set == self.registry.chip_set:
                total += chip.value_cents
        return total

    def in_float(self) -> tuple[bytes, ...]:
        """The chips of the set in play issued to nobody, in UID order."""
        return tuple(c.uid for c in self.registry
                     if c.chip_set == self.registry.chip_set and c.uid not in self._owner)

    def check(self, uid: bytes, *, entry: str | None, where: str = "",
              seat: int | None = None, spot: str | None = None) -> ChipProblem | None:
        """Why this chip must not count for ``entry`` on ``seat`` (None: it counts), the
        run-time bindings taking the place of the registry's static ``issued_to``."""
        owner = self._owner.get(uid)
        chip = self.registry.lookup(uid)
        if chip is None or chip.chip_set != self.registry.chip_set:
            return self.registry.check(uid, entry=entry, where=where)
        if owner is not None and owner == chip.issued_to:
            return self.registry.check(uid, entry=entry, where=where)
        at = f" on {where}" if where else ""
        tag = format_uid(uid)
        if owner is not None and owner != entry:
            who = f"entry {entry}" if entry is not None else "a seat with no entry"
            return ChipProblem(kind="chip_pooling", uid=uid, chip=chip,
                               detail=f"chip {tag}{at} belongs to entry {owner}, played by {who}"
                               " (rule 19: no pooling or transfer of chips)")
        if (owner is None and self.require_issued and entry is not None
                and seat not in self.open_seats and (seat, spot) not in self.open_spots):
            return ChipProblem(kind="not_issued", uid=uid, chip=chip,
                               detail=f"chip {tag}{at} is not issued to any entry: a chip from"
                               f" the tray, not entry {entry}'s")
        return None

    def set_open(self, seats: frozenset[int],
                 spots: frozenset[tuple[int, str]] = frozenset()) -> None:
        """The seats where float chips count now (stacks being placed, payouts being paid),
        and the spots where change is being made."""
        if seats != self.open_seats or spots != self.open_spots:
            self.open_seats, self.open_spots = seats, spots
            self.version += 1

    def change(self, entry: str, taken: frozenset[bytes], placed: frozenset[bytes]) -> None:
        """Change made on a spot: the entry's chips ``taken`` go back to the float, the float
        chips ``placed`` (worth the same) are the entry's."""
        for uid in taken:
            if self._owner.get(uid) == entry:
                del self._owner[uid]
        for uid in placed:
            self._owner[uid] = entry
        self.version += 1

    def is_float_chip(self, uid: bytes) -> bool:
        """True for a registered chip of the set in play that nobody holds."""
        chip = self.registry.lookup(uid)
        return (chip is not None and chip.chip_set == self.registry.chip_set
                and uid not in self._owner)

    def stack_of(self, uids: Iterable[bytes]) -> tuple[int, list[str]]:
        """What ``uids`` (the chips on a seat's spots) are worth as a starting stack: the
        value of the float chips among them, and what is wrong with the others."""
        worth, wrong = 0, []
        for uid in sorted(set(uids)):
            chip = self.registry.lookup(uid)
            owner = self._owner.get(uid)
            tag = format_uid(uid)
            if chip is None:
                wrong.append(f"chip {tag} is not in the registry")
            elif chip.chip_set != self.registry.chip_set:
                wrong.append(f"chip {tag} is of chip set {chip.chip_set!r}")
            elif owner is not None:
                wrong.append(f"chip {tag} is issued to entry {owner}, not in the float")
            else:
                worth += chip.value_cents
        return worth, wrong

    def breakdown(self, cents: int, *, besides: Iterable[bytes] = ()) -> dict[int, int]:
        """A suggested starting stack from the float's chips (not those in ``besides``):
        value in cents -> how many; the larger half in the smallest values, so a player can
        wager without change ({}: the float cannot make it)."""
        free: dict[int, int] = {}
        skip = set(besides)
        for uid in self.in_float():
            if uid in skip:
                continue
            chip = self.registry.lookup(uid)
            if chip is not None:
                free[chip.value_cents] = free.get(chip.value_cents, 0) + 1
        return suggest_stack(cents, free)

    # ---- changes ------------------------------------------------------------------------

    def issue(self, entry: str, uids: frozenset[bytes], *, seat: int, stack_cents: int,
              cloned: Iterable[bytes] = ()) -> tuple[bytes, ...]:
        """Issue the chips lying on the seat's spots to ``entry`` as its starting stack: float
        chips (or chips the registry issues to it) worth exactly ``stack_cents``. FloatError
        says what is wrong, and nothing is issued."""
        if self.issued.get(entry):
            raise FloatError(f"entry {entry} already has its starting stack issued"
                             f" ({len(self.issued[entry])} chips)")
        if not uids:
            raise FloatError(f"no chips on seat {seat}'s spots: place the starting stack"
                             f" ({format_rand(stack_cents)}) there, then issue")
        wrong: list[str] = []
        copies = set(cloned)
        for uid in sorted(uids):
            tag = format_uid(uid)
            chip = self.registry.lookup(uid)
            owner = self._owner.get(uid)
            if uid in copies:
                wrong.append(f"chip {tag} is on another spot too")
            elif chip is None:
                wrong.append(f"chip {tag} is not in the registry")
            elif chip.chip_set != self.registry.chip_set:
                wrong.append(f"chip {tag} is of chip set {chip.chip_set!r}")
            elif owner is not None and owner != entry:
                wrong.append(f"chip {tag} is issued to entry {owner}, not in the float")
        if wrong:
            raise FloatError(f"cannot issue seat {seat}'s chips to entry {entry}: "
                             + "; ".join(wrong))
        worth = self.value(uids)
        if worth != stack_cents:
            gap = format_rand(abs(stack_cents - worth))
            fix = f"add {gap}" if worth < stack_cents else f"take {gap} back to the tray"
            raise FloatError(f"the chips on seat {seat}'s spots are worth {format_rand(worth)},"
                             f" the starting stack is {format_rand(stack_cents)}: {fix}")
        chosen = tuple(sorted(uids))
        for uid in chosen:
            self._owner[uid] = entry
        self.issued[entry] = chosen
        self.version += 1
        return chosen

    def paid(self, entry: str | None, before: frozenset[bytes], after: frozenset[bytes]) -> None:
        """A spot's payout is done: the entry's chips that left the spot since settlement go
        back to the float (a loss taken, change made), float chips now on it are the entry's
        (a win paid)."""
        if entry is None:
            return
        self.version += 1
        for uid in before - after:
            if self._owner.get(uid) == entry:
                del self._owner[uid]
        for uid in after:
            chip = self.registry.lookup(uid)
            if (uid not in self._owner and chip is not None
                    and chip.chip_set == self.registry.chip_set):
                self._owner[uid] = entry

    def reconcile(self, entry: str, seat: int, seen: frozenset[bytes]) -> Reconciliation:
        """The entry's chips are back on its seat's spots (``seen``): those it held return to
        the float; the missing stay bound to it (one turning up on another seat is pooling)."""
        held = self.held_by(entry)
        returned = tuple(u for u in held if u in seen)
        missing = tuple(u for u in held if u not in seen)
        foreign = tuple(sorted(u for u in seen
                               if self._owner.get(u) not in (None, entry)))
        for uid in returned:
            del self._owner[uid]
        self.version += 1
        issued = self.issued_to(entry)
        done = Reconciliation(entry_id=entry, seat=seat, issued=issued, held=held,
                              returned=returned, missing=missing, foreign=foreign,
                              issued_cents=self.value(issued), held_cents=self.value(held),
                              returned_cents=self.value(returned),
                              missing_cents=self.value(missing))
        self.reconciled[entry] = done
        return done

    def view(self) -> dict[str, object]:
        """Counts for the table's status."""
        entries: dict[str, int] = {}
        for holder in self._owner.values():
            entries[holder] = entries.get(holder, 0) + 1
        return {"in_float": self._in_play - len(self._owner),
                "held": dict(sorted(entries.items())),
                "reconciled": sorted(self.reconciled)}


_MOST_OF_ONE: Final = 100  # a denomination a stack would need more of is too small to suggest


def suggest_stack(cents: int, free: dict[int, int]) -> dict[int, int]:
    """Chips worth exactly ``cents`` from ``free`` (value -> count): about half the value in
    the smallest chips a stack would need at most 100 of (to wager without change), the rest
    in the fewest chips; {} when the chips cannot make it."""
    values = sorted(v for v, n in free.items() if n > 0)
    if cents <= 0 or not values:
        return {}
    small = next((v for v in values if cents // v <= _MOST_OF_ONE), values[-1])
    take = min(free[small], (cents // 2) // small)
    for first in range(take, -1, -1):
        rest = fewest_chips(cents - first * small,
                       {v: free[v] - (first if v == small else 0) for v in values})
        if rest is not None:
            out = dict(rest)
            if first:
                out[small] = out.get(small, 0) + first
            return dict(sorted(out.items(), reverse=True))
    return {}


def fewest_chips(cents: int, free: Mapping[int, int]) -> dict[int, int] | None:
    """Counts per value adding up to exactly ``cents``, largest values first; or None."""
    values = sorted((v for v, n in free.items() if n > 0), reverse=True)

    def search(i: int, rest: int) -> dict[int, int] | None:
        if rest == 0:
            return {}
        if i == len(values):
            return None
        value = values[i]
        for n in range(min(free[value], rest // value), -1, -1):
            found = search(i + 1, rest - n * value)
            if found is not None:
                return {value: n, **found} if n else found
        return None

    return search(0, cents)
