"""The ``[console]`` section of the table config: the dealer's and participant's screens (where
they listen and who may reach them), how a participant acknowledges a score, the payout check,
staff sessions and the sign-in back-off. Documented in docs/table-config.md ("[console]").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from controller.listen_config import Listen, SectionReader
from game.errors import ConfigError
from game.staff import LockoutPolicy
from runtime.config_paths import config_path

__all__ = ["ACK_METHODS", "ConsoleConfig", "parse_console"]

ACK_METHODS: Final = ("card", "pin", "signature")
_KEYS: Final = frozenset({
    "enabled", "bind", "port", "allowed_clients", "acknowledge_with", "verify_payouts",
    "session_minutes", "signin_free_failures", "signin_backoff_seconds",
    "signin_backoff_max_seconds", "signin_forget_minutes", "tap_seconds", "signatures",
    "rule_at_table", "require_issued", "recovery_notice_seconds",
})
# Keys of the fixed lock-out a stranger could trigger, replaced by the back-off (D344).
_REPLACED: Final = {
    "lockout_failures": "signin_free_failures (failures from one terminal before the back-off)",
    "lockout_minutes": "signin_backoff_seconds and signin_backoff_max_seconds (the back-off's"
                       " first delay and its cap)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleConfig:
    """The console's settings (the defaults are a table PC's touch screen on itself)."""

    enabled: bool = True
    bind: str = "127.0.0.1"  # the table PC's own address; never 0.0.0.0 by default
    port: int = 8080  # 0 = any free port (tests)
    allowed_clients: tuple[str, ...] = ("127.0.0.1", "::1")
    acknowledge_with: tuple[str, ...] = ("card",)  # every method listed is required
    verify_payouts: bool = True
    # A float chip on a seated entry's spot is an alert (D346). None: not set (true).
    require_issued: bool | None = None
    # How often device trouble the drivers healed by themselves is journaled, one notice per
    # device with the counts (D347).
    recovery_notice_seconds: float = 60.0
    session_minutes: int = 720  # a signed-in session ends after this long idle
    signin_free_failures: int = 3  # failed sign-ins from a terminal before the back-off
    signin_backoff_seconds: int = 30  # the first wait; doubled for each further failure
    signin_backoff_max_seconds: int = 900  # the longest wait
    signin_forget_minutes: int = 60  # a count with no failure for this long starts again
    tap_seconds: float = 30.0  # how long the console waits for a card tap
    signatures: Path | None = None  # where drawn signatures are kept (default: by the journal)
    rule_at_table: bool = True  # a supervisor may void or correct a settled hand here (D342)

    def backoff(self) -> LockoutPolicy:
        """The sign-in back-off these settings make (D344)."""
        return LockoutPolicy(free=self.signin_free_failures,
                             first=timedelta(seconds=self.signin_backoff_seconds),
                             cap=timedelta(seconds=self.signin_backoff_max_seconds),
                             forget=timedelta(minutes=self.signin_forget_minutes))


def parse_console(data: Any, *, source: str, base: Path) -> ConsoleConfig:
    """Read a ``[console]`` table (absent: the defaults); ConfigError names the key."""
    if data is None:
        return ConsoleConfig()
    for old, new in _REPLACED.items():
        if isinstance(data, dict) and old in data:
            raise ConfigError(source, f"console.{old}", "is no longer read: sign-in failures"
                              f" back off per terminal and staff id; use {new} (D344)")
    r = SectionReader(data, source=source, section="console", known=_KEYS)
    get = r.get
    d = ConsoleConfig()
    where = r.listen(Listen(d.bind, d.port, d.allowed_clients))
    methods = get("acknowledge_with", list, list(d.acknowledge_with))
    wrong = [m for m in methods if m not in ACK_METHODS]
    if wrong or not methods or len(set(methods)) != len(methods):
        raise ConfigError(source, "console.acknowledge_with",
                          f"must list one or more of {', '.join(ACK_METHODS)}, each once")
    numbers = {}
    for key, low, high in (("session_minutes", 1, 24 * 60), ("signin_free_failures", 1, 100),
                           ("signin_backoff_seconds", 1, 3600),
                           ("signin_backoff_max_seconds", 1, 24 * 3600),
                           ("signin_forget_minutes", 1, 7 * 24 * 60)):
        numbers[key] = get(key, int, getattr(d, key))
        if not low <= numbers[key] <= high:
            raise ConfigError(source, f"console.{key}", f"must be {low}..{high}")
    if numbers["signin_backoff_max_seconds"] < numbers["signin_backoff_seconds"]:
        raise ConfigError(source, "console.signin_backoff_max_seconds",
                          "must be at least signin_backoff_seconds (the first wait)")
    notice = get("recovery_notice_seconds", float, d.recovery_notice_seconds)
    if not 1 <= notice <= 3600:
        raise ConfigError(source, "console.recovery_notice_seconds", "must be 1..3600")
    tap = get("tap_seconds", float, d.tap_seconds)
    if not 1 <= tap <= 300:
        raise ConfigError(source, "console.tap_seconds", "must be 1..300")
    signatures = None
    if "signatures" in data:
        signatures = config_path(get("signatures", str, ""), base)
    return ConsoleConfig(
        enabled=get("enabled", bool, d.enabled), bind=where.bind, port=where.port,
        allowed_clients=where.allowed_clients, acknowledge_with=tuple(methods),
        verify_payouts=get("verify_payouts", bool, d.verify_payouts), tap_seconds=tap,
        signatures=signatures, rule_at_table=get("rule_at_table", bool, d.rule_at_table),
        require_issued=get("require_issued", bool, True) if "require_issued" in data else None,
        recovery_notice_seconds=notice, **numbers)
