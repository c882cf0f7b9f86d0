"""Measure the list checks' name matching (issue 33) on a generated population, beside the
matcher it replaced.

A seeded listed population (default 2,000 people from tests/leaderboard/data/names: South
African given names and surnames, Afrikaans particles, Nguni, Sotho, English and Indian
names; most with a middle name, some double-barrelled) is imported as a self-exclusion list
into a fresh SQLite database. Then every listed person registers in every variant kind that
applies (dropped middle name, added middle name, pet form, particles joined or split, one
part of a hyphenated surname or an added one, one-letter spelling change, phonetic variant,
accents, case and order) with the listed birth date, and a clean population (default 10,000
unlisted people, other names, random birth dates, a third sharing a listed surname and a
third a listed given name) registers too. Each registration is one
`leaderboard.eligibility.check` (the desk's path: the blocking keys in the database, the
shipped [list_checks] thresholds).

Printed: per variant kind, registrations and how many went clear (must be 0), the clean
population's holds (must be under 1%), and the same figures for the previous matcher (the
same normal form, `letters_key` lookup, the birth date equal or absent, and
`leaderboard.name_match.compare_names`: the rule in force before issue 33), then the time per
check (median, 95th percentile) at this list size and, with `--timing-rows`, on a list padded
to that many rows. Exit status: 0, or 1 when a listed person went clear or 1% or more of the
clean population was held.

Run: ``.venv/bin/python bench/name_matching.py [--quick] [--listed N] [--clean N] [--seed N]
[--undated SHARE] [--timing-rows N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select
from sqlalchemy.orm import Session
from support.latency_machine import machine_lines

from leaderboard.db import make_engine, upgrade
from leaderboard.eligibility import Candidate, ListRow, check, import_list
from leaderboard.models import Exclusion
from leaderboard.name_match import compare_names, letters_key
from tests.leaderboard.name_population import (
    VARIANT_KINDS,
    Person,
    Registration,
    clean_population,
    listed_population,
    variants,
)

AT = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)
VENUE = ZoneInfo("Africa/Johannesburg")


def _rows(people: list[Person], prefix: str) -> tuple[ListRow, ...]:
    return tuple(ListRow(line=n + 1, id_number=f"{prefix}{n:08d}", name=p.name,
                         birth_date=p.born) for n, p in enumerate(people))


def _old_rule(listed: list[Person]) -> dict[str, list[Person]]:
    """The previous matcher's lookup: list rows by `letters_key`."""
    by_letters: dict[str, list[Person]] = defaultdict(list)
    for person in listed:
        by_letters[letters_key(person.name)].append(person)
    return by_letters


def _old_held(by_letters: dict[str, list[Person]], name: str, born: date) -> bool:
    """The rule before issue 33: the same letters, the birth date equal or absent, and
    compare_names' "name" or "initials"."""
    return any(p.born in (None, born) and compare_names(name, p.name) is not None
               for p in by_letters.get(letters_key(name), ()))


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


@dataclass
class Figures:
    """What one run counted and timed."""

    tried: Counter[str] = field(default_factory=Counter)
    clear_new: Counter[str] = field(default_factory=Counter)
    clear_old: Counter[str] = field(default_factory=Counter)
    held_new: int = 0
    held_old: int = 0
    samples: list[float] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


def _timed_check(s: Session, name: str, born: date, number: str,
                 samples: list[float]) -> bool:
    """One desk check (the registration's name and birth date); whether it is held."""
    facts = Candidate(id_number=number, name=name, birth_date=born)
    begin = time.perf_counter()
    verdict = check(s, facts, AT, tz=VENUE)
    samples.append(time.perf_counter() - begin)
    return verdict.held


def _measure(s: Session, listed: list[Person], registrations: list[Registration],
             clean: list[Registration]) -> Figures:
    """Every registration checked, now and by the previous rule."""
    by_letters = _old_rule(listed)
    f = Figures()
    for n, r in enumerate(registrations):
        f.tried[r.kind] += 1
        if not _timed_check(s, r.name, r.born, f"RG{n:010d}", f.samples):
            f.clear_new[r.kind] += 1
            if len(f.examples) < 10 and r.listed is not None:
                f.examples.append(f"  clear: {r.name!r} ({r.kind}) for listed"
                                  f" {listed[r.listed].name!r}")
        if not _old_held(by_letters, r.name, r.born):
            f.clear_old[r.kind] += 1
    for n, r in enumerate(clean):
        f.held_new += _timed_check(s, r.name, r.born, f"CL{n:010d}", f.samples)
        f.held_old += _old_held(by_letters, r.name, r.born)
    return f


def _padded_timing(s: Session, rng: random.Random, clean: list[Registration], rows: int,
                   undated: float) -> str:
    """Pad the lists to `rows` rows (another list of generated people), time 500 checks."""
    listed_n = sum(1 for _ in s.scalars(select(Exclusion.id)))
    pad = listed_population(rng, rows - listed_n, undated=undated)
    import_list(s, kind="excluded", rows=_rows(pad, "PD"), source="padding",
                source_date=AT.date(), at=AT, actor="bench")
    s.commit()
    padded: list[float] = []
    for n, r in enumerate(rng.sample(clean, min(500, len(clean)))):
        _timed_check(s, r.name, r.born, f"TM{n:010d}", padded)
    return (f"check   : {rows} list rows: median {statistics.median(padded) * 1000:.2f} ms,"
            f" p95 {_percentile(padded, 0.95) * 1000:.2f} ms ({len(padded)} checks)")


def _report(f: Figures, listed_n: int, clean_n: int) -> bool:
    """Print the figures; whether they are wrong."""
    print(f"{'variant kind':<28}{'registered':>11}{'clear now':>11}{'clear before':>14}")
    for kind in VARIANT_KINDS:
        print(f"{kind:<28}{f.tried[kind]:>11}{f.clear_new[kind]:>11}{f.clear_old[kind]:>14}")
    print(f"{'all listed variants':<28}{sum(f.tried.values()):>11}"
          f"{sum(f.clear_new.values()):>11}{sum(f.clear_old.values()):>14}")
    print(f"clean   : {clean_n} registrations, held now {f.held_new}"
          f" ({f.held_new / clean_n:.2%}), held before {f.held_old} ({f.held_old / clean_n:.2%})")
    print(f"check   : {listed_n} list rows: median {statistics.median(f.samples) * 1000:.2f}"
          f" ms, p95 {_percentile(f.samples, 0.95) * 1000:.2f} ms ({len(f.samples)} checks)")
    return sum(f.clear_new.values()) > 0 or f.held_new * 100 >= clean_n


def main() -> int:
    """Run the measurement; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (seconds)")
    parser.add_argument("--listed", type=int, default=2_000)
    parser.add_argument("--clean", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--undated", type=float, default=0.0,
                        help="share of list rows without a birth date (default 0)")
    parser.add_argument("--timing-rows", type=int, default=0,
                        help="also time checks on a list padded to this many rows")
    args = parser.parse_args()
    listed_n, clean_n = (150, 1_000) if args.quick else (args.listed, args.clean)
    rng = random.Random(args.seed)
    print(*machine_lines(), sep="\n")
    print(f"seed    : {args.seed}; {listed_n} listed ({args.undated:.0%} without a birth"
          f" date), {clean_n} clean")
    listed = listed_population(rng, listed_n, undated=args.undated)
    registrations = [r for n, p in enumerate(listed) for r in variants(rng, n, p)]
    clean = clean_population(rng, clean_n, listed)
    timing = ""
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.sqlite'}")
        upgrade(engine)
        with Session(engine) as s:
            start = time.perf_counter()
            import_list(s, kind="self_exclusion", rows=_rows(listed, "XL"), source="bench",
                        source_date=AT.date(), at=AT, actor="bench")
            s.commit()
            import_s = time.perf_counter() - start
            figures = _measure(s, listed, registrations, clean)
            if args.timing_rows > listed_n:
                timing = _padded_timing(s, rng, clean, args.timing_rows, args.undated)
        engine.dispose()
    print(f"import  : {listed_n} rows (with their name keys) in {import_s:.2f} s")
    wrong = _report(figures, listed_n, clean_n)
    if timing:
        print(timing)
    for line in figures.examples:
        print(line)
    print("result: WRONG" if wrong else "result: OK")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
