"""`showdown heat`: a whole seeded heat at one table, every wager explained (offline).

Virtual players and a virtual dealer play through the real hand state machine, settlement
and entry ledgers with the shipped paytables and tournament settings. The shuffle seed is
printed so that any run can be reproduced exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

from cli.arguments import add_renamed
from game.hand import Hand
from game.hand.deal import DEFAULT_DEAL
from game.hand.events import PlayMade, SeatFolded
from game.money import format_rand
from game.poker.cards import format_cards
from game.table.session import EntryEnded, TableSession
from game.tournament.entries import Entry, Stage
from game.words import spoken
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import PlayerStyle, VirtualPlayer


def register(sub: Any) -> None:
    """Add the `heat` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "heat", help="play and explain a seeded heat at one table (offline, no daemon)",
        description="Play a whole heat with virtual players and explain every wager.",
    )
    p.add_argument("--seed", type=int, default=2026, help="shuffle and player seed (default 2026)")
    add_renamed(p, "--players", was="--seats", dest="seats", type=int, default=3,
                choices=range(1, 7), metavar="1-6", help="how many entries play (default 3)")
    p.add_argument("--stage", choices=[s.value for s in Stage], default=Stage.QUALIFYING.value,
                   help="which stage's rules to play (default qualifying: 10 hands)")
    p.add_argument("--tournament", type=Path, help="tournament settings file")
    p.add_argument("--paytables", type=Path, help="paytables file")
    p.add_argument("--json", action="store_true",
                   help="print the heat as JSON: each hand's results and the scores (cents)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Play the heat and print it (with --json: the hands and scores as one JSON document)."""
    if not args.json:
        return _play(args, {})
    doc: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the narrative: not wanted here
        code = _play(args, doc)
    print(json.dumps(doc, indent=2))
    return code


def _play(args: argparse.Namespace, doc: dict[str, Any]) -> int:
    settings = read_tournament(args.tournament)
    paytables = read_paytables(args.paytables)
    stage = Stage(args.stage)
    rules = settings.stage(stage).rules
    table = TableSession(table_id="T1", rules=rules, paytables=paytables, deal=DEFAULT_DEAL)
    rng = random.Random(args.seed)
    players: dict[int, VirtualPlayer] = {}
    for seat in range(1, args.seats + 1):
        table.seat_entry(Entry.start(entry_id=f"E-{1000 + seat}", rules=rules), seat)
        players[seat] = VirtualPlayer(name=f"player {seat}", rng=random.Random(rng.random()),
                                      style=PlayerStyle(bold=seat % 2 == 0))
    dealer = VirtualDealer(rng=random.Random(rng.random()))
    print(f"{spoken(stage)} heat at table {table.table_id}: "
          f"{args.seats} entries, {rules.hands} hands each, "
          f"{format_rand(rules.starting_chips_cents)} in chips"
          + (f", {rules.markers} bonus markers" if rules.markers else "")
          + f"; seed {args.seed}")
    print(f"paytables {paytables.source}; tournament {settings.source}")
    doc.update(stage=stage.value, table=table.table_id, seed=args.seed, hands_each=rules.hands,
               starting_chips_cents=rules.starting_chips_cents,
               paytables=str(paytables.source), tournament=str(settings.source), hands=[])
    number = 0
    while table.seats:
        number += 1
        hand = dealer.play_hand(table, players, f"{table.table_id}-{number:04d}")
        entries = dict(table.seats)
        ended = table.close_hand()
        _explain(hand, number, entries, table, ended)
        s = hand.settlement
        doc["hands"].append({
            "hand_id": hand.hand_id, "void": s is None,
            "seats": [] if s is None else [
                {"seat": r.seat, "entry_id": entries[r.seat].entry_id, "hand": r.hand.name,
                 "net_cents": r.net_cents} for r in s.seats]})
    doc["scores"] = [{"entry_id": e.entry_id, "seat": e.seat, "score_cents": e.score_cents,
                      "hands_played": e.hands_played, "ended_early": e.hands_played != rules.hands,
                      "markers_forfeited": e.markers_forfeited}
                     for e in sorted(table.ended, key=lambda x: -x.score_cents)]
    print("\nScores")
    for e in sorted(table.ended, key=lambda x: -x.score_cents):
        how = "after its last hand" if e.hands_played == rules.hands else "ended early"
        extra = f", {e.markers_forfeited} marker(s) forfeited" if e.markers_forfeited else ""
        print(f"  {e.entry_id} (seat {e.seat}): {format_rand(e.score_cents)}"
              f"  [{e.hands_played} hands, {how}{extra}]")
    return 0


def _explain(hand: Hand, number: int, before: dict[int, Entry], table: TableSession,
             ended: tuple[EntryEnded, ...]) -> None:
    print(f"\nHand {number} ({hand.hand_id})")
    settlement = hand.settlement
    if settlement is None:
        print("  void")
        return
    placed = hand.cards()
    board = [c for t, c in placed if t.kind == "board"]
    dealer = [c for t, c in placed if t.kind == "dealer"]
    burns = [c for t, c in placed if t.kind == "burn"]
    print(f"  board {format_cards(board[:3])} | {format_cards(board[3:])}"
          f"   dealer {format_cards(dealer)}   burns {format_cards(burns)}")
    opens = "opens" if settlement.dealer_opens else "does not open"
    print(f"  dealer: {settlement.dealer_hand.name} ({opens})")
    decisions = {e.seat: e for e in hand.events if isinstance(e, PlayMade | SeatFolded)}
    for seat_result in settlement.seats:
        seat = seat_result.seat
        entry = before[seat]
        hole = [c for t, c in placed if t.kind == "seat" and t.seat == seat]
        d = decisions.get(seat)
        decided = (f"played {d.multiple}x ({d.street})" if isinstance(d, PlayMade)
                   else "folded at the river")
        print(f"  seat {seat} {entry.entry_id} [{format_cards(hole)}] {seat_result.hand.name};"
              f" {decided}; {seat_result.outcome}")
        for r in seat_result.results:
            marker = " +marker" if r.marker else ""
            print(f"    {spoken(r.wager):<12} {format_rand(r.stake_cents):>9}{marker}"
                  f"  {r.result:<4} {format_rand(r.net_cents):>10}  {r.reason}")
        after = table.seats.get(seat) or next(
            (e for e in ended if e.seat == seat), None)
        balance = entry.balance_cents + seat_result.net_cents
        print(f"    net {format_rand(seat_result.net_cents)}; chips {format_rand(balance)}"
              f" after hand {entry.hands_played + 1} of {entry.hands_required}"
              + (" - entry ends here" if isinstance(after, EntryEnded) else ""))
