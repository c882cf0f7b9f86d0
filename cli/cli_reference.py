"""The command reference of docs/cli.md, generated from the real parser: every command and
subcommand with its description and a table of its options. Regenerate the part of
docs/cli.md between its markers with
``python -m cli.cli_reference``, after adding a command or an option.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

__all__ = ["reference_markdown"]


def _parsers(parser: argparse.ArgumentParser, path: str
             ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield from _parsers(action.choices[choice.dest], f"{path} {choice.dest}")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or str(action.metavar or action.dest)
    if action.option_strings and action.nargs != 0:
        metavar = (str(action.metavar) if action.metavar else
                   "{" + ",".join(str(c) for c in action.choices) + "}" if action.choices
                   else action.dest.upper())
        names += f" {metavar}"
    elif not action.option_strings and action.choices:
        names = "{" + ",".join(str(c) for c in action.choices) + "}"
    return f"`{names}`"


def reference_markdown(parser: argparse.ArgumentParser) -> str:
    """Markdown: a section per command path, its description and its options' table."""
    out: list[str] = []
    for path, p in _parsers(parser, "showdown"):
        if path == "showdown":
            continue
        options = [a for a in p._actions if a.help != argparse.SUPPRESS
                   and not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        out += [f"### `{path}`", "", _cell(p.description or ""), ""]
        if subs:
            names = ", ".join(f"`{c.dest}`" for s in subs for c in s._choices_actions)
            out += [f"Subcommands: {names}.", ""]
        if options:
            out += ["| option | what |", "|---|---|"]
            out += [f"| {_option(a)} | {_cell(a.help or '')} |" for a in options]
            out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    from cli.main import build_parser

    print(reference_markdown(build_parser()), end="")
