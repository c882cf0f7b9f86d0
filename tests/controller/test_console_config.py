"""The ``[console]`` settings of the sign-in back-off (D344): defaults, bounds, the policy
they make, and the fixed lock-out's old keys refused with what replaces them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.console_config import ConsoleConfig, parse_console
from game.errors import ConfigError
from game.staff import LockoutPolicy


def parse(**keys: Any) -> ConsoleConfig:
    return parse_console(keys, source="table.toml", base=Path("/etc/showdown"))


def test_the_default_back_off_is_three_free_failures_then_30_s_doubling_to_15_min() -> None:
    assert parse().backoff() == LockoutPolicy(free=3, first=timedelta(seconds=30),
                                              cap=timedelta(minutes=15),
                                              forget=timedelta(hours=1))
    assert ConsoleConfig().backoff() == parse().backoff()


def test_the_back_off_is_the_houses_setting() -> None:
    policy = parse(signin_free_failures=5, signin_backoff_seconds=10,
                   signin_backoff_max_seconds=120, signin_forget_minutes=30).backoff()
    assert (policy.free, policy.first, policy.cap, policy.forget) == (
        5, timedelta(seconds=10), timedelta(minutes=2), timedelta(minutes=30))
    assert [policy.delay(n).total_seconds() for n in (4, 5, 6, 7, 8, 9)] == [
        0, 10, 20, 40, 80, 120]


@pytest.mark.parametrize(("keys", "field", "why"), [
    ({"lockout_failures": 5}, "console.lockout_failures", "use signin_free_failures"),
    ({"lockout_minutes": 5}, "console.lockout_minutes", "use signin_backoff_seconds"),
    ({"signin_free_failures": 0}, "console.signin_free_failures", "must be 1..100"),
    ({"signin_backoff_seconds": 0}, "console.signin_backoff_seconds", "must be 1..3600"),
    ({"signin_backoff_seconds": 60, "signin_backoff_max_seconds": 30},
     "console.signin_backoff_max_seconds", "must be at least signin_backoff_seconds"),
    ({"signin_forget_minutes": 0}, "console.signin_forget_minutes", "must be 1..10080"),
    ({"signin_backoff_seconds": "30"}, "console.signin_backoff_seconds", ""),
])
def test_a_bad_back_off_setting_is_refused_naming_the_key(
        keys: dict[str, Any], field: str, why: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(**keys)
    assert field in str(raised.value) and why in str(raised.value)
