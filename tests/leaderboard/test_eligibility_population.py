"""The list checks on a generated population (issue 33), on SQLite and PostgreSQL: every
listed person (a tenth without a birth date on the list) registering in every variant kind
with the listed birth date is held (none clear), and under 1% of a clean population is held.
bench/name_matching.py prints the same figures for the full population (2,000 listed, 10,000
clean) beside the previous matcher."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from datetime import date

import pytest
from sqlalchemy.orm import Session

from leaderboard.eligibility import Candidate, ListRow, check, import_list
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import SAST, local, migrated
from tests.leaderboard.name_population import (
    VARIANT_KINDS,
    clean_population,
    listed_population,
    variants,
)

SEED = 20261206
AT = local(2026, 7, 3, 14, 0)


@pytest.fixture
def session(database_url: Database) -> Iterator[Session]:
    with migrated(database_url) as engine, Session(engine) as s:
        yield s


def test_no_listed_variant_goes_clear_and_under_one_percent_of_clean_people_are_held(
        session: Session) -> None:
    rng = random.Random(SEED)
    listed = listed_population(rng, 120, undated=0.1)
    import_list(session, kind="self_exclusion", source="NRGP", source_date=date(2026, 7, 1),
                at=AT, actor="compliance",
                rows=tuple(ListRow(line=n + 1, id_number=f"XL{n:08d}", name=p.name,
                                   birth_date=p.born) for n, p in enumerate(listed)))
    session.commit()
    tried: Counter[str] = Counter()
    clear: list[str] = []
    for n, reg in enumerate(r for i, p in enumerate(listed) for r in variants(rng, i, p)):
        tried[reg.kind] += 1
        verdict = check(session, Candidate(id_number=f"RG{n:08d}", name=reg.name,
                                           birth_date=reg.born), AT, tz=SAST)
        assert reg.listed is not None
        if not verdict.held:
            clear.append(f"{reg.name!r} ({reg.kind}) for {listed[reg.listed].name!r}")
        else:
            assert listed[reg.listed].name in {m.list_name for m in verdict.possible}
    assert set(tried) == set(VARIANT_KINDS)  # every kind was tried
    assert clear == [], f"seed {SEED}: listed people registered clear: {clear}"
    clean = clean_population(rng, 800, listed)
    held = [r.name for n, r in enumerate(clean)
            if check(session, Candidate(id_number=f"CL{n:08d}", name=r.name,
                                        birth_date=r.born), AT, tz=SAST).held]
    assert len(held) * 100 < len(clean), f"seed {SEED}: clean people held: {held}"
