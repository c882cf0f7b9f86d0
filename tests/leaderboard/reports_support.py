"""What the report tests share: a table whose real decision core (controller.table_service)
is driven at chosen instants, as its devices and console would, and whose every published
message is sealed with the table's key and stored by a real Ingestor, so the central database
holds exactly what a table in play would have sent."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from controller.table_service import Applied, TableService
from game.chips.registry import Chip, ChipRegistry, format_uid
from game.hand.deal import DEFAULT_DEAL
from game.poker.cards import card_from_index
from game.staff import hash_secret
from game.wagers.settle import WAGERS
from leaderboard.ingest import Ingestor
from leaderboard.models import StaffRecord
from runtime.settings_files import read_paytables
from tests.fixtures.clock import EPOCH, FakeClock
from tests.leaderboard.desk_helpers import settings
from tests.leaderboard.ingest_support import ROOT, FakeTable, enroll

__all__ = ["R25", "PlayedTable", "Seat"]

R25 = 2_500
_SALT = b"reports-test-salt"


def _registry() -> ChipRegistry:
    return ChipRegistry([Chip(uid=bytes.fromhex(f"E0040000{i:08X}"), value_cents=R25,
                              chip_set="house") for i in range(4_000)], chip_set="house")


@dataclass
class Seat:
    """How a seat plays every hand: its opening wagers and when it plays (or folds)."""

    seat: int
    entry_id: str
    wagers: dict[str, int]
    play: str  # preflop (3x) | flop (2x) | river (1x) | fold


@dataclass
class PlayedTable:
    """One table in play: its core, its fake link (keys, seqs) and the central ingest."""

    engine: Engine
    table: str
    venue: str
    staff: list[tuple[str, str]] = field(default_factory=list)  # (staff id, role) on the roster
    service: TableService = field(init=False)
    link: FakeTable = field(init=False)
    ingestor: Ingestor = field(init=False)
    next_chip: int = 0

    def __post_init__(self) -> None:
        self.service = TableService(table_id=self.table, settings=settings(),
                                    paytables=read_paytables(None), deal=DEFAULT_DEAL,
                                    registry=_registry())
        self.link = FakeTable(self.table, venue=self.venue)
        enroll(self.engine, self.link)
        self.ingestor = Ingestor(self.engine, venue=self.venue, clock=FakeClock(),
                                 topic_root=ROOT, resend_after_s=0.0)
        if self.staff:
            with self.engine.begin() as connection:  # enrolled at the desk, as the desk does
                for staff_id, role in self.staff:
                    connection.execute(sa.insert(StaffRecord).values(
                        staff_id=staff_id, name=f"Name of {staff_id}", role=role, active=True,
                        enrolled_at=EPOCH, changed_at=EPOCH))
            members = [{"staff_id": s, "name": f"Name of {s}", "role": r,
                        "pin_hash": hash_secret("1234", _SALT)} for s, r in self.staff]
            self.send_at_once("desk", {"command": "staff_roster", "version": 1,
                                       "card_salt": None, "members": members,
                                       "signer": "desk", "command_seq": 1})

    async def apply(self, at: datetime, kind: str, payload: dict[str, Any]) -> Applied:
        """Apply one input at ``at`` and deliver what it publishes to the central ingest."""
        applied = self.service.apply(kind, payload, at)
        for message in applied.messages:
            topic, raw = self.link.message(message.type, dict(message.body))
            await self.ingestor.handle(topic, raw)
        return applied

    def send_at_once(self, kind: str, payload: dict[str, Any]) -> None:
        """An input whose messages the test does not need stored (the roster's answer)."""
        applied = self.service.apply(kind, payload, datetime(2026, 7, 1, 8, 0).astimezone())
        assert applied.ok, applied.error

    async def publish(self, kind: str, body: dict[str, Any]) -> None:
        """A message as the table would publish it, sealed by its key (a payout check)."""
        topic, raw = self.link.message(kind, body)
        await self.ingestor.handle(topic, raw)

    def _uids(self, cents: int) -> list[str]:
        uids = [format_uid(bytes.fromhex(f"E0040000{self.next_chip + i:08X}"))
                for i in range(cents // R25)]
        self.next_chip += len(uids)
        return uids

    async def chips(self, at: datetime, seat: int, spot: str, cents: int) -> None:
        """The reader reports ``cents`` of house chips on a spot."""
        done = await self.apply(at, "chips", {"seat": seat, "spot": spot,
                                              "uids": self._uids(cents), "reader": "R1",
                                              "antenna": 0, "report_seq": 0})
        assert done.ok, done.error

    async def ok(self, at: datetime, kind: str, **payload: Any) -> Applied:
        """Apply an input that must be accepted."""
        done = await self.apply(at, kind, payload)
        assert done.ok, f"{kind} {payload}: {done.error}"
        return done

    async def hand(self, start: datetime, seats: list[Seat], *, dealer: str | None,
                   seconds: int = 60, seed: int = 0, keyed_card_by: str | None = None,
                   void_by: str | None = None) -> str:
        """Play one hand: wagers placed, no more bets at ``start``, every card read, Plays
        put on at their street, settled (or voided by ``void_by``) at ``start + seconds``;
        with ``keyed_card_by`` the first flop card is keyed by hand. Returns the hand id."""
        before = start - timedelta(seconds=30)
        for s in seats:
            for spot in WAGERS:
                await self.chips(before, s.seat, spot, s.wagers.get(spot, 0))
        opened = await self.ok(start, "dealer", action="no_more_bets", by=dealer)
        hand_id = str(opened.detail["hand_id"])
        if void_by is not None:
            await self.ok(start + timedelta(seconds=seconds), "dealer", action="void",
                          reason="misdeal", by=void_by)
            return hand_id
        deck = [card_from_index(i) for i in range(52)]
        random.Random(seed).shuffle(deck)
        cards = iter(deck)
        at = start
        hand = self.service.hand
        assert hand is not None
        streets: set[str] = set()
        while (target := hand.next_target) is not None:
            at += timedelta(seconds=1)
            street = {0: "preflop", 3: "flop"}.get(target.index) if target.kind == "board" \
                else None
            if street is not None and street not in streets:
                streets.add(street)
                for s in seats:
                    if s.play == street:
                        await self.chips(at, s.seat, "play",
                                         s.wagers["ante"] * (3 if street == "preflop" else 2))
            card = str(next(cards))
            if keyed_card_by is not None and street == "preflop":
                await self.ok(at, "card", card=card, source="manual", by=keyed_card_by,
                              device=f"manual:{keyed_card_by}")
            else:
                await self.ok(at, "card", card=card, read_index=0, quality=99, device="S1")
        for s in seats:
            if s.play == "river":
                await self.chips(at, s.seat, "play", s.wagers["ante"])
        await self.ok(start + timedelta(seconds=seconds), "dealer", action="settle",
                      by=dealer)
        return hand_id
