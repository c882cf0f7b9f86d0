"""Generated people for measuring the list checks' name matching (issue 33): a listed
population, for each listed person a registration in every variant kind that applies (same
birth date), and a clean population of unlisted people with other names and random birth
dates. Seeded: one seed, the same people. Names come from tests/leaderboard/data/names/.

The variants are made here, independently of the matcher: pet forms from the nickname
dataset's own file and the South African variants file read as plain CSV, spelling changes
as one random letter, phonetic variants by sound-alike rewrites.
"""

from __future__ import annotations

import csv
import random
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from importlib import resources
from pathlib import Path
from typing import Final

__all__ = ["VARIANT_KINDS", "Person", "Registration", "clean_population", "listed_population",
           "variants"]

_DATA: Final = Path(__file__).parent / "data" / "names"
_REPO: Final = Path(__file__).resolve().parents[2]
VARIANT_KINDS: Final = (
    "dropped middle name", "added middle name", "pet form", "particles joined or split",
    "surname part", "spelling", "phonetic", "accents, case and order",
)
# Sound-alike spellings (written in the generator, not the matcher): one rewrite per variant.
_SOUNDS: Final = (("ph", "f"), ("f", "ph"), ("ck", "k"), ("c", "k"), ("k", "c"), ("ee", "i"),
                  ("oo", "u"), ("ou", "u"), ("y", "i"), ("ie", "y"), ("ai", "ay"),
                  ("ay", "ai"), ("ei", "y"), ("sh", "sch"), ("z", "s"), ("s", "z"), ("w", "v"),
                  ("v", "w"), ("ll", "l"), ("mm", "m"), ("dd", "d"), ("tt", "t"), ("h", ""))
_PARTICLE_WORDS: Final = frozenset(
    line.strip() for line in (_REPO / "leaderboard" / "name_data" / "surname_particles.txt")
    .read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#"))
_ACCENTS: Final = {"a": "á", "e": "é", "i": "í", "o": "ö", "u": "ü"}
_FIRST_BORN: Final = date(1945, 1, 1)
_BORN_DAYS: Final = 365 * 60


@dataclass(frozen=True, slots=True)
class Person:
    """A generated person: given name, middle names, surname (as the list writes it), born."""

    first: str
    middles: tuple[str, ...]
    surname: str
    born: date | None

    @property
    def name(self) -> str:
        """The name in the usual order."""
        return " ".join((self.first, *self.middles, self.surname))


@dataclass(frozen=True, slots=True)
class Registration:
    """A name and birth date given at the desk; `listed` is the listed person's index, or
    None for a clean (unlisted) person."""

    kind: str
    name: str
    born: date
    listed: int | None


def _lines(name: str) -> list[str]:
    text = (_DATA / name).read_text(encoding="utf-8")
    return list(dict.fromkeys(s.strip() for s in text.splitlines()
                              if s.strip() and not s.startswith("#")))


FIRSTS: Final = tuple(_lines("first_names.txt"))
SURNAMES: Final = tuple(_lines("surnames.txt"))


def _pet_forms() -> dict[str, set[str]]:
    """Name -> other forms, from the nickname dataset's CSV and the local variants file."""
    forms: dict[str, set[str]] = defaultdict(set)
    dataset = resources.files("nicknames").joinpath("names.csv").read_text(encoding="utf-8")
    for row in csv.reader(dataset.splitlines()):
        if len(row) >= 3 and row[1] == "has_nickname":
            forms[row[0]].add(row[2])
            forms[row[2]].add(row[0])
    local = (_REPO / "leaderboard" / "name_data" / "given_name_variants.csv").read_text(
        encoding="utf-8")
    for line in local.splitlines():
        if line.strip() and not line.startswith("#"):
            group = [n.strip() for n in line.split(",") if n.strip()]
            for n in group:
                forms[n] |= set(group) - {n}
    return forms


PET_FORMS: Final = _pet_forms()


def _born(rng: random.Random) -> date:
    return _FIRST_BORN + timedelta(days=rng.randrange(_BORN_DAYS))


def _title(word: str) -> str:
    return word[:1].upper() + word[1:]


def listed_population(rng: random.Random, size: int, *, undated: float = 0.0) -> list[Person]:
    """`size` listed people: most with a middle name, some with two, some double-barrelled
    surnames, some particle surnames written joined; a share `undated` without a birth
    date."""
    people: list[Person] = []
    for _ in range(size):
        middles = tuple(rng.sample(FIRSTS, rng.choice((0, 1, 1, 1, 1, 1, 1, 2))))
        surname = rng.choice(SURNAMES)
        if rng.random() < 0.15:
            other = rng.choice(SURNAMES)
            if other != surname and " " not in surname + other:
                surname = f"{surname}-{other}"
        if _has_particles(surname) and rng.random() < 0.2:
            surname = _join_particles(surname)
        people.append(Person(rng.choice(FIRSTS), middles, surname,
                             None if rng.random() < undated else _born(rng)))
    return people


def _has_particles(surname: str) -> bool:
    words = surname.split()
    return len(words) > 1 and any(w in _PARTICLE_WORDS for w in words)


def _join_particles(surname: str) -> str:
    """"van der Merwe" -> "Vandermerwe"; "Janse van Rensburg" -> "Janse Vanrensburg"."""
    out: list[str] = []
    run = ""
    for word in surname.split():
        if word in _PARTICLE_WORDS:
            run += word
        else:
            out.append(_title((run + word).lower()) if run else word)
            run = ""
    return " ".join(out)


def _split_particles(surname: str) -> str | None:
    """"Vandermerwe" -> "van der Merwe" (the longest particles first); None: no particle."""
    words = surname.split()
    for n, word in enumerate(words):
        rest, found = word.lower(), []
        while True:
            particle = next((p for p in sorted(_PARTICLE_WORDS, key=len, reverse=True)
                             if rest.startswith(p) and len(rest) - len(p) >= 3), None)
            if particle is None:
                break
            found.append(particle)
            rest = rest[len(particle):]
        if found:
            return " ".join([*words[:n], *found, _title(rest), *words[n + 1:]])
    return None


def _respell(rng: random.Random, word: str) -> str:
    """One letter changed, added or removed (a letter, not the first)."""
    i = rng.choice([n for n in range(1, len(word)) if word[n].isalpha()])
    letter = rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != word[i].lower()])
    how = rng.choice(("change", "add", "drop"))
    if how == "change":
        return word[:i] + letter + word[i + 1:]
    if how == "add":
        return word[:i] + letter + word[i:]
    return word[:i] + word[i + 1:]


def _sound_alike(rng: random.Random, word: str) -> str | None:
    options = [(a, b) for a, b in _SOUNDS if a in word[1:].lower()]
    if not options:
        return None
    a, b = rng.choice(options)
    at = word.lower().index(a, 1)
    return word[:at] + b + word[at + len(a):]


def _accented(rng: random.Random, word: str) -> str:
    spots = [i for i, c in enumerate(word) if c in _ACCENTS]
    if not spots:
        return word
    i = rng.choice(spots)
    return word[:i] + _ACCENTS[word[i]] + word[i + 1:]


def _surname_word(person: Person) -> tuple[str, str]:
    """The surname's last word (the one a spelling change touches), with what precedes it."""
    head, _, last = person.surname.rpartition(" ")
    return (head + " " if head else ""), last


def variants(rng: random.Random, index: int, person: Person) -> list[Registration]:
    """One registration of `person` per variant kind that applies, with the listed birth
    date (a random one where the list gives none)."""
    born = person.born or _born(rng)
    first, middles, surname = person.first, person.middles, person.surname
    out: dict[str, str] = {}
    if middles:
        out["dropped middle name"] = f"{first} {surname}"
    extra = rng.choice([n for n in FIRSTS if n not in (first, *middles)])
    out["added middle name"] = " ".join((first, *middles, extra, surname))
    pets = sorted(PET_FORMS.get(first.lower(), ()))
    if pets:
        out["pet form"] = " ".join((_title(rng.choice(pets)), *middles, surname))
    if _has_particles(surname):
        out["particles joined or split"] = " ".join((first, *middles, _join_particles(surname)))
    elif (split := _split_particles(surname)) is not None:
        out["particles joined or split"] = " ".join((first, *middles, split))
    if "-" in surname:
        out["surname part"] = " ".join((first, *middles, rng.choice(surname.split("-"))))
    else:
        other = rng.choice([s for s in SURNAMES if " " not in s and s != surname])
        out["surname part"] = " ".join((first, *middles, f"{surname}-{other}"))
    head, last = _surname_word(person)
    if rng.random() < 0.5 and len(first) >= 4:
        out["spelling"] = " ".join((_respell(rng, first), *middles, surname))
    else:
        out["spelling"] = " ".join((first, *middles, head + _respell(rng, last)))
    sounds = [(w, s) for w in (first, last) if (s := _sound_alike(rng, w)) is not None]
    if sounds:
        word, changed = rng.choice(sounds)
        if word == first:
            out["phonetic"] = " ".join((changed, *middles, surname))
        else:
            out["phonetic"] = " ".join((first, *middles, head + changed))
    given = " ".join((_accented(rng, first), *middles))
    out["accents, case and order"] = f"{surname.upper()},  {given.lower()}"
    return [Registration(kind, name, born, index) for kind, name in out.items()]


def _plain_key(name: str) -> tuple[str, ...]:
    decomposed = unicodedata.normalize("NFKD", name.replace(",", " ").replace("-", " "))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return tuple(sorted(plain.split()))


def clean_population(rng: random.Random, size: int, listed: list[Person]
                     ) -> list[Registration]:
    """`size` unlisted people with random birth dates: a third share a listed person's
    surname, a third a listed person's given name; never a listed person's whole name."""
    taken = {_plain_key(p.name) for p in listed}
    out: list[Registration] = []
    while len(out) < size:
        someone = rng.choice(listed)
        roll = rng.random()
        first = someone.first if roll < 1 / 3 else rng.choice(FIRSTS)
        surname = someone.surname if 1 / 3 <= roll < 2 / 3 else rng.choice(SURNAMES)
        middles = tuple(rng.sample(FIRSTS, rng.choice((0, 1, 1, 1, 2))))
        name = " ".join((first, *middles, surname))
        if _plain_key(name) in taken:
            continue
        out.append(Registration("clean", name, _born(rng), None))
    return out
