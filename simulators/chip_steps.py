"""The virtual dealer's chip float steps (promotion rule 19), as a real dealer does them:

- at seating, the entry's starting stack is taken from the tray (float chips only) and placed
  on the seat's Ante spot; the table issues it by itself once its reader reads exactly the
  stack (D346), then it is handed to the player;
- before a hand, a player whose own chips cannot make its wagers gets change on the spot, as
  a table requiring issued chips sees it (D346): its largest chips put down on the Ante and
  read, taken to the tray and read gone, the same value counted out from the tray on the
  Ante (the table binds it to the entry) and picked up;
- after each payout the table verified, the chips that moved are noted the way the table
  binds them (a loss taken goes back to the float, float chips paid are the winner's), so the
  players wager their own chips next;
- at the end of the heat, each finished entry's chips are placed on its seat's spots (at most
  `SPOT_LIMIT` a spot), "chips returned" pressed once the table reads them all, and they go
  back to the tray, read gone before the dealer moves another chip (a tray chip is laid on a
  spot only once the reader has read it gone from every other).

The bindings live on the simulated reader (`RfidReaderSimulator.owners`), so they outlast a
restart of the table daemon the way the chips on a real table do. A simulated reader that
restarted with the daemon (one process) is given back what the table last read on each spot
(`restore_felt`: by the composition root before the reader's first sweep, D405, and
again by `sync_owners` for a reader that is still empty): a restart of the table PC moves no
chip on the felt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from drivers.protocols import TableHandle
from game.chips.float import suggest_stack
from game.wagers.settle import WAGERS
from simulators.felt import ChipTable

__all__ = ["SPOT_LIMIT", "PaidSpots", "change_on_spot", "issue_stacks", "restore_felt",
           "return_chips", "sync_owners"]

SPOT_LIMIT: Final = 100  # chips a spot's report carries at most is 120: room to spare
SpotKey = tuple[int, str]


class VirtualTable(Protocol):
    """What the chip steps use of the virtual dealer's table (`simulators.table_play`'s
    `VirtualTable` is the one): the running table, its simulated reader, the console's
    buttons, a wait for what the table shows, and the counters and faults of the float."""

    table: TableHandle
    stacks_issued: int
    reconciled: dict[str, int]
    pocket_chips: int
    fault_log: list[str]

    @property
    def chips(self) -> ChipTable:
        """The simulated reader(s) the dealer lays chips on."""
        ...

    async def until(self, what: str, check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Wait until the table's status passes ``check`` (``what`` names it in a timeout)."""

    async def console(self, action: str, **request: Any) -> Mapping[str, Any]:
        """Press a console button at the table; its answer."""


def restore_felt(sim: ChipTable, lying: Mapping[SpotKey, frozenset[bytes]]) -> bool:
    """Put on an empty simulated reader the chips the table last read on each spot
    (``lying``): a restart of the table PC moves no chip. True if it placed any; a reader
    already holding chips is left as it is."""
    if sim.table() or not lying:
        return False
    for (seat, spot), uids in sorted(lying.items()):
        sim.place(seat, spot, uids=sorted(uids), clone=True)  # a clone lies twice
    return True


def sync_owners(vt: VirtualTable) -> None:
    """Learn who holds each chip from the table (the virtual players' memory of their chips
    is gone when the process restarts; a real player's chips are still in their hands), and
    put back on an empty simulated reader the chips the table last read on the spots."""
    sim = vt.chips
    restore_felt(sim, vt.table.chips_lying())  # the reader restarted too
    holders = vt.table.chip_holders()
    sim.owners = {c.uid: holders.get(c.uid) for c in sim.registry
                  if c.chip_set == sim.registry.chip_set
                  and (c.uid in holders or c.issued_to is not None)}
    status = vt.table.status()
    sim.seat_entries.update({int(s): str(i["entry_id"])
                             for s, i in status.get("seats", {}).items()})
    sim.seat_entries.update({int(s): str(e) for s, e in
                             ((status.get("chips") or {}).get("waiting_return") or {}).items()})


async def issue_stacks(vt: VirtualTable) -> None:
    """Issue a starting stack to every seated entry that has played no hand and holds no
    chips yet."""
    status = vt.table.status()
    holding = (status.get("chips") or {}).get("held", {})
    sim = vt.chips
    for seat_text, info in sorted(status.get("seats", {}).items()):
        entry = str(info["entry_id"])
        seat = int(seat_text)
        sim.seat_entries[seat] = entry
        if info["hands_played"] or entry in holding:
            continue
        stack = int(info["balance"])
        if any(where.seat == seat for where in sim.table()):  # a restart cut an issue short
            await _gather(vt, seat)  # the dealer takes it back to the tray and starts again
        uids = sim.place(seat, "ante", stack, float_only=True)
        await vt.until(f"the table to issue seat {seat}'s starting stack as the reader reads"
                       " it", _issued(entry))
        for uid in uids:
            sim.owners[uid] = entry
        sim.remove(seat, "ante")
        await vt.until(f"seat {seat}'s stack to be picked up", _seat_clear(seat_text))
        vt.stacks_issued += 1


async def change_on_spot(vt: VirtualTable, seat: int, needs: Sequence[Sequence[int]]) -> int:
    """Change made on the seat's Ante until its entry's own chips can make each list of
    amounts of ``needs`` at once (see the module docstring); how many changes it took."""
    sim = vt.chips
    entry = sim.seat_entries.get(seat)
    made = 0
    while (entry is not None and made < _CHANGES
           and not all(sim.can_make(seat, amounts) for amounts in needs)):
        lying = {u for uids in sim.table().values() for u in uids}
        mine = [u for u in sim.chips_of(entry) if u not in lying and _in_play(sim, u)]
        if not mine:
            break
        worth = {u: sim.registry.lookup(u).value_cents for u in mine}  # type: ignore[union-attr]
        big = max(mine, key=lambda u: (worth[u], u))
        unit = min((a for amounts in needs for a in amounts if a > 0), default=worth[big])
        change = _tray_change(sim, worth[big], lying, unit)
        if not change:
            break  # the tray has no smaller chips for it
        sim.place(seat, "ante", uids=[big])  # the player puts it down
        await vt.until(f"seat {seat}'s chip for change to be read", _on_ante(vt, seat, {big}))
        sim.remove(seat, "ante")  # the dealer takes it to the tray
        await vt.until(f"seat {seat}'s chip to be read gone", _on_ante(vt, seat, set()))
        sim.place(seat, "ante", uids=change)  # and counts the change out there
        await vt.until(f"seat {seat}'s change to be bound to entry {entry}",
                       _bound(vt, change, entry))
        sim.owners[big] = None
        for uid in change:
            sim.owners[uid] = entry
        sim.remove(seat, "ante")  # the player picks it up
        await vt.until(f"seat {seat}'s change to be picked up", _on_ante(vt, seat, set()))
        made += 1
    return made


_CHANGES: Final = 8  # changes a player asks for before a hand, at most
_CHANGE_CHIPS: Final = 50  # chips of one value counted out as change, at most


def _in_play(sim: ChipTable, uid: bytes) -> bool:
    chip = sim.registry.lookup(uid)
    return chip is not None and chip.chip_set == sim.registry.chip_set


def _tray_change(sim: ChipTable, cents: int, lying: set[bytes], unit: int) -> list[bytes]:
    """Tray chips worth ``cents`` in smaller chips, none lying on the felt: in chips no bigger
    than ``unit`` (the smallest wager) where the tray can, else about half in the smallest a
    stack would need at most 100 of; [] when the tray cannot make it."""
    free: dict[int, list[bytes]] = {}
    for chip in sim.registry:
        if (chip.chip_set == sim.registry.chip_set and chip.uid not in lying
                and sim.owner_of(chip.uid) is None and chip.value_cents < cents):
            free.setdefault(chip.value_cents, []).append(chip.uid)
    small = {v: len(u) for v, u in free.items() if v <= unit}
    counts = suggest_stack(cents, {max(small): small[max(small)]}) if small else {}
    if not counts or sum(counts.values()) > _CHANGE_CHIPS:  # a spot's reader reads so many
        counts = suggest_stack(cents, {v: len(u) for v, u in free.items()})
    return [uid for value, n in counts.items() for uid in free[value][:n]]


def _bound(vt: VirtualTable, uids: list[bytes], entry: str) -> Check:
    return lambda _s: all(vt.table.chip_holders().get(u) == entry for u in uids)


def _on_ante(vt: VirtualTable, seat: int, uids: set[bytes]) -> Check:
    return lambda _s: set(vt.table.chips_lying().get((seat, "ante"), frozenset())) == uids


class PaidSpots:
    """The spots of one payout: what they held at settlement, to note what the payout moved."""

    def __init__(self, sim: ChipTable, spots: list[Mapping[str, Any]],
                 holders: Callable[[], Mapping[bytes, str]]) -> None:
        self.sim = sim
        self.holders = holders
        self.before: dict[SpotKey, frozenset[bytes]] = {
            (int(s["seat"]), str(s["spot"])): sim.chips_on(int(s["seat"]), str(s["spot"]))
            for s in spots}

    def verified(self) -> None:
        """The table verified (or a supervisor overrode) the payout: every chip is now whose
        the table says (the dealer hands each player their chips; a loss taken is the
        float's again, float chips paid are the winner's). Worked out here instead, a rule
        the table applies otherwise (change made on a winning spot; wagers a restart took
        off the felt before the payout) would leave a player wagering another's chips."""
        sim = self.sim
        bound = self.holders()
        touched = set(sim.owners) | set(bound)
        for (seat, spot), before in self.before.items():
            touched |= before | sim.chips_on(seat, spot)
        for uid in touched:
            chip = sim.registry.lookup(uid)
            if chip is not None and chip.chip_set == sim.registry.chip_set:
                sim.owners[uid] = bound.get(uid)


async def return_chips(vt: VirtualTable) -> None:
    """Every entry whose chips the table waits for gives them back: placed on its seat's
    spots, read, "chips returned", then into the tray, and read gone from the spots."""
    sim = vt.chips
    waiting = (vt.table.status().get("chips") or {}).get("waiting_return", {})
    for seat_text, entry in sorted(waiting.items()):
        seat = int(seat_text)
        # The dealer gathers what lies on the seat, and the reader sees it gone, before the
        # chips are laid out again: moved within one sweep, a chip would be read on its new
        # spot before its old one was read empty (a chip_clone alert for nothing).
        await _gather(vt, seat)
        lying = {u for uids in sim.table().values() for u in uids}
        uids = [uid for uid in sim.chips_of(entry) if uid not in lying]
        if vt.pocket_chips and uids:  # a fault: the player keeps some chips
            kept, uids = uids[:vt.pocket_chips], uids[vt.pocket_chips:]
            vt.pocket_chips = 0
            vt.fault_log.append(f"seat {seat}: entry {entry} kept {len(kept)} chips"
                                " instead of returning them")
        for i, spot in enumerate(WAGERS):
            part = uids[i * SPOT_LIMIT:(i + 1) * SPOT_LIMIT]
            if part:
                sim.place(seat, spot, uids=part)
        if len(uids) > SPOT_LIMIT * len(WAGERS):
            vt.fault_log.append(f"seat {seat}: entry {entry} holds {len(uids)} chips, more"
                                " than its spots can carry: the rest stay off the reader")
        await vt.until(f"the reader to see entry {entry}'s {len(uids)} chips on seat {seat}",
                       _on_seat(seat_text, min(len(uids), SPOT_LIMIT * len(WAGERS))))
        answer = await vt.console("return_chips", seat=seat)
        detail = answer.get("detail") or {}
        vt.reconciled[entry] = int(detail.get("missing", 0))
        for uid in uids:
            sim.owners[uid] = None
        # Into the tray, and read gone before anything else moves: these chips are the
        # float's again, and the next heat's first stack may take one of them; laid on seat 1
        # while the reader still read it here, it would be on two spots at once (a chip_clone
        # alert, and a stack never issued: the table issues a stack on its seat's own read).
        await _gather(vt, seat)
        sim.seat_entries.pop(seat, None)


Check = Callable[[Mapping[str, Any]], bool]


def _issued(entry: str) -> Check:
    return lambda status: entry in ((status.get("chips") or {}).get("held") or {})


async def _gather(vt: VirtualTable, seat: int) -> None:
    """Take every chip off the seat's spots and wait until the table has read them gone."""
    vt.chips.clear_seat(seat)
    await vt.until(f"seat {seat}'s spots to be read clear",
                   lambda _status: all(s != seat for s, _spot in vt.table.chips_lying()))


def _seat_clear(seat: str) -> Check:
    return lambda status: not (status.get("spots") or {}).get(seat)


def _on_seat(seat: str, count: int) -> Check:
    return lambda status: (status.get("chips") or {}).get("on_seats", {}).get(seat) == count
