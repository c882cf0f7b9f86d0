"""The run report of a table rehearsal: each fault injected, the alerts the table raised for
it (matched from the table's own published messages), how it was put right, and anything
unexpected (a fault whose alert never came, an alert no fault explains, a virtual dealer that
could not go on).

Pure bookkeeping: the rehearsal (simulators.rehearsal) records, the command prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drivers.readings import RECOVERED
from simulators.table_faults import FaultSpec
from wire.messages import Alert

__all__ = ["NOTICES", "FaultRecord", "RunReport", "TableMessage"]

NOTICES = frozenset({"device_recovered"})  # alerts that are notices (D347): never unexpected


@dataclass(frozen=True, slots=True)
class TableMessage:
    """One message the table published: its seq, type ("alert", "device"), kind and text."""

    seq: int
    type: str
    kind: str
    message: str
    counts: tuple[tuple[str, int], ...] = ()  # a recovery notice's counts (D347)

    @classmethod
    def of(cls, seq: int, type_: str, body: Mapping[str, Any]) -> TableMessage:
        """From a stored message body (alerts carry kind/message, device states state/detail)."""
        if type_ == Alert.TYPE:
            evidence = body.get("evidence") or {}
            counts = evidence.get("counts") if isinstance(evidence, Mapping) else None
            return cls(seq, type_, str(body.get("kind")), str(body.get("message")),
                       tuple(sorted((str(k), int(v)) for k, v in (counts or {}).items())))
        return cls(seq, type_, f"device:{body.get('state')}",
                   f"{body.get('device')}: {body.get('detail')}")


@dataclass(slots=True)
class FaultRecord:
    """One fault injected: when, what was done, the alerts matched, how it was put right."""

    spec: FaultSpec
    hand: int
    what: str
    from_seq: int  # the table's last message seq when it struck
    to_seq: int | None = None  # its alerts come no later than this (None: to the end)
    remedy: str = ""
    alerts: list[TableMessage] = field(default_factory=list)
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        return {"fault": str(self.spec), "hand": self.hand, "what": self.what,
                "alerts": [{"kind": a.kind, "message": a.message} for a in self.alerts],
                "remedy": self.remedy, "problem": self.problem}


@dataclass(slots=True)
class RunReport:
    """Everything a rehearsal run did, for the technician."""

    seed: int
    deck: str
    hands_played: int = 0
    hands_voided: int = 0
    faults: list[FaultRecord] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the virtual dealer stopped early, if it did
    recovered: list[TableMessage] = field(default_factory=list)  # device_recovered notices

    def match(self, messages: Sequence[TableMessage]) -> None:
        """Give each fault the alerts it explains; any alert left over is unexpected, and a
        fault whose alert never came is a problem."""
        claimed: set[int] = set()
        for record in self.faults:
            wanted = set(record.spec.kind.alerts) | set(record.spec.kind.also)
            for msg in messages:
                if msg.seq in claimed or msg.seq <= record.from_seq or msg.kind not in wanted:
                    continue
                if record.to_seq is not None and msg.seq > record.to_seq:
                    continue
                claimed.add(msg.seq)
                record.alerts.append(msg)
            seen = {a.kind for a in record.alerts}
            missing = [k for k in record.spec.kind.alerts if k not in seen]
            if missing and record.problem is None and record.spec.probability is None:
                record.problem = f"the table raised no {' / '.join(missing)} for it"
        for msg in messages:
            if msg.kind in NOTICES:
                self.recovered.append(msg)
            elif msg.type == Alert.TYPE and msg.seq not in claimed:
                self.unexpected.append(f"alert {msg.kind}: {msg.message}")

    def recovered_totals(self) -> dict[str, dict[str, int]]:
        """Per device, what its driver healed by itself over the run: counter -> count."""
        totals: dict[str, dict[str, int]] = {}
        for msg in self.recovered:
            device = msg.message.split(":", 1)[0]
            mine = totals.setdefault(device, {})
            for name, n in msg.counts:
                mine[name] = mine.get(name, 0) + n
        return totals

    @property
    def problems(self) -> list[str]:
        """Every unexpected thing: the run exits 1 when there is any."""
        out = [f"{r.spec} (hand {r.hand}): {r.problem}" for r in self.faults if r.problem]
        out += self.unexpected
        if self.stopped:
            out.append(f"the virtual dealer stopped: {self.stopped}")
        return out

    def lines(self) -> list[str]:
        """The report as text, one fault a paragraph."""
        out = [f"hands played: {self.hands_played} ({self.hands_voided} voided)",
               f"seed: {self.seed}; deck: {self.deck}",
               f"faults injected: {len(self.faults)}"]
        for r in self.faults:
            out.append(f"- {r.spec} at hand {r.hand}: {r.what}")
            for a in r.alerts:
                out.append(f"    alert {a.kind}: {a.message}")
            if not r.alerts:
                out.append("    alert: none")
            out.append(f"    put right: {r.remedy or '-'}")
            if r.problem:
                out.append(f"    UNEXPECTED: {r.problem}")
        totals = self.recovered_totals()
        out.append(f"recovered device faults: {len(self.recovered)} notices")
        for device, counts in sorted(totals.items()):
            words = ", ".join(f"{n} {RECOVERED.get(name, name.replace('_', ' '))}"
                              for name, n in sorted(counts.items()))
            out.append(f"- {device}: {words}")
        problems = self.problems
        out.append(f"unexpected: {len(problems)}")
        out += [f"- {p}" for p in problems]
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {"seed": self.seed, "deck": self.deck, "hands_played": self.hands_played,
                "hands_voided": self.hands_voided,
                "faults": [r.as_dict() for r in self.faults],
                "recovered": self.recovered_totals(), "unexpected": self.problems}
