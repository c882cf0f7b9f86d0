"""`showdown evaluate`: name the best hand in a set of cards, for dealers and disputes."""

from __future__ import annotations

import argparse
import json
from typing import Any

from game.poker.evaluate import evaluate


def register(sub: Any) -> None:
    """Add the `evaluate` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "evaluate",
        help="name the best five-card hand of 5 to 7 cards",
        description="Evaluate 5, 6 or 7 cards, e.g. `showdown evaluate Ah Kh Qh Jh Th 2c 3d`.",
    )
    p.add_argument("cards", nargs="+", help="cards such as Ah, Td, 10d, 2c")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the hand's name, category and best five cards."""
    hand = evaluate(" ".join(args.cards))
    best = " ".join(str(c) for c in hand.best_five)
    if args.json:
        print(json.dumps({"name": hand.name, "category": hand.category.key,
                          "value": hand.value, "best_five": best.split()}))
    else:
        print(f"{hand.name}  [{best}]")
    return 0
