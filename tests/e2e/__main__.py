"""Check a kept demo run against the independent recomputation:
``python -m tests.e2e DIR`` after ``showdown demo --keep DIR``.

Reads the run's tournament settings, the tables' keys, journals and paytables from DIR and the
central database (DIR/leaderboard.sqlite3, or ``--database URL``), prints the recomputed
boards and prizes and every difference with what the system shows; exit 0 when there is none,
1 when there are differences, 2 when DIR is not a kept run.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

from sqlalchemy import create_engine

from game.money import format_rand
from tests.e2e.compare import differences
from tests.e2e.evidence import journal_differences, load_evidence, table_keys
from tests.e2e.observed import observe
from tests.e2e.payouts import tables_paytables
from tests.e2e.recompute import Expected, recompute, week_moment
from tests.e2e.rules import read_rules


def _summary(expected: Expected) -> list[str]:
    lines = [f"pools: {expected.pools.entries} buy-ins {format_rand(expected.pools.total_cents)}"
             f", Final Prize Pool {format_rand(expected.pools.final_pool_cents)}, Top Score"
             f" Progressive {format_rand(expected.pools.top_score_cents)}"]
    for name, board in (("qualifying", expected.qualifying), ("semi-finals", expected.semi),
                        ("Final", expected.final)):
        top = ", ".join(f"{p.position}. {p.entry_id} {format_rand(p.score_cents)}"
                        for p in board[:6])
        lines.append(f"{name}: {len(board)} counted; {top or '-'}")
    for book in expected.books:
        awards = ", ".join(f"{a.entry_id} {format_rand(a.amount_cents)}" for a in book.awards)
        rest = ", ".join(f"{r.reason} {format_rand(r.amount_cents)}" for r in book.remainders)
        lines.append(f"{book.kind}{f' week {book.week}' if book.week else ''}:"
                     f" {awards or '-'}{f' (kept: {rest})' if rest else ''}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Recompute a kept run and compare; the exit code says whether anything differs."""
    parser = argparse.ArgumentParser(prog="python -m tests.e2e", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("directory", type=Path, help="the directory of `showdown demo --keep`")
    parser.add_argument("--database", help="the central database URL (default: the SQLite"
                        " file in the directory)")
    parser.add_argument("--incomplete", action="store_true", help="the run stopped after"
                        " qualifying: compare only what was done")
    args = parser.parse_args(argv)
    directory: Path = args.directory
    settings = directory / "tournament-demo.toml"
    tables = sorted(p.parent for p in directory.glob("t*/table.toml"))
    if not settings.is_file() or not tables:
        print(f"python -m tests.e2e: error: {directory}: not a kept demo run (no"
              " tournament-demo.toml or t*/table.toml)", file=sys.stderr)
        return 2
    url = args.database or f"sqlite:///{directory / 'leaderboard.sqlite3'}"
    engine = create_engine(url)
    try:
        rules = read_rules(settings)
        evidence = load_evidence(engine, table_keys(t / "table.key" for t in tables))
        expected = recompute(evidence, rules, paytables=tables_paytables(
            {t.name: t / "table.toml" for t in tables}))
        with (directory / "leaderboard.toml").open("rb") as handle:
            venue = str(tomllib.load(handle)["service"]["venue"])
        times = [m.at for m in evidence.scores] + [h.at for h in evidence.hands]
        if not times:
            print(f"python -m tests.e2e: error: {url}: no hands or scores recorded",
                  file=sys.stderr)
            return 2
        now = max(times) + timedelta(days=1)
        observed = observe(engine, settings, venue=venue, now=now,
                           week_moments={w: week_moment(w, rules) for w in expected.weekly})
        journals = [line for t in tables
                    for line in journal_differences(t / "journal.sqlite", t.name, engine)]
        found = differences(expected, observed, evidence, rules, now=now,
                            complete=not args.incomplete, journals=journals)
    finally:
        engine.dispose()
    print("\n".join(_summary(expected)))
    print(f"{len(evidence.hands)} hands and {len(evidence.scores)} scores recomputed:"
          f" {len(found)} differences")
    for difference in found:
        print(f"  {difference}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
