"""Read paytable files (TOML, format in docs/paytables.md) into `Paytables`.

The I/O half of the paytables: finding and reading the file. Validation is pure and lives in
`game.paytable_schema`. Every failure is a `ConfigError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

from controller.text_files import load_toml, shipped_or_configured
from game.paytable_schema import parse_paytables
from game.paytables import Paytables

__all__ = ["PAYTABLES_ENV", "default_paytables_path", "read_paytables"]

PAYTABLES_ENV = "SHOWDOWN_PAYTABLES"


def default_paytables_path() -> Path:
    """The paytables in force: $SHOWDOWN_PAYTABLES if set, else the repository's config file."""
    return shipped_or_configured(PAYTABLES_ENV, "paytables.toml", what="paytable",
                                 flag="--paytables")


def read_paytables(path: Path | None = None) -> Paytables:
    """Read and validate a paytable file (the default one when ``path`` is None)."""
    path = default_paytables_path() if path is None else path
    return parse_paytables(load_toml(path), str(path))
