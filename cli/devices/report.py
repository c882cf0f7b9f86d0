"""The conformance kit's result: one `Row` per check (name, PASS / LIMIT / FAIL / SKIP, a
figure or what went wrong), printed as a table or as JSON; `passed` says whether the driver
conforms (every row PASS, LIMIT or SKIP). LIMIT is a guarantee the device cannot give and the
driver declares when it happens (a text-line shoe's cards dealt while unplugged, alerted
`reads_lost`): the table then holds the hand for a supervisor (D303), so nothing is lost
unseen."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Report", "Row", "Status", "fail", "limited", "ok", "skip"]

Status = Literal["PASS", "LIMIT", "FAIL", "SKIP"]


@dataclass(frozen=True, slots=True)
class Row:
    """One check: its name, its result, and its figure (PASS) or what went wrong (FAIL) or
    why it could not run (SKIP)."""

    check: str
    status: Status
    detail: str


def ok(check: str, detail: str) -> Row:
    """A check that passed, with its figure."""
    return Row(check, "PASS", detail)


def limited(check: str, detail: str) -> Row:
    """A guarantee the device cannot give, declared by the driver each time it is broken."""
    return Row(check, "LIMIT", detail)


def fail(check: str, detail: str) -> Row:
    """A check that failed, saying what was wrong."""
    return Row(check, "FAIL", detail)


def skip(check: str, reason: str) -> Row:
    """A check that could not run (a control the simulator lacks), never counted a pass."""
    return Row(check, "SKIP", reason)


@dataclass(frozen=True, slots=True)
class Report:
    """The kit's run on one driver: what was checked against what, and the rows."""

    driver: str
    role: str
    against: str  # "its simulator", "capture FILE"
    rows: Sequence[Row]

    @property
    def passed(self) -> bool:
        """True when no row failed (LIMIT and SKIP rows are allowed) and at least one check
        passed."""
        return (any(r.status == "PASS" for r in self.rows)
                and all(r.status != "FAIL" for r in self.rows))

    def failed(self) -> list[str]:
        """The names of the failed checks."""
        return [r.check for r in self.rows if r.status == "FAIL"]

    def table(self) -> str:
        """The rows as a text table, with a heading and a closing count."""
        width = max([len("check"), *(len(r.check) for r in self.rows)])
        lines = [f"showdown devices check: {self.role} driver {self.driver!r} against"
                 f" {self.against}", "",
                 f"{'check':{width}}  result  figure or detail",
                 f"{'-' * width}  ------  {'-' * 16}"]
        lines += [f"{r.check:{width}}  {r.status:6}  {r.detail}" for r in self.rows]
        counts = {s: sum(r.status == s for r in self.rows)
                  for s in ("PASS", "LIMIT", "FAIL", "SKIP")}
        limits = [r.check for r in self.rows if r.status == "LIMIT"]
        verdict = ("does NOT conform: " + ", ".join(self.failed()) if not self.passed
                   else "conforms, with a declared limit: " + ", ".join(limits) if limits
                   else "conforms")
        limit = f", {counts['LIMIT']} declared limit" if counts["LIMIT"] else ""
        lines += ["", f"{len(self.rows)} checks: {counts['PASS']} pass{limit},"
                      f" {counts['FAIL']} fail, {counts['SKIP']} skipped; the driver {verdict}"]
        return "\n".join(lines)

    def json(self) -> str:
        """The report as one JSON document."""
        return json.dumps({"driver": self.driver, "role": self.role, "against": self.against,
                           "passed": self.passed,
                           "rows": [{"check": r.check, "status": r.status, "detail": r.detail}
                                    for r in self.rows]}, indent=2)
