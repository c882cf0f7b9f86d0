"""Fixtures of the journal tests: a fake clock, a journal file, an open journal, and a
closed journal with known content to tamper with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.clock import FakeClockSource
from controller.journal import Journal
from tests.controller.journal.support import T0, add


@pytest.fixture
def fake() -> FakeClockSource:
    return FakeClockSource(start=T0, boot_id="boot-a", step_ns=1_000_000)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "table.journal"


@pytest.fixture
def journal(path: Path, fake: FakeClockSource) -> Iterator[Journal]:
    with Journal.open(path, clock=fake) as j:
        yield j


@pytest.fixture
def built(path: Path, fake: FakeClockSource) -> Path:
    """A closed journal: records 2-7 each caused one message (outbox 1-6); 8 caused none."""
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 6, per_record=1)
        add(j, fake, 1)
        assert j.verify() == []
    return path
