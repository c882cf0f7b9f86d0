"""The whole `showdown` parser: every command and subcommand described, every option helped,
one name per meaning across commands, and an option's old name accepted for one release with
a warning (docs/cli.md, "Options")."""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterator

import pytest

from cli.errors import EXIT_USAGE
from cli.main import build_parser, main

# Names that would mean the same thing: the commands use the first, and no command may offer
# another (the old names are hidden aliases, see test_an_old_name_still_works...).
SYNONYMS = [
    ("--db", "--database", "--db-url", "--url"),
    ("--why", "--reason", "--note"),
    ("--staff-id", "--staff", "--staff-member"),
    ("--passphrase-file", "--passphrase-path"),
    ("--players", "--seats", "--entries-count"),
    ("--json", "--as-json", "--json-output"),
    ("--out", "--output", "--out-file", "--output-dir"),
    ("--config", "--conf", "--config-file"),
    ("--seed", "--random-seed", "--rng-seed"),
    ("--table", "--table-id"),
    ("--tournament", "--settings", "--tournament-file"),
    ("--paytables", "--paytable", "--paytables-file"),
    ("--journal", "--journal-file"),
    ("--keep-last", "--retain", "--max-backups"),
]
# Option names still carrying two kinds of value in this release (docs/cli.md says which).
TWO_KINDS = {"--tables", "--heat"}


def walk(parser: argparse.ArgumentParser, path: str = "showdown"
         ) -> Iterator[tuple[str, argparse.ArgumentParser, str | None]]:
    """Every parser under ``parser``: (its command path, it, its one-line help)."""
    yield path, parser, None
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                child = action.choices[choice.dest]
                yield f"{path} {choice.dest}", child, choice.help
                for item in walk(child, f"{path} {choice.dest}"):
                    if item[0] != f"{path} {choice.dest}":
                        yield item


def visible_options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction) \
                and action.help != argparse.SUPPRESS:
            yield action


def test_every_command_has_a_description_and_every_option_a_help() -> None:
    missing = []
    for path, parser, one_line in walk(build_parser()):
        if path != "showdown" and not (one_line and parser.description):
            missing.append(f"{path}: no help or description")
        missing += [f"{path} {a.option_strings or a.dest}: no help"
                    for a in visible_options(parser) if not a.help]
    assert missing == []


def test_no_two_names_mean_the_same_thing() -> None:
    used: dict[str, set[str]] = defaultdict(set)
    kinds: dict[str, set[str]] = defaultdict(set)
    for path, parser, _ in walk(build_parser()):
        for action in visible_options(parser):
            for name in action.option_strings:
                used[name].add(path)
                kinds[name].add(getattr(action.type, "__name__", "text") if action.nargs != 0
                                else "flag")
    for group in SYNONYMS:
        offered = [name for name in group if name in used]
        assert offered in ([], [group[0]]), (group, {n: sorted(used[n])[:3] for n in offered})
    two = {name for name, k in kinds.items() if len(k) > 1}
    assert two == TWO_KINDS, {n: kinds[n] for n in two}


@pytest.mark.parametrize(("argv", "dest", "value", "old", "new"), [
    (["journal", "clear-faults", "--journal", "j", "--operator", "T", "--reason", "r"],
     "reason", "r", "--reason", "--why"),
    (["heat", "--seats", "2"], "seats", 2, "--seats", "--players"),
    (["demo", "--database", "sqlite://"], "database", "sqlite://", "--database", "--db"),
    (["desk", "login", "--staff", "D1"], "staff", "D1", "--staff", "--staff-id"),
    (["leaderboard", "backup", "--db", "sqlite://", "--out", "o", "--keep", "3"], "keep", 3,
     "--keep", "--keep-last"),
])
def test_an_old_name_still_works_one_release_and_says_the_new_one(
    capsys: pytest.CaptureFixture[str], *, argv: list[str], dest: str, value: object, old: str,
    new: str
) -> None:
    args = build_parser(argv[0]).parse_args(argv)
    assert getattr(args, dest) == value
    command = " ".join(w for w in argv[:2] if not w.startswith("-"))
    assert capsys.readouterr().err == (f"showdown {command}: warning: {old} is now {new}; the"
                                       " old name is accepted until the next release\n")
    assert old not in build_parser(argv[0]).format_help()


def test_a_required_option_is_required_under_its_new_name(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["journal", "rotate", "--config", "t.toml"])
    assert done.value.code == EXIT_USAGE
    assert "error: one of the arguments --why is required" in capsys.readouterr().err
