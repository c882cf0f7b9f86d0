"""`showdown report scores`: a simulated qualifying campaign and the spread of its scores.

Thousands of heats played in virtual time through the pure game core (the hand state
machine, settlement and entry ledgers with the shipped rules and paytables) by the virtual
players and dealer of `simulators`: no devices, no daemon, no sleeps. Every heat has its own
generator derived from the seed and the heat's number, so a seed gives the same scores
whatever else runs. Writes ``scores.json`` (percentiles, mean, the share below the starting
chips, the expected cut line for the last qualifying place of a campaign of E entries) and
``scores.png`` (leaderboard.reports.score_plot) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

from cli.errors import CommandError
from game.hand.deal import DEFAULT_DEAL
from game.money import format_rand
from game.paytables.lines import Paytables
from game.table.session import TableSession
from game.tournament.entries import Entry, Stage
from game.tournament.schema import TournamentSettings
from leaderboard.reports.score_distribution import CutLine, ScoreSummary, cut_line, summarise
from leaderboard.reports.score_plot import PlotUnavailable, check_plotting, plot_scores
from leaderboard.reports.window import rand_plain
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from simulators.players import PlayerStyle, VirtualPlayer

__all__ = ["Campaign", "register", "run", "simulate_campaign"]

_MAX_HEATS = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Campaign:
    """The scores of a simulated campaign (cents, heat by heat, seat by seat)."""

    seed: int
    heats: int
    players: int
    hands_per_entry: int
    start_cents: int
    scores: tuple[int, ...]
    ended_early: int
    hands: int


def _play_heats(first: int, last: int, *, players: int, seed: int,
                settings: TournamentSettings, paytables: Paytables
                ) -> tuple[list[int], int, int]:
    """Heats ``first``..``last``: their scores (heat by heat, seat by seat), how many ended
    early, how many hands were dealt."""
    rules = settings.stage(Stage.QUALIFYING).rules
    scores: list[int] = []
    early = hands = 0
    for heat in range(first, last + 1):
        rng = Random(f"showdown-scores/{seed}/{heat}")
        table = TableSession(table_id="SIM", rules=rules, paytables=paytables,
                             deal=DEFAULT_DEAL)
        people: dict[int, VirtualPlayer] = {}
        for seat in range(1, players + 1):
            table.seat_entry(Entry.start(entry_id=f"H{heat}-S{seat}", rules=rules), seat)
            people[seat] = VirtualPlayer(name=f"seat {seat}", rng=Random(rng.random()),
                                         style=PlayerStyle(bold=seat % 2 == 0))
        dealer = VirtualDealer(rng=Random(rng.random()))
        number = 0
        while table.seats:
            number += 1
            dealer.play_hand(table, people, f"H{heat}-{number:03d}")
            table.close_hand()
        hands += number
        for ended in sorted(table.ended, key=lambda e: e.seat):
            scores.append(ended.score_cents)
            early += ended.hands_played < rules.hands
    return scores, early, hands


def _chunk(job: tuple[int, int, int, int, Path | None, Path | None]
           ) -> tuple[list[int], int, int]:
    first, last, players, seed, tournament, paytables = job
    return _play_heats(first, last, players=players, seed=seed,
                       settings=read_tournament(tournament), paytables=read_paytables(paytables))


def simulate_campaign(*, heats: int, players: int, seed: int, settings: TournamentSettings,
                      paytables: Paytables, jobs: int = 1, tournament: Path | None = None,
                      paytables_file: Path | None = None) -> Campaign:
    """Play ``heats`` qualifying heats of ``players`` entries each; with ``jobs`` > 1 in that
    many processes (each reads ``tournament`` and ``paytables_file`` itself), with the same
    scores in the same order."""
    rules = settings.stage(Stage.QUALIFYING).rules
    if jobs <= 1 or heats < 2 * jobs:
        scores, early, hands = _play_heats(1, heats, players=players, seed=seed,
                                           settings=settings, paytables=paytables)
    else:
        size = -(-heats // (jobs * 4))
        work = [(first, min(heats, first + size - 1), players, seed, tournament, paytables_file)
                for first in range(1, heats + 1, size)]
        scores, early, hands = [], 0, 0
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for part, part_early, part_hands in pool.map(_chunk, work):
                scores += part
                early += part_early
                hands += part_hands
    return Campaign(seed=seed, heats=heats, players=players, hands_per_entry=rules.hands,
                    start_cents=rules.starting_chips_cents, scores=tuple(scores),
                    ended_early=early, hands=hands)


def register(reports: Any) -> None:
    """Add `report scores`."""
    p: argparse.ArgumentParser = reports.add_parser(
        "scores", help="simulate a qualifying campaign: score distribution (PNG and JSON)",
        description="Simulate a qualifying campaign in virtual time (the game core with the"
                    " virtual players) and write the distribution of 10-hand scores as"
                    " scores.png and scores.json: percentiles, mean, the share finishing"
                    " below the starting chips and the expected cut line for the last"
                    " qualifying place, to help plan prizes.")
    p.add_argument("--heats", type=int, required=True, metavar="N",
                   help="qualifying heats to simulate (e.g. 5000)")
    p.add_argument("--players", type=int, default=3, metavar="P",
                   help="entries per heat, 1-6 (default 3)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="the seed (default: a random one, printed: pass it to reproduce)")
    p.add_argument("--entries-per-campaign", type=int, default=1_000, metavar="E",
                   help="entries of the campaign whose cut line is estimated (default 1000)")
    p.add_argument("--resamples", type=int, default=2_000, metavar="B",
                   help="campaigns resampled for the cut line's spread (default 2000)")
    p.add_argument("--out", type=Path, default=Path(), metavar="DIR",
                   help="directory for scores.png and scores.json (default: here)")
    p.add_argument("--jobs", type=int, default=1, metavar="J",
                   help="processes to simulate in (default 1; the scores do not depend on it)")
    p.add_argument("--no-plot", action="store_true", help="write only scores.json")
    p.add_argument("--tournament", type=Path, metavar="FILE", help="tournament settings file")
    p.add_argument("--paytables", type=Path, metavar="FILE", help="paytables file")
    p.add_argument("--json", action="store_true",
                   help="print scores.json's document on stdout too (instead of the summary)")
    p.set_defaults(handler=run)


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.heats <= _MAX_HEATS:
        raise CommandError(f"--heats {args.heats}: must be 1 to {_MAX_HEATS:,}")
    if not 1 <= args.players <= 6:
        raise CommandError(f"--players {args.players}: a table has 1 to 6 seats")
    if not 1 <= args.jobs <= 64:
        raise CommandError(f"--jobs {args.jobs}: must be 1 to 64")
    if args.resamples < 1:
        raise CommandError(f"--resamples {args.resamples}: must be at least 1")
    if args.seed is not None and args.seed < 0:
        raise CommandError(f"--seed {args.seed}: must be 0 or more")
    if args.out.exists() and not args.out.is_dir():
        raise CommandError(f"--out {args.out}: not a directory")


def _money(cents: int) -> dict[str, Any]:
    return {"cents": cents, "rand": rand_plain(cents)}


def document(campaign: Campaign, summary: ScoreSummary, cut: CutLine) -> dict[str, Any]:
    """The JSON document of a campaign's distribution."""
    return {
        "seed": campaign.seed, "heats": campaign.heats, "players_per_heat": campaign.players,
        "hands_per_entry": campaign.hands_per_entry, "entries": summary.count,
        "hands_played": campaign.hands, "entries_ended_early": campaign.ended_early,
        "starting_chips": _money(campaign.start_cents),
        "percentiles": {k: _money(v) for k, v in summary.percentiles.items()},
        "percentile_method": "nearest rank",
        "mean": {"cents": round(summary.mean_cents, 2),
                 "rand": f"{summary.mean_cents / 100:.2f}"},
        "lowest": _money(summary.lowest_cents), "highest": _money(summary.highest_cents),
        "below_start": {"entries": summary.below_start,
                        "share": round(summary.below_start_share, 6)},
        "cut_line": {"place": cut.place, "entries_per_campaign": cut.entries,
                     "resamples": cut.resamples, "expected": _money(cut.median_cents),
                     "mean_cents": round(cut.mean_cents, 2), "p5": _money(cut.p5_cents),
                     "p95": _money(cut.p95_cents)},
    }


def run(args: argparse.Namespace) -> int:
    """Simulate, summarise, write the JSON and the plot."""
    _check(args)
    settings = read_tournament(args.tournament)
    paytables = read_paytables(args.paytables)
    place = settings.qualifying.advance or 12
    if args.entries_per_campaign < place:
        raise CommandError(f"--entries-per-campaign {args.entries_per_campaign}: fewer"
                           f" entries than the {place} qualifying places")
    if not args.no_plot:
        try:
            check_plotting()
        except PlotUnavailable as exc:
            raise CommandError(str(exc)) from None
    seed = args.seed if args.seed is not None else secrets.randbelow(1 << 31)
    print(f"simulating {args.heats:,} qualifying heats of {args.players} players, seed {seed}"
          f" (reproduce with --seed {seed})", file=sys.stderr)
    started = time.perf_counter()
    campaign = simulate_campaign(heats=args.heats, players=args.players, seed=seed,
                                 settings=settings, paytables=paytables, jobs=args.jobs,
                                 tournament=args.tournament, paytables_file=args.paytables)
    elapsed = time.perf_counter() - started
    summary = summarise(campaign.scores, campaign.start_cents)
    cut = cut_line(campaign.scores, place=place, entries=args.entries_per_campaign,
                   resamples=args.resamples, seed=seed)
    doc = document(campaign, summary, cut)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scores.json").write_text(json.dumps(doc, indent=2) + "\n",
                                              encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"--out {args.out}: cannot write: {exc.strerror or exc}") from None
    if not args.no_plot:
        caption = (f"Simulated with seed {seed}: {campaign.heats:,} heats x {campaign.players}"
                   f" players x {campaign.hands_per_entry} hands = {summary.count:,} entries"
                   f" ({campaign.hands:,} hands), virtual players, shipped rules and"
                   f" paytables. Percentiles by nearest rank. Cut line: the {place}th best of"
                   f" {cut.entries:,} entries, {cut.resamples:,} resampled campaigns.")
        try:
            plot_scores(args.out / "scores.png", campaign.scores, summary, cut,
                        caption=caption, title="Qualifying scores after 10 hands"
                        " (simulated campaign)")
        except PlotUnavailable as exc:
            raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    per = summary.percentiles
    print(f"{summary.count:,} entries in {elapsed:.1f} s ({campaign.hands / elapsed:,.0f}"
          f" hands/s): median {format_rand(per['p50'])}, p90 {format_rand(per['p90'])},"
          f" p99 {format_rand(per['p99'])}; {summary.below_start_share * 100:.1f}% below"
          f" {format_rand(campaign.start_cents)}; 12th best of {cut.entries:,} entries about"
          f" {format_rand(cut.median_cents)} ({format_rand(cut.p5_cents)} to"
          f" {format_rand(cut.p95_cents)})")
    print(f"written: {args.out / 'scores.json'}"
          + ("" if args.no_plot else f", {args.out / 'scores.png'}"))
    return 0
