"""The tournament chip inventory before and after play (Maryland COMAR 36.05.02.06: chips by
denomination and chip set, issued, returned, missing), from the chip registry and the tables'
``chips.reconciled`` reports.

Before: the registry as issued to the table(s) (every chip of each set, by denomination).
After: what the entries were issued, what they held at the end of their heat, what came back
to the float and what is missing, with every missing UID named. Pure: reports and a registry
in, rows out; the CSV and JSON forms are built here, the files are written by the caller.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from game.chips.registry import ChipRegistry, parse_uid
from game.messages.chips import ChipsReconciled
from game.money import format_rand

__all__ = ["CSV_HEADER", "Inventory", "InventoryRow", "Report", "build_inventory", "reports_of"]

_COUNTS: Final = ("registered", "issued", "held", "returned", "missing")
UNKNOWN: Final = "?"  # a denomination the registry given does not know (or none was given)
CSV_HEADER: Final = ("chip_set", "denomination_cents", "denomination", "registered",
                     "registered_cents", "issued", "issued_cents", "held", "held_cents",
                     "returned", "returned_cents", "missing", "missing_cents")


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """One stored ``chips.reconciled``: where it came from, and the message."""

    table: str
    seq: int
    message: ChipsReconciled


@dataclass(slots=True, kw_only=True)
class InventoryRow:
    """One chip set and denomination: counts and values in cents."""

    chip_set: str
    denomination_cents: int | None  # None: not known from the registry
    registered: int = 0
    issued: int = 0
    held: int = 0
    returned: int = 0
    missing: int = 0
    # Without a registry, the values the reports give (name -> cents); None: not known.
    reported: dict[str, int] | None = None

    def cents(self, name: str) -> int | None:
        """The value of this row's ``name`` chips (registered, issued, ...); None: unknown."""
        count = int(getattr(self, name))
        if self.denomination_cents is not None:
            return count * self.denomination_cents
        if self.reported is not None and name in self.reported:
            return self.reported[name]
        return None if count else 0

    def csv(self) -> tuple[str, ...]:
        """The row as CSV fields, in CSV_HEADER's order."""
        d = self.denomination_cents
        fields = [self.chip_set, UNKNOWN if d is None else str(d),
                  UNKNOWN if d is None else format_rand(d)]
        for name in _COUNTS:
            if name == "registered" and self.reported is not None:
                fields += [UNKNOWN, UNKNOWN]  # no registry given: the "before" is not known
                continue
            value = self.cents(name)
            fields += [str(getattr(self, name)), UNKNOWN if value is None else str(value)]
        return tuple(fields)


@dataclass(slots=True, kw_only=True)
class Inventory:
    """The inventory: rows by chip set and denomination, per-entry totals, missing UIDs."""

    source: str
    rows: list[InventoryRow] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)

    def as_csv(self) -> str:
        """CSV text: the header, then one row per chip set and denomination."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        writer.writerows(r.csv() for r in self.rows)
        return out.getvalue()

    def as_json(self) -> dict[str, Any]:
        """The whole inventory as JSON-ready data."""
        return {"source": self.source, "columns": list(CSV_HEADER),
                "rows": [dict(zip(CSV_HEADER, r.csv(), strict=True)) for r in self.rows],
                "totals": self.totals(), "entries": self.entries, "missing": self.missing}

    def totals(self) -> dict[str, int]:
        """Counts over every row, and the values in cents where denominations are known."""
        out: dict[str, int] = {}
        for name in _COUNTS:
            out[name] = sum(getattr(r, name) for r in self.rows)
            out[f"{name}_cents"] = sum(r.cents(name) or 0 for r in self.rows)
        return out


def build_inventory(reports: Sequence[Report], *, registry: ChipRegistry | None,
                    source: str) -> Inventory:
    """The inventory of these reports, valued through ``registry`` (None: counts only)."""
    rows: dict[tuple[str, int | None], InventoryRow] = {}

    def row(chip_set: str, uid_hex: str | None) -> InventoryRow:
        chip = None if registry is None or uid_hex is None else registry.lookup(parse_uid(uid_hex))
        key = (chip.chip_set, chip.value_cents) if chip is not None else (chip_set, None)
        found = rows.get(key)
        if found is None:
            found = rows[key] = InventoryRow(chip_set=key[0], denomination_cents=key[1])
        return found

    if registry is not None:
        for chip in registry:
            row(chip.chip_set, chip.uid.hex().upper()).registered += 1
    inventory = Inventory(source=source)
    for report in sorted(reports, key=lambda r: (r.table, r.seq)):
        m = report.message
        for name in _COUNTS[1:]:
            for uid_hex in getattr(m, name):
                found = row(m.chip_set, uid_hex)
                setattr(found, name, getattr(found, name) + 1)
            if registry is None:  # one row per chip set: the reports' values are its values
                found = row(m.chip_set, None)
                found.reported = found.reported or {"registered": 0}
                found.reported[name] = found.reported.get(name, 0) + getattr(m, f"{name}_cents")
        for uid_hex in m.missing:
            known = None if registry is None else registry.lookup(parse_uid(uid_hex))
            inventory.missing.append({
                "uid": uid_hex, "chip_set": m.chip_set, "entry_id": m.entry_id,
                "table": report.table, "heat_id": m.heat_id, "seat": m.seat,
                "value_cents": None if known is None else known.value_cents})
        inventory.entries.append({
            "table": report.table, "seq": report.seq, "entry_id": m.entry_id,
            "heat_id": m.heat_id, "seat": m.seat, "chip_set": m.chip_set,
            "issued": len(m.issued), "issued_cents": m.issued_cents, "held": len(m.held),
            "held_cents": m.held_cents, "returned": len(m.returned),
            "returned_cents": m.returned_cents, "missing": len(m.missing),
            "missing_cents": m.missing_cents, "at": m.at})
    inventory.rows = [rows[k] for k in sorted(rows, key=_order)]
    return inventory


def _order(key: tuple[str, int | None]) -> tuple[str, int]:
    return key[0], -1 if key[1] is None else key[1]


def reports_of(items: Iterable[tuple[str, int, ChipsReconciled]]) -> list[Report]:
    """Reports from (table, seq, message) triples."""
    return [Report(table=t, seq=s, message=m) for t, s, m in items]
