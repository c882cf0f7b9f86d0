"""The replay context of a dispute bundle, from the table's own configuration (the I/O half).

`showdown dispute export --config TABLE_TOML` reads the config the daemon runs with, the
tournament settings and paytables it names (their text goes into the bundle, so a replay
parses exactly what the table parsed), the chip registry rows of the chips the records name,
and the records that rebuild the table's state (`wire.dispute_context`). docs/disputes.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cli.errors import CommandError
from controller.config import read_table_config
from controller.wiring import ConfiguredDevices
from game.chips.registry import format_uid
from game.errors import ConfigError
from runtime.settings_files import default_paytables_path, default_tournament_path, read_text
from wire.dispute_bundle import Selection
from wire.dispute_context import context_records, named_uids, seated_entries

__all__ = ["CONTEXT_VERSION", "build_context"]

CONTEXT_VERSION = 1


def _document(path: Path) -> dict[str, str]:
    text = read_text(path)
    return {"source": str(path), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "text": text}


def build_context(config_path: Path, *, table: str, selection: Selection,
                  records: Sequence[Mapping[str, Any]],
                  messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``context`` part for `selection`; CommandError when the config is not the table's."""
    try:
        cfg = read_table_config(config_path)
        registry = ConfiguredDevices(cfg).chip_registry()
        tournament = _document(cfg.tournament or default_tournament_path())
        paytables = _document(cfg.paytables or default_paytables_path())
    except ConfigError as e:
        raise CommandError(f"--config: {e}") from e
    if cfg.table != table:
        raise CommandError(f"--config: {config_path} is table {cfg.table!r}'s configuration, "
                           f"not table {table!r}'s (the key's)")
    extra, hands_before = context_records(selection, records, messages)
    every = [*selection.records, *extra]
    uids = named_uids(every)
    entries = seated_entries(every)
    chips = [{"uid_hex": format_uid(c.uid), "value_cents": c.value_cents,
              "chip_set": c.chip_set, "issued_to": c.issued_to}
             for c in registry if format_uid(c.uid) in uids or c.issued_to in entries]
    if not any(c["chip_set"] == registry.chip_set for c in chips):  # the set in play, named
        c = next(c for c in registry if c.chip_set == registry.chip_set)
        chips.append({"uid_hex": format_uid(c.uid), "value_cents": c.value_cents,
                      "chip_set": c.chip_set, "issued_to": c.issued_to})
    raw = Path(cfg.source).read_bytes()
    return {
        "version": CONTEXT_VERSION,
        "table_config": {"source": cfg.source, "sha256": hashlib.sha256(raw).hexdigest()},
        "tournament": tournament, "paytables": paytables, "deal": dict(cfg.deal),
        "marker_set": cfg.marker_set, "chip_set": registry.chip_set, "chips": chips,
        "verify_payouts": cfg.console.verify_payouts,
        "lockout": {"free": cfg.console.signin_free_failures,
                    "first_seconds": cfg.console.signin_backoff_seconds,
                    "max_seconds": cfg.console.signin_backoff_max_seconds,
                    "forget_minutes": cfg.console.signin_forget_minutes},
        "require_issued": registry.require_issued,  # D346
        "hands_before": hands_before, "records": extra,
    }
