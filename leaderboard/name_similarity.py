"""How alike two names are, as people write them (issue 33): the same person may drop or add
a middle name, use a short or pet form (Johan for Johannes), join or split a surname's
particles ("Vandermerwe", "van der Merwe"), give one part of a double-barrelled surname, or be
written with a spelling or phonetic variant ("Mokwena", "Thandie").

`name_parts` is a name's comparable form (leaderboard.name_match's normal form in written
order, particles joined to their surname); `compare` pairs the parts of two names and says how
much of each name the pairs cover; `blocking_keys` are the keys under which a list row is
stored so that a check reads only rows that share one (D368). Whether a comparison is a
possible match depends on the birth dates and the house's thresholds: leaderboard.eligibility.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

import jellyfish
from rapidfuzz.distance import JaroWinkler, Levenshtein

from leaderboard.name_match import ordered_tokens
from leaderboard.name_variants import PARTICLES, are_variants, particle_prefixes, variant_groups

__all__ = ["PartKind", "PartPair", "Similarity", "blocking_keys", "compare", "name_parts",
           "needed_parts", "query_keys"]

PartKind = Literal["same", "initial", "pet form", "particles", "spelling", "sounds alike"]

# How much one pair of parts counts (a part's own weight; the house's thresholds apply to
# the share of a name the pairs cover, leaderboard.eligibility).
_WEIGHT: Final[dict[PartKind, float]] = {
    "same": 1.0, "particles": 0.95, "pet form": 0.9, "spelling": 0.9, "sounds alike": 0.9,
    "initial": 0.8,
}
_SOUNDS_ALIKE_JW: Final = 0.80  # one shared phonetic code counts only for names this alike
_MAX_PARTS: Final = 8  # longer names are compared on their first eight parts
_COMMA: Final = ","


@dataclass(frozen=True, slots=True)
class PartPair:
    """One part of each name paired: how (``kind``) and how much it counts (``weight``)."""

    left: str
    right: str
    kind: PartKind
    weight: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Similarity:
    """Two names' parts paired one to one: ``cover`` is the weight of the pairs over the
    shorter name's parts (a dropped middle name costs nothing), ``whole`` over the longer's."""

    pairs: tuple[PartPair, ...]
    left_parts: int
    right_parts: int

    @property
    def cover(self) -> float:
        """The pairs' weight over the parts of the shorter name (0 to 1)."""
        shorter = min(self.left_parts, self.right_parts)
        return sum(p.weight for p in self.pairs) / shorter if shorter else 0.0

    @property
    def whole(self) -> float:
        """The pairs' weight over the parts of the longer name (0 to 1)."""
        longer = max(self.left_parts, self.right_parts)
        return sum(p.weight for p in self.pairs) / longer if longer else 0.0

    @property
    def full_name_in_common(self) -> bool:
        """Whether a written-out name (not an initial) pairs with one on the other side:
        initials alone ("T M") would match half the floor."""
        return any(p.kind != "initial" for p in self.pairs)

    @property
    def enough_parts(self) -> bool:
        """Whether at least two parts pair (one when the right-hand name, the list's, has
        only one part): a one-word name at the desk never matches on a given name alone."""
        return len(self.pairs) >= needed_parts(self.right_parts)

    @property
    def identical(self) -> bool:
        """Whether every part pairs with the same part (accents, case, order, punctuation
        and particles aside)."""
        return (self.left_parts == self.right_parts == len(self.pairs)
                and all(p.kind == "same" for p in self.pairs))

    def kinds(self) -> tuple[PartKind, ...]:
        """The kinds of pairing other than "same", each once, in a fixed order."""
        found = {p.kind for p in self.pairs}
        return tuple(k for k in _WEIGHT if k in found and k != "same")


@lru_cache(maxsize=65536)
def name_parts(text: str) -> tuple[str, ...]:
    """A name's comparable parts in written order: normal-form tokens ("Surname, Given"
    read as "Given Surname"), a run of surname particles joined to the word after it
    ("van der Merwe" -> "vandermerwe"); at most eight parts."""
    if _COMMA in text:
        surname, _, given = text.partition(_COMMA)
        text = f"{given} {surname}"
    parts: list[str] = []
    run = ""
    for token in ordered_tokens(text):
        if token in PARTICLES:
            run += token
            continue
        parts.append(run + token)
        run = ""
    if run:
        parts.append(run)  # particles with nothing after them stay a part
    return tuple(parts[:_MAX_PARTS])


@lru_cache(maxsize=65536)
def _codes(part: str) -> tuple[str, str]:
    return jellyfish.metaphone(part), jellyfish.nysiis(part)


def _without_particles(longer: str, shorter: str) -> bool:
    return (len(shorter) >= 3 and longer.endswith(shorter)
            and longer[: -len(shorter)] in particle_prefixes())


@lru_cache(maxsize=262144)  # common names meet again and again
def _pair_kind(a: str, b: str) -> PartKind | None:
    """How two parts may stand for each other, or None."""
    if a == b:
        return "same"
    if len(a) == 1 or len(b) == 1:
        return "initial" if a[0] == b[0] else None
    if _without_particles(a, b) or _without_particles(b, a):
        return "particles"
    if are_variants(a, b):
        return "pet form"
    shortest = min(len(a), len(b))
    allowed = 2 if shortest >= 8 else 1 if max(len(a), len(b)) >= 3 else 0
    if allowed and Levenshtein.distance(a, b, score_cutoff=allowed) <= allowed:
        return "spelling"
    same_codes = [x == y for x, y in zip(_codes(a), _codes(b), strict=True)]
    if all(same_codes) or (any(same_codes)
                           and JaroWinkler.similarity(a, b) >= _SOUNDS_ALIKE_JW):
        return "sounds alike"
    return None


def compare(left: str, right: str) -> Similarity:
    """Pair the parts of two names one to one, the best pairs first (ties: written order);
    `right` is the list's name."""
    a, b = name_parts(left), name_parts(right)
    candidates: list[tuple[float, int, int, PartKind]] = []
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            kind = _pair_kind(x, y)
            if kind is not None:
                candidates.append((-_WEIGHT[kind], i, j, kind))
    candidates.sort()
    used_a: set[int] = set()
    used_b: set[int] = set()
    pairs: list[PartPair] = []
    for weight, i, j, kind in candidates:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        pairs.append(PartPair(a[i], b[j], kind, -weight))
    return Similarity(pairs=tuple(pairs), left_parts=len(a), right_parts=len(b))


def _part_keys(part: str, lengths: tuple[int, ...] = (0,)) -> set[str]:
    """A written-out part's keys: its form, its codes, its pet-form groups, its surname
    without particles, and its first and last letters with its length (two letters up to
    five, three from five on: one letter changed, added or dropped keeps one of them; a query
    asks the lengths one shorter and one longer too, `lengths`); a part of three letters or
    fewer also less each of its letters."""
    metaphone, nysiis = _codes(part)
    keys = {f"t:{part}", f"m:{metaphone}", f"y:{nysiis}"}
    keys |= {f"p:{g}" for g in variant_groups(part)}
    prefixes = particle_prefixes()
    keys |= {f"t:{part[n:]}" for n in range(1, len(part) - 2) if part[:n] in prefixes}
    for size in (2, 3):
        if (size == 2 and len(part) <= 5) or (size == 3 and len(part) >= 5):
            for change in lengths:
                length = len(part) + change
                keys |= {f"a:{part[:size]}:{length}", f"z:{part[-size:]}:{length}"}
    if len(part) <= 3:  # "Tau" and "Tzu" keep neither end: the part less one letter
        keys |= {f"d:{part}"} | {f"d:{part[:n]}{part[n + 1:]}" for n in range(len(part))}
    return keys


def blocking_keys(name: str) -> tuple[tuple[int, str], ...]:
    """The (part number, key) pairs a list row is stored under: each written-out part's keys
    (`_part_keys`) and its first letter (for an initial at the desk); an initial's letter. Two
    names that may match share keys on at least `needed_parts` of their parts (D368)."""
    keys: set[tuple[int, str]] = set()
    for n, part in enumerate(name_parts(name)):
        if len(part) == 1:
            keys.add((n, f"i:{part}"))
            continue
        keys.add((n, f"f:{part[0]}"))
        keys |= {(n, key) for key in _part_keys(part)}
    return tuple(sorted(keys))


def query_keys(name: str) -> frozenset[str]:
    """The keys to look a name up by: each written-out part's keys and its first letter as a
    list's initial; an initial's letter as any listed part's first letter."""
    keys: set[str] = set()
    for part in name_parts(name):
        if len(part) == 1:
            keys.add(f"f:{part}")
            continue
        keys.add(f"i:{part[0]}")
        keys |= _part_keys(part, (-1, 0, 1))
    return frozenset(keys)


def needed_parts(listed_parts: int) -> int:
    """How many parts of a list row must pair with (and share keys with) a name: two, or
    one when the list gives a single name (`Similarity.enough_parts`)."""
    return min(2, listed_parts)
