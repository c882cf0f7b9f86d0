"""Command seqs never repeat, even after the central database is restored from a backup: the
desk's commands reach a real table daemon over a real broker, its answers come back through a
real Ingestor, and after the restore the table accepts every new command (none is refused as
a duplicate of one sent before the restore). SQLite, with the service's own online backup
(leaderboard.backup); the restore is the operator's: the backup file copied into place."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from controller.journal import Journal
from controller.wiring import wire_table
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.backup import backup_sqlite
from leaderboard.db import make_engine, upgrade
from leaderboard.desk import DeskCommand
from leaderboard.desk.command_log import mark_sent
from leaderboard.desk.sender import DeskSender
from leaderboard.desk_api.commands import wait_for_answers
from leaderboard.ingest import Ingestor
from leaderboard.ingest.gaps import MqttResender
from leaderboard.models import DeskCommandRecord, TableRecord
from runtime.settings_files import read_tournament
from tests.fixtures.services import MqttBroker
from tests.integration.daemon_support import (
    GUARD_S,
    TOURNAMENT,
    RecordingNotify,
    Table,
    forget_on_broker,
    make_table,
    running,
)
from wire.mqtt import MqttSettings


def utc_now() -> datetime:
    return datetime.now(UTC)


@contextlib.asynccontextmanager
async def ingesting(engine: sa.Engine, table: Table, settings: MqttSettings
                    ) -> AsyncIterator[Ingestor]:
    """The service's ingest: the table's messages stored and projected; a gap asked for again
    with a resend signed by the desk's key (the service signs both with its one key)."""
    resender = MqttResender(settings, table.desk, venue=table.config.venue)
    ingest = Ingestor(engine, venue=table.config.venue, resend=resender,
                      resend_after_s=0.2, resend_interval_s=0.5)
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(ingest.run(settings, stop=stop, ready=ready, gap_check_s=0.1))
    try:
        async with asyncio.timeout(GUARD_S):
            await ready.wait()
        yield ingest
    finally:
        stop.set()
        async with asyncio.timeout(GUARD_S):
            await task


async def verdicts(engine: sa.Engine, sender: DeskSender, *commands: DeskCommand
                   ) -> list[tuple[str, str | None]]:
    for command in commands:
        await sender.send(command)
        mark_sent(engine, [command], utc_now())
    views = await wait_for_answers(sessionmaker(engine), [c.seq for c in commands],
                                   timeout=GUARD_S)
    return [(v.state, v.reason) for v in views]


def open_and_close(engine: sa.Engine, table: str, heat: str) -> tuple[DeskCommand, DeskCommand]:
    """The desk opens a semi-final heat at the table and closes it."""
    with Session(engine, expire_on_commit=False) as s:
        settings = read_tournament(TOURNAMENT)
        opened = desk.open_heat(s, settings, utc_now, actor="desk-1", table=table,
                                stage=Stage.SEMI_FINAL, heat_id=heat)
        closed = desk.close_heat(s, utc_now, actor="desk-1", table=table)
    return opened, closed


def audit_ids(engine: sa.Engine, commands: tuple[DeskCommand, ...]) -> list[int]:
    """The audit row ids of the commands' desk actions (what their seqs were before 0005)."""
    with Session(engine) as s:
        rows = [s.get(DeskCommandRecord, c.seq) for c in commands]
        return [r.audit_id for r in rows if r is not None]


async def test_after_a_restore_from_backup_the_table_accepts_every_new_command(
        mqtt_broker: MqttBroker, tmp_path: Path, short_dir: Path) -> None:
    host, port = mqtt_broker.host, mqtt_broker.port
    table = make_table(tmp_path, short_dir, f"{host}:{port}")
    name = table.config.table
    settings = MqttSettings(host=host, port=port)
    sender = DeskSender(settings, venue=table.config.venue, signer=table.desk)
    path = tmp_path / "leaderboard.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(TableRecord).values(
            table_id=table.config.table, venue=table.config.venue,
            public_key=table.signer.public_key.base64, enrolled_at=utc_now(), active=True))
    backups = tmp_path / "backups"
    backups.mkdir()
    notify = RecordingNotify()
    wired = wire_table(table.config, notify=notify)
    notify.daemon = wired.daemon
    try:
        async with running(wired.daemon):
            async with ingesting(engine, table, settings):
                report = backup_sqlite(path, backups)  # the 6-hourly copy
                before = open_and_close(engine, name, "semi-final-1")
                assert await verdicts(engine, sender, *before) == [("accepted", None)] * 2
                audited_before = audit_ids(engine, before)
            engine.dispose()
            # The disk is lost: the backup is restored (it knows none of those commands).
            for stale in path.parent.glob(path.name + "*"):
                stale.unlink()
            shutil.copyfile(report.path, path)
            engine = make_engine(f"sqlite:///{path}")
            with Session(engine) as s:
                assert s.scalar(sa.select(sa.func.count()).select_from(DeskCommandRecord)) == 0
            async with ingesting(engine, table, settings):
                after = open_and_close(engine, name, "semi-final-1")
                assert await verdicts(engine, sender, *after) == [("accepted", None)] * 2
                again = open_and_close(engine, name, "semi-final-2")
                assert await verdicts(engine, sender, *again) == [("accepted", None)] * 2
        # The audit ids (the seqs before revision 0005) repeat after the restore; seqs do not.
        assert audit_ids(engine, after) == audited_before
        seqs = [c.seq for c in (*before, *after, *again)]
        assert len(set(seqs)) == len(seqs) and min(c.seq for c in after) > max(
            c.seq for c in before)
        with Journal.open(table.config.journal, read_only=True) as journal:
            published = journal.messages(1)
        assert [m.type for m in published if m.type.startswith("heat.")] == [
            "heat.opened", "heat.closed"] * 3
        answers = [m.body for m in published if m.type == "command.result"]
        # Every desk command accepted (the ingest's resend after the restore too).
        assert [(a["command"], a["accepted"]) for a in answers if a["command"] != "resend"] == [
            ("open_heat", True), ("close_heat", True)] * 3
    finally:
        engine.dispose()
        if not mqtt_broker.embedded:
            await forget_on_broker(host, port, table)
