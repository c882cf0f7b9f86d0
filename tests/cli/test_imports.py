"""The CLI imports only the module of the command asked for, and that module only what it runs."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from cli.main import COMMANDS, build_parser, command_of


def test_each_command_is_registered_by_the_module_named_for_it() -> None:
    for name, module in COMMANDS.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module).register(sub)
        assert list(sub.choices) == [name], module


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
    assert COMMANDS[argv[0]] in loaded  # it did run
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert heavy == []
    others = {m for m in COMMANDS.values() if m != COMMANDS[argv[0]]}
    assert not others & loaded


def test_a_console_action_reaches_the_daemons_socket() -> None:
    loaded = _modules_after(["table", "dealer", "void", "--socket", "/nonexistent/api.sock",
                             "--staff-id", "d1"])
    assert "controller.local_api" in loaded
