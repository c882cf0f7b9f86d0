"""The catalogue of significant events against the code: every message type (the classes
with a TYPE or a command NAME) and every audit action the code writes (found by reading the
source: each `write_audit` call, `AuditEntry(action=...)` and audit row a projection inserts)
is in leaderboard.significant_events, nothing there is stale, and the generated doc is up
to date."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import game
import wire
from leaderboard import significant_events as catalogue
from leaderboard.significant_events import (
    AUDIT_ACTIONS,
    COMMANDS,
    MESSAGES,
    REJECTIONS,
    SEVERITIES,
    at_least,
    catalogue_markdown,
    severity_of,
)

ROOT = Path(__file__).resolve().parents[2]
# The packages that may write audit rows: every root package of the project (pyproject).
PACKAGES = ("game", "wire", "runtime", "drivers", "simulators", "adapters", "controller",
            "leaderboard", "deploy", "cli", "floor")


# ---- the message types, by introspection ---------------------------------------------------

def message_classes() -> dict[tuple[str, str], str]:
    """(TYPE | NAME, value) -> class, for every message class defined in game/ and wire/:
    a class with a string TYPE (a message) or NAME (a desk command) and encode/decode."""
    found: dict[tuple[str, str], str] = {}
    for package in (game, wire):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for cls in vars(module).values():
                if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                    continue
                if not (hasattr(cls, "encode") or hasattr(cls, "decode")):
                    continue
                for attr in ("TYPE", "NAME"):
                    value = cls.__dict__.get(attr)
                    if isinstance(value, str):
                        found[attr, value] = f"{cls.__module__}.{cls.__qualname__}"
    return found


def test_every_message_type_is_in_the_catalogue() -> None:
    found = message_classes()
    types = {v for (attr, v) in found if attr == "TYPE"}
    names = {v for (attr, v) in found if attr == "NAME"}
    assert {"hand.settled", "command_rejected", "standings"} <= types  # the walk works
    missing = sorted(f"{found['TYPE', t]} (TYPE {t!r})" for t in types - MESSAGES.keys())
    missing += sorted(f"{found['NAME', n]} (NAME {n!r})" for n in names - COMMANDS.keys())
    assert not missing, ("message types missing from leaderboard/significant_events.py: "
                         + ", ".join(missing))
    assert MESSAGES.keys() <= types, f"stale: {sorted(MESSAGES.keys() - types)}"
    assert COMMANDS.keys() <= names, f"stale: {sorted(COMMANDS.keys() - names)}"


def test_the_registries_agree_with_the_walk() -> None:
    from game.messages.desk import COMMANDS as SENT
    from wire.messages import TABLE_MESSAGES
    assert set(TABLE_MESSAGES) | {"standings"} == set(MESSAGES)
    assert set(SENT) == set(COMMANDS)


def test_every_reason_the_ingest_refuses_a_message_for_is_in_the_catalogue() -> None:
    from leaderboard.ingest import INGEST_REASONS
    assert "bad_signature" in INGEST_REASONS and "replayed_seq" in INGEST_REASONS
    assert set(INGEST_REASONS) == set(REJECTIONS), (
        f"missing: {sorted(set(INGEST_REASONS) - set(REJECTIONS))},"
        f" stale: {sorted(set(REJECTIONS) - set(INGEST_REASONS))}")


# ---- the audit actions, by reading the source ---------------------------------------------

def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# The audit trail's own writers (leaderboard.desk.action, leaderboard.audit_trail.chain): the
# actions are their callers'.
_WRITERS = frozenset({"write_audit", "audit_row", "append_audit", "audit_values"})


def _writes(tree: ast.AST, source: str) -> Iterator[tuple[ast.expr | None, int]]:
    """The action expression of each audit write in a module, with its line."""
    inside_writer = {id(n) for f in ast.walk(tree)
                     if isinstance(f, ast.FunctionDef) and f.name in _WRITERS
                     for n in ast.walk(f)}
    inserts_rows = any(w in source for w in ("AUDIT", "insert_audit", "append_audit"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in inside_writer:
            func = node.func
            name = (func.id if isinstance(func, ast.Name)
                    else func.attr if isinstance(func, ast.Attribute) else "")
            keywords = {k.arg: k.value for k in node.keywords}
            if name in ("write_audit", "audit_row"):
                yield keywords.get("action", node.args[3] if len(node.args) > 3 else None), \
                    node.lineno
            elif name in ("AuditEntry", "AuditValues"):
                yield keywords.get("action"), node.lineno
        elif inserts_rows and isinstance(node, ast.Dict) and id(node) not in inside_writer:
            keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant)}
            if {"actor", "action"} <= keys.keys():
                yield keys["action"], node.lineno


def _values(expr: ast.expr | None, module: str) -> list[str]:
    """The action names an expression can take: a literal, either side of a conditional, a
    module's constant (``RULED``, ``HeatOpened.TYPE``) or any value of a module's mapping
    (``ALLOCATED[stage]``); ValueError for anything else (an f-string, a local variable)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.IfExp):
        return _values(expr.body, module) + _values(expr.orelse, module)
    if isinstance(expr, ast.Name | ast.Attribute | ast.Subscript):
        target = expr.value if isinstance(expr, ast.Subscript) else expr
        namespace = vars(importlib.import_module(module))
        try:
            value: Any = eval(ast.unparse(target), dict(namespace))  # noqa: S307 (our source)
        except (NameError, AttributeError) as exc:
            raise ValueError(f"{ast.unparse(expr)} is not a module-level name ({exc})") from None
        values = list(value.values()) if isinstance(expr, ast.Subscript) else [value]
        if all(isinstance(v, str) for v in values):
            return [str(v) for v in values]
    shown = "nothing" if expr is None else ast.unparse(expr)
    raise ValueError(f"{shown}: name the action with a literal or a module constant")


def audit_actions(paths: list[Path], root: Path = ROOT
                  ) -> tuple[dict[str, list[str]], list[str]]:
    """action -> where it is written ("path:line"), and the writes that could not be read."""
    found: dict[str, list[str]] = {}
    unreadable: list[str] = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        for expr, line in _writes(ast.parse(source), source):
            where = f"{path.relative_to(root)}:{line}"
            try:
                for action in _values(expr, _module(path, root)):
                    found.setdefault(action, []).append(where)
            except ValueError as exc:
                unreadable.append(f"{where}: {exc}")
    return found, unreadable


def source_files() -> list[Path]:
    """Every module of the project's packages but the migrations (frozen history)."""
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in p.parts]


@pytest.fixture(scope="module")
def written() -> dict[str, list[str]]:
    found, unreadable = audit_actions(source_files())
    assert not unreadable, "audit writes whose action cannot be read: " + "; ".join(unreadable)
    return found


def test_the_scan_finds_each_kind_of_writer(written: dict[str, list[str]]) -> None:
    where = {action: " ".join(places) for action, places in written.items()}
    assert "leaderboard/desk/entries.py" in where["entry.bought"]  # write_audit, a literal
    assert "leaderboard/app.py" in where["table.enrolment_changed"]  # AuditEntry(action=...)
    assert "leaderboard/eligibility.py" in where["list.imported"]
    assert "projections/command_results.py" in where["command.refused"]  # a row inserted
    assert "projections/seatings.py" in where["entry.seat_mismatch"]
    assert "leaderboard/desk/heats.py" in where["heat.opened"]  # HeatOpened.TYPE
    assert "floor/desk.py" in where["staff_roster"]  # StaffRoster.NAME
    assert {"staff.enabled", "staff.disabled"} <= written.keys()  # either side of an if
    assert {"semi_final.allocated", "final.allocated"} <= written.keys()  # ALLOCATED[stage]


def test_every_audit_action_is_in_the_catalogue(written: dict[str, list[str]]) -> None:
    missing = {a: w for a, w in written.items() if a not in AUDIT_ACTIONS}
    assert not missing, ("audit actions missing from leaderboard/significant_events.py: "
                         + "; ".join(f"{a} (written at {', '.join(w)})"
                                     for a, w in sorted(missing.items())))
    stale = sorted(AUDIT_ACTIONS.keys() - written.keys())
    assert not stale, f"catalogued audit actions nothing writes: {stale}"


def test_an_unlisted_or_unreadable_action_is_caught(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan on a module of its own: a new action is found (and would be reported
    missing); an action built at run time is reported as unreadable."""
    module = tmp_path / "scan_probe_h4.py"
    module.write_text(
        "from leaderboard.desk.action import write_audit\n"
        "KIND = 'probe.constant'\n"
        "def act(session, now, actor, what):\n"
        "    write_audit(session, now, actor, 'probe.literal', detail={})\n"
        "    write_audit(session, now, actor, KIND, detail={})\n"
        "    write_audit(session, now, actor, f'probe.{what}', detail={})\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    found, unreadable = audit_actions([module], root=tmp_path)
    assert set(found) == {"probe.literal", "probe.constant"}
    assert not set(found) & AUDIT_ACTIONS.keys()  # what the catalogue test would report
    assert len(unreadable) == 1 and "scan_probe_h4.py:6" in unreadable[0]
    assert "f'probe.{what}'" in unreadable[0]


# ---- severities and the doc -----------------------------------------------------------------

def test_severities_and_escalations() -> None:
    assert [severity_of("audit", "table.enrolment_changed"),
            severity_of("message", "hand.settled"),
            severity_of("message", "command.result", {"accepted": True}),
            severity_of("message", "command.result", {"accepted": False}),
            severity_of("message", "chips.reconciled", {"missing_cents": 0}),
            severity_of("message", "chips.reconciled", {"missing_cents": 2_500}),
            severity_of("message", "staff.session", {"event": "locked"}),
            severity_of("audit", "no.such_action"),
            severity_of("rejection", "bad_signature")] == [
        "critical", "info", "info", "warning", "info", "warning", "warning", "warning",
        "critical"]
    assert at_least("critical", "warning") and not at_least("notice", "warning")
    with pytest.raises(ValueError, match="'loud' is not a severity"):
        at_least("loud", "info")
    kinds = (MESSAGES, COMMANDS, AUDIT_ACTIONS, REJECTIONS)
    used = {e.severity for kind in kinds for e in kind.values()}
    assert used == set(SEVERITIES)  # every step of the scale is used
    assert all(e.why.strip() for kind in kinds for e in kind.values())


def test_the_doc_is_generated_from_the_catalogue() -> None:
    doc = (ROOT / "docs" / "significant-events.md").read_text(encoding="utf-8")
    assert doc == catalogue_markdown(), (
        "docs/significant-events.md is out of date: run"
        " `python -m leaderboard.significant_events > docs/significant-events.md`")
    for name in (*MESSAGES, *COMMANDS, *AUDIT_ACTIONS, *REJECTIONS):
        assert f"| `{name}` |" in doc
    assert catalogue.__doc__ is not None and "python -m leaderboard.significant_events" in (
        catalogue.__doc__.replace("\n", " "))
