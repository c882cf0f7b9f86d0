"""The CLI imports only the module of the command asked for, and that module only what it runs;
`showdown --help` imports none, its lines and extras kept true to the commands' own."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from cli.extras import EXTRA_OF
from cli.main import COMMAND_MODULES, COMMANDS, build_parser, command_of, overview_parser

# One worker runs the whole module: its module-scoped fixture is built once, not once per
# worker (docs/testing.md).
pytestmark = pytest.mark.xdist_group("cli-imports")


def test_each_command_is_registered_by_the_module_named_for_it() -> None:
    for name, command in COMMANDS.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(command.module).register(sub)
        assert list(sub.choices) == [name], command.module


def _listed(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {c.dest: c.help for c in action._choices_actions}


def test_the_overview_lists_each_command_with_its_own_parsers_words() -> None:
    assert _listed(overview_parser()) == _listed(build_parser())
    assert list(_listed(overview_parser())) == list(COMMANDS)


# In one process (one start for every module): each module imported afresh, every extra's
# library blocked as on a table PC's install, and the library whose absence stopped it (or
# "none"). Our packages are dropped from sys.modules before each, so none is half-imported.
_STOPPED_BY = """
import importlib, importlib.abc, json, sys
OURS = ("game", "wire", "runtime", "drivers", "simulators", "controller", "leaderboard",
        "deploy", "cli", "floor")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in {extras}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
found = {{}}
for module in {modules}:
    for loaded in [m for m in sys.modules if m.partition(".")[0] in OURS]:
        del sys.modules[loaded]
    try:
        importlib.import_module(module)
        found[module] = "none"
    except ModuleNotFoundError as exc:
        found[module] = exc.name.partition(".")[0]
print(json.dumps(found))
"""
REHEARSAL_MODULES = ("cli.simulate.command", "floor.rehearsal", "floor.rehearsal_config",
                     "floor.plan")


@pytest.fixture(scope="module")
def stopped_by() -> dict[str, str]:
    """Each command's module and the rehearsal's: the extra's library its import stops at."""
    modules = sorted({*COMMAND_MODULES, *REHEARSAL_MODULES})
    code = _STOPPED_BY.format(extras=sorted(EXTRA_OF), modules=modules)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    found: dict[str, str] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_commands_needs_name_the_extra_its_module_cannot_do_without(
        name: str, stopped_by: dict[str, str]) -> None:
    # As on a table PC's install (no extra): the library whose absence stops the module's
    # import must be one the command's `needs` looks for first, so the help line, the
    # stand-in and the error all name an extra the command really needs.
    command = COMMANDS[name]
    stopper = stopped_by[command.module]
    if stopper == "none":
        assert command.needs == (), f"{name} imports without any extra"
    else:
        assert stopper in command.needs, f"{name} cannot be imported without {stopper}"


def test_help_imports_no_commands_module() -> None:
    loaded = _modules_after(["--help"])
    assert "cli.main" in loaded
    assert not set(COMMAND_MODULES) & loaded
    assert "importlib.metadata" not in loaded  # the release is read for --version alone


def test_the_full_parser_lists_every_command_and_a_chosen_one_alone() -> None:
    def choices(parser: argparse.ArgumentParser) -> list[str]:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(action.choices)

    assert choices(build_parser()) == list(COMMANDS)
    assert choices(build_parser("settle")) == ["settle"]


def test_the_command_is_the_first_word_or_none() -> None:
    assert command_of(["settle", "--paytables", "x"]) == "settle"
    assert command_of(["--help"]) is None
    assert command_of([]) is None
    assert command_of(["setle"]) is None  # the full parser names the valid choices


def _modules_after(argv: list[str], stdin: str = "") -> set[str]:
    """The modules loaded by `showdown ARGV` when it has run its handler."""
    code = (
        "import sys, json\n"
        "from cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES ' + json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "SHOWDOWN_PIN": "1234"})
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


HAND = json.dumps({"dealer": ["Kc", "4c"], "board": ["3h", "8c", "4h", "8h", "4s"],
                   "seats": [{"seat": 1, "hole": ["Th", "2h"],
                              "wagers": {"ante": 2500, "odds": 2500, "play": 2500}}]})
HEAVY = ("numpy", "sqlalchemy", "structlog", "rich", "amqtt", "aiomqtt", "controller.app",
         "controller.journal", "leaderboard")


@pytest.mark.parametrize(("argv", "stdin"), [
    (["settle"], HAND),
    (["settle", "--lines"], HAND + "\n" + HAND + "\n"),
    (["evaluate", "Ah", "Kh", "Qh", "Jh", "Th"], ""),
    (["par-sheet", "--help"], ""),
    (["table", "dealer", "--help"], ""),
    # the real start of a console action, up to the daemon's socket (nobody answers: exit 69)
    (["table", "dealer", "void", "--socket", "/nonexistent/api.sock", "--staff-id", "d1"], ""),
])
def test_a_pit_command_loads_none_of_the_heavy_machinery(argv: list[str], stdin: str) -> None:
    loaded = _modules_after(argv, stdin)
    assert COMMANDS[argv[0]].module in loaded  # it did run
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert heavy == []
    others = set(COMMAND_MODULES) - {COMMANDS[argv[0]].module}
    assert not others & loaded


def test_the_certifiers_offline_check_loads_no_database_library() -> None:
    """A certifier's laptop needs no central extra: `certifier-verify`, its audit chain check
    included (the hashing is leaderboard.audit_trail.hashing, D421), imports no SQLAlchemy."""
    loaded = _modules_after(["leaderboard", "certifier-verify", "/nonexistent/bundle.zip"], "")
    assert {"leaderboard.certifier.verify", "leaderboard.audit_trail.hashing"} <= loaded
    assert sorted(m for m in loaded if m.startswith(("sqlalchemy", "leaderboard.audit_trail.ch",
                                                     "leaderboard.models"))) == []


def test_a_console_action_reaches_the_daemons_socket() -> None:
    loaded = _modules_after(["table", "dealer", "void", "--socket", "/nonexistent/api.sock",
                             "--staff-id", "d1"])
    assert "controller.local_api" in loaded


@pytest.mark.parametrize("module", REHEARSAL_MODULES)
def test_the_rehearsal_imports_on_a_table_pcs_install(module: str,
                                                    stopped_by: dict[str, str]) -> None:
    # `showdown simulate table` rehearses a table on the table PC's own install: no extra's
    # library (alembic, amqtt, rich, numpy, matplotlib, psycopg) may be needed to import it.
    assert stopped_by[module] == "none", (
        f"{module} cannot be imported without {stopped_by[module]}")
