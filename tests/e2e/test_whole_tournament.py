"""Issue 14's "done" test: a small whole tournament through every part (desk, signed commands,
table daemons on the real drivers with simulated devices, MQTT, ingest, standings, prizes and
claims), on the embedded broker with SQLite and on Mosquitto with PostgreSQL, and every
standing, qualifier and prize amount checked against the independent recomputation from the
recorded hands (tests/e2e/recompute.py). Then a stored score and a stored prize are altered,
and the comparison must name both.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, update

from floor.plan import TournamentPlan
from leaderboard.models import PrizeAward, Score
from tests.e2e.compare import Difference, differences, report
from tests.e2e.evidence import journal_differences, load_evidence, table_keys
from tests.e2e.floor_rulings import CORRECTED_TO, RulingFloor
from tests.e2e.observed import observe
from tests.e2e.payouts import tables_paytables
from tests.e2e.recompute import Expected, recompute, week_moment
from tests.e2e.records import Evidence
from tests.e2e.rules import Rules, read_rules
from tests.fixtures.services import Database, MqttBroker

pytestmark = [pytest.mark.slow, pytest.mark.soak]

# A small tournament with the shipped rules scaled down (the rules are settings): 2 tables,
# 2 qualifying days of 1 heat of 3 players (12 entries, 2 prize weeks); the top 4 play 2
# semi-final heats of 2, the top 2 of those the Final; one patron withdraws after 3 of 4 hands;
# after the last heat a supervisor voids one score, corrects another and disqualifies a patron
# (tests/e2e/floor_rulings.py); a dealer overpays once and a supervisor overrides the check.
SMALL_RULES: dict[str, object] = {
    "qualifying.advance": 4, "qualifying.hands": 4,
    "semi_final.heats": 2, "semi_final.seats_per_heat": 2, "semi_final.advance": 2,
    "semi_final.hands": 3,
    "final.seats_per_heat": 2, "final.hands": 3,
    "prizes.final_places": [70, 30],
}
SEED = 7


def _plan(directory: Path, broker: MqttBroker, database: Database) -> TournamentPlan:
    return TournamentPlan(
        directory=directory, tables=2, days=2, heats_per_day=1, players=3, seed=SEED,
        hand_pause=0.0, stage_pause=0.0, http_port=0, broker=f"{broker.host}:{broker.port}",
        database=database.url, venue=f"e2e{secrets.token_hex(3)}", rules=SMALL_RULES,
        withdrawal=True, overpay_hand=2, progress=False)


def _summary(expected: Expected, floor: Any) -> list[Difference]:
    """The runner's own summary (the Final's places and every prize it prints)."""
    out = []
    shown = [(p.position, p.entry_id, p.score_cents) for p in floor.final_places]
    mine = [(p.position, p.entry_id, p.score_cents) for p in expected.final]
    if shown != mine:
        out.append(Difference("summary", "the Final's places", str(mine), str(shown)))
    prizes = sorted((p.kind, p.place, p.entry_id, p.amount_cents) for p in floor.prizes)
    books = sorted((a.kind, a.place, a.entry_id, a.amount_cents)
                   for b in expected.books for a in b.awards)
    if prizes != books:
        out.append(Difference("summary", "prizes", str(books), str(prizes)))
    return out


def _compare(engine: Engine, evidence: Evidence, expected: Expected, rules: Rules, *,
             floor: Any) -> list[Difference]:
    now = floor.calendar[-1][1] + timedelta(minutes=1)
    observed = observe(engine, floor.tournament, venue="e2e", now=now,
                       week_moments={w: week_moment(w, rules) for w in expected.weekly})
    journals = [line for table, path in sorted(floor.journals.items())
                for line in journal_differences(path, table, engine)]
    return differences(expected, observed, evidence, rules, now=now, journals=journals)


@pytest.mark.parametrize(("mqtt_broker", "database_url"), [
    pytest.param("embedded", "sqlite", id="embedded-sqlite"),
    pytest.param("mosquitto", "postgres", id="mosquitto-postgres",
                 marks=[pytest.mark.mosquitto, pytest.mark.postgres]),
], indirect=True)
async def test_the_whole_tournament_matches_its_recomputation(
        tmp_path: Path, mqtt_broker: MqttBroker, database_url: Database) -> None:
    directory = tmp_path / "floor"
    directory.mkdir()
    lines: list[str] = []
    runner = RulingFloor(_plan(directory, mqtt_broker, database_url), out=lines.append)
    floor = await runner.run(asyncio.Event(), linger=0)
    assert floor.problems == [], "\n".join(lines[-60:])
    assert floor.stages == ["qualifying", "semi_final", "final", "prizes", "claims"]

    engine = create_engine(database_url.url)
    try:
        keys = table_keys(sorted(directory.glob("t*/table.key")))
        evidence = load_evidence(engine, keys)
        assert floor.tournament is not None
        rules = read_rules(floor.tournament)
        tables = tables_paytables({t: p.parent / "table.toml" for t, p in floor.journals.items()})
        expected = recompute(evidence, rules, paytables=tables)
        # the run is what it should be: 12 entries, one withdrawn, two prize weeks, 4
        # semi-finalists, 2 finalists, prizes of every kind
        qualifying = [s for s in expected.scores.values() if s.stage == "qualifying"]
        assert len(qualifying) == 12 and expected.pools.entries == 12
        assert [s.status for s in qualifying].count("withdrawn") == 1
        assert sorted(expected.weekly) == [1, 2]
        assert len(expected.semi_places) == 4 and len(expected.final_places) == 2
        assert {b.kind for b in expected.books} == {"weekly", "top_score", "final"}
        assert all(b.awards for b in expected.books)
        assert [r.kind for r in runner.rulings] == ["voided", "corrected", "disqualified"]
        # this seed gives a patron several semi-final places: proxies play the extra ones
        assert floor.proxies, "\n".join(lines[-60:])
        why = {r.entry_id: expected.scores[r.entry_id] for r in runner.rulings}
        assert [w.why_not for w in why.values()] == ["voided", None, "disqualified"]
        assert [w.counted_cents for w in why.values()][1] == CORRECTED_TO

        found = _compare(engine, evidence, expected, rules, floor=floor)
        found += _summary(expected, floor)
        assert found == [], report(found)

        # a score and a prize altered in the central database are caught
        top = expected.qualifying[0]
        with engine.begin() as conn:
            conn.execute(update(Score).where(Score.entry_id == top.entry_id)
                         .values(score_cents=Score.score_cents + 2500))
            conn.execute(update(PrizeAward).where(PrizeAward.kind == "final",
                                                  PrizeAward.place == 1)
                         .values(amount_cents=PrizeAward.amount_cents - 1))
        found = _compare(engine, evidence, expected, rules, floor=floor)
        winner = expected.final[0].entry_id
        assert {(d.entry, d.what) for d in found} >= {
            (top.entry_id, "central score"), (winner, "final 1 prize amount")}, report(found)
    finally:
        engine.dispose()
