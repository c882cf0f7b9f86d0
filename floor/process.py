"""A table of a simulated floor in a process of its own, as on a real floor where every table
is a PC of its own: the table's daemon, its simulated devices and its virtual dealer run in
the child (floor.tables), the broker, the central service and the desk
stay in the floor's process, and the two talk over a pipe: the table's questions to the desk
(calls with answers), its report when it is done, and the floor's word to stop.

The child shares the floor's virtual clock (floor.clock, shared memory). A child
that dies is a problem the floor reports (its pending questions fail, it stops counting as a
table playing); a floor that dies closes the pipe, and the child stops.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any, Final

from floor.clock import FloorClock
from floor.tables import TableDesk, TableOrders, TableResult, play_table
from leaderboard.desk.errors import DeskError
from runtime.errors import one_line
from runtime.event_loop import run
from simulators.table_stuck import TableStuck

__all__ = ["TableProcess"]

_REAP_S: Final = 1.0  # a real timeout: how long a child whose pipe closed takes to exit
_STOP_WAIT_S: Final = 30.0  # a real timeout: the child did not exit once told to stop
# what a failed call raises on the asking side, by kind
_ERRORS: Final[dict[str, type[Exception]]] = {
    "desk": DeskError, "stuck": TableStuck, "timeout": TimeoutError}
_CALLS: Final = frozenset({"send_roster", "before_heat", "buy_entries", "open_heat", "seat",
                           "send_again", "close_heat", "table_gone"})


class _Channel:
    """Calls with answers and one-way notes over a `Connection`, on the running event loop.
    `on_note(name, args)` takes the notes; `serve(name, args)` answers the calls."""

    def __init__(self, conn: Connection, *, on_note: Callable[[str, tuple[Any, ...]], None],
                 serve: Callable[[str, tuple[Any, ...]], Awaitable[Any]] | None = None,
                 on_close: Callable[[], None]) -> None:
        self._conn, self._on_note, self._serve, self._on_close = conn, on_note, serve, on_close
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        self.closed = False
        self._loop.add_reader(conn.fileno(), self._readable)

    def drain(self) -> None:
        """Take every message already waiting in the pipe."""
        if not self.closed:
            self._readable()

    def _readable(self) -> None:
        try:
            while self._conn.poll():
                self._dispatch(self._conn.recv())
        except (EOFError, OSError):
            self.close()

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "reply":
            _, ref, ok, value = message
            future = self._pending.pop(ref, None)
            if future is not None and not future.done():
                if ok:
                    future.set_result(value)
                else:
                    error, text = value
                    future.set_exception(_ERRORS.get(error, DeskError)(text))
        elif kind == "call" and self._serve is not None:
            task = self._loop.create_task(self._answer(message[1], message[2], message[3]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif kind == "note":
            self._on_note(message[1], message[2])

    async def _answer(self, ref: int, name: str, args: tuple[Any, ...]) -> None:
        assert self._serve is not None
        try:
            reply: tuple[Any, ...] = ("reply", ref, True, await self._serve(name, args))
        except TableStuck as exc:
            reply = ("reply", ref, False, ("stuck", str(exc)))
        except TimeoutError as exc:
            reply = ("reply", ref, False, ("timeout", str(exc) or "timed out"))
        except DeskError as exc:
            reply = ("reply", ref, False, ("desk", str(exc)))
        self.send(reply)

    def send(self, message: tuple[Any, ...]) -> None:
        """Send a message; nothing when the other side is gone."""
        if self.closed:
            return
        try:
            self._conn.send(message)
        except (OSError, ValueError):
            self.close()

    async def call(self, name: str, *args: Any) -> Any:
        """Ask the other side; its answer (or what it raised)."""
        if self.closed:
            raise DeskError("the floor's desk is gone")
        ref = next(self._ids)
        future = self._pending[ref] = self._loop.create_future()
        self.send(("call", ref, name, args))
        return await future

    def close(self) -> None:
        """Stop reading; every pending call fails."""
        if self.closed:
            return
        self.closed = True
        self._loop.remove_reader(self._conn.fileno())
        for future in self._pending.values():
            if not future.done():
                future.set_exception(DeskError("the other side of the table's channel is gone"))
        self._pending.clear()
        self._on_close()


class _RemoteDesk:
    """The floor's desk as a table process sees it: each question a call over the channel."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel

    async def send_roster(self, table: str, args: dict[str, Any]) -> None:
        await self._channel.call("send_roster", table, args)

    async def before_heat(self, table: str) -> None:
        await self._channel.call("before_heat", table)

    async def buy_entries(self, table: str) -> list[tuple[str, str]]:
        return [(str(e), str(p)) for e, p in await self._channel.call("buy_entries", table)]

    async def open_heat(self, table: str) -> tuple[str, int]:
        heat, ref = await self._channel.call("open_heat", table)
        return str(heat), int(ref)

    async def seat(self, table: str, entry: str, seat: int, proofs: dict[str, str]) -> int:
        return int(await self._channel.call("seat", table, entry, seat, proofs))

    async def send_again(self, ref: int) -> None:
        await self._channel.call("send_again", ref)

    async def close_heat(self, table: str, entries: list[str]) -> None:
        await self._channel.call("close_heat", table, entries)

    async def table_gone(self, table: str) -> None:
        await self._channel.call("table_gone", table)


def _table_main(orders: TableOrders, clock: FloorClock, conn: Connection, level: str) -> None:
    """A table process: play the table until the floor says stop (or is gone)."""
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level=level)
    run(_play(orders, clock, conn))  # the floor checked the loop's choice (FloorRun)


async def _play(orders: TableOrders, clock: FloorClock, conn: Connection) -> None:
    stop = asyncio.Event()
    channel = _Channel(conn, on_note=lambda name, _args: stop.set() if name == "stop" else None,
                       on_close=stop.set)

    reported = False

    async def finished(result: TableResult) -> None:
        nonlocal reported
        reported = True
        channel.send(("note", "finished", (asdict(result),)))

    try:
        await play_table(orders, clock, _RemoteDesk(channel), finished=finished, stop=stop)
    except Exception as exc:  # the floor reports it as the table's problem
        if not reported:
            await finished(TableResult(table=orders.table,
                                       problem=f"{orders.table}: {one_line(exc)}"))
    finally:
        channel.close()


class TableProcess:
    """The floor's side of one table process: starts it, answers its questions with the
    desk, and sets `done` with its `result` (a problem when the process died)."""

    def __init__(self, orders: TableOrders, clock: FloorClock, desk: TableDesk, *,
                 gone: Callable[[str], Coroutine[Any, Any, None]],
                 log_level: str = "error") -> None:
        self.orders, self._desk, self._gone = orders, desk, gone
        self.result = TableResult(table=orders.table)
        self.done = asyncio.Event()
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe(duplex=True)
        self._process = context.Process(
            target=_table_main, args=(orders, clock, child, log_level),
            name=f"floor-{orders.table}", daemon=True)
        self._process.start()
        child.close()
        self._finished = False
        self._channel = _Channel(self._conn, on_note=self._note, serve=self._serve,
                                 on_close=self._closed)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._process.sentinel, self._exited)

    @property
    def pid(self) -> int | None:
        """The table process's id."""
        return self._process.pid

    async def _serve(self, name: str, args: tuple[Any, ...]) -> Any:
        if name not in _CALLS:
            raise DeskError(f"the floor's desk has no {name!r}")
        return await getattr(self._desk, name)(*args)

    def _note(self, name: str, args: tuple[Any, ...]) -> None:
        if name == "finished" and not self._finished:
            self.result = TableResult(**args[0])
            self._finish()

    def _finish(self) -> None:
        self._finished = True
        self._loop.create_task(self._gone(self.orders.table)).add_done_callback(
            lambda _t: self.done.set())

    def _closed(self) -> None:
        if not self._finished:
            self._died()

    def _exited(self) -> None:
        self._loop.remove_reader(self._process.sentinel)
        self._channel.drain()  # its last words (the report) come before its exit
        self._channel.close()

    def _died(self) -> None:
        self._process.join(_REAP_S)  # the pipe may close a moment before the exit is seen
        code = self._process.exitcode
        how = "is gone" if code is None else f"stopped (exit code {code})"
        self.result.problem = f"{self.orders.table}: the table's process {how}"
        self._finish()

    async def stop(self) -> str | None:
        """Tell the table to stop and wait until its process exits; a problem if it does
        not in time (it is killed) or exits with an error."""
        self._channel.send(("note", "stop", ()))
        await asyncio.to_thread(self._process.join, _STOP_WAIT_S)
        if self._process.is_alive():
            self._process.kill()
            await asyncio.to_thread(self._process.join)
            return f"{self.orders.table}: the table's process did not stop; it was killed"
        code = self._process.exitcode
        if code and self._finished and self.result.problem is None:
            return f"{self.orders.table}: the table's process exited with code {code}"
        return None
