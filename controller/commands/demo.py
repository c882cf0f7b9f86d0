"""`showdown demo`: a simulated table daemon on the embedded broker, watched by a subscriber.

The daemon runs with its simulated shoe and chip reader (the real drivers talk to them), a
virtual desk opens a heat and seats entries with signed MQTT commands, a virtual dealer plays
it, and a subscriber on the broker prints each hand and score as it arrives, checking every
signature and that no sequence number is missing. `showdown heat` is the offline explainer.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import aiomqtt

from controller.config import parse_table_config
from controller.envelope import EnvelopeError, verify_envelope
from controller.signing import KeyRing, load_private_key
from controller.topics import TableTopics
from game.money import format_rand

_CONFIG = """
[table]
venue = "demo"
id = "t01"
journal = "{dir}/journal.sqlite"
[files]
tournament = "{config}/tournament.toml"
paytables = "{config}/paytables.toml"
[keys]
table_key = "{dir}/table.key"
[shoe]
kind = "sim"
[rfid]
kind = "sim"
[mqtt]
broker = "embedded"
[api]
socket = "{dir}/console.sock"
[sim]
seed = {seed}
players = {players}
stage = "{stage}"
heats = {heats}
hand_pause = {pause}
[log]
format = "json"
level = "warning"
"""


def register(sub: Any) -> None:
    """Add the `demo` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="run a simulated table daemon and watch its hands and scores arrive",
        description=__doc__)
    p.add_argument("--seed", type=int, default=2026, help="seed of the shuffles and players")
    p.add_argument("--players", type=int, default=3, choices=range(1, 7), metavar="1-6")
    p.add_argument("--stage", choices=["qualifying", "semi_final", "final"],
                   default="qualifying")
    p.add_argument("--heats", type=int, default=1, help="heats to play (default 1)")
    p.add_argument("--pause", type=float, default=0.0, help="seconds between hands")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0 when every score arrived with no gap."""
    config_dir = Path(__file__).resolve().parents[2] / "config"
    with tempfile.TemporaryDirectory(prefix="showdown-demo-") as tmp:
        text = _CONFIG.format(dir=tmp, config=config_dir, seed=args.seed,
                              players=args.players, stage=args.stage, heats=args.heats,
                              pause=args.pause)
        path = Path(tmp) / "table.toml"
        path.write_text(text)
        import tomllib  # noqa: PLC0415

        config = parse_table_config(tomllib.loads(text), source=str(path), base=Path(tmp))
        return asyncio.run(_demo(config, args))


async def _demo(config: Any, args: argparse.Namespace) -> int:
    from controller.app import TableDaemon  # noqa: PLC0415
    from controller.logs import configure_logging  # noqa: PLC0415
    from simulators.sim_table import prepare_sim, virtual_table_task  # noqa: PLC0415

    configure_logging(fmt="console", level="warning", table=config.table)
    desk_keys, desk = prepare_sim(config)
    daemon = TableDaemon(config, extra_desk_keys=desk_keys)
    stop = asyncio.Event()
    dealer = virtual_table_task(config, desk)
    dealer_done = asyncio.Event()

    async def play(d: TableDaemon) -> None:
        try:
            await dealer(d)
        finally:
            dealer_done.set()

    runner = asyncio.create_task(daemon.run(stop, extra=play))
    await asyncio.wait_for(daemon.ready.wait(), 30)
    assert daemon.broker is not None
    shoe = daemon.devices.shoe_sim.path if daemon.devices else "?"
    print(f"table daemon t01 ready: simulated shoe on {shoe}, simulated chip reader, "
          f"embedded MQTT broker on 127.0.0.1:{daemon.broker.port}")
    print(f"seed {args.seed}; a subscriber on the table's events and scores topics prints what"
          " it receives\n")
    keyring = KeyRing([load_private_key(config.table_key).public_key])
    watcher = _Watcher(keyring)
    watch = asyncio.create_task(watcher.watch(daemon.broker.port, config))
    await dealer_done.wait()
    for _ in range(300):  # let the outbox drain to the subscriber
        journal = daemon.journal
        if journal is not None and not journal.pending(1) \
                and watcher.last_seq >= journal.last_seq():
            break
        await asyncio.sleep(0.05)
    stop.set()
    await runner
    watch.cancel()
    print(f"\n{watcher.received} messages received, signatures verified, seq 1.."
          f"{watcher.last_seq} with {len(watcher.gaps)} gaps; {len(watcher.scores)} scores:")
    for entry, score in sorted(watcher.scores.items(), key=lambda kv: -kv[1]):
        print(f"  {entry}: {format_rand(score)}")
    return 0 if not watcher.gaps and watcher.scores else 1


class _Watcher:
    """The leaderboard side in miniature: verify, order, print."""

    def __init__(self, keyring: KeyRing) -> None:
        self.keyring = keyring
        self.received = 0
        self.last_seq = 0
        self.gaps: list[int] = []
        self.scores: dict[str, int] = {}

    async def watch(self, port: int, config: Any) -> None:
        topics = TableTopics(config.venue, config.table)
        async with aiomqtt.Client("127.0.0.1", port, identifier="demo-watcher") as client:
            for topic in (topics.events, topics.scores, topics.status):
                await client.subscribe(topic, qos=1)
            async for message in client.messages:
                try:
                    env = verify_envelope(bytes(message.payload),
                                          self.keyring)
                except EnvelopeError as exc:
                    print(f"  !! rejected message on {message.topic}: {exc}")
                    continue
                self.received += 1
                if env.seq == 0:
                    continue
                if env.seq > self.last_seq + 1:
                    self.gaps.extend(range(self.last_seq + 1, env.seq))
                self.last_seq = max(self.last_seq, env.seq)
                self._show(env.seq, env.type, dict(env.body))

    def _show(self, seq: int, kind: str, body: dict[str, Any]) -> None:
        if kind == "hand.settled":
            seats = ", ".join(
                f"seat {s['seat']} {s['hand'].lower()} {s['outcome']} {format_rand(s['net'])}"
                for s in body["settlement"]["seats"])
            print(f"[{seq:>4}] {body['hand_id']}: board {' '.join(body['board'])}; dealer "
                  f"{' '.join(body['dealer'])} ({body['settlement']['dealer']['hand'].lower()}); "
                  f"{seats}")
        elif kind == "hand.voided":
            print(f"[{seq:>4}] {body['hand_id']}: VOID ({body['void']['reason']})")
        elif kind == "score.recorded":
            self.scores[body["entry_id"]] = body["score"]
            print(f"[{seq:>4}] SCORE {body['entry_id']}: {format_rand(body['score'])} after "
                  f"{body['hands']} hands ({body['status']})")
        elif kind == "score.acknowledged":
            print(f"[{seq:>4}] acknowledged by {body['method']}: {body['entry_id']}")
        elif kind == "alert":
            print(f"[{seq:>4}] ALERT {body['kind']}: {body['message']}")
        elif kind in ("heat.opened", "heat.closed", "entry.seated"):
            detail = body.get("entry_id") or body.get("heat_id")
            print(f"[{seq:>4}] {kind} {detail}")
