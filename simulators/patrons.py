"""Simulated patrons for a demo floor: seeded names, rewards-card numbers and birth dates.

Made-up people only (no real ID numbers: rewards cards ``SIM-`` followed by digits). One
walk-in is 17, so the demo shows the desk refusing an under-age registration (rule 1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["SimPatron", "make_patrons"]

_FIRST = ("Thandi", "Pieter", "Ayesha", "Sipho", "Naledi", "Johan", "Priya", "Lerato",
          "Kagiso", "Anika", "Bongani", "Zanele", "Riaan", "Fatima", "Tumelo", "Chantal",
          "Mandla", "Leila", "Dineo", "Werner")
_LAST = ("Mokoena", "van der Merwe", "Patel", "Dlamini", "Nkosi", "Botha", "Naidoo",
         "Khumalo", "Molefe", "Pretorius", "Ndlovu", "Adams", "Smit", "Mthembu", "Pillay",
         "Jacobs", "Zulu", "Fourie", "Mahlangu", "Hendricks")


@dataclass(frozen=True, slots=True, kw_only=True)
class SimPatron:
    """One simulated person at the registration desk."""

    name: str
    id_kind: str
    id_number: str
    birth_date: date


def make_patrons(count: int, *, rng: random.Random, today: date,
                 under_age: int = 1) -> list[SimPatron]:
    """`count` adult patrons (aged 19 to 70) then `under_age` 17-year-old walk-ins."""
    if count < 0 or under_age < 0 or count + under_age > len(_FIRST) * len(_LAST):
        raise ValueError(f"cannot make {count} + {under_age} distinct simulated patrons")
    names = rng.sample([f"{f} {s}" for f in _FIRST for s in _LAST], count + under_age)
    people: list[SimPatron] = []
    for i, name in enumerate(names):
        years = 17 if i >= count else rng.randint(19, 70)
        born = today - timedelta(days=round(years * 365.25) + rng.randint(1, 300))
        people.append(SimPatron(name=name, id_kind="rewards_card",
                                id_number=f"6099{rng.randrange(10**9, 10**10)}",  # D329
                                birth_date=born))
    return people
