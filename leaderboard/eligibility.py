"""Who may play: age 18+ and the exclusion lists, checked at the desk (promotion rules 1-3, 5).

The casino's lists (refusal of entry, self-exclusion, excluded persons, staff and agents,
associated persons) arrive as CSV files, one person a row (``id_number, name[, ...]``; a first
row whose first cell is ``id_number`` is a header, and a header naming a ``birth_date`` column
gives each person's birth date). Each import is stored with its source and date (`Exclusion`
rows); a newer import of the same list kind from the same source replaces the older one for
checks, and the older rows are kept for the record.

A person is checked on every document they presented (a list row naming one of them refuses)
and on their name, as people write names (leaderboard.name_similarity: case, accents, order,
initials, a dropped or added middle name, a short or pet form, surname particles joined or
split, one part of a double-barrelled surname, a spelling or phonetic variant), weighed with
the birth date (D367, D369: the house's thresholds, tournament settings [list_checks]): a name
match without a document match is a *possible match* (`Verdict.possible`), which the desk holds
for a supervisor's decision, never refuses or clears by itself; a match a supervisor approved
for the patron (`IdentityHold`) is not raised again. A check reads only the list rows that share
a blocking key with the name (`ExclusionNameKey`, D368).

`check` answers eligible, or the reasons not; `record_refusal` stores a `Refusal` row. Ages are
taken on the venue-local date (Africa/Johannesburg): a patron is 18 from the first moment of
their 18th birthday; one born on 29 February turns 18 on 1 March in a common year.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import Final

from sqlalchemy import bindparam, case, distinct, func, insert, select
from sqlalchemy.orm import Session

from game.errors import GameError
from game.tournament.schema import NameCheckSettings
from leaderboard.audit_trail.chain import audit_row
from leaderboard.models import Exclusion, ExclusionNameKey, IdentityHold, Patron, Refusal
from leaderboard.name_match import letters_key, name_key
from leaderboard.name_similarity import (
    Similarity,
    blocking_keys,
    compare,
    name_parts,
    needed_parts,
    query_keys,
)

__all__ = [
    "ID_KINDS",
    "LIST_KINDS",
    "LIST_LABELS",
    "MIN_AGE",
    "Candidate",
    "EligibilityError",
    "ImportResult",
    "ListFileError",
    "ListIndex",
    "ListRow",
    "PossibleMatch",
    "Verdict",
    "age_on",
    "approved_keys",
    "as_utc",
    "check",
    "from_db",
    "import_list",
    "in_force",
    "match_key",
    "name_verdict",
    "normalize_id",
    "parse_list",
    "read_list",
    "record_refusal",
    "turns_adult_on",
]

MIN_AGE: Final = 18
ID_KINDS: Final = ("rewards_card", "id_document", "licence", "passport")  # rule 5
LIST_KINDS: Final = ("refusal_of_entry", "self_exclusion", "excluded", "staff", "associated")
LIST_LABELS: Final = {
    "refusal_of_entry": "the refusal-of-entry list",  # rule 2
    "self_exclusion": "the self-exclusion list",  # rule 2
    "excluded": "the excluded-persons list",  # rule 2
    "staff": "the staff, agents and marketing providers list",  # rule 3
    "associated": "the associated-persons list (family and partners of staff)",  # rule 3
}
_ID_PATTERN: Final = re.compile(r"[A-Z0-9]{4,64}")
_ID_SEPARATORS: Final = re.compile(r"[\s\-/]+")


class EligibilityError(GameError, ValueError):
    """Bad eligibility input: an unknown list kind, a malformed ID number, a stale list."""


class ListFileError(EligibilityError):
    """A list file that cannot be imported; names the file and (where known) the line."""

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")


def normalize_id(text: str) -> str:
    """An ID, passport, licence or rewards-card number in one form: upper case, no separators.

    Raises ValueError for anything that is not 4-64 letters and digits.
    """
    value = _ID_SEPARATORS.sub("", text.strip()).upper()
    if not _ID_PATTERN.fullmatch(value):
        raise ValueError(f"{text!r} is not a document or card number (4-64 letters and digits)")
    return value


def as_utc(moment: datetime) -> datetime:
    """An aware datetime in UTC (what the database stores); naive values are refused."""
    if moment.utcoffset() is None:
        raise ValueError(f"{moment!r} has no time zone")
    return moment.astimezone(UTC)


def from_db(moment: datetime) -> datetime:
    """A datetime read back from the database, aware in UTC (SQLite returns it naive)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# ---- the lists --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ListRow:
    """One person on a list file: the normalised ID number, the name and the birth date
    where the list gives one, with the file line."""

    line: int
    id_number: str
    name: str
    birth_date: date | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What an import stored: the list kind, its source and date, how many rows, and when."""

    kind: str
    source: str
    source_date: date
    rows: int
    imported_at: datetime
    replaced: int  # rows of the earlier import of this list that no longer count


def parse_list(text: str, source: str) -> tuple[ListRow, ...]:
    """Parse a list file's text; every bad row raises ListFileError naming `source` and line.

    Blank lines and lines starting with ``#`` are skipped; an ID number twice is an error
    (the file is probably a bad merge); a header's ``birth_date`` column (YYYY-MM-DD, may be
    empty) is read, other columns after the name are ignored.
    """
    rows: list[ListRow] = []
    seen: dict[str, int] = {}
    born_at: int | None = None  # the birth_date column, when the header names one
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for fields in reader:
            line = reader.line_num
            cells = [c.strip() for c in fields]
            if not any(cells) or cells[0].startswith("#"):
                continue
            if not rows and not seen and cells[0].lower().replace(" ", "_") == "id_number":
                header = [c.lower().replace(" ", "_") for c in cells]
                born_at = header.index("birth_date") if "birth_date" in header else None
                continue  # the header
            if len(cells) < 2 or not cells[1]:
                raise ListFileError(source, line, "each row needs an id_number and a name")
            try:
                id_number = normalize_id(cells[0])
            except ValueError as exc:
                raise ListFileError(source, line, str(exc)) from None
            if id_number in seen:
                raise ListFileError(
                    source, line, f"id_number {id_number} is already on line {seen[id_number]}"
                )
            seen[id_number] = line
            rows.append(ListRow(line=line, id_number=id_number, name=" ".join(cells[1].split()),
                                birth_date=_list_birth_date(cells, born_at, source, line)))
    except csv.Error as exc:
        raise ListFileError(source, reader.line_num, f"not valid CSV: {exc}") from None
    if not rows:
        raise ListFileError(
            source, None, "no rows: a list must name at least one person (an empty file cannot"
            " replace a list)"
        )
    return tuple(rows)


def _list_birth_date(cells: Sequence[str], column: int | None, source: str,
                     line: int) -> date | None:
    if column is None or column >= len(cells) or not cells[column]:
        return None
    try:
        return date.fromisoformat(cells[column])
    except ValueError:
        raise ListFileError(source, line, f"birth_date {cells[column]!r} is not a date such as"
                            " 1990-05-31") from None


def read_list(path: str | Path) -> tuple[ListRow, ...]:
    """Read and parse a list file (UTF-8, a byte-order mark allowed)."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ListFileError(source, None, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ListFileError(source, line, "not UTF-8 text") from None
    return parse_list(text, source)


def _latest_batch(session: Session, kind: str, source: str) -> tuple[date, datetime] | None:
    """The (source_date, imported_at) of the import of this list that counts, if any."""
    row = session.execute(
        select(Exclusion.source_date, Exclusion.imported_at)
        .where(Exclusion.list_kind == kind, Exclusion.source == source)
        .order_by(Exclusion.source_date.desc(), Exclusion.imported_at.desc())
        .limit(1)
    ).first()
    return None if row is None else (row[0], from_db(row[1]))


def import_list(session: Session, *, kind: str, rows: Sequence[ListRow], source: str,
                source_date: date, at: datetime, actor: str) -> ImportResult:
    """Store one list import (not committed) and its audit row; refuses stale imports.

    A list older than the one in force from the same source (`source_date` earlier) is
    refused, so a stale file can never undo a newer exclusion.
    """
    if kind not in LIST_KINDS:
        raise EligibilityError(f"unknown list kind {kind!r} (one of {', '.join(LIST_KINDS)})")
    source = " ".join(source.split())
    if not source:
        raise EligibilityError("name the list's source (who issued it)")
    if not rows:
        raise EligibilityError(f"the {kind} list from {source} has no rows")
    imported_at = as_utc(at)
    latest = _latest_batch(session, kind, source)
    replaced = 0
    if latest is not None:
        if source_date < latest[0]:
            raise EligibilityError(
                f"the {kind} list from {source} dated {source_date} is older than the one in"
                f" force (dated {latest[0]}): refusing a stale list"
            )
        if imported_at <= latest[1]:
            raise EligibilityError(
                f"the {kind} list from {source} was already imported at"
                f" {latest[1]:%Y-%m-%d %H:%M:%S} UTC; import again later"
            )
        replaced = session.scalar(
            select(func.count()).select_from(Exclusion).where(
                Exclusion.list_kind == kind, Exclusion.source == source,
                Exclusion.source_date == latest[0], Exclusion.imported_at == latest[1],
            )
        ) or 0
    stored = [Exclusion(list_kind=kind, id_number=row.id_number, name=row.name,
                        source=source, source_date=source_date, imported_at=imported_at,
                        birth_date=row.birth_date, name_key=name_key(row.name)[:200],
                        letters_key=letters_key(row.name)[:100]) for row in rows]
    session.add_all(stored)
    session.flush()  # the rows' ids, for their name keys
    keys = [{"exclusion_id": e.id, "part": part, "parts": len(name_parts(e.name)),
             "key": key[:64]} for e in stored for part, key in blocking_keys(e.name)]
    if keys:
        session.execute(insert(ExclusionNameKey), keys)
    audit_row(session, imported_at, actor, "list.imported", {
        "kind": kind, "source": source, "source_date": source_date.isoformat(),
        "rows": len(rows), "replaced_rows": replaced,
    })
    return ImportResult(kind=kind, source=source, source_date=source_date, rows=len(rows),
                        imported_at=imported_at, replaced=replaced)


# ---- the check --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """The facts checked: a document or card number (and any others the person presented),
    a name and a birth date."""

    id_number: str
    name: str
    birth_date: date
    patron_id: str | None = None
    documents: tuple[str, ...] = ()  # besides id_number

    @classmethod
    def of(cls, patron: Patron) -> Candidate:
        """The facts of a registered patron, with every document they presented."""
        others = tuple(d.number for d in patron.documents if d.number != patron.id_number)
        return cls(id_number=patron.id_number, name=patron.name, birth_date=patron.birth_date,
                   patron_id=patron.patron_id, documents=others)

    def numbers(self) -> tuple[str, ...]:
        """Every document number, normalised (ValueError for one that is not a number)."""
        return tuple(dict.fromkeys(normalize_id(n) for n in (self.id_number, *self.documents)))


@dataclass(frozen=True, slots=True, kw_only=True)
class PossibleMatch:
    """A list row whose name (and birth date, where the list has one) matches a person whose
    documents it does not name: for a supervisor to decide (``key`` identifies the row across
    imports of its list)."""

    list_kind: str
    source: str
    source_date: date
    list_name: str
    list_birth_date: date | None
    how: str  # "name" | "initials" | "similar"
    key: str
    score: int = 100  # the share of the name matched, percent (D367)
    detail: str = ""  # how the names differ: "pet form, 1 listed name not given", ...

    def as_json(self) -> dict[str, object]:
        """The match as stored in the hold and shown at the desk."""
        return {"list_kind": self.list_kind, "source": self.source,
                "source_date": self.source_date.isoformat(), "list_name": self.list_name,
                "list_birth_date": (self.list_birth_date.isoformat()
                                    if self.list_birth_date else None),
                "how": self.how, "key": self.key, "score": self.score,
                "detail": self.detail}

    def sentence(self) -> str:
        """The match in one line."""
        born = f", born {self.list_birth_date}" if self.list_birth_date else ""
        how = {"name": "the same name",
               "initials": "the same name but for initials"}.get(
                   self.how, f"a similar name ({self.detail}; {self.score}% alike)")
        return (f"possible match on {LIST_LABELS[self.list_kind]} ({self.source}, dated"
                f" {self.source_date}): {self.list_name!r}{born}, {how}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The answer: no reasons means eligible; each reason is one sentence for the patron file."""

    reasons: tuple[str, ...]
    lists: tuple[str, ...]  # the list kinds the person is on (in force)
    possible: tuple[PossibleMatch, ...] = ()  # name matches without a document match

    @property
    def held(self) -> bool:
        """Eligible but for possible matches a supervisor must decide."""
        return not self.reasons and bool(self.possible)

    @property
    def eligible(self) -> bool:
        """Whether nothing stands in the way."""
        return not self.reasons

    @property
    def reason(self) -> str:
        """Every reason in one line."""
        return "; ".join(self.reasons)


def age_on(birth_date: date, day: date) -> int:
    """Whole years of age on `day` (one born on 29 February ages on 1 March in common years)."""
    return day.year - birth_date.year - ((day.month, day.day) < (birth_date.month, birth_date.day))


def turns_adult_on(birth_date: date) -> date:
    """The first day on which a person born on `birth_date` is MIN_AGE years old."""
    year = birth_date.year + MIN_AGE
    try:
        return birth_date.replace(year=year)
    except ValueError:  # 29 February in a common year: 1 March
        return date(year, 3, 1)


_Batches = dict[tuple[str, str], tuple[date, datetime] | None]


def _in_force_rows(session: Session, rows: Iterable[Exclusion], current: _Batches
                   ) -> list[Exclusion]:
    """The rows that belong to the import in force of their list (`current` caches them)."""
    in_force: list[Exclusion] = []
    for row in rows:
        key = (row.list_kind, row.source)
        if key not in current:
            current[key] = _latest_batch(session, *key)
        if current[key] == (row.source_date, from_db(row.imported_at)):
            in_force.append(row)
    return in_force


@dataclass(frozen=True, slots=True)
class ListIndex:
    """Every list row in force, in memory, by document number and by name blocking key
    (leaderboard.name_similarity.blocking_keys): for checking many people at once (a list
    imported later screens every patron)."""

    by_number: Mapping[str, tuple[Exclusion, ...]]
    by_key: Mapping[str, tuple[tuple[Exclusion, int], ...]]  # (row, part of its name)

    @classmethod
    def load(cls, session: Session) -> ListIndex:
        """Read the rows of every list's import in force."""
        by_number: dict[str, list[Exclusion]] = defaultdict(list)
        by_key: dict[str, list[tuple[Exclusion, int]]] = defaultdict(list)
        for kind, source in session.execute(
                select(Exclusion.list_kind, Exclusion.source).distinct()).all():
            latest = _latest_batch(session, kind, source)
            if latest is None:
                continue
            for row in session.scalars(select(Exclusion).where(
                    Exclusion.list_kind == kind, Exclusion.source == source,
                    Exclusion.source_date == latest[0], Exclusion.imported_at == latest[1])
                    .order_by(Exclusion.id)):
                by_number[row.id_number].append(row)
                for part, key in blocking_keys(row.name):
                    by_key[key[:64]].append((row, part))
        return cls(by_number={k: tuple(v) for k, v in by_number.items()},
                   by_key={k: tuple(v) for k, v in by_key.items()})

    def by_name(self, name: str) -> list[Exclusion]:
        """The rows sharing keys with `name` on enough of their parts, in list order."""
        hit: dict[int, set[int]] = defaultdict(set)
        rows: dict[int, Exclusion] = {}
        for key in query_keys(name):
            for row, part in self.by_key.get(key[:64], ()):
                hit[row.id].add(part)
                rows[row.id] = row
        return [rows[i] for i in sorted(hit)
                if len(hit[i]) >= needed_parts(len(name_parts(rows[i].name)))]


# Built once (a statement keeps its compiled cache key): every buy-in and seating asks them.
_BY_NUMBERS: Final = (select(Exclusion)
                      .where(Exclusion.id_number.in_(bindparam("numbers", expanding=True)))
                      .order_by(Exclusion.id))
_KEYS: Final = ExclusionNameKey
_BY_NAME_KEYS: Final = (
    select(Exclusion)
    .where(Exclusion.id.in_(
        select(_KEYS.exclusion_id)
        .where(_KEYS.key.in_(bindparam("keys", expanding=True)))
        .group_by(_KEYS.exclusion_id)
        .having(func.count(distinct(_KEYS.part)) >= case(  # needed_parts, in SQL
            (func.max(_KEYS.parts) < 2, func.max(_KEYS.parts)), else_=2))))
    .order_by(Exclusion.id))
_SHIPPED_NAME_CHECKS: Final = NameCheckSettings()


def _list_hits(session: Session, numbers: Sequence[str], index: ListIndex | None
               ) -> list[Exclusion]:
    """The rows in force naming one of `numbers`."""
    if index is not None:
        return sorted((r for n in numbers for r in index.by_number.get(n, ())),
                      key=lambda r: r.id)
    hits = session.scalars(_BY_NUMBERS, {"numbers": list(numbers)}).all()
    return _in_force_rows(session, hits, {})


def match_key(row: Exclusion) -> str:
    """What identifies a list row across imports of its list (a supervisor's approval of a
    possible match holds for every later import of the same row)."""
    born = row.birth_date.isoformat() if row.birth_date else "-"
    return f"{row.list_kind}|{row.source}|{row.id_number}|{row.name_key}|{born}"


def approved_keys(session: Session, patron_id: str | None) -> frozenset[str]:
    """The possible matches a supervisor approved for a patron (not raised again)."""
    if patron_id is None:
        return frozenset()
    keys: set[str] = set()
    for matches in session.scalars(select(IdentityHold.matches).where(
            IdentityHold.patron_id == patron_id, IdentityHold.decision == "approved")):
        keys.update(str(m.get("key")) for m in matches if isinstance(m, dict))
    return frozenset(keys)


def _percent(share: float) -> int:
    return int(round(share * 100, 6))  # 0.95 is 95, never 94.99999


def _detail(alike: Similarity) -> str:
    notes = [str(k) for k in alike.kinds()]
    unpaired_left = alike.left_parts - len(alike.pairs)
    unpaired_right = alike.right_parts - len(alike.pairs)
    if unpaired_right:
        notes.append(f"{unpaired_right} listed name{'s' if unpaired_right > 1 else ''}"
                     " not given")
    if unpaired_left:
        notes.append(f"{unpaired_left} name{'s' if unpaired_left > 1 else ''} not on the list")
    return ", ".join(notes) or "the same names"


def name_verdict(name: str, born: date, list_name: str, list_born: date | None,
                 rules: NameCheckSettings = _SHIPPED_NAME_CHECKS
                 ) -> tuple[str, int, str] | None:
    """Whether a person's name and birth date possibly match a list row's: (how, score,
    detail) or None (D367). The same birth date takes `rules.same_birth_date` percent of the
    shorter name; a row without one `rules.no_birth_date`; another birth date
    `rules.other_birth_date` percent of the longer name. Always a written-out name and two
    parts in common (one when the list gives a single name)."""
    alike = compare(name, list_name)
    if not alike.full_name_in_common or not alike.enough_parts:
        return None
    if list_born is None:
        score, needed = _percent(alike.cover), rules.no_birth_date
    elif list_born == born:
        score, needed = _percent(alike.cover), rules.same_birth_date
    else:
        score, needed = _percent(alike.whole), rules.other_birth_date
    if score < needed:
        return None
    if alike.identical:
        how = "name"
    elif (alike.left_parts == alike.right_parts == len(alike.pairs)
          and set(alike.kinds()) == {"initial"}):
        how = "initials"
    else:
        how = "similar"
    detail = _detail(alike)
    if list_born is not None and list_born != born:
        detail += f"; listed birth date {list_born}"
    return how, score, detail


def _name_hits(session: Session, facts: Candidate, skip: set[int], index: ListIndex | None,
               rules: NameCheckSettings) -> list[PossibleMatch]:
    """Rows in force whose name possibly matches (weighed with the birth date), but for
    those a supervisor approved for this patron."""
    keys = sorted({k[:64] for k in query_keys(facts.name)})
    if not keys:
        return []
    rows: Iterable[Exclusion]
    if index is not None:
        rows = index.by_name(facts.name)
    else:
        rows = _in_force_rows(session, session.scalars(_BY_NAME_KEYS, {"keys": keys}).all(),
                              {})
    found: list[PossibleMatch] = []
    for row in rows:
        if row.id in skip:
            continue
        verdict = name_verdict(facts.name, facts.birth_date, row.name, row.birth_date, rules)
        if verdict is not None:
            how, score, detail = verdict
            found.append(PossibleMatch(list_kind=row.list_kind, source=row.source,
                                       source_date=row.source_date, list_name=row.name,
                                       list_birth_date=row.birth_date, how=how,
                                       key=match_key(row), score=score, detail=detail))
    if not found:
        return found
    cleared = approved_keys(session, facts.patron_id)
    return [m for m in found if m.key not in cleared]


def check(session: Session, person: Candidate | Patron, at: datetime, *, tz: tzinfo,
          index: ListIndex | None = None, names: NameCheckSettings | None = None) -> Verdict:
    """Whether `person` may play at `at` (age on the venue-local date, then every list: on
    every document, then by name); `index`: the lists in force read once for many checks;
    `names`: the house's name-match thresholds (the shipped ones when None)."""
    facts = person if isinstance(person, Candidate) else Candidate.of(person)
    reasons: list[str] = []
    today = at.astimezone(tz).date()
    if facts.birth_date > today:
        reasons.append(f"birth date {facts.birth_date} is in the future")
    elif age_on(facts.birth_date, today) < MIN_AGE:
        reasons.append(
            f"under {MIN_AGE} (rule 1): born {facts.birth_date}, {MIN_AGE} only on"
            f" {turns_adult_on(facts.birth_date)}"
        )
    try:
        numbers = facts.numbers()
    except ValueError as exc:
        return Verdict(reasons=(*reasons, str(exc)), lists=())
    kinds: list[str] = []
    hits = _list_hits(session, numbers, index)
    for row in hits:
        rule = "rule 3" if row.list_kind in ("staff", "associated") else "rule 2"
        reasons.append(
            f"on {LIST_LABELS[row.list_kind]} ({rule}): {row.source}, dated {row.source_date}"
        )
        if row.list_kind not in kinds:
            kinds.append(row.list_kind)
    possible = _name_hits(session, facts, {r.id for r in hits}, index,
                          names or _SHIPPED_NAME_CHECKS)
    return Verdict(reasons=tuple(reasons), lists=tuple(kinds), possible=tuple(possible))


def record_refusal(session: Session, person: Candidate | Patron, verdict: Verdict,
                   at: datetime, *, context: str, actor: str) -> Refusal:
    """Store the refusal with its reasons (and an audit row); not committed."""
    facts = person if isinstance(person, Candidate) else Candidate.of(person)
    refusal = Refusal(id_number=facts.id_number, patron_id=facts.patron_id, context=context,
                      reason=verdict.reason, at=as_utc(at))
    session.add(refusal)
    audit_row(session, as_utc(at), actor, "eligibility.refused", {
        "context": context, "patron_id": facts.patron_id, "lists": list(verdict.lists),
        "reasons": list(verdict.reasons),
    })
    return refusal


def in_force(session: Session) -> Iterable[tuple[str, str, date, int]]:
    """Each list in force: (kind, source, source date, rows), for the desk's overview."""
    for kind, source in session.execute(
        select(Exclusion.list_kind, Exclusion.source).distinct()
        .order_by(Exclusion.list_kind, Exclusion.source)
    ).all():
        latest = _latest_batch(session, kind, source)
        if latest is None:
            continue
        count = session.scalar(select(func.count()).select_from(Exclusion).where(
            Exclusion.list_kind == kind, Exclusion.source == source,
            Exclusion.source_date == latest[0], Exclusion.imported_at == latest[1])) or 0
        yield kind, source, latest[0], count
