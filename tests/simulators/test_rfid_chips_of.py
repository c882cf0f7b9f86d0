"""RfidReaderSimulator.chips_of: the chips an entry holds, as `owner_of` says, without a
scan of the whole registry."""

from __future__ import annotations

from game.chips.registry import Chip, ChipRegistry
from simulators.rfid import RfidReaderSimulator


def _chip(n: int, *, chip_set: str = "main", issued_to: str | None = None) -> Chip:
    return Chip(uid=bytes([0xE0, 0x04, 0, 0, 0, 0, 0, n]), value_cents=2500,
                chip_set=chip_set, issued_to=issued_to)


def test_chips_of_agrees_with_owner_of_over_the_whole_registry() -> None:
    chips = [_chip(n, issued_to="e1" if n < 4 else "e2" if n < 8 else None)
             for n in range(12)] + [_chip(40, chip_set="marker", issued_to="e1")]
    registry = ChipRegistry(chips, chip_set="main")
    sim = RfidReaderSimulator(registry=registry)
    uid = [c.uid for c in chips]
    # e1 loses a chip to the float and wins one of e2's and one of the float's; an unknown
    # UID bound to e1 is no registered chip
    sim.owners = {uid[0]: None, uid[5]: "e1", uid[9]: "e1", b"\x00unknown": "e1"}
    for entry in ("e1", "e2", "nobody"):
        assert sim.chips_of(entry) == sorted(
            c.uid for c in sim.registry if sim.owner_of(c.uid) == entry)
    assert sim.chips_of("e1") == sorted([uid[1], uid[2], uid[3], uid[5], uid[9], uid[12]])
    assert registry.issued_to("e1") == tuple(chips[:4])
    assert registry.issued_any("e1") == (*chips[:4], chips[12])
    assert [c.uid for c in registry] == sorted(uid)
