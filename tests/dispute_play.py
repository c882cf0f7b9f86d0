"""A table played through the daemon's own path into a real journal, for the dispute tests.

Every input is journaled with `Journal.append` and applied by `TableService.apply` inside the
same transaction, exactly as `controller.app.TableDaemon.ingest` does; the chip reads carry
real registry UIDs (a registry file the table config names), the cards come from a seeded
virtual dealer, the payout is paid onto the spots and read back (verify_payouts is on, as
in the shipped console config).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
CHIP_SET = "gold-reef-2026"
VENUE = "grand"


def registry_rows() -> list[Chip]:
    """4,000 R25 chips of the set in play and 18 R500 bonus markers."""
    chips = [Chip(uid=bytes.fromhex(f"E0040000{i:08X}"), value_cents=R25, chip_set=CHIP_SET)
             for i in range(4_000)]
    chips += [Chip(uid=bytes.fromhex(f"E0040001{i:08X}"), value_cents=50_000,
                   chip_set="bonus-marker") for i in range(18)]
    return chips


class PlayedTable:
    """Table t07's config, key, registry and journal, and a way to play hands into it."""

    def __init__(self, root: Path, *, table: str = "t07") -> None:
        self.root, self.table = root, table
        self.journal = root / f"{table}.journal"
        self.key = root / f"{table}.key"
        self.keys = root / "tables.keys"
        self.config = root / f"{table}.toml"
        self.signer = Signer.generate(table)
        save_private_key(self.signer, self.key)
        self.keys.write_text(self.signer.public_key.enrolment_line() + "\n", encoding="utf-8")
        chips = root / "chips.csv"
        chips.write_text("uid_hex,value_cents,chip_set,issued_to\n" + "".join(
            f"{format_uid(c.uid)},{c.value_cents},{c.chip_set},\n" for c in registry_rows()),
            encoding="utf-8")
        self.config.write_text(
            f'[table]\nvenue = "{VENUE}"\nid = "{table}"\njournal = "{self.journal.name}"\n'
            f'[files]\nchips = "chips.csv"\nchip_set = "{CHIP_SET}"\n'
            f'[keys]\ntable_key = "{self.key.name}"\n'
            '[shoe]\nkind = "manual"\n[rfid]\nkind = "manual"\n'
            # the hands wager fresh tray chips: float chips count for any seat (D30), as in
            # the service below; the float by default (D346) is tests/game/chips' business
            '[console]\nrequire_issued = false\n'
            '[api]\nsocket = "t07.sock"\n', encoding="utf-8")
        self.service = TableService(
            table_id=table, settings=read_tournament(None), paytables=read_paytables(None),
            deal=DEFAULT_DEAL, registry=ChipRegistry(registry_rows(), chip_set=CHIP_SET,
                                                     require_issued=False),
            verify_payouts=True)
        self.clock = FakeClockSource(step_ns=1_000_000_000)
        self.next_chip = 0
        self.next_marker = 0
        self.dealer = VirtualDealer(rng=random.Random(2026))
        self.applied: list[Any] = []
        self._open: Journal | None = None

    def close(self) -> None:
        """Close the journal (as the daemon does on stop), so an export reads it all."""
        if self._open is not None:
            self._open.close()
            self._open = None

    # ---- the one way in, as the daemon's ingest ---------------------------------------

    def send(self, kind: str, **payload: Any) -> Any:
        """Journal one input and apply it in the same transaction; the core's answer."""
        box: list[Any] = []

        def outgoing(record: JournalRecord) -> Any:
            applied = self.service.apply(record.kind, record.payload, record.wall)
            box.append(applied)
            return applied.messages

        if self._open is None:
            self._open = Journal.open(self.journal, clock=self.clock)
        self._open.append(kind=kind, payload=dict(payload), clock=self.clock(),
                          outgoing=outgoing)
        self.applied.append(box[0])
        return box[0]

    def desk(self, command: str, **body: Any) -> Any:
        """A desk command as the daemon journals it (already verified)."""
        return self.send("desk", command=command, **body)

    # ---- chips on the felt ----------------------------------------------------------------

    def chips(self, amount: int) -> list[str]:
        """Fresh R25 chips worth `amount`."""
        uids = [format_uid(bytes.fromhex(f"E0040000{self.next_chip + i:08X}"))
                for i in range(amount // R25)]
        self.next_chip += len(uids)
        return uids

    def marker(self) -> str:
        """A fresh bonus marker."""
        self.next_marker += 1
        return format_uid(bytes.fromhex(f"E0040001{self.next_marker - 1:08X}"))

    def lay(self, seat: int, spot: str, uids: list[str]) -> None:
        """The reader reports what lies on one spot."""
        self.send("chips", seat=seat, spot=spot, uids=uids, reader="R1", antenna=0,
                  report_seq=0)

    # ---- a whole hand -------------------------------------------------------------------

    def hand(self, bets: Mapping[int, SeatWagers], *, play: Mapping[int, int] | None = None,
             void: str | None = None, misread: bool = False) -> dict[str, Any]:
        """Play one hand: wagers laid, no more bets, the cards (a Play preflop of
        `play[seat]` times the Ante), settle, the payout laid and read back; returns the
        hand's published record."""
        play = play or {}
        on_spot: dict[tuple[int, str], list[str]] = {}
        for seat, w in bets.items():
            for spot in WAGERS:
                uids = self.chips(w.amount(spot))
                if spot in w.markers:
                    uids.append(self.marker())
                if uids:
                    on_spot[(seat, spot)] = uids
                    self.lay(seat, spot, uids)
        assert self.send("dealer", action="no_more_bets", by="D1").ok
        hand = self.service.hand
        assert hand is not None
        if void is not None:
            return self._record(self.send("dealer", action="void", reason=void, by="S1"))
        deck = iter(self.dealer.shuffled_deck())
        first = True
        while (target := hand.next_target) is not None:
            if target.kind == "board" and target.index == 0 and first:
                first = False
                for seat, k in play.items():
                    uids = self.chips(k * bets[seat].ante)
                    on_spot[(seat, "play")] = uids
                    self.lay(seat, "play", uids)
            card = str(next(deck))
            if misread and target.kind == "board" and target.index == 1:
                wrong = next(deck)  # the shoe misread the second flop card
                self.send("card", card=str(wrong), read_index=0, quality=40, device="S1")
                position = len(hand.cards()) - 1
                self.send("dealer", action="correct_card", position=position, card=card,
                          reason="shoe misread the card", by="S1")
                misread = False
                continue
            self.send("card", card=card, read_index=0, quality=99, device="S1")
        settled = self.send("dealer", action="settle", by="D1")
        assert settled.ok, settled.error
        record = self._record(settled)
        for s in record["settlement"]["seats"]:
            for spot, r in s["wagers"].items():
                if (s["seat"], spot) not in on_spot:
                    continue
                must = 0 if r["result"] == "lose" else r["stake"] + max(r["net"], 0)
                self.lay(s["seat"], spot, self.chips(must))
        return record

    @staticmethod
    def _record(applied: Any) -> dict[str, Any]:
        [body] = [dict(m.body) for m in applied.messages
                  if m.type in ("hand.settled", "hand.voided")]
        return body
