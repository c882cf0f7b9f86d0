"""The house's name-match thresholds ([list_checks] of the tournament settings, D369): the
shipped values, the table optional, and every bad value refused naming its key; and revision
0013 keying the list rows already stored (SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
import tomllib
from datetime import date
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from game.tournament.schema import ConfigErrors, NameCheckSettings, parse_tournament
from leaderboard.db import upgrade
from leaderboard.eligibility import Candidate, check
from leaderboard.models import Base, Exclusion, ExclusionNameKey
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import SAST, local
from tests.leaderboard.test_schema_constraints import NOW, at_revision, downgrade_to, insert

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "tournament.toml"


def shipped() -> dict[str, Any]:
    return tomllib.loads(SHIPPED.read_text(encoding="utf-8"))


def load(data: dict[str, Any]) -> NameCheckSettings:
    return parse_tournament(data, "t.toml", tz=ZoneInfo("Africa/Johannesburg")).name_checks


def test_the_shipped_thresholds_and_an_absent_table() -> None:
    data = shipped()
    assert data["list_checks"] == {"same_birth_date": 80, "no_birth_date": 85,
                                   "other_birth_date": 100}
    assert load(data) == NameCheckSettings(same_birth_date=80, no_birth_date=85,
                                           other_birth_date=100)
    del data["list_checks"]
    assert load(data) == NameCheckSettings()
    data["list_checks"] = {"same_birth_date": 90, "no_birth_date": 100, "other_birth_date": 95}
    assert load(data) == NameCheckSettings(same_birth_date=90, no_birth_date=100,
                                           other_birth_date=95)


@pytest.mark.parametrize(("key", "value", "why"), [
    ("same_birth_date", 49, "whole percentage from 50 to 100, not 49"),
    ("no_birth_date", 101, "not 101"),
    ("other_birth_date", 0.9, "not 0.9"),
    ("same_birth_date", "80", "not '80'"),
    ("other_birth_date", True, "not True"),
])
def test_a_bad_threshold_is_refused_naming_its_key(key: str, value: object, why: str) -> None:
    data = copy.deepcopy(shipped())
    data["list_checks"][key] = value
    with pytest.raises(ConfigErrors) as err:
        load(data)
    assert [(e.key, why in e.reason) for e in err.value.errors] == [(f"list_checks.{key}",
                                                                     True)]


def test_a_missing_or_unknown_key_is_refused() -> None:
    data = copy.deepcopy(shipped())
    del data["list_checks"]["no_birth_date"]
    data["list_checks"]["initials"] = 80
    with pytest.raises(ConfigErrors) as err:
        load(data)
    assert sorted(e.key for e in err.value.errors) == ["list_checks.initials",
                                                       "list_checks.no_birth_date"]


def test_revision_0013_keys_the_list_rows_already_stored(database_url: Database) -> None:
    engine = at_revision(database_url, "0011_display_names")
    insert(engine, Exclusion, {"list_kind": "self_exclusion", "id_number": "7506065001082",
                               "name": "Johannes van der Merwe", "source": "NRGP",
                               "source_date": date(2026, 7, 1), "imported_at": NOW,
                               "birth_date": date(1975, 6, 6)})
    upgrade(engine)
    with Session(engine) as s:
        keys = {(k.part, k.parts, k.key) for k in s.scalars(select(ExclusionNameKey))}
        assert {(0, 2, "t:johannes"), (1, 2, "t:vandermerwe"), (1, 2, "t:merwe")} <= keys
        verdict = check(s, Candidate(id_number="RC60000001", name="Johan Vandermerwe",
                                     birth_date=date(1975, 6, 6)), local(2026, 7, 3, 14),
                        tz=SAST)
        assert [m.list_name for m in verdict.possible] == ["Johannes van der Merwe"]
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    downgrade_to(engine, "0011_display_names")
    assert "exclusion_name_keys" not in inspect(engine).get_table_names()
    engine.dispose()
