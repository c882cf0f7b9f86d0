"""Which written forms of a name stand for each other: surname particles ("van der Merwe")
and given names' short, pet and spelling forms (Bill for William, Johan for Johannes).

Both are data, not code (D365, D366): the English forms come from the maintained nickname
dataset (PyPI ``nicknames``), the South African forms it lacks from
``leaderboard/name_data/given_name_variants.csv``, and the particles from
``leaderboard/name_data/surname_particles.txt``. Names here are tokens of the normal form
(leaderboard.name_match: lowercase, no accents).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache, lru_cache
from importlib import resources
from typing import Final

from nicknames import NickNamer

__all__ = ["PARTICLES", "are_variants", "particle_prefixes", "variant_groups"]

_DATA: Final = "name_data"


def _data_lines(name: str) -> list[str]:
    """The non-blank, non-comment lines of one of the package's name data files."""
    text = resources.files("leaderboard").joinpath(_DATA, name).read_text(encoding="utf-8")
    return [s for s in (line.strip() for line in text.splitlines())
            if s and not s.startswith("#")]


PARTICLES: Final[frozenset[str]] = frozenset(_data_lines("surname_particles.txt"))


@cache
def particle_prefixes() -> frozenset[str]:
    """Every run of one to three particles written as one word ("van", "vander", "dela"):
    what may stand before a surname written without its particles."""
    runs = set(PARTICLES)
    for _ in range(2):
        runs |= {a + b for a in runs for b in PARTICLES}
    return frozenset(runs)


@cache
def _local_groups() -> dict[str, frozenset[str]]:
    """Each South African form's group ids (the first name of each line of the data file)."""
    groups: dict[str, set[str]] = defaultdict(set)
    for line in _data_lines("given_name_variants.csv"):
        names = [n.strip() for n in line.split(",") if n.strip()]
        for name in names:
            groups[name].add(names[0])
    return {k: frozenset(v) for k, v in groups.items()}


@cache
def _nicknamer() -> NickNamer:
    return NickNamer()


@lru_cache(maxsize=65536)
def variant_groups(token: str) -> frozenset[str]:
    """The groups a given name belongs to: two names that share a group may stand for each
    other (its English canonical names, itself when it has nicknames, its local groups)."""
    namer = _nicknamer()
    groups = {f"en:{c}" for c in namer.canonicals_of(token)}
    if namer.nicknames_of(token):
        groups.add(f"en:{token}")
    groups |= {f"za:{g}" for g in _local_groups().get(token, ())}
    return frozenset(groups)


def are_variants(first: str, second: str) -> bool:
    """Whether two different given names are short, pet or spelling forms of each other."""
    return first != second and bool(variant_groups(first) & variant_groups(second))
