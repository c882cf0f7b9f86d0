"""Time `showdown dispute replay` on a heat's bundle, beside the daemon's own journal replay.

Run: `.venv/bin/python bench/dispute_replay.py [--hands 10] [--seats 3] [--quick]`. Plays a
qualifying heat into a journal in a temporary directory through the daemon's path (each
input journaled and applied by `TableService` in one transaction; R25 registry chips on the
spots, a seeded deck, the payout laid back and verified), exports the heat's bundle with
`--config`, then times: the baseline (a fresh `TableService` applying the whole journal, as a
daemon does on start-up), `dispute export`, `dispute replay` (text and JSON) and `dispute
replay --devices` (the real drivers on the simulators). Prints milliseconds per hand. Exits
non-zero only when the replay does not match (a wrong result).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord
from controller.table_service import TableService
from game.chips.registry import Chip, ChipRegistry, format_uid
from game.hand.deal import DEFAULT_DEAL
from game.wagers.settle import WAGERS, SeatWagers
from runtime.settings_files import read_paytables, read_tournament
from simulators.dealer import VirtualDealer
from wire.signing import Signer, save_private_key

R25 = 2_500
BETS = SeatWagers(ante=2 * R25, odds=2 * R25, trips_plus=R25)


def _registry() -> ChipRegistry:
    """Fresh R25 tray chips wagered as they come: float chips count for any seat (the
    table's `require_issued` off, as its config says; D346 is not what this bench times)."""
    return ChipRegistry([Chip(uid=bytes.fromhex(f"E0040000{i:08X}"), value_cents=R25,
                              chip_set="bench") for i in range(20_000)], chip_set="bench",
                        require_issued=False)


class _Table:
    """Journal + service + config of a bench table."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = root / "t01.journal"
        self.signer = Signer.generate("t01")
        save_private_key(self.signer, root / "t01.key")
        (root / "tables.keys").write_text(self.signer.public_key.enrolment_line() + "\n")
        (root / "chips.csv").write_text("uid_hex,value_cents,chip_set,issued_to\n" + "".join(
            f"{format_uid(c.uid)},{c.value_cents},bench,\n" for c in _registry()))
        (root / "t01.toml").write_text(
            '[table]\nvenue = "bench"\nid = "t01"\njournal = "t01.journal"\n'
            '[files]\nchips = "chips.csv"\n[keys]\ntable_key = "t01.key"\n'
            '[shoe]\nkind = "manual"\n[rfid]\nkind = "manual"\n[api]\nsocket = "s.sock"\n'
            '[console]\nrequire_issued = false\n')
        self.service = TableService(table_id="t01", settings=read_tournament(None),
                                    paytables=read_paytables(None), deal=DEFAULT_DEAL,
                                    registry=_registry(), verify_payouts=True)
        self.clock = FakeClockSource(step_ns=1_000_000_000)
        self.store = Journal.open(self.journal, clock=self.clock)
        self.chip = 0
        self.dealer = VirtualDealer(rng=random.Random(7))

    def send(self, kind: str, **payload: Any) -> Any:
        box: list[Any] = []

        def outgoing(record: JournalRecord) -> Any:
            box.append(self.service.apply(record.kind, record.payload, record.wall))
            return box[0].messages

        self.store.append(kind=kind, payload=payload, clock=self.clock(), outgoing=outgoing)
        return box[0]

    def lay(self, seat: int, spot: str, cents: int) -> None:
        uids = [format_uid(bytes.fromhex(f"E0040000{self.chip + i:08X}"))
                for i in range(cents // R25)]
        self.chip += len(uids)
        self.send("chips", seat=seat, spot=spot, uids=uids, reader="R1", antenna=0,
                  report_seq=0)

    def hand(self, seats: list[int]) -> None:
        for seat in seats:
            for spot in WAGERS:
                if BETS.amount(spot):
                    self.lay(seat, spot, BETS.amount(spot))
        self.send("dealer", action="no_more_bets", by="D1")
        hand = self.service.hand
        if hand is None:
            raise SystemExit("bench: no hand opened (a refused no_more_bets)")
        deck = iter(self.dealer.shuffled_deck())
        played = False
        while (target := hand.next_target) is not None:
            if target.kind == "board" and target.index == 0 and not played:
                played = True  # seat 1 plays 3x preflop, the others fold
                self.lay(seats[0], "play", 3 * BETS.ante)
            self.send("card", card=str(next(deck)), read_index=0, quality=99, device="S1")
        settled = self.send("dealer", action="settle", by="D1")
        [body] = [m.body for m in settled.messages if m.type == "hand.settled"]
        for s in body["settlement"]["seats"]:
            for spot, r in s["wagers"].items():
                self.lay(s["seat"], spot, 0 if r["result"] == "lose"
                         else r["stake"] + max(r["net"], 0))


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(argv)


def run(hands: int, seats: int, repeat: int) -> int:
    """Play, export and time; 0 when every replay matches."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = _Table(root)
        t.send("desk", command="open_heat", stage="qualifying", heat_id="B1")
        seated = list(range(1, seats + 1))
        for seat in seated:
            t.send("desk", command="seat", entry_id=f"E{seat}", seat=seat)
        for _ in range(hands):
            t.hand(seated)
        t.store.close()
        with Journal.open(t.journal, read_only=True) as j:
            records = [(r.kind, r.payload, r.wall) for r in j.records()
                       if not r.kind.startswith("journal.")]

        settings, paytables, registry = read_tournament(None), read_paytables(None), _registry()

        def baseline() -> None:  # the rules and the registry already loaded, as in a daemon
            fresh = TableService(table_id="t01", settings=settings, paytables=paytables,
                                 deal=DEFAULT_DEAL, registry=registry, verify_payouts=True)
            for kind, payload, wall in records:
                fresh.apply(kind, payload, wall)

        bundle = root / "b.json"
        export = ["dispute", "export", "--heat", "B1", "--journal", str(t.journal), "--key",
                  str(root / "t01.key"), "--venue", "bench", "--by", "bench", "--out",
                  str(bundle), "--config", str(root / "t01.toml")]
        replay = ["dispute", "replay", str(bundle), "--keys", str(root / "tables.keys")]
        figures = [("baseline: TableService applies the journal", *_timed(baseline, repeat)),
                   ("dispute export --heat --config", *_timed(lambda: _quiet(export), repeat)),
                   ("dispute replay (text)", *_timed(lambda: _quiet(replay), repeat)),
                   ("dispute replay --format json",
                    *_timed(lambda: _quiet([*replay, "--format", "json"]), repeat)),
                   ("dispute replay --devices", *_timed(lambda: _quiet([*replay, "--devices"]),
                                                         1))]
    print(f"dispute replay: {hands} hands x {seats} seats, {len(records)} journal records; "
          f"{platform.python_implementation()} {platform.python_version()} on "
          f"{platform.machine()}, best of {repeat}")
    bad = 0
    for name, seconds, code in figures:
        if code not in (0, None):
            bad += 1
        print(f"  {name:<44} {seconds * 1000:9.1f} ms  {seconds * 1000 / hands:7.2f} ms/hand"
              + ("" if code in (0, None) else f"  EXIT {code}: WRONG"))
    print("result: " + ("OK" if not bad else "WRONG"))
    return 1 if bad else 0


def cli() -> int:
    """Parse the options and run."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hands", type=int, default=10, help="hands in the heat (default 10)")
    p.add_argument("--seats", type=int, default=3, help="seats playing (default 3)")
    p.add_argument("--repeat", type=int, default=3, help="best of N timings (default 3)")
    p.add_argument("--quick", action="store_true", help="3 hands, 2 seats, once (a smoke run)")
    a = p.parse_args()
    if a.quick:
        return run(3, 2, 1)
    return run(a.hands, a.seats, a.repeat)


if __name__ == "__main__":
    raise SystemExit(cli())
