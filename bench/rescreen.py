"""Benchmark the identity checks (issue 13): a list imported when many patrons are registered
is screened against all of them (every document, then names), and a single desk check.

A fresh SQLite database (in a temporary directory) is given N registered patrons (seeded
random names, two documents each) and a self-exclusion list of M rows of other people, into
which R patrons are planted by a document number and H by name and birth date only (under
another number). The script times `leaderboard.desk.import_and_rescreen` (parse excluded),
then the median of 200 single `leaderboard.eligibility.check` calls against that list, and
checks the result: exactly the R planted by document refused, exactly the H planted by name
held, nobody else. Exit status: 0, or 1 when a result is wrong.

Run: ``.venv/bin/python bench/rescreen.py [--quick] [--patrons N] [--rows M] [--seed N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy.orm import Session
from support.latency_machine import machine_lines

from leaderboard import desk
from leaderboard.db import make_engine, upgrade
from leaderboard.eligibility import ListRow, check
from leaderboard.models import Patron, PatronDocument
from runtime.settings_files import read_tournament

FIRST = ("Thandi", "Sipho", "Lerato", "Naledi", "Thabo", "Ayanda", "Zanele", "Bongani",
         "Karabo", "Lindiwe", "Mpho", "Palesesa", "Johan", "Anika", "Pieter", "Fatima",
         "Yusuf", "Priya", "Rajesh", "Mary", "John", "Grace", "Themba", "Nomsa")
LAST = ("Mokoena", "Dlamini", "Nkosi", "Khumalo", "Ndlovu", "Zulu", "Van der Merwe",
        "Botha", "Pillay", "Naidoo", "Smith", "Jacobs", "Sithole", "Mahlangu", "Mthembu",
        "Nel", "Pretorius", "Adams", "Le Roux", "Cele", "Radebe", "Mabaso", "Moloi")
AT = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def person(rng: random.Random, n: int, born_from: date = date(1950, 1, 1)) -> tuple[str, date]:
    """A seeded name (first, middle initial sometimes, surname, and a number to keep most
    names apart) and a birth date in the 25 years from `born_from`. Patrons and the list's
    other people are born in different years: names matched as people write them (issue 33)
    hold "Sipho Thabo12 Mokoena" for a listed "Sipho Thabo125 Mokoena" born the same day."""
    name = f"{rng.choice(FIRST)} {rng.choice(FIRST)}{n} {rng.choice(LAST)}"
    return name, born_from + timedelta(days=rng.randrange(0, 365 * 25))


def main() -> int:
    """Run the benchmark; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (seconds)")
    parser.add_argument("--patrons", type=int, default=5_000)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    patrons, rows = (300, 1_000) if args.quick else (args.patrons, args.rows)
    planted_doc, planted_name = max(1, patrons // 100), max(1, patrons // 100)
    rng = random.Random(args.seed)
    print(*machine_lines(), sep="\n")
    print(f"seed    : {args.seed}; {patrons} patrons, {rows} list rows,"
          f" {planted_doc} planted by document, {planted_name} by name and birth date")
    settings = read_tournament()
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.sqlite'}")
        upgrade(engine)
        people = [person(rng, n) for n in range(patrons)]
        with Session(engine) as s:
            for n, (name, born) in enumerate(people):
                pid = f"P-{n:016x}"
                s.add(Patron(patron_id=pid, name=name, id_kind="id_document",
                             id_number=f"ID{n:010d}", birth_date=born, created_at=AT,
                             standing="clear"))
                s.flush()
                s.add_all([PatronDocument(patron_id=pid, kind=kind, number=number,
                                          added_at=AT, added_by="bench")
                           for kind, number in (("id_document", f"ID{n:010d}"),
                                                ("rewards_card", f"RC{n:010d}"))])
            s.commit()
        by_doc = rng.sample(range(patrons), planted_doc + planted_name)
        doc_ids, name_ids = by_doc[:planted_doc], by_doc[planted_doc:]
        listed = [ListRow(line=i + 1, id_number=f"XL{i:010d}", name=person(rng, patrons + i)[0],
                          birth_date=person(rng, 0, date(1976, 1, 1))[1])
                  for i in range(rows)]
        for k, n in enumerate(doc_ids):  # a rewards card on the list, another name
            listed[k] = ListRow(line=k + 1, id_number=f"RC{n:010d}", name="Someone Else",
                                birth_date=None)
        for k, n in enumerate(name_ids, start=planted_doc):  # the name, reordered, and date
            first, middle, last = people[n][0].split(" ", 2)
            listed[k] = ListRow(line=k + 1, id_number=f"ZZ{k:010d}",
                                name=f"{last.upper()}, {first} {middle}",
                                birth_date=people[n][1])
        with Session(engine, expire_on_commit=False) as s:
            start = time.perf_counter()
            _, found = desk.import_and_rescreen(
                s, settings, lambda: AT, actor="bench", kind="self_exclusion",
                rows=tuple(listed), source="bench", source_date=AT.date())
            rescreen_s = time.perf_counter() - start
            held_patrons = sorted(v.patron_id for v in desk.holds(s, open_only=True))
            samples = []
            for n in rng.sample(range(patrons), 200):
                patron = s.get(Patron, f"P-{n:016x}")
                assert patron is not None
                start = time.perf_counter()
                check(s, patron, AT, tz=settings.tz)
                samples.append(time.perf_counter() - start)
        engine.dispose()
    wrong = (sorted(found.refused) != sorted(f"P-{n:016x}" for n in doc_ids)
             or held_patrons != sorted(f"P-{n:016x}" for n in name_ids))
    print(f"rescreen: {found.checked} patrons against {rows} rows in {rescreen_s:.2f} s"
          f" ({found.checked / rescreen_s:,.0f} patrons/s); refused {len(found.refused)},"
          f" held {len(found.held)}")
    print(f"check   : one patron (2 documents, name) median"
          f" {statistics.median(samples) * 1000:.2f} ms, max {max(samples) * 1000:.2f} ms")
    print("result: WRONG" if wrong else "result: OK")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
