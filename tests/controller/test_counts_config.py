"""The table config's optional ``[chips]`` section: the house's tolerance on a tray count
(``count_tolerance_cents``, default 0), a bad value or an unknown key refused naming the key.
The tolerance reaching the journaled confirmation: tests/controller/test_counts_table.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import TableConfig, parse_table_config
from game.errors import ConfigError


def config(tmp_path: Path, chips: object = None) -> TableConfig:
    """A manual table config, with this [chips] section if one is given."""
    data: dict[str, object] = {
        "table": {"venue": "v", "id": "t1", "journal": "journal.sqlite"},
        "keys": {"table_key": "table.key"}, "api": {"socket": "console.sock"},
        "shoe": {"kind": "manual"}, "rfid": {"kind": "manual"}}
    if chips is not None:
        data["chips"] = chips
    return parse_table_config(data, source="table.toml", base=tmp_path)


def test_the_tolerance_defaults_to_nothing_and_reads_whole_cents(tmp_path: Path) -> None:
    assert config(tmp_path).count_tolerance_cents == 0
    assert config(tmp_path, {}).count_tolerance_cents == 0
    assert config(tmp_path, {"count_tolerance_cents": 2_500}).count_tolerance_cents == 2_500


@pytest.mark.parametrize(("chips", "key", "words"), [
    ({"count_tolerance_cents": -1}, "chips.count_tolerance_cents", "0 to 100000000"),
    ({"count_tolerance_cents": 2.5}, "chips.count_tolerance_cents", "expected int"),
    ({"count_tolerance_cents": True}, "chips.count_tolerance_cents", "expected int"),
    ({"count_tolerance_cents": "R25"}, "chips.count_tolerance_cents", "expected int"),
    ({"tolerance": 5}, "chips.tolerance", "unknown key"),
    ("R25", "chips", "must be a table"),
])
def test_a_bad_value_names_the_key(tmp_path: Path, chips: object, key: str,
                                   words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(tmp_path, chips)
    assert key in str(caught.value) and words in str(caught.value)
