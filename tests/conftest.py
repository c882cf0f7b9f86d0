"""Test configuration shared by the whole suite: the fakes every test may ask for.

- ``fake_clock``: the one fake wall clock (tests/fixtures/clock.py), at its epoch.
- ``seeded_rng``: a ``random.Random`` seeded from the test's id, the same on every run.
- ``log_events``: structlog's ``capture_logs``, the log events of the test as dicts.

Every Hypothesis test runs under one of two profiles, chosen by the environment variable
``HYPOTHESIS_PROFILE``: ``light`` (the default, and ``make test``) tries a fifth of the
examples, ``thorough`` (``make test-soak``, which runs every Hypothesis test again, marked
``property`` here) Hypothesis's default 100 and every count a test sets itself
(``tests.hypothesis_examples.examples``). Both have no deadline and no too-slow
health check, so a loaded machine (CI, parallel workers) cannot make a property test flake.
"""

from __future__ import annotations

import logging
import os
import random
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from structlog.testing import capture_logs

from tests.fixtures.clock import FakeClock
from tests.hypothesis_examples import THOROUGH_EXAMPLES

# Fixtures for the real services (MQTT brokers, SQL databases): tests/fixtures/services.py.
pytest_plugins = ["tests.fixtures.services"]

_PROFILE: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
hypothesis_settings.register_profile("thorough", max_examples=THOROUGH_EXAMPLES, **_PROFILE)
hypothesis_settings.register_profile("light", max_examples=THOROUGH_EXAMPLES // 5, **_PROFILE)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "light"))


@pytest.fixture
def fake_clock() -> FakeClock:
    """A fake wall clock at tests.fixtures.clock.EPOCH; the test moves it."""
    return FakeClock()


@pytest.fixture
def seeded_rng(request: pytest.FixtureRequest) -> random.Random:
    """A random generator seeded from the test's node id: fixed per test, same every run."""
    return random.Random(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def log_events() -> Iterator[list[dict[str, Any]]]:
    """The structlog events logged during the test, as dicts (structlog.testing.capture_logs).

    Every level is captured: an earlier test in the same worker may have configured logging
    at "warning" (a command run in-process), and capture_logs replaces only the processors,
    not the level filter that runs before them."""
    wrapper = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with capture_logs() as events:
            yield events
    finally:
        structlog.configure(wrapper_class=wrapper)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every Hypothesis test ``property`` (``make test-soak`` runs them again under the
    thorough profile) and every PostgreSQL run ``soak`` (D387), then run the tests marked
    slow first: under pytest-xdist (``make test``) each long one then starts at once on a
    worker of its own, and the short ones fill in around it."""
    del config
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
        if item.get_closest_marker("postgres") is not None:
            # Every PostgreSQL run of a test is in the soak tier: `make test` runs it on
            # SQLite, `make test-soak` (and so CI) on PostgreSQL too (docs/testing.md).
            item.add_marker(pytest.mark.soak)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
