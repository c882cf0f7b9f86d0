"""The running daemon's checkpoints: at the first safe point (no hand in progress) after
``[journal] checkpoint_every`` inputs, and when a heat ends, the table's state is written to
the journal as a checkpoint (controller/journal/checkpoints.py) so the next start-up replays
only what follows it.

Play is not stalled: the checkpoint waits for the end of an input, takes the snapshot in a
worker thread while no input is applied (the only moment the state must hold still, a few
milliseconds), then lets inputs go on while it encodes, signs and commits the checkpoint in
the worker thread. Both durations are logged and kept (`held_s`, `write_s`) for bench/startup.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from controller.journal import Journal, JournalError
from controller.journal.checkpoints import read_heads, write_checkpoint
from controller.journal.integrity import ChainHeads
from controller.ports import CheckpointedTable
from controller.startup import ShoeReads, checkpoint_body
from game.table.snapshot import SNAPSHOT_VERSION, is_safe_point, take_snapshot
from wire.signing import Signer

__all__ = ["Checkpointer"]


class Checkpointer:
    """Writes the daemon's checkpoints (run `run()` as a task; it ends when cancelled)."""

    def __init__(self, daemon: CheckpointedTable, *, journal: Journal, signer: Signer, every: int,
                 log: Any) -> None:
        self._daemon = daemon
        self._journal = journal
        self._signer = signer
        self._every = every
        self._log = log
        self.held_s: list[float] = []  # how long each snapshot held inputs back
        self.write_s: list[float] = []  # how long each checkpoint took in all

    async def run(self) -> None:
        """Watch the inputs applied; write a checkpoint when one is due and the state is safe."""
        daemon = self._daemon
        version, since, due = daemon.version, 0, False
        service = daemon.service
        assert service is not None
        heat = service.heat_id
        while True:
            now = await daemon.changed(version)
            since, version = since + now - version, now
            ended = heat is not None and service.heat_id != heat
            heat = service.heat_id
            due = due or ended or since >= self._every
            if due and not daemon.faults and await self.write():
                since, due = 0, False

    async def write(self) -> bool:
        """Write a checkpoint now if the table is at a safe point; False if it is not."""
        service = self._daemon.service
        assert service is not None
        core, journal = service.core, self._journal
        t0 = time.perf_counter()

        def take() -> tuple[dict[str, Any], ChainHeads, ShoeReads, float] | None:
            started = time.perf_counter()
            if not is_safe_point(core):
                return None
            # Between inputs, the daemon's shoe reads are the journal's up to its head.
            return (take_snapshot(core), read_heads(journal), dict(self._daemon.shoe_reads),
                    time.perf_counter() - started)

        taken = await self._daemon.quiesced(take)
        if taken is None:
            return False
        state, heads, reads, held = taken
        try:
            record = await asyncio.to_thread(self._store, state, heads, reads)
        except JournalError as exc:
            self._log.error("journal checkpoint not written", error=str(exc))
            return False
        total = time.perf_counter() - t0
        self.held_s.append(held)
        self.write_s.append(total)
        self._log.info("journal checkpoint written", checkpoint=record, covers=heads.journal_seq,
                       held_ms=round(held * 1000, 2), total_ms=round(total * 1000, 2))
        return True

    def _store(self, state: dict[str, Any], heads: ChainHeads, reads: ShoeReads) -> int:
        """In the worker thread: encode, sign and commit the checkpoint."""
        return write_checkpoint(self._journal, checkpoint_body(state, reads), covers=heads,
                                snapshot_version=SNAPSHOT_VERSION, signer=self._signer).seq

