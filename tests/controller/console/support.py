"""What the console's tests share: a real table daemon (simulated shoe and chip reader behind the
real drivers, the embedded MQTT broker, its console on a free port of 127.0.0.1), a staff roster
and seated entries sent the way the desk sends them, a hand played through the simulators and
the console handler, and a small ASGI caller for requests a socket cannot fake (another client
address).

Stages are short here (two hands per entry) so a test reaches a score quickly.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.app import TableDaemon
from controller.clock import ClockSource, system_clock
from controller.config import read_table_config
from controller.wiring import ConfiguredDevices, wire_table
from game.poker.cards import DECK, Card
from game.staff import hash_secret
from simulators.id_reader import IdReaderSimulator
from simulators.rfid import RfidReaderSimulator
from simulators.shoe import ShoeSimulator
from simulators.table_toml import simulated_table_toml
from tests.integration.daemon_support import RecordingNotify, running

REPO = Path(__file__).resolve().parents[3]
SALT = b"console-test-salt"  # a fixed test salt: the hashes are the same every run
CARD_SALT = base64.urlsafe_b64encode(b"card-salt-for-tests").decode().rstrip("=")
DESK = "test-desk"
GUARD_S = 60.0  # against hangs only; nothing asserts a duration
DEALER = {"staff_id": "D-0042", "name": "Dana Dealer", "role": "dealer", "pin": "4321",
          "card": "6099000000000042"}
SUPERVISOR = {"staff_id": "S-0007", "name": "Sam Supervisor", "role": "supervisor",
              "pin": "7777", "card": "6099000000000007"}
# On the roster only where a test sends it (`roster_body(people=...)`): a floor manager.
MANAGER = {"staff_id": "M-0003", "name": "Mo Manager", "role": "manager", "pin": "3141",
           "card": "6099000000000003"}
PLAYER_PIN = {1: "2468", 2: "1357", 3: "9999"}
PLAYER_CARD = {1: "6012345678900001", 2: "6012345678900002", 3: "6012345678900003"}
HANDS = 2  # per entry in these tests' qualifying stage


def short_tournament(tmp_path: Path, hands: int = HANDS) -> Path:
    """The shipped tournament settings with ``hands`` hands per qualifying entry."""
    text = (REPO / "config" / "tournament.toml").read_text(encoding="utf-8")
    head, sep, rest = text.partition("[qualifying]")
    rest = rest.replace("hands = 10", f"hands = {hands}", 1)
    path = tmp_path / "tournament.toml"
    path.write_text(head + sep + rest, encoding="utf-8")
    return path


def roster_body(version: int = 1, *,
                people: Sequence[Mapping[str, str]] = (DEALER, SUPERVISOR)) -> dict[str, Any]:
    """A staff_roster desk command with the test dealer and supervisor (or ``people``)."""
    card_salt = base64.urlsafe_b64decode(CARD_SALT + "=" * (-len(CARD_SALT) % 4))
    members = [{"staff_id": p["staff_id"], "name": p["name"], "role": p["role"],
                "pin_hash": hash_secret(p["pin"], SALT),
                "card_hash": hash_secret(p["card"], card_salt), "active": True}
               for p in people]
    return {"command": "staff_roster", "signer": DESK, "version": version,
            "card_salt": CARD_SALT, "members": members}


@dataclass(slots=True)
class ConsoleTable:
    """A running daemon with its console, and handles to its simulated devices."""

    daemon: TableDaemon
    devices: ConfiguredDevices
    tmp_path: Path
    deck: list[Card] = field(default_factory=lambda: list(DECK))
    hands_played: int = 0

    @property
    def port(self) -> int:
        """The console's port."""
        assert self.daemon.console_port is not None
        return self.daemon.console_port

    @property
    def url(self) -> str:
        """The console's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def shoe(self) -> ShoeSimulator:
        """The simulated shoe."""
        assert self.devices.shoe_sim is not None
        return self.devices.shoe_sim

    @property
    def ids(self) -> IdReaderSimulator:
        """The simulated ID-card reader (rewards and employee cards)."""
        assert self.devices.id_simulator is not None
        return self.devices.id_simulator

    @property
    def chips(self) -> RfidReaderSimulator:
        """The simulated chip reader."""
        assert self.devices.rfid_sim is not None
        return self.devices.rfid_sim

    def status(self) -> Mapping[str, Any]:
        """The daemon's status."""
        return self.daemon.status()

    async def desk(self, command: str, **body: Any) -> None:
        """A desk command, journaled and applied as if it came verified over MQTT."""
        applied = await self.daemon.ingest("desk", {"command": command, "signer": DESK,
                                                    "command_seq": secrets.randbelow(10**9),
                                                    **body})
        assert applied.ok, applied.error

    async def until(self, what: str, check: Callable[[Mapping[str, Any]], bool]) -> None:
        """Poll the status until ``check`` holds."""
        deadline = time.monotonic() + GUARD_S
        while not check(self.status()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: {self.status()}")
            await asyncio.sleep(0.01)

    async def sign_in(self, person: Mapping[str, str]) -> str:
        """A session token for a dealer or supervisor (by PIN, through the console gate)."""
        answer = await self.daemon.on_console({"action": "sign_in",
                                               "staff_id": person["staff_id"],
                                               "pin": person["pin"]})
        assert answer["ok"], answer
        return str(answer["detail"]["session"])

    async def act(self, session: str, action: str, **fields: Any) -> Mapping[str, Any]:
        """A console action with a session; asserts it was accepted."""
        answer = await self.daemon.on_console({"action": action, "session": session, **fields})
        assert answer["ok"], answer
        return answer

    async def open_heat(self, seats: Sequence[int] = (1, 2), *, heat: str = "H1",
                        stacks: bool = True) -> list[str]:
        """Send the roster, open a qualifying heat and seat one entry per seat (with the
        participants' PIN and rewards-card hashes), then (``stacks``) issue each entry's
        starting stack as a dealer does (D346); the entry ids."""
        await self.desk("staff_roster", **{k: v for k, v in roster_body().items()
                                           if k not in ("command", "signer")})
        await self.desk("open_heat", stage="qualifying", heat_id=heat)
        entries = []
        for seat in seats:
            entry = f"E-{heat}-{seat}"
            await self.desk("seat", entry_id=entry, seat=seat,
                            pin_hash=hash_secret(PLAYER_PIN[seat], SALT),
                            card_hash=hash_secret(PLAYER_CARD[seat], SALT))
            entries.append(entry)
        await self.until("the entries to be seated",
                         lambda s: len(s.get("seats", {})) == len(seats))
        if stacks:
            for seat, entry in zip(seats, entries, strict=True):
                await self.issue_stack(seat, entry)
        return entries

    async def issue_stack(self, seat: int, entry: str) -> None:
        """The dealer places the starting stack the console suggests from the tray on the
        seat's Ante; the table issues it as the reader reads it; the player picks it up."""
        [line] = [x for x in self.status()["chips"]["to_issue"] if x["seat"] == seat]
        lying = {u for uids in self.chips.table().values() for u in uids}
        free: dict[int, list[bytes]] = {}
        registry = self.chips.registry
        for chip in registry:
            if (chip.chip_set == registry.chip_set and chip.uid not in lying
                    and self.chips.owner_of(chip.uid) is None):
                free.setdefault(chip.value_cents, []).append(chip.uid)
        uids = [u for b in line["breakdown"] for u in free[b["value_cents"]][:b["count"]]]
        self.chips.place(seat, "ante", uids=uids)
        await self.until(f"seat {seat}'s stack to be issued",
                         lambda s: entry in s["chips"]["held"])
        self.chips.seat_entries[seat] = entry
        self.sync_owners()
        self.chips.remove(seat, "ante")
        await self.until(f"seat {seat}'s stack to be picked up",
                         lambda s: not s["spots"].get(str(seat)))

    def sync_owners(self) -> None:
        """The players know their chips as the table's float binds them."""
        assert self.daemon.service is not None
        holders = self.daemon.service.core.chips.chip_float.holders()
        registry = self.chips.registry
        self.chips.owners = {c.uid: holders.get(c.uid) for c in registry
                             if c.chip_set == registry.chip_set}

    async def place_wagers(self, seats: Sequence[int], ante: int = 2_500) -> None:
        """Ante and Odds on each seat from its entry's chips, until the table sees them."""
        self.sync_owners()
        for seat in seats:
            self.chips.place(seat, "ante", ante)
            self.chips.place(seat, "odds", ante)
        want = {str(s): {"ante": ante, "odds": ante} for s in seats}
        await self.until("the wagers to be read", lambda s: s.get("spots") == want)

    def next_card(self) -> Card:
        """A card not yet dealt in this test's hand."""
        return self.deck.pop()

    async def deal(self, count: int) -> list[Card]:
        """Deal ``count`` cards from the shoe simulator, each read before the next."""
        dealt = []
        for _ in range(count):
            want = _cards_read(self.status()) + 1
            card = self.next_card()
            self.shoe.deal_card(card)
            dealt.append(card)
            await self.until(f"card {card} to be read", _read_count(want))
        return dealt

    async def play_hand(self, session: str, seats: Sequence[int] = (1, 2)) -> None:
        """One hand where every seat checks and folds: wagers, no more bets, the whole deal,
        settle, then the losing chips taken (the payout check passes)."""
        self.hands_played += 1  # a seeded shuffle a hand: a deck in order would be held
        self.deck = list(DECK)
        random.Random(f"console-test-{self.hands_played}").shuffle(self.deck)
        await self.place_wagers(seats)
        await self.act(session, "no_more_bets")
        assert self.daemon.service is not None
        await self.deal(len(self.daemon.service.deal.targets(list(seats))))
        await self.act(session, "settle")
        self.chips.clear()
        await self.until("the payout to be verified", lambda s: s.get("payout") is None)


def _cards_read(status: Mapping[str, Any]) -> int:
    return int((status.get("hand") or {}).get("cards_read", 0))


def _read_count(count: int) -> Callable[[Mapping[str, Any]], bool]:
    return lambda status: _cards_read(status) == count


@contextlib.asynccontextmanager
async def console_table(tmp_path: Path, *, acknowledge_with: Sequence[str] = ("pin",),
                        allowed: Sequence[str] = ("127.0.0.1", "::1"),
                        hands: int = HANDS, clock: ClockSource = system_clock,
                        console: str = "", printer: str = "") -> AsyncIterator[ConsoleTable]:
    """A running daemon with its console listening on 127.0.0.1 (a free port); ``console``:
    more ``[console]`` lines. Run again on the same ``tmp_path``, it is the same table with
    the same journal (a restart); ``printer``: the keys of a ``[printer]`` section (none: no
    receipt printer)."""
    from wire.signing import Signer, save_private_key

    path = tmp_path / "table.toml"
    if path.exists():
        async with _running(path, tmp_path, clock) as again:
            yield again
        return
    table = f"t-{secrets.token_hex(3)}"
    save_private_key(Signer.generate(table), tmp_path / "table.key")
    text = simulated_table_toml(
        venue="test-console", table=table, broker="embedded",
        tournament=short_tournament(tmp_path, hands), paytables=REPO / "config" / "paytables.toml",
        desk_keys={DESK: Signer.generate(DESK).public_key.base64},
        socket=tmp_path / "api.sock", virtual_dealer=False,
        acknowledge_with=list(acknowledge_with))
    clients = ", ".join(json.dumps(a) for a in allowed)
    text = text.replace("[console]\nport = 0\n",
                        f"[console]\nport = 0\nallowed_clients = [{clients}]\n"
                        f"tap_seconds = 5.0\n{console}")
    if printer:
        text += f"\n[printer]\n{printer}\n"
    path.write_text(text, encoding="utf-8")
    async with _running(path, tmp_path, clock) as ready:
        yield ready


@contextlib.asynccontextmanager
async def _running(path: Path, tmp_path: Path, clock: ClockSource
                   ) -> AsyncIterator[ConsoleTable]:
    """The daemon of the table config at ``path``, running with its console listening."""
    notify = RecordingNotify()
    wired = wire_table(read_table_config(path), notify=notify, clock=clock)
    notify.daemon = wired.daemon
    async with running(wired.daemon):
        deadline = time.monotonic() + GUARD_S
        while wired.daemon.console_port is None:
            assert time.monotonic() < deadline, "the console never listened"
            await asyncio.sleep(0.01)
        yield ConsoleTable(daemon=wired.daemon, devices=wired.devices, tmp_path=tmp_path)


# ---- an ASGI request without a socket (any client address) ----------------------------------

@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: status, headers (lower-case names), body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)


async def asgi_call(app: Any, method: str, path: str, *, body: bytes | Sequence[bytes] = b"",
                    headers: Mapping[str, str] | None = None,
                    client: tuple[str, int] = ("127.0.0.1", 50000),
                    host: str = "127.0.0.1:8080") -> Answer:
    """One request to an ASGI app; ``body`` may come in several chunks."""
    chunks = [body] if isinstance(body, bytes) else list(body)
    sent = {"host": host, **{k.lower(): v for k, v in (headers or {}).items()}}
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "client": client,
             "server": ("127.0.0.1", 8080),
             "headers": [(k.encode(), v.encode()) for k, v in sent.items()]}
    incoming = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]
    status = 0
    out_headers: dict[str, str] = {}
    parts: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            out_headers.update({k.decode().lower(): v.decode() for k, v in message["headers"]})
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))

    await app(scope, receive, send)
    return Answer(status, out_headers, b"".join(parts))


def unchunk(data: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked answer read off a raw socket."""
    out = b""
    while data:
        size, _, rest = data.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, data = out + rest[:n], rest[n + 2:]
    return out
