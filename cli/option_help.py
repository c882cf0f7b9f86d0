"""The help of the options that many commands share (`--entry`, `--patron`, `--table`...),
written once so that a name means one thing everywhere, and filled in where a command
registered one without its own words; a subcommand without a description gets its one-line
help as the description. `cli.main.build_parser` applies it to every parser.
"""

from __future__ import annotations

import argparse
from typing import Final

__all__ = ["SHARED_HELP", "describe"]

# An option's (or a positional's) help by its name; "COMMAND PATH/NAME" for the few names
# whose meaning is the command's own.
SHARED_HELP: Final = {
    "--entry": "the entry id (E-..., S-..., F-...)",
    "--patron": "the patron id (P-...)",
    "--table": "the table id, e.g. t01",
    "--seat": "the seat number, 1 to 6",
    "--spot": "the betting spot",
    "--name": "the person's name as on their ID document",
    "--id-kind": "the kind of ID document",
    "--id-number": "the ID document's number",
    "--birth-date": "date of birth, YYYY-MM-DD",
    "--stage": "the tournament stage",
    "--heat-id": "the heat's id (default: made from the date, the table and the stage)",
    "--allocate": "allocate the places now (a supervisor; recorded), instead of showing them",
    "--proxy": "the patron who plays the place as proxy",
    "--replay": "replay the stored draw with this id instead of drawing again",
    "--week": "the prize week (weekly prizes only)",
    "--limit": "show at most this many, newest first",
    "--action": "only audit records of this action, e.g. patron.registered",
    "--staff-id": "the staff member's id, e.g. D12",
    "--role": "the member's role: what they may do at the desk and the tables",
    "--rewards-card": "the patron's rewards card number",
    "--method": "how the participant acknowledged the score",
    "--resolution": "how the dispute was resolved, in words",
    "--outcome": "what the participant was told, in words",
    "--status": "only disputes in this state",
    "--state": "only commands in this state",
    "--kind": "the kind of document",
    "--number": "the document's number",
    "--dismiss": "the score stands: the claim is dismissed",
    "--void-hand": "the disputed hand is void (its result leaves the score)",
    "--correct-hand": "the disputed hand's result is corrected to --net",
    "staff_id": "the staff member's id",
    "dispute_id": "the dispute's number",
    "hold_id": "the hold's number",
    "seq": "the desk command's seq (see `showdown desk commands`)",
    "file": "the file to read",
    "showdown desk import-list/kind": "which list the file is",
    "showdown desk award/kind": "the prize book: weekly, top_score (Top Score Progressive) or"
                                " final (Final Prize Pool)",
    "showdown desk claim/award": "the award's number (see `showdown desk prizes`)",
    "showdown desk staff card/card": "the new employee card number",
    "showdown desk choose-seat/--heat": "the semi-final heat, 1 or 2",
    "showdown desk choose-seat/--entry": "the semi-final place (S-...)",
    "showdown desk proxy/--entry": "the extra place (S-... or F-...) the proxy plays",
    "showdown table dealer/action": "the console action",
    "showdown dispute verify/file": "the dispute bundle (JSON) to check",
}


def _name(action: argparse.Action) -> str:
    longs = [o for o in action.option_strings if o.startswith("--")]
    return longs[0] if longs else (action.option_strings or [action.dest])[0]


def describe(parser: argparse.ArgumentParser, path: str = "showdown") -> None:
    """Fill every missing option help and subcommand description under ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                child = action.choices[choice.dest]
                if not child.description:
                    child.description = choice.help
                describe(child, f"{path} {choice.dest}")
        elif not action.help:
            name = _name(action)
            action.help = SHARED_HELP.get(f"{path}/{name}") or SHARED_HELP.get(name)
