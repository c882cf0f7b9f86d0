"""A desk command's whole round trip in one process: the desk's signed envelope verified and
applied by a real table core (controller.table_service.TableService), and every message the
table publishes in answer sealed with the table's key and stored by a real Ingestor, which
projects it (the tables' ``command.result`` included)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from controller.table_service import TableService
from game.chips.registry import Chip, ChipRegistry
from game.hand.deal import DEFAULT_DEAL
from leaderboard.desk import DeskCommand
from leaderboard.desk.sender import seal_command
from leaderboard.ingest import Ingestor
from runtime.settings_files import read_paytables
from tests.leaderboard.desk_helpers import FakeClock, settings
from tests.leaderboard.ingest_support import VENUE, FakeTable, enroll, make_ingestor
from wire.envelope import verify_envelope
from wire.signing import KeyRing, Signer

__all__ = ["DESK", "TableLoop", "new_table"]

DESK = Signer.from_seed("desk-a", bytes(range(32)))


def new_table(table: str = "t01") -> TableService:
    """A table's real decision core, with no heat open."""
    return TableService(table_id=table, settings=settings(), paytables=read_paytables(None),
                        deal=DEFAULT_DEAL, registry=ChipRegistry(
                            [Chip(uid=bytes(8), value_cents=2_500, chip_set="test")],
                            chip_set="test"))


class TableLoop:
    """A CommandSender whose table applies each command at once and whose answers the
    ingest stores (``deliver=False``: the command never reaches the table; ``answer=False``:
    the table applies it but its answers never reach the ingest)."""

    def __init__(self, engine: Engine, clock: FakeClock, *, table: str = "t01") -> None:
        self.engine, self.clock = engine, clock
        self.table = new_table(table)
        self.fake = FakeTable(table)
        enroll(engine, self.fake)
        self.ingestor: Ingestor = make_ingestor(engine, clock)
        self.ring = KeyRing([DESK.public_key])
        self.answer = True
        self.deliver = True
        self.applied: list[tuple[int, bool, str | None]] = []  # (seq, ok, error)
        self.published: list[tuple[str, dict[str, Any]]] = []

    async def send(self, command: DeskCommand) -> None:
        """Deliver one command to the table; its answers (if it answers) to the ingest."""
        if not self.deliver:
            return
        envelope = verify_envelope(seal_command(command, venue=VENUE, signer=DESK).encode(),
                                   self.ring)
        applied = self.table.apply("desk", {**envelope.body, "signer": envelope.signer,
                                            "command_seq": envelope.seq}, self.clock())
        self.applied.append((envelope.seq, applied.ok, applied.error))
        if self.answer:
            await self.publish([(m.type, dict(m.body)) for m in applied.messages])

    async def publish(self, messages: list[tuple[str, dict[str, Any]]]) -> None:
        """What the table publishes, stored by the ingest in the table's seq order."""
        for kind, body in messages:
            self.published.append((kind, body))
            topic, payload = self.fake.message(kind, body)
            await self.ingestor.handle(topic, payload)
