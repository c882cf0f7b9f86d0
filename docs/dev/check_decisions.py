"""Check docs/decisions/: every decision once, the index in step, the markers both ways.

    python docs/dev/check_decisions.py

- each area file holds decisions under `## D<n>` headings, in number order, each followed by
  its paragraph `**D<n>. ...`; every number from D1 to the highest appears in exactly one file;
- README.md lists every area file and every decision once, linking the file it is in, and its
  table by number maps every number to that file; "How to add a decision" names the next number;
- `**Superseded by D<m>**` under D<n> has `Supersedes D<n>` under D<m>, and the other way round;
- every `### From D<n>` in docs/performance.md and every pointer to one match;
- no Markdown or Python file still names the old single file.

Prints each problem and exits 1 when there is one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
DECISIONS = DOCS / "decisions"
INDEX = DECISIONS / "README.md"
PERFORMANCE = DOCS / "performance.md"
OLD_NAME = "docs/" + "decisions.md"  # split so that this file does not name it itself

HEADING = re.compile(r"^## D(\d+)$", re.M)
SUPERSEDED_BY = re.compile(r"^\*\*Superseded by D(\d+)\*\*", re.M)
SUPERSEDES = re.compile(r"^Supersedes D(\d+)\b", re.M)
PERF_POINTER = re.compile(r"performance\.md#from-d(\d+)\)")


def sections(text: str) -> list[tuple[int, str]]:
    """(number, its text up to the next decision's heading) for each decision of a file."""
    marks = list(HEADING.finditer(text))
    return [(int(m.group(1)), text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else None])
            for i, m in enumerate(marks)]


def check_files(problems: list[str]) -> tuple[dict[int, str], dict[int, str]]:
    where: dict[int, str] = {}
    body: dict[int, str] = {}
    for path in sorted(DECISIONS.glob("*.md")):
        if path == INDEX:
            continue
        numbers = []
        for n, text in sections(path.read_text()):
            numbers.append(n)
            if n in where:
                problems.append(f"D{n} is in {where[n]} and in {path.name}")
            where[n], body[n] = path.name, text
            if not re.search(rf"^\*\*D{n}\.", text, re.M):
                problems.append(f"{path.name}: D{n}'s heading is not followed by **D{n}. ...")
        if not numbers:
            problems.append(f"{path.name}: no decision")
        if numbers != sorted(numbers):
            problems.append(f"{path.name}: decisions not in number order")
    if where:
        missing = sorted(set(range(1, max(where) + 1)) - set(where))
        if missing:
            problems.append("numbers missing: " + ", ".join(f"D{n}" for n in missing))
    return where, body


def check_index(where: dict[int, str], problems: list[str]) -> None:
    text = INDEX.read_text()
    listed: dict[int, str] = {}
    for m in re.finditer(r"^- \[D(\d+)\]\(([\w-]+\.md)#d(\d+)\)", text, re.M):
        n, file = int(m.group(1)), m.group(2)
        if n in listed:
            problems.append(f"README.md lists D{n} twice")
        listed[n] = file
        if m.group(3) != m.group(1) or where.get(n) != file:
            problems.append(f"README.md: D{n} links {file}#d{m.group(3)}, it is in {where.get(n)}")
    for n in sorted(set(where) - set(listed)):
        problems.append(f"README.md does not list D{n}")
    files = set(where.values())
    headed = set(re.findall(r"^### \[[^\]]+\]\(([\w-]+\.md)\)", text, re.M))
    for file in sorted(files ^ headed):
        problems.append(f"README.md: area {file} is " + ("not listed" if file in files
                                                          else "listed but has no decision"))
    mapped: dict[int, str] = {}
    for m in re.finditer(r"^\| D(\d+)(?:–D(\d+))? \| \[([\w-]+\.md)\]", text, re.M):
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        for n in range(first, last + 1):
            if n in mapped:
                problems.append(f"README.md: D{n} is twice in the table by number")
            mapped[n] = m.group(3)
    for n in sorted(set(where) | set(mapped)):
        if mapped.get(n) != where.get(n):
            problems.append(f"README.md table by number: D{n} -> {mapped.get(n)}, "
                            f"it is in {where.get(n)}")
    if where and f"next free number (D{max(where) + 1} " not in text:
        problems.append(f"README.md: 'How to add a decision' should name D{max(where) + 1}")


def check_markers(body: dict[int, str], problems: list[str]) -> None:
    for n, text in sorted(body.items()):
        for later in map(int, SUPERSEDED_BY.findall(text)):
            if later not in body or n not in map(int, SUPERSEDES.findall(body[later])):
                problems.append(f"D{n} is superseded by D{later}, which does not say Supersedes")
        for earlier in map(int, SUPERSEDES.findall(text)):
            if earlier not in body or n not in map(int, SUPERSEDED_BY.findall(body[earlier])):
                problems.append(f"D{n} supersedes D{earlier}, which is not marked Superseded")


def check_performance(body: dict[int, str], problems: list[str]) -> None:
    moved = {int(n) for n in re.findall(r"^### From D(\d+)$", PERFORMANCE.read_text(), re.M)}
    pointed = {n for n, text in body.items() if int(n) in map(int, PERF_POINTER.findall(text))}
    for n in sorted(moved - pointed):
        problems.append(f"performance.md has figures from D{n}, whose text does not point there")
    for n in sorted(pointed - moved):
        problems.append(f"D{n} points at performance.md#from-d{n}, which does not exist")


def check_old_name(problems: list[str]) -> None:
    root = DOCS.parent
    files = subprocess.run(["git", "ls-files", "*.md", "*.py"], cwd=root, check=True,  # noqa: S607
                           capture_output=True, text=True).stdout.split()
    for name in files:
        path = root / name
        if path.is_file() and OLD_NAME in path.read_text(errors="replace"):
            problems.append(f"{name} still names {OLD_NAME}")


def main() -> int:
    problems: list[str] = []
    where, body = check_files(problems)
    check_index(where, problems)
    check_markers(body, problems)
    check_performance(body, problems)
    check_old_name(problems)
    for p in problems:
        print(p)
    areas = len(set(where.values()))
    print(f"{len(where)} decisions in {areas} files; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
