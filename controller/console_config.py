"""The ``[console]`` section of the table config: the dealer's and participant's screens (where
they listen and who may reach them), how a participant acknowledges a score, the payout check,
staff sessions and lock-outs. Documented in docs/table-config.md ("[console]").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.listen_config import Listen, SectionReader
from game.errors import ConfigError
from runtime.config_paths import config_path

__all__ = ["ACK_METHODS", "ConsoleConfig", "parse_console"]

ACK_METHODS: Final = ("card", "pin", "signature")
_KEYS: Final = frozenset({
    "enabled", "bind", "port", "allowed_clients", "acknowledge_with", "verify_payouts",
    "require_issued", "recovery_notice_seconds",
    "session_minutes", "lockout_failures", "lockout_minutes", "tap_seconds", "signatures",
})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleConfig:
    """The console's settings (the defaults are a table PC's touch screen on itself)."""

    enabled: bool = True
    bind: str = "127.0.0.1"  # the table PC's own address; never 0.0.0.0 by default
    port: int = 8080  # 0 = any free port (tests)
    allowed_clients: tuple[str, ...] = ("127.0.0.1", "::1")
    acknowledge_with: tuple[str, ...] = ("card",)  # every method listed is required
    verify_payouts: bool = True
    # A float chip on a seated entry's spot is an alert (D460). None: not set (true).
    require_issued: bool | None = None
    # How often device trouble the drivers healed by themselves is journaled, one notice per
    # device with the counts (D461).
    recovery_notice_seconds: float = 60.0
    session_minutes: int = 720  # a signed-in session ends after this long idle
    lockout_failures: int = 5
    lockout_minutes: int = 5
    tap_seconds: float = 30.0  # how long the console waits for a card tap
    signatures: Path | None = None  # where drawn signatures are kept (default: by the journal)


def parse_console(data: Any, *, source: str, base: Path) -> ConsoleConfig:
    """Read a ``[console]`` table (absent: the defaults); ConfigError names the key."""
    if data is None:
        return ConsoleConfig()
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
    for key, low, high in (("session_minutes", 1, 24 * 60), ("lockout_failures", 1, 100),
                           ("lockout_minutes", 1, 24 * 60)):
        numbers[key] = get(key, int, getattr(d, key))
        if not low <= numbers[key] <= high:
            raise ConfigError(source, f"console.{key}", f"must be {low}..{high}")
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
        require_issued=get("require_issued", bool, True) if "require_issued" in data else None,
        recovery_notice_seconds=notice,
        signatures=signatures, **numbers)
