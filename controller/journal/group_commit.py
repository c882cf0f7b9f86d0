"""Group commit of a daemon's inputs: the inputs that arrive while the journal is busy with a
transaction are journaled together in the next one (`Journal.append_batch`: one commit, one
fsync, each input its own record, in arrival order), and each sender gets its own result.

Durability is unchanged: every input is committed, at ``synchronous=FULL``, before anything it
caused leaves the daemon (its answer, its messages). Only the number of fsyncs falls, when
inputs come together (a chip reader's sweep of every spot after a payout, a card read while a
console button is pressed); an input arriving alone is committed alone, at once.

    commits = GroupCommit(commit)       # commit(batch) -> one result per input, in order
    result = await commits.submit(item)  # waits for the transaction its input went into
    await commits.idle()                # at shutdown: the transaction running has finished
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Final, Generic, TypeVar

__all__ = ["GroupCommit"]

_In = TypeVar("_In")
_Out = TypeVar("_Out")

MOST: Final = 64  # inputs in one transaction at most (a backlog is cut in such batches)


class GroupCommit(Generic[_In, _Out]):
    """Batches submitted inputs for `commit`, one batch at a time, in submission order."""

    def __init__(self, commit: Callable[[list[_In]], Awaitable[list[_Out]]], *,
                 most: int = MOST) -> None:
        """``commit(batch)`` journals and applies a batch: one result per input, in order
        (or raises: every input of the batch gets the exception)."""
        if most < 1:
            raise ValueError("a batch holds at least one input")
        self._commit, self._most = commit, most
        self._queue: list[tuple[_In, asyncio.Future[_Out]]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0  # transactions made (bench figures)
        self.inputs = 0  # inputs committed

    @property
    def waiting(self) -> int:
        """Inputs submitted and not yet taken into a transaction."""
        return len(self._queue)

    def submit(self, item: _In) -> asyncio.Future[_Out]:
        """Queue an input for the next transaction; its result once committed. A caller
        cancelled before its input is taken leaves it out; once taken, it is committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_Out] = loop.create_future()
        self._queue.append((item, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="journal-group-commit")
        return future

    async def idle(self) -> None:
        """Return once every input submitted so far has been committed (or failed)."""
        while self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    async def _run(self) -> None:
        while self._queue:
            taken, self._queue = self._queue[:self._most], self._queue[self._most:]
            batch = [(item, future) for item, future in taken if not future.cancelled()]
            if not batch:
                continue
            try:
                results = await self._commit([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"a commit of {len(batch)} inputs gave"
                                       f" {len(results)} results")
            except Exception as exc:  # every sender of the batch learns it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.batches += 1
            self.inputs += len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
