"""`dispute replay --devices`: the recorded device readings through the simulators and the
real drivers, before the replay (issue 14).

The cards the journal recorded are loaded into a `ShoeSimulator` on a pseudo-terminal and read
by the real serial shoe driver (`SerialCardReader`); every chip read is laid on the same spot
of an `RfidReaderSimulator` and read by the real USB RFID driver (`UsbChipReader`) through
the simulator's pyusb backend. What the drivers report is compared with the recorded readings,
one by one, and the replay then runs from the drivers' readings. docs/disputes.md.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar

from drivers.readings import SPOTS, CardReading, ChipInventory
from drivers.rfid import UsbChipReader
from drivers.rfid_settings import UsbReaderSettings
from drivers.shoe import SerialCardReader
from game.chips.registry import Chip, ChipRegistry, format_uid, parse_uid
from game.errors import GameError
from game.hand.deal import MAX_SEATS
from game.poker.cards import parse_card
from runtime.backoff import Backoff
from runtime.errors import Unavailable
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator

__all__ = ["through_devices"]

_T = TypeVar("_T")

_PACKET = 16  # cards dealt before waiting for the driver's readings
WAIT = 20.0  # seconds before a device is declared hung (a safety net, not a measurement)
# Every sweep reported (not only changes): a spot read twice alike is read back twice.
_RFID = UsbReaderSettings(report_interval_ms=20, heartbeat_interval_ms=25, watchdog_ms=0,
                          stall_timeout=2.0, changes_only=False)


async def _shoe(cards: Sequence[str]) -> list[str]:
    """The cards as the real shoe driver reads them off the simulated shoe."""
    if not cards:
        return []
    with ShoeSimulator(seed=0, cards=" ".join(cards), heartbeat_interval=0.05, rto=0.05,
                       rto_max=0.2) as sim:
        reader = SerialCardReader(lambda: sim.path or "", name="replay-shoe",
                                  backoff=Backoff(initial=0.01, maximum=0.05,
                                                  rng=random.Random(7)))
        seen: list[str] = []
        async with reader:
            it = aiter(reader)
            while len(seen) < len(cards):  # a packet at a time: the shoe's queue is finite
                sim.deal(min(_PACKET, len(cards) - len(seen)))
                want = min(len(seen) + _PACKET, len(cards))
                async with asyncio.timeout(WAIT):
                    while len(seen) < want:
                        item = await anext(it)
                        if isinstance(item, CardReading):
                            seen.append(str(item.card))
        return seen


async def _rfid(reads: Sequence[tuple[int, str, list[str]]],
                registry: ChipRegistry) -> list[list[str]]:
    """Each recorded spot inventory laid on the simulated reader, as the real driver reports
    it back."""
    if not reads:
        return []
    sim = RfidReaderSimulator(registry=registry, seat_entries={})
    reader = UsbChipReader(replace(_RFID), backend=sim.backend, rng=random.Random(5))
    got: list[list[str]] = []
    async with reader:
        it = aiter(reader)
        for seat, spot, uids in reads:
            want = frozenset(parse_uid(u) for u in uids)
            sim.remove(seat, spot)
            for where, lying in sim.table().items():  # a chip moved here from another spot
                if lying & want:
                    sim.remove(where.seat, where.spot, lying & want)
            sim.place(seat, spot, uids=sorted(want))
            async with asyncio.timeout(WAIT):
                while True:
                    item = await anext(it)
                    if (isinstance(item, ChipInventory) and item.spot.seat == seat
                            and item.spot.spot == spot and item.uids == want):
                        got.append(sorted(format_uid(u) for u in item.uids))
                        break
    return got


def _readable(payload: Mapping[str, Any]) -> bool:
    if payload.get("source", "shoe") != "shoe":
        return False
    try:
        parse_card(str(payload.get("card")))
    except GameError:
        return False
    return True


def _chips_readable(payload: Mapping[str, Any]) -> bool:
    try:
        seat, spot = int(payload["seat"]), str(payload["spot"])
        [parse_uid(str(u)) for u in payload["uids"]]
    except (KeyError, TypeError, ValueError):
        return False
    return 1 <= seat <= MAX_SEATS and spot in SPOTS


def _run(work: Coroutine[Any, Any, _T]) -> _T:
    """Run the device work on an event loop of its own thread (the caller may have one)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay-devices") as pool:
        return pool.submit(asyncio.run, work).result()


def _registry(context: Mapping[str, Any]) -> ChipRegistry:
    chips = [Chip(uid=parse_uid(str(c["uid_hex"])), value_cents=int(c["value_cents"]),
                  chip_set=str(c["chip_set"]), issued_to=c.get("issued_to"))
             for c in context["chips"]]
    return ChipRegistry(chips, chip_set=str(context["chip_set"]), source="context.chips")


def through_devices(records: Sequence[Mapping[str, Any]], extra: Sequence[Mapping[str, Any]],
                    context: Mapping[str, Any]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The records with every card and chip reading replaced by what the drivers reported,
    and one step per device saying what matched."""
    every = sorted([*records, *extra], key=lambda r: int(r["seq"]))
    # Shoe readings only: a card keyed by hand, or a record no shoe could have sent (the core
    # refuses it on replay as it did then), stays as recorded.
    cards = [r for r in every if r["kind"] == "card" and _readable(r.get("payload") or {})]
    chips = [r for r in every if r["kind"] == "chips" and _chips_readable(r.get("payload") or {})]
    wanted = [(int(r["payload"]["seat"]), str(r["payload"]["spot"]),
               [str(u).upper() for u in r["payload"]["uids"]]) for r in chips]
    try:
        read_cards = _run(_shoe([str(r["payload"]["card"]) for r in cards]))
    except TimeoutError as e:
        raise Unavailable("--devices", "shoe", f"the serial shoe driver did not report all "
                          f"{len(cards)} recorded cards within {WAIT:.0f} s") from e
    try:
        read_chips = _run(_rfid(wanted, _registry(context)))
    except TimeoutError as e:
        raise Unavailable("--devices", "rfid", f"the USB RFID driver did not report all "
                          f"{len(chips)} recorded spot inventories within {WAIT:.0f} s") from e
    new: dict[int, dict[str, Any]] = {}
    for r, card in zip(cards, read_cards, strict=True):
        new[int(r["seq"])] = {**r, "payload": {**r["payload"], "card": card}}
    for r, uids in zip(chips, read_chips, strict=True):
        new[int(r["seq"])] = {**r, "payload": {**r["payload"], "uids": uids}}
    card_ok = read_cards == [str(r["payload"]["card"]) for r in cards]
    chip_ok = read_chips == [sorted(u) for _, _, u in wanted]
    steps = [
        {"device": "shoe", "match": card_ok, "readings": len(cards),
         "each": [{"seq": int(r["seq"]), "recorded": r["payload"]["card"], "driver": c}
                  for r, c in zip(cards, read_cards, strict=True)],
         "what": f"{len(cards)} card read(s) through ShoeSimulator (pty) -> SerialCardReader: "
                 + ("each card as recorded" if card_ok else "the driver read other cards")},
        {"device": "rfid", "match": chip_ok, "readings": len(chips),
         "each": [{"seq": int(r["seq"]), "spot": f"seat {w[0]} {w[1]}", "recorded": sorted(w[2]),
                   "driver": u} for r, w, u in zip(chips, wanted, read_chips, strict=True)],
         "what": f"{len(chips)} spot inventory(ies) through RfidReaderSimulator (pyusb "
                 "backend) -> UsbChipReader: "
                 + ("each spot's chips as recorded" if chip_ok else "the driver saw other chips")},
    ]

    def swap(rs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [new.get(int(r["seq"]), dict(r)) for r in rs]

    return swap(records), swap(extra), steps
