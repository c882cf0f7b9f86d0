"""Play at a running table daemon: a virtual desk opens heats and seats entries (signed over
MQTT when the caller wires a desk), and a virtual dealer with virtual players puts chips on the
simulated RFID reader, deals from the simulated shoe and presses the console's buttons.

Everything reaches the daemon the way it would at a real table: chips through the real USB
driver, cards through the real serial driver, console actions through the same handler as the
local API. The table is seen only through `drivers.protocols.TableHandle`; the composition
root (controller.wiring) hands in that handle and the simulated devices.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from drivers.protocols import TableHandle
from game.cards import DECK, Card
from game.chips import Chip, ChipRegistry
from game.deal import Target
from game.desk_commands import CloseHeat, OpenHeat, Seat
from game.settle import WAGERS, SeatWagers
from game.tournament import Stage
from simulators.players import PlayerStyle, VirtualPlayer
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator

__all__ = ["PLAY_CHIP_SET", "TableStuck", "VirtualTable", "play_registry"]

PLAY_CHIP_SET = "showdown-sim"
MARKER_SET = "bonus-marker"
# A seat's spots as the table's status shows them: spot -> cents, and "markers" -> sorted list.
_Spots = dict[str, Any]
_FLOAT = ((2_500, 4_000), (10_000, 1_500), (50_000, 400))  # (value, how many) R25, R100, R500


def _uid(kind: int, value_code: int, n: int) -> bytes:
    return bytes([0xE0, 0x5E, kind, value_code, (n >> 24) & 0xFF, (n >> 16) & 0xFF,
                  (n >> 8) & 0xFF, n & 0xFF])


def play_registry() -> ChipRegistry:
    """The self-playing table's chips: a large unissued float, and 18 Final bonus markers."""
    chips = [Chip(uid=_uid(1, code, n), value_cents=value, chip_set=PLAY_CHIP_SET)
             for code, (value, count) in enumerate(_FLOAT, start=1) for n in range(count)]
    chips += [Chip(uid=_uid(9, 0, n), value_cents=50_000, chip_set=MARKER_SET)
              for n in range(18)]
    return ChipRegistry(chips, chip_set=PLAY_CHIP_SET)


class TableStuck(RuntimeError):
    """The daemon did not reach the expected state in time (the virtual dealer stops)."""


class VirtualTable:
    """Plays heats at a table whose shoe and chip reader are these simulators."""

    def __init__(self, table: TableHandle, *, shoe: ShoeSimulator, chips: RfidReaderSimulator,
                 desk: Callable[..., Any] | None = None, seed: int = 2026,
                 stage: str = "qualifying", players: int = 3, heats: int = 1,
                 hand_pause: float = 0.0, timeout: float = 15.0) -> None:
        self.table = table
        self.shoe = shoe
        self.chips = chips
        self.desk = desk
        self.rng = random.Random(seed)
        self.stage = Stage(stage)
        self.players = players
        self.heats = heats
        self.hand_pause = hand_pause
        self.timeout = timeout
        self.hands_played = 0
        self.scores: dict[str, int] = {}
        self._markers = [_uid(9, 0, n) for n in range(18)]

    # ---- waiting for the daemon ------------------------------------------------------

    async def until(self, what: str, check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Poll the table's status until `check` holds."""
        deadline = time.monotonic() + self.timeout
        while not check(self.table.status()):
            if time.monotonic() > deadline:
                raise TableStuck(f"timed out waiting for {what}; the table shows "
                                 f"{self.table.status().get('spots')}")
            await asyncio.sleep(0.01)

    async def console(self, action: str, **request: Any) -> Mapping[str, Any]:
        """Press a console button (the same handler the local API uses)."""
        answer = await self.table.console({"action": action, "by": "virtual dealer",
                                           **request})
        if not answer.get("ok"):
            raise TableStuck(f"console {action} refused: {answer.get('error')}")
        return answer

    # ---- heats -----------------------------------------------------------------------

    async def run(self) -> None:
        """Play the configured number of heats (resuming one left open by a restart)."""
        table = self.table.table_id
        status = self.table.status()
        if status.get("hand"):  # the table PC restarted mid-hand: the dealer voids it
            await self.console("void", reason="hand interrupted by a restart of the table PC")
        if status.get("heat"):  # a heat left open by a restart: play it out first
            await self.play_heat({int(s): e["entry_id"] for s, e in status["seats"].items()})
        for _ in range(self.heats):
            first = self.table.status().get("hands_opened", 0) + 1
            heat_id = f"{self.stage.value}-{table}-h{first}"
            await self.send_desk(OpenHeat.NAME, stage=self.stage.value, heat_id=heat_id)
            await self.until("the heat to open", _heat_is(heat_id))
            entries = {seat: f"{table.upper()}-{first}-S{seat}"
                       for seat in range(1, self.players + 1)}
            for seat, entry in entries.items():
                await self.send_desk(Seat.NAME, entry_id=entry, seat=seat)
            await self.until("the entries to be seated", _seated(len(entries)))
            await self.play_heat(entries)

    async def play_heat(self, entries: Mapping[int, str], *,
                        between_hands: Callable[[int], Awaitable[None]] | None = None) -> None:
        """Hands until every entry has ended, then acknowledgements and closing the heat.

        The players' choices come from the table's seed and the seat, not the entry id (the
        desk's ids are random), so a seed replays each table's heats card for card.
        ``between_hands(n)`` runs after the heat's n-th hand (the desk may act then).
        """
        players = {seat: VirtualPlayer(name=f"player {seat}",
                                       rng=random.Random(f"{self.rng.random()}:{seat}"),
                                       style=PlayerStyle(bold=seat % 2 == 0))
                   for seat in entries}
        hands = 0
        while self.table.status().get("seats"):
            await self.play_hand(players)
            hands += 1
            if between_hands is not None:
                await between_hands(hands)
            if self.hand_pause:
                await asyncio.sleep(self.hand_pause)
        for entry in self.table.status().get("unacknowledged_scores", []):
            await self.console("acknowledge", entry_id=entry, method="card_tap")
        await self.send_desk(CloseHeat.NAME)
        await self.until("the heat to close", lambda s: s.get("heat") is None)

    async def send_desk(self, command: str, **body: Any) -> None:
        """Send a desk command: signed over MQTT when a desk is wired, else straight in."""
        if self.desk is not None:
            await self.desk(command, **body)
        else:
            refused = await self.table.desk_input({"command": command,
                                                   "signer": "virtual-desk", **body})
            if refused is not None:
                raise TableStuck(f"desk {command} refused: {refused}")

    # ---- one hand --------------------------------------------------------------------

    async def play_hand(self, players: Mapping[int, VirtualPlayer]) -> None:
        """Wagers, no more bets, the deal with decisions at each street, settle, clear up."""
        sim, shoe = self.chips, self.shoe
        status = self.table.status()
        house = self.table.house_rules()
        placed: dict[str, _Spots] = {}
        for seat_text, info in status["seats"].items():
            seat = int(seat_text)
            wagers = players[seat].wagers(seat=seat, balance_cents=info["balance"],
                                          markers_left=info["markers_left"], rules=house)
            placed[seat_text] = self._place(sim, seat, wagers)
        expected = {k: v for k, v in placed.items() if v}
        await self.until(f"the readers to see the wagers {expected}",
                         lambda s: _spots(s) == expected)
        answer = await self.console("no_more_bets")
        in_hand: list[int] = list(answer["detail"]["seats"])
        targets = self.table.deal_targets(in_hand)
        deck = list(DECK)
        self.rng.shuffle(deck)
        dealt: list[tuple[Target, Card]] = []
        decided: set[int] = set()
        for i, (target, card) in enumerate(zip(targets, deck, strict=False)):
            if target.kind == "board" and target.index in (0, 3):
                street = "preflop" if target.index == 0 else "flop"
                await self._decide(sim, players, in_hand, dealt, decided, street=street,
                                   placed=placed)
            shoe.deal_card(card)
            dealt.append((target, card))
            await self.until(f"card {i + 1} to be read", _cards_read(i + 1))
        await self._decide(sim, players, in_hand, dealt, decided, street="river",
                           placed=placed)
        await self.console("settle")
        self.hands_played += 1
        sim.clear()
        await self.until("the table to be cleared", lambda s: _spots(s) == {})

    def _place(self, sim: RfidReaderSimulator, seat: int, wagers: SeatWagers) -> _Spots:
        out: _Spots = {}
        for spot in WAGERS:
            amount = wagers.amount(spot)
            uids = [self._markers.pop()] if spot in wagers.markers else []
            if amount or uids:
                sim.place(seat, spot, amount or None, uids=uids)
            if amount:
                out[spot] = amount
        if wagers.markers:
            out["markers"] = sorted(wagers.markers)
        return out

    async def _decide(self, sim: RfidReaderSimulator, players: Mapping[int, VirtualPlayer],
                      in_hand: list[int], dealt: list[tuple[Target, Card]], decided: set[int],
                      *, street: str, placed: dict[str, _Spots]) -> None:
        board = [c for t, c in dealt if t.kind == "board"]
        moved = False
        for seat in in_hand:
            if seat in decided:
                continue
            hole = [c for t, c in dealt if t.kind == "seat" and t.seat == seat]
            info = self.table.status()["seats"][str(seat)]
            spots = placed[str(seat)]
            wagers = SeatWagers(**{w: spots.get(w, 0) for w in WAGERS if w != "play"},
                                markers=frozenset(spots.get("markers", ())))
            amount = players[seat].play(seat=seat, street=street, hole=hole, board=board,
                                        wagers=wagers, balance_cents=info["balance"])
            if amount:
                sim.place(seat, "play", amount)
                spots["play"] = amount
                decided.add(seat)
                moved = True
        if moved:
            await self.until(f"the {street} Play bets to be seen",
                             lambda s: _spots(s) == {k: v for k, v in placed.items() if v})


def _heat_is(heat_id: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda status: status.get("heat") == heat_id


def _seated(count: int) -> Callable[[Mapping[str, Any]], bool]:
    return lambda status: len(status.get("seats", {})) == count


def _cards_read(count: int) -> Callable[[Mapping[str, Any]], bool]:
    return lambda status: (status.get("hand") or {}).get("cards_read") == count


def _spots(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in status.get("spots", {}).items() if v}
