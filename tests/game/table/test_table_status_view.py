"""`StatusView`: the table status built part by part as it is read (the virtual dealer's
checks) holds, part for part, what the whole status holds at the same moment, through a
seeded day of every stage, mishaps included."""

from __future__ import annotations

import json
import random

import pytest

from game.table.core import TableCore
from game.table.status import StatusView, core_status
from simulators.core_day import day, new_core

HEAD = {"table": "t01", "venue": "v", "state": "running", "faults": []}


def _replayed_views(seed: int) -> int:
    floor = day(seed=seed, heats=3)
    core: TableCore = new_core()
    rng = random.Random(seed)
    looks = 0
    for given, at in floor.inputs:
        core.apply(given, at)
        whole = core_status(core)
        view = StatusView(core, HEAD)
        keys = list(view)
        assert keys == [*HEAD, *whole]  # the head first, then the status's own order
        assert len(view) == len(keys) and "nothing" not in view
        for key in rng.sample(keys, rng.randint(1, 3)):  # a check reads a part or three
            expected = HEAD[key] if key in HEAD else whole[key]
            assert json.dumps(view[key], sort_keys=True) == json.dumps(expected, sort_keys=True)
            looks += 1
        with pytest.raises(KeyError):
            view["nothing"]
    return looks


def test_each_part_read_alone_is_the_whole_status_part() -> None:
    assert _replayed_views(2026) > 500


def test_a_part_is_built_once_and_every_part_read_is_the_whole() -> None:
    floor = day(seed=7, heats=1)
    core = new_core()
    for given, at in floor.inputs[:40]:
        core.apply(given, at)
    view = StatusView(core)
    first = view["spots"]
    assert view["spots"] is first  # built once
    assert dict(view) == core_status(core)  # every part, when all are read
