"""The chip registry: RFID UID -> value in cents and chip set, and who the chip is issued to.

Pure: parses text or already-parsed TOML data handed in by ``controller.chip_registry_files``
and answers lookups. A UID the registry does not know, a chip of another chip set, or a chip
issued to another entry is a *problem* for the pit, never a value (format: docs/chip-registry.md).
"""

from __future__ import annotations

import copy
import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from game.errors import ConfigError

__all__ = [
    "CSV_COLUMNS",
    "Chip",
    "ChipProblem",
    "ChipRegistry",
    "ProblemKind",
    "Resolution",
    "Spot",
    "format_uid",
    "parse_registry_csv",
    "parse_registry_toml",
    "parse_uid",
]

CSV_COLUMNS = ("uid_hex", "value_cents", "chip_set", "issued_to")  # issued_to is optional
UID_BYTES = 8
MAX_VALUE_CENTS = 100_000_000  # R1,000,000: no chip or plaque is worth more
_UID_RE = re.compile(r"[0-9A-Fa-f]{16}")
_DIGITS = re.compile(r"[0-9]+")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}")

ProblemKind = Literal["unknown_chip", "other_chip_set", "issued_to_other_entry", "not_issued",
                      "chip_pooling"]  # chip_pooling: bound to another entry at run time


def parse_uid(text: str) -> bytes:
    """An 8-byte UID from 16 hex digits, most significant byte first ("E0045D0000000001")."""
    if not _UID_RE.fullmatch(text):
        raise ValueError(f"a UID is 16 hex digits, got {text!r}")
    return bytes.fromhex(text)


def format_uid(uid: bytes) -> str:
    """16 upper-case hex digits, the form the registry files and alerts use."""
    return uid.hex().upper()


@dataclass(frozen=True, slots=True, kw_only=True)
class Chip:
    """One registered chip: its UID, face value, chip set and the entry it is issued to."""

    uid: bytes
    value_cents: int
    chip_set: str
    issued_to: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipProblem:
    """A chip that must not count: unknown, of another set, issued elsewhere or not issued."""

    kind: ProblemKind
    uid: bytes
    detail: str
    chip: Chip | None = None



class Spot(Protocol):
    """Where chips lie: a seat and one of its betting spots (e.g. ``drivers.readings.SpotId``)."""

    @property
    def seat(self) -> int:
        """Seat 1..6."""

    @property
    def spot(self) -> str:
        """The betting spot's name."""


class Resolution(NamedTuple):
    """What a set of UIDs is worth: only chips that pass every check count."""

    total_cents: int
    problems: tuple[ChipProblem, ...]


class ChipRegistry:
    """Every registered chip, with the chip set now in play; lookups by UID."""

    def __init__(
        self,
        chips: Iterable[Chip],
        *,
        chip_set: str | None = None,
        require_issued: bool = True,
        source: str = "<registry>",
    ) -> None:
        by_uid: dict[bytes, Chip] = {}
        for chip in chips:
            _check_chip(chip, source)
            if chip.uid in by_uid:
                raise ConfigError(source, format_uid(chip.uid), "UID registered twice")
            by_uid[chip.uid] = chip
        sets = sorted({c.chip_set for c in by_uid.values()})
        if chip_set is None:
            if len(sets) != 1:
                found = ", ".join(sets) or "none"
                raise ConfigError(
                    source, "chip_set", f"name the chip set in play (the registry holds: {found})"
                )
            chip_set = sets[0]
        elif chip_set not in sets:
            raise ConfigError(source, "chip_set", f"no chip of chip set {chip_set!r} registered")
        self._chips = by_uid
        self._ordered: tuple[Chip, ...] | None = None  # in UID order, made at the first need
        self._by_holder: dict[str, tuple[Chip, ...]] | None = None  # entry -> chips issued
        self.chip_set = chip_set
        self.require_issued = require_issued
        self.source = source

    def __len__(self) -> int:
        return len(self._chips)

    def __contains__(self, uid: object) -> bool:
        return uid in self._chips

    def __iter__(self) -> Iterator[Chip]:
        if self._ordered is None:  # the chips never change once registered
            self._ordered = tuple(sorted(self._chips.values(), key=lambda c: c.uid))
        return iter(self._ordered)

    @property
    def chip_sets(self) -> tuple[str, ...]:
        """Every chip set with at least one registered chip, sorted."""
        return tuple(sorted({c.chip_set for c in self._chips.values()}))

    def requiring(self, issued: bool) -> ChipRegistry:
        """The same chips with ``require_issued`` set to ``issued`` (a table's setting)."""
        if issued == self.require_issued:
            return self
        other = copy.copy(self)
        other.require_issued = issued
        return other

    def lookup(self, uid: bytes) -> Chip | None:
        """The registered chip with this UID, or None."""
        return self._chips.get(uid)

    def issued_to(self, entry: str) -> tuple[Chip, ...]:
        """The chips of the set in play issued to ``entry``, in UID order."""
        return tuple(c for c in self.issued_any(entry) if c.chip_set == self.chip_set)

    def issued_any(self, entry: str) -> tuple[Chip, ...]:
        """The chips of every chip set issued to ``entry``, in UID order."""
        if self._by_holder is None:  # the chips never change once registered
            by_holder: dict[str, list[Chip]] = {}
            for chip in self:
                if chip.issued_to is not None:
                    by_holder.setdefault(chip.issued_to, []).append(chip)
            self._by_holder = {k: tuple(v) for k, v in by_holder.items()}
        return self._by_holder.get(entry, ())

    def check(self, uid: bytes, *, entry: str | None, where: str = "") -> ChipProblem | None:
        """Why this chip must not count for ``entry`` (None: it counts at its value). A chip
        issued to nobody is `not_issued` when ``require_issued`` and an entry plays it."""
        at = f" on {where}" if where else ""
        tag = format_uid(uid) if len(uid) == UID_BYTES else uid.hex().upper()
        chip = self._chips.get(uid)
        if chip is None:
            return ChipProblem(
                kind="unknown_chip", uid=uid, detail=f"chip {tag}{at} is not in the registry"
            )
        if chip.chip_set != self.chip_set:
            return ChipProblem(
                kind="other_chip_set", uid=uid, chip=chip,
                detail=f"chip {tag}{at} belongs to chip set {chip.chip_set!r}, "
                f"not {self.chip_set!r}",
            )
        if chip.issued_to is not None and chip.issued_to != entry:
            who = f"entry {entry}" if entry is not None else "a seat with no entry"
            return ChipProblem(
                kind="issued_to_other_entry", uid=uid, chip=chip,
                detail=f"chip {tag}{at} is issued to entry {chip.issued_to}, played by {who}",
            )
        if chip.issued_to is None and self.require_issued and entry is not None:
            return ChipProblem(
                kind="not_issued", uid=uid, chip=chip,
                detail=f"chip {tag}{at} is not issued to any entry",
            )
        return None

    def resolve(
        self, uids: Iterable[bytes], *, entry: str | None, spot: Spot | None = None
    ) -> Resolution:
        """Total value in cents of the chips that count for ``entry``, and every problem."""
        where = f"seat {spot.seat} {spot.spot}" if spot is not None else ""
        total = 0
        problems: list[ChipProblem] = []
        for uid in sorted(set(uids)):
            problem = self.check(uid, entry=entry, where=where)
            if problem is None:
                total += self._chips[uid].value_cents
            else:
                problems.append(problem)
        return Resolution(total, tuple(problems))

    def csv_rows(self) -> list[tuple[str, str, str, str]]:
        """The registry as CSV rows (no header), UID order, in the central DB export format."""
        return [
            (format_uid(c.uid), str(c.value_cents), c.chip_set, c.issued_to or "") for c in self
        ]


def _check_chip(chip: Chip, source: str) -> None:
    key = format_uid(chip.uid) if len(chip.uid) == UID_BYTES else "uid"
    if len(chip.uid) != UID_BYTES:
        raise ConfigError(source, key, f"a UID is {UID_BYTES} bytes, got {len(chip.uid)}")
    if type(chip.value_cents) is not int or not 0 < chip.value_cents <= MAX_VALUE_CENTS:
        raise ConfigError(source, key, f"value_cents must be 1..{MAX_VALUE_CENTS} cents")
    if not _NAME_RE.fullmatch(chip.chip_set):
        raise ConfigError(source, key, f"bad chip_set name {chip.chip_set!r}")
    if chip.issued_to is not None and not _NAME_RE.fullmatch(chip.issued_to):
        raise ConfigError(source, key, f"bad issued_to entry id {chip.issued_to!r}")


# ----------------------------------------------------------------------------- parsing


def _field_uid(text: str, where: str) -> bytes:
    try:
        return parse_uid(text)
    except ValueError as exc:
        raise ConfigError(where, "uid_hex", str(exc)) from None


def _field_cents(text: str, where: str, key: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise ConfigError(where, key, f"whole cents, digits only (no sign or decimals): {text!r}")
    value = int(text)
    if not 0 < value <= MAX_VALUE_CENTS:
        raise ConfigError(where, key, f"must be 1..{MAX_VALUE_CENTS} cents, got {value}")
    return value


def _field_name(text: str, where: str, key: str) -> str:
    if not _NAME_RE.fullmatch(text):
        raise ConfigError(
            where, key, f"1..64 letters, digits and ._:/-, starting alphanumeric: {text!r}"
        )
    return text


def parse_registry_csv(
    text: str, *, source: str, chip_set: str | None = None, require_issued: bool = True
) -> ChipRegistry:
    """A registry from CSV text: header ``uid_hex,value_cents,chip_set[,issued_to]``.

    Blank lines and lines starting with ``#`` are skipped. Errors name ``source:line`` and the
    column.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    chips: list[Chip] = []
    first_line: dict[bytes, int] = {}
    try:
        for row in reader:
            line = reader.line_num
            where = f"{source}:{line}"
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            fields = [f.strip() for f in row]
            if header is None:
                if tuple(fields) not in (CSV_COLUMNS[:3], CSV_COLUMNS):
                    raise ConfigError(
                        where, "header", f"expected {','.join(CSV_COLUMNS[:3])}[,issued_to], "
                        f"got {','.join(fields)}"
                    )
                header = fields
                continue
            if len(fields) != len(header):
                raise ConfigError(
                    where, "", f"{len(fields)} fields, the header has {len(header)}"
                )
            uid = _field_uid(fields[0], where)
            if uid in first_line:
                raise ConfigError(
                    where, "uid_hex", f"UID {format_uid(uid)} already on line {first_line[uid]}"
                )
            first_line[uid] = line
            issued = fields[3] if len(fields) == 4 else ""
            chips.append(
                Chip(
                    uid=uid,
                    value_cents=_field_cents(fields[1], where, "value_cents"),
                    chip_set=_field_name(fields[2], where, "chip_set"),
                    issued_to=_field_name(issued, where, "issued_to") if issued else None,
                )
            )
    except csv.Error as exc:
        raise ConfigError(f"{source}:{reader.line_num}", "", f"CSV syntax error: {exc}") from None
    if header is None:
        raise ConfigError(source, "header", "empty file: no header line")
    if not chips:
        raise ConfigError(source, "", "no chips registered")
    return ChipRegistry(chips, chip_set=chip_set, require_issued=require_issued, source=source)


def parse_registry_toml(
    data: Mapping[str, Any],
    *,
    source: str,
    chip_set: str | None = None,
    require_issued: bool = True,
) -> ChipRegistry:
    """A registry from parsed TOML: an array of tables ``[[chips]]`` with the CSV's keys.

    ``uid_hex`` and ``chip_set`` are strings, ``value_cents`` an integer, ``issued_to`` an
    optional string. Errors name ``source`` and the key (``chips[3].value_cents``).
    """
    unknown = sorted(set(data) - {"chips"})
    if unknown:
        raise ConfigError(source, unknown[0], "unknown key (expected only [[chips]])")
    rows = data.get("chips")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(source, "chips", "expected a non-empty array of tables [[chips]]")
    chips: list[Chip] = []
    first: dict[bytes, int] = {}
    for i, row in enumerate(rows):
        at = f"chips[{i}]"
        if not isinstance(row, dict):
            raise ConfigError(source, at, "expected a table")
        extra = sorted(set(row) - set(CSV_COLUMNS))
        if extra:
            raise ConfigError(source, f"{at}.{extra[0]}", "unknown key")
        for key in CSV_COLUMNS[:3]:
            if key not in row:
                raise ConfigError(source, f"{at}.{key}", "missing")
        uid_text, cents, set_name = row["uid_hex"], row["value_cents"], row["chip_set"]
        issued = row.get("issued_to")
        if not isinstance(uid_text, str):
            raise ConfigError(source, f"{at}.uid_hex", "expected a string of 16 hex digits")
        try:
            uid = parse_uid(uid_text)
        except ValueError as exc:
            raise ConfigError(source, f"{at}.uid_hex", str(exc)) from None
        if uid in first:
            raise ConfigError(source, f"{at}.uid_hex", f"UID already in chips[{first[uid]}]")
        first[uid] = i
        if type(cents) is not int or not 0 < cents <= MAX_VALUE_CENTS:
            raise ConfigError(
                source, f"{at}.value_cents", f"expected an integer 1..{MAX_VALUE_CENTS}"
            )
        if not isinstance(set_name, str) or not _NAME_RE.fullmatch(set_name):
            raise ConfigError(source, f"{at}.chip_set", "expected a chip set name")
        if issued is not None and (not isinstance(issued, str) or not _NAME_RE.fullmatch(issued)):
            raise ConfigError(source, f"{at}.issued_to", "expected an entry id")
        chips.append(Chip(uid=uid, value_cents=cents, chip_set=set_name, issued_to=issued))
    return ChipRegistry(chips, chip_set=chip_set, require_issued=require_issued, source=source)
