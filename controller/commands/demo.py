"""`showdown demo`: the most complete thing the project can show right now."""

from __future__ import annotations

import argparse
import random
from typing import Any

from game.cards import DECK, format_cards
from game.evaluate import evaluate


def register(sub: Any) -> None:
    """Add the `demo` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="deal and explain a few seeded hands",
        description="Deal a few seeded hands of Heads Up Hold'em and explain them.",
    )
    p.add_argument("--seed", type=int, default=2026, help="shuffle seed (logged; default 2026)")
    p.add_argument("--hands", type=int, default=3, help="how many hands (default 3)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Deal seeded hands and print each seat's best hand against the dealer's."""
    rng = random.Random(args.seed)
    print(f"seed {args.seed}")
    for n in range(1, args.hands + 1):
        deck = list(DECK)
        rng.shuffle(deck)
        seat, dealer, board = deck[0:2], deck[2:4], deck[4:9]
        s, d = evaluate([*seat, *board]), evaluate([*dealer, *board])
        verdict = "seat wins" if s > d else "dealer wins" if d > s else "tie"
        print(f"hand {n}: board {format_cards(board)}")
        print(f"  seat   {format_cards(seat)}: {s.name}")
        print(f"  dealer {format_cards(dealer)}: {d.name}  -> {verdict}")
    return 0
