"""Latency of the table daemon in this process: card frame -> journal, settle -> message."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from support.latency_figures import PLAYERS, SEED, BenchError, Series
from support.latency_subscriber import SubscriberProcess
from support.latency_tables import forget_on_broker, make_table

if TYPE_CHECKING:
    from controller.app import Submission


@dataclass(slots=True)
class LatencyResult:
    """One broker's figures."""

    broker: str
    hands: int = 0
    a: Series = field(default_factory=lambda: Series("(a)"))
    b: Series = field(default_factory=lambda: Series("(b)"))
    c: Series = field(default_factory=lambda: Series("(c)"))
    a1: Series = field(default_factory=lambda: Series("(a1)"))
    b1: Series = field(default_factory=lambda: Series("(b1)"))
    b1a: Series = field(default_factory=lambda: Series("(b1a)"))
    b2: Series = field(default_factory=lambda: Series("(b2)"))
    cards: Series = field(default_factory=lambda: Series("(a*)"))
    messages: int = 0
    stuck: list[str] = field(default_factory=list)


class _Instruments:
    """Stamps taken from the outside of the daemon: card written, card committed, settle sent."""

    def __init__(self) -> None:
        self.written: list[tuple[str, int]] = []  # this hand: (card, ns) in deal order
        self.committed: dict[str, int] = {}  # this hand: card -> ns its commit returned
        self.appended: dict[str, int] = {}  # this hand: card -> ns of its journal transaction
        self.settle_append: int | None = None  # ns inside Journal.append for the settle
        self.hands: list[dict[str, Any]] = []
        self.stuck: list[str] = []  # hands the virtual table could not finish, and why

    def wire(self, wired: Any) -> None:
        daemon = wired.daemon
        shoe = wired.devices.shoe_sim
        deal_card = shoe.deal_card

        def timed_deal(card: Any) -> Any:
            self.written.append((str(card), time.monotonic_ns()))
            return deal_card(card)

        shoe.deal_card = timed_deal
        inputs = daemon.inputs  # every input goes through the group commit (shoe pump too)
        submit = inputs.submit

        def timed_submit(item: Submission) -> Any:
            future = submit(item)
            if item.kind == "card":
                card = str(item.payload.get("card"))

                def stamp(done: Any) -> None:  # runs in the loop when the commit returns
                    if not done.cancelled() and done.exception() is None:
                        self.committed[card] = time.monotonic_ns()

                future.add_done_callback(stamp)
            return future

        inputs.submit = timed_submit
        journal = daemon.journal
        append_batch = journal.append_batch

        def timed_append(entries: Any, decider: Any) -> Any:  # on the journal's writer thread
            start = time.monotonic_ns()
            try:
                return append_batch(entries, decider)
            finally:
                took = time.monotonic_ns() - start  # the whole transaction the input was in
                for entry in entries:
                    if entry.kind == "card":
                        self.appended[str(entry.payload.get("card"))] = took
                    elif entry.kind == "dealer" and entry.payload.get("action") == "settle":
                        self.settle_append = took

        journal.append_batch = timed_append

    def settle_pressed(self, hand_id: str, at: int, answered: int) -> None:
        card, written = self.written[-1]
        self.hands.append({"hand_id": hand_id, "card": card, "written": written,
                           "committed": self.committed.get(card), "settle": at,
                           "answered": answered, "append": self.appended.get(card),
                           "settle_append": self.settle_append,
                           "cards": [(w, self.committed.get(c)) for c, w in self.written]})
        self.written, self.committed, self.appended = [], {}, {}


def _timed_table_class() -> type:
    from controller.local_api import call  # noqa: PLC0415
    from simulators.table_play import TableStuck, VirtualTable  # noqa: PLC0415

    class TimedTable(VirtualTable):
        """The virtual table, pressing `settle` on the real local API socket, timed; it
        reads the daemon's insides (service, journal) for its instruments."""

        instruments: _Instruments
        daemon: Any

        async def console(self, action: str, **request: Any) -> Mapping[str, Any]:
            if action != "settle":
                return await super().console(action, **request)
            session = await self.dealer_session()
            pressed = time.monotonic_ns()
            answer = await call(self.daemon.config.api.socket,
                                {"action": "settle", "session": session, **request})
            answered = time.monotonic_ns()
            if not answer.get("ok"):
                raise TableStuck(f"console settle refused: {answer.get('error')}")
            self.instruments.settle_pressed(answer["detail"]["hand_id"], pressed, answered)
            return answer

        async def until(self, what: str, check: Any) -> None:
            """As the virtual table's, polling only the game state: the daemon's full status
            also queries the journal's outbox, which a real console does not do every 10 ms
            and which would load the loop being measured."""
            service = self.daemon.service
            deadline = time.monotonic() + self.timeout
            while not check(service.status()):
                if time.monotonic() > deadline:
                    raise TableStuck(f"timed out waiting for {what}; the table shows "
                                     f"{service.status().get('spots')}")
                await asyncio.sleep(0.01)

        async def _recover(self, exc: Exception) -> None:
            """A hand the virtual table could not finish: note it with the table's recent
            alerts, void it if it was open, clear the table and go on."""
            journal = self.daemon.journal
            alerts = [f"{m.body.get('kind')}: {m.body.get('message')}"
                      for m in journal.messages(max(1, journal.last_seq() - 30))
                      if m.type == "alert"] if journal is not None else []
            self.instruments.stuck.append(f"after {self.hands_played} hands: {exc}; "
                                          f"recent alerts: {alerts[-3:]}")
            self.instruments.written, self.instruments.committed = [], {}
            self.instruments.appended = {}
            if self.daemon.status().get("hand"):
                await super().console("void", reason="bench: the virtual table was stuck")
            self.chips.clear()
            await self.until("the table to be cleared", lambda s: not any(
                s.get("spots", {}).values()))
            if len(self.instruments.stuck) > 5:
                raise BenchError("the virtual table got stuck more than 5 times: "
                                 + " | ".join(self.instruments.stuck))

        async def play_hands(self, hands: int) -> None:
            """Heats of qualifying entries until `hands` hands are settled (the last may stay
            open)."""
            from simulators.players import PlayerStyle, VirtualPlayer  # noqa: PLC0415

            heat = 0
            while self.hands_played < hands:
                heat += 1
                table = self.daemon.config.table
                await self.send_desk("open_heat", stage="qualifying", heat_id=f"bench-{heat}")
                for seat in range(1, PLAYERS + 1):
                    await self.send_desk("seat", entry_id=f"{table.upper()}-{heat}-{seat}",
                                         seat=seat)
                players = {seat: VirtualPlayer(name=f"p{seat}",
                                               rng=random.Random(f"{SEED}:{heat}:{seat}"),
                                               style=PlayerStyle(bold=seat % 2 == 0))
                           for seat in range(1, PLAYERS + 1)}
                while self.daemon.status().get("seats") and self.hands_played < hands:
                    try:
                        await self.play_hand(players)
                    except TableStuck as exc:
                        await self._recover(exc)
                if self.daemon.status().get("seats"):
                    return
                await self.finish_heat()

    return TimedTable


class _Quiet:
    """systemd notifications off for the in-process daemon (the service run tests them)."""

    def ready(self) -> None: ...
    def watchdog(self) -> None: ...
    def stopping(self) -> None: ...
    def status(self, text: str) -> None: ...
    def watchdog_interval(self) -> float | None:
        return None


def _figures(result: LatencyResult, instruments: _Instruments, arrived: Mapping[str, int]
             ) -> None:
    for hand in instruments.hands:
        if hand["committed"] is None:
            raise BenchError(f"{result.broker}: hand {hand['hand_id']}: last card never "
                             "committed")
        result.a.values.append(hand["committed"] - hand["written"])
        result.b.values.append(arrived[hand["hand_id"]] - hand["settle"])
        result.c.values.append(arrived[hand["hand_id"]] - hand["written"])
        result.b1.values.append(hand["answered"] - hand["settle"])
        if hand["append"] is not None:
            result.a1.values.append(hand["append"])
        if hand["settle_append"] is not None:
            result.b1a.values.append(hand["settle_append"])
        result.b2.values.append(arrived[hand["hand_id"]] - hand["answered"])
        result.cards.values.extend(c - w for w, c in hand["cards"] if c is not None)
    result.hands = len(instruments.hands)


async def latency_run(label: str, broker: str, hands: int, scratch: Path) -> LatencyResult:
    """Play `hands` hands on a daemon in this process; stamps per hand (see the docstring)."""
    from controller.config import read_table_config  # noqa: PLC0415
    from controller.wiring import DaemonHandle, wire_table  # noqa: PLC0415

    table = make_table(scratch, broker, virtual_dealer=False)
    config = read_table_config(table.config_path)
    wired = wire_table(config, notify=_Quiet())  # type: ignore[arg-type]
    daemon = wired.daemon
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    result = LatencyResult(broker=label)
    try:
        async with asyncio.timeout(60):
            await daemon.ready.wait()
        if broker == "embedded":
            assert daemon.broker is not None
            host, port = "127.0.0.1", daemon.broker.port
        else:
            host, _, p = broker.rpartition(":")
            port = int(p)
        async with SubscriberProcess(host, port, table) as sub:
            instruments = _Instruments()
            instruments.wire(wired)
            vt = _timed_table_class()(DaemonHandle(daemon), shoe=wired.devices.shoe_sim,
                                      chips=wired.devices.rfid_sim, ids=wired.devices.id_simulator,
                                      seed=SEED, players=PLAYERS)
            vt.daemon = daemon
            vt.instruments = instruments
            await vt.play_hands(hands)
            settled = {h["hand_id"] for h in instruments.hands}
            await sub.wait_for("every hand.settled", lambda: settled <= set(sub.settled()))
            assert daemon.journal is not None
            last_seq = daemon.journal.last_seq()
            # The embedded broker starts with the daemon: the subscriber comes a moment later.
            first = min(ln["seq"] for ln in sub.lines if ln.get("seq"))
            await sub.wait_for(f"every seq from {first} to {last_seq}", lambda: {
                ln.get("seq") for ln in sub.lines} >= set(range(first, last_seq + 1)))
            bad = [ln for ln in sub.lines if "bad" in ln]
            if bad:
                raise BenchError(f"{label}: {len(bad)} message(s) failed verification: {bad[:3]}")
            arrived = sub.settled()
            result.messages = last_seq - first + 1
        _figures(result, instruments, arrived)
        result.stuck = instruments.stuck
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(30):
                await task
        if broker != "embedded":
            host, _, p = broker.rpartition(":")
            await forget_on_broker(host, int(p), table)
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise BenchError(f"{label}: the daemon failed: {task.exception()!r}")
    return result
