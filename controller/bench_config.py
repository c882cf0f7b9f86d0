"""The ``[bench]`` section of the table config: the technician's bench (docs/operations/bench.md),
a page and an API that drive a simulated table's simulated devices, served by the daemon only
when enabled, on its own address and port, to the clients it lists. Documented in
docs/table-config.md ("[bench]")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from controller.listen_config import Listen, SectionReader

__all__ = ["BenchConfig", "parse_bench"]

_KEYS: Final = frozenset({"enabled", "bind", "port", "allowed_clients"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """Where the bench listens and who may reach it (off unless enabled)."""

    enabled: bool = False
    bind: str = "127.0.0.1"  # the table PC's own address; never 0.0.0.0 by default
    port: int = 8091  # 0 = any free port (tests)
    allowed_clients: tuple[str, ...] = ("127.0.0.1", "::1")


def parse_bench(data: Any, *, source: str, simulated: bool) -> BenchConfig:
    """Read a ``[bench]`` table (absent: no bench); ``simulated``: whether any of the table's
    devices is simulated (a bench without one is a ConfigError naming bench.enabled)."""
    if data is None:
        return BenchConfig()
    r = SectionReader(data, source=source, section="bench", known=_KEYS)
    d = BenchConfig()
    enabled = r.get("enabled", bool, d.enabled)
    where = r.listen(Listen(d.bind, d.port, d.allowed_clients))
    if enabled and not simulated:
        raise r.error("enabled", 'the bench drives simulated devices, and no device of this'
                      ' table has kind = "sim"')
    return BenchConfig(enabled=enabled, bind=where.bind, port=where.port,
                       allowed_clients=where.allowed_clients)
