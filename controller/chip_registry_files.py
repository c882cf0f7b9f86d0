"""Read and write chip registry files (docs/chip-registry.md): the I/O half of the registry.

A registry is either the central database's CSV export (``uid_hex,value_cents,chip_set
[,issued_to]``) or a TOML file with ``[[chips]]`` tables, chosen by the file suffix. Parsing and
checks are pure and live in `game.chips.registry`; every failure is a `ConfigError` naming
the file (and the line or key).
"""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

from game.chips.registry import (
    CSV_COLUMNS,
    ChipRegistry,
    parse_registry_csv,
    parse_registry_toml,
)
from game.errors import ConfigError
from runtime.settings_files import load_toml, read_text

__all__ = ["read_registry", "write_registry_csv"]


def read_registry(
    path: Path, *, chip_set: str | None = None, require_issued: bool = True
) -> ChipRegistry:
    """Load a registry file (``.csv`` or ``.toml``); ``chip_set`` names the set in play."""
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".toml"):
        raise ConfigError(source, "", "a chip registry is a .csv or .toml file")
    text = read_text(path, encoding="utf-8-sig")
    if suffix == ".csv":
        return parse_registry_csv(
            text, source=source, chip_set=chip_set, require_issued=require_issued
        )
    data = load_toml(path, text)
    return parse_registry_toml(
        data, source=source, chip_set=chip_set, require_issued=require_issued
    )


def write_registry_csv(registry: ChipRegistry, path: Path, *, comment: str = "") -> None:
    """Write ``registry`` as CSV in the export format, atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            for line in comment.splitlines():
                out.write(f"# {line}\n" if line else "#\n")
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
            writer.writerows(registry.csv_rows())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
