"""The simulated chip reader's chips: the built-in registry (each simulated seat's entry
R2,000, the dealer's float and a few chips of another chip set) and exact change from a
pool of chip values."""

from __future__ import annotations

from collections.abc import Mapping

from game.chips.float import fewest_chips
from game.chips.registry import Chip, ChipRegistry

__all__ = ["SIM_CHIP_SET", "SIM_FOREIGN_SET", "build_sim_registry", "make_change",
           "sim_seat_entries"]

SIM_CHIP_SET = "showdown-2026"
SIM_FOREIGN_SET = "cash-2019"
# Chips each simulated entry is issued (R2,000) and the dealer's unissued float.
_ENTRY_CHIPS = ((2500, 8), (10_000, 8), (50_000, 2))
_FLOAT_CHIPS = ((2500, 10), (10_000, 10), (50_000, 4))
_FOREIGN_CHIPS = ((2500, 2), (10_000, 2))
_DENOM_CODE = {2500: 1, 10_000: 2, 50_000: 3}


def sim_seat_entries() -> dict[int, str]:
    """The entry ids the built-in registry issues chips to: seat n plays entry "SIM-En"."""
    return {seat: f"SIM-E{seat}" for seat in range(1, 7)}


def _sim_uid(set_code: int, owner: int, value_cents: int, n: int) -> bytes:
    return bytes([0xE0, 0x5D, set_code, owner, _DENOM_CODE[value_cents], 0, 0, n])


def build_sim_registry() -> ChipRegistry:
    """The simulator's chips: R2,000 per seat's entry, a float, and a few chips of another set.

    UIDs read ``E0 5D <set> <seat, 00 float> <denomination 1=R25 2=R100 3=R500> 00 00 <n>``.
    """
    chips: list[Chip] = []
    for seat, entry in sim_seat_entries().items():
        for value, count in _ENTRY_CHIPS:
            chips += [
                Chip(uid=_sim_uid(1, seat, value, n), value_cents=value, chip_set=SIM_CHIP_SET,
                     issued_to=entry)
                for n in range(1, count + 1)
            ]
    for value, count in _FLOAT_CHIPS:
        chips += [
            Chip(uid=_sim_uid(1, 0, value, n), value_cents=value, chip_set=SIM_CHIP_SET)
            for n in range(1, count + 1)
        ]
    for value, count in _FOREIGN_CHIPS:
        chips += [
            Chip(uid=_sim_uid(2, 0, value, n), value_cents=value, chip_set=SIM_FOREIGN_SET)
            for n in range(1, count + 1)
        ]
    # The reader simulator's own chips count float chips for any seat: no table issues their
    # stacks here (`showdown simulate rfid`); a table applies its own `require_issued`.
    return ChipRegistry(chips, chip_set=SIM_CHIP_SET, source="simulators.rfid",
                        require_issued=False)


def make_change(cents: int, available: Mapping[int, int]) -> dict[int, int] | None:
    """Counts per chip value that add up to exactly ``cents``, fewest chips first; or None
    (the float's own search: game.chips.float.fewest_chips)."""
    return fewest_chips(cents, available)
