"""`showdown demo`: a whole simulated tournament, or one simulated table watched by a subscriber.

By default (what `make demo` runs) the central leaderboard service starts with its page and a
few simulated tables play the whole tournament on a compressed calendar (the clock jumps from
day to day): qualifying heats on several heat days in two prize weeks, the top 12 into two
semi-final heats of 6 (heat and seat chosen; proxies for a patron's extra places) played in
parallel, the top 6 into the Final with the seat draw and the bonus markers, the weekly prizes,
the Top Score Progressive and the Final Prize Pool awarded, and the winners claiming (one
prize left unclaimed). Everything goes through the desk, signed commands over MQTT, the table
daemons on their real drivers, ingest and the standings, live on the page
(floor.tournament). Each table's virtual dealer and supervisor sign in with
their own PINs, every payout is checked by the chip readers (one overpay is injected and
overridden by the supervisor), and each patron acknowledges their score by tapping their
rewards card. ``--seed`` replays the same cards, scores and winners.
``--table-only`` runs one table daemon on the embedded broker instead, with a subscriber that
prints each hand and score as it arrives, checking every signature and that no sequence
number is missing. `showdown heat` is the offline explainer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from cli.arguments import add_renamed
from cli.errors import CommandError
from controller.config import parse_table_config
from game.money import format_rand
from runtime.settings_files import default_paytables_path, default_tournament_path
from simulators.table_toml import desk_key_file, simulated_table_toml, table_key_file
from wire.envelope import EnvelopeError, verify_envelope
from wire.messages import (
    Alert,
    ChipsReconciled,
    EntrySeated,
    HandSettled,
    HandVoided,
    HeatClosed,
    HeatOpened,
    ScoreAcknowledged,
    ScoreRecorded,
)
from wire.mqtt import MqttSettings, connect
from wire.signing import KeyRing, Signer, load_private_key
from wire.topics import TableTopics

_HAND_PAUSE = 0.25  # seconds between hands at --speed 1
_STAGE_PAUSE = 0.5  # seconds between stages at --speed 1


def register(sub: Any) -> None:
    """Add the `demo` subcommand."""
    p: argparse.ArgumentParser = sub.add_parser(
        "demo", help="run a simulated floor: tables, patrons and the live leaderboard page",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=2026, help="seed of the shuffles and players")
    p.add_argument("--tables", type=int, default=3, help="simulated tables (default 3)")
    p.add_argument("--players", type=int, default=3, choices=range(1, 7), metavar="1-6",
                   help="players per heat (default 3)")
    p.add_argument("--days", type=int, default=2,
                   help="simulated qualifying heat days (default 2: a Thursday and a Friday,"
                        " two prize weeks)")
    p.add_argument("--heats", type=int, default=None,
                   help="heats each table plays each heat day (default: 1, or as many as"
                        " fill the semi-finals; the heats of --table-only)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="pace: 1 (default) watchable and under 3 minutes, 0 as fast as it"
                        " goes, 2 twice as slow ...")
    p.add_argument("--pause", type=float, default=None,
                   help="seconds between hands (default 0.25 x --speed; 0 with --table-only)")
    p.add_argument("--set", dest="rules", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="change one tournament setting for the demo (repeatable), e.g."
                        " --set qualifying.advance=4 --set semi_final.seats_per_heat=2"
                        " --set 'weekly_prizes.prize=\"R500\"'; the calendar is the demo's")
    p.add_argument("--qualifying-only", dest="whole", action="store_false",
                   help="stop after the qualifying heats (no semi-finals, Final or prizes)")
    p.add_argument("--port", type=int, default=8080,
                   help="the page's port on 127.0.0.1 (default 8080; taken: any free port)")
    p.add_argument("--broker", metavar="HOST:PORT",
                   help="an MQTT broker to use (default: an embedded one on a free port)")
    add_renamed(p, "--db", was="--database", dest="database", metavar="URL",
                help="the leaderboard database (default: SQLite in the demo's directory)")
    p.add_argument("--linger", type=float, default=None, metavar="SECONDS",
                   help="keep the page up this long after the last heat (default: until"
                        " Ctrl-C on a terminal, else 0)")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="write the demo's files (configs, keys, database) here and keep them")
    p.add_argument("--no-withdrawal", dest="withdrawal", action="store_false",
                   help="nobody leaves mid-heat (by default one patron of the first table's"
                        " last heat leaves after 3 hands and is withdrawn)")
    p.add_argument("--overpay", type=int, default=3, metavar="HAND",
                   help="the first table's dealer pays one chip too many in this hand of its"
                        " first heat; a supervisor overrides (default 3; 0: never)")
    p.add_argument("--deck", choices=["shuffled", "factory", "riffle", "repeated"],
                   default="shuffled",
                   help="the virtual dealers' decks: shuffled (default), in factory order,"
                        " riffled once, or one order every hand; the tables' deck checks hold"
                        " each suspect deck and the virtual supervisor clears it")
    p.add_argument("--tournament", type=Path, metavar="FILE",
                   help="the tournament settings the demo's are made from (its calendar is the"
                        " demo's; default $SHOWDOWN_TOURNAMENT, else the shipped ones)")
    p.add_argument("--paytables", type=Path, metavar="FILE",
                   help="the tables' paytables (default $SHOWDOWN_PAYTABLES, else the shipped"
                        " ones)")
    p.add_argument("--table-only", action="store_true",
                   help="one table daemon and a subscriber, without the central service")
    p.add_argument("--stage", choices=["qualifying", "semi_final", "final"],
                   default="qualifying", help="the stage played (--table-only)")
    p.add_argument("--json", action="store_true",
                   help="the narrative on stderr; on stdout one JSON document, the summary")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0 when every heat was played and every score arrived. With
    --json the narrative goes to stderr and the summary is one JSON document on stdout."""
    from cli.extras import require  # noqa: PLC0415

    embedded = args.table_only or args.broker is None
    require(*(["amqtt"] if embedded else []), *([] if args.table_only else ["alembic", "rich"]))
    if not args.json:
        return _run(args, {})
    import contextlib  # noqa: PLC0415
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415

    doc: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):
        code = _run(args, doc)
    print(json.dumps({"ok": code == 0, **doc}, indent=2, sort_keys=True, default=_json_value))
    return code


def _json_value(value: object) -> str:
    """Times as ISO 8601, paths as text."""
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat()) if callable(isoformat) else str(value)


def _run(args: argparse.Namespace, doc: dict[str, Any]) -> int:
    if not args.table_only:
        return _floor(args, doc)
    args.heats = 1 if args.heats is None else args.heats
    args.pause = 0.0 if args.pause is None else args.pause
    tournament = _given(args.tournament, "--tournament") or default_tournament_path()
    paytables = _given(args.paytables, "--paytables") or default_paytables_path()
    with tempfile.TemporaryDirectory(prefix="showdown-demo-") as tmp:
        return asyncio.run(_table_demo(Path(tmp), args, doc, tournament=tournament,
                                       paytables=paytables))


async def _table_demo(home: Path, args: argparse.Namespace, doc: dict[str, Any], *,
                      tournament: Path, paytables: Path) -> int:
    """The embedded broker first, then the subscriber, then the table daemon on that broker:
    the subscriber hears the table's first message too."""
    import tomllib  # noqa: PLC0415

    from controller.embedded_broker import EmbeddedBroker  # noqa: PLC0415
    from controller.wiring import desk_signer  # noqa: PLC0415

    async with EmbeddedBroker() as broker:
        # The demo names its virtual desk and dealer: it makes the table's key and the
        # desk's in its folder and enrols the desk's in the config it writes.
        table_key_file(home, "t01")
        desk_key, desk_keys = desk_key_file(home)
        text = simulated_table_toml(
            venue="demo", table="t01", broker=f"127.0.0.1:{broker.port}",
            tournament=tournament.resolve(), paytables=paytables.resolve(),
            seed=args.seed, players=args.players, stage=args.stage, heats=args.heats,
            hand_pause=args.pause, log_format="json", desk_keys=desk_keys,
            desk_key=desk_key.name, virtual_dealer=True)
        path = home / "table.toml"
        path.write_text(text)
        config = parse_table_config(tomllib.loads(text), source=str(path), base=home)
        prepared = desk_signer(config)
        keyring = KeyRing([load_private_key(config.table_key).public_key])
        watcher = _Watcher(keyring)
        watch = asyncio.create_task(watcher.watch(broker.port, config))
        try:
            async with asyncio.timeout(30):
                await watcher.subscribed.wait()
            return await _demo(config, args, doc, prepared=prepared, watcher=watcher,
                               port=broker.port)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch


def _floor(args: argparse.Namespace, doc: dict[str, Any]) -> int:
    """The simulated floor (floor.tournament) in a fresh or a kept directory."""
    import sys  # noqa: PLC0415

    from floor.plan import TournamentPlan, tournament_settings  # noqa: PLC0415

    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port must be 0..65535 (0: any free port), got {args.port}")
    if not 0 <= args.speed <= 100:
        raise CommandError(f"--speed must be 0..100 (0: as fast as it goes), got {args.speed}")
    if args.pause is not None and args.pause < 0:
        raise CommandError(f"--pause must be 0 seconds or more, got {args.pause}")
    linger = args.linger if args.linger is not None else (None if sys.stdin.isatty() else 0.0)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        if any(args.keep.iterdir()):
            raise CommandError(f"--keep {args.keep}: the directory is not empty")
        directory: Path | None = args.keep
    else:
        directory = None
    with tempfile.TemporaryDirectory(prefix="showdown-demo-") as tmp:
        try:
            plan = TournamentPlan(directory=directory or Path(tmp), tables=args.tables,
                             days=args.days,
                             heats_per_day=1 if args.heats is None else args.heats,
                             players=args.players, seed=args.seed,
                             hand_pause=(_HAND_PAUSE * args.speed if args.pause is None
                                         else args.pause),
                             stage_pause=_STAGE_PAUSE * args.speed, whole=args.whole,
                             rules=_rules(args.rules),
                             http_port=args.port, broker=args.broker, database=args.database,
                             withdrawal=args.withdrawal,
                             overpay_hand=args.overpay if args.overpay > 0 else None,
                             deck_mode=args.deck,
                             tournament_file=_given(args.tournament, "--tournament"),
                             paytables_file=_given(args.paytables, "--paytables"))
            if args.heats is None and plan.whole:  # enough heats a day to fill the semi-finals
                plan = replace(plan, heats_per_day=_heats_needed(plan, tournament_settings(
                    replace(plan, whole=False))[2].qualifying.advance or 0))
            tournament_settings(plan)  # a setting or a size that does not fit, said before starting
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return asyncio.run(_run_floor(plan, linger, doc))


def _given(path: Path | None, flag: str) -> Path | None:
    """The file a flag names, resolved (the tables read it from their own folders); None if
    the flag is not given; CommandError if there is no such file."""
    if path is None:
        return None
    if not path.is_file():
        raise CommandError(f"{flag} {path}: no such file")
    return path.resolve()


def _heats_needed(plan: Any, advance: int) -> int:
    """The fewest heats a table plays each day (at least 1) that give `advance` scores."""
    per_heat_round = plan.tables * plan.players * plan.days
    wanted = advance + (1 if plan.withdrawal else 0)
    return int(max(1, min(10, -(-wanted // per_heat_round))))


def _rules(items: list[str]) -> dict[str, object]:
    """The --set SECTION.KEY=VALUE settings (VALUE as TOML: 4, "R500", [70, 30])."""
    import tomllib  # noqa: PLC0415

    out: dict[str, object] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or "." not in key.strip() or not value.strip():
            raise CommandError(f"--set {item!r}: write SECTION.KEY=VALUE, e.g."
                               " qualifying.advance=4")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            raise CommandError(f"--set {item!r}: the value is not TOML (a number, \"text\" in"
                               " quotes, a list such as [70, 30])") from None
    return out


async def _run_floor(plan: Any, linger: float | None, doc: dict[str, Any]) -> int:
    import signal  # noqa: PLC0415

    from floor.tournament import SimulatedFloor  # noqa: PLC0415
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level="error")  # device alerts show on the page's feed
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        report = await SimulatedFloor(plan).run(stop, linger=linger)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    doc.update(report.tournament_doc())
    complete = report.heats_played == plan.tables * plan.heats and (
        not plan.whole or "prizes" in report.stages)
    return 0 if complete and not report.problems \
        and len(report.scores) + len(report.withdrawn) == report.entries_seated else 1


async def _demo(config: Any, args: argparse.Namespace, doc: dict[str, Any], *,
                prepared: Signer, watcher: _Watcher,
                port: int) -> int:
    from controller.app import TableDaemon  # noqa: PLC0415
    from controller.wiring import virtual_table_task, wire_table  # noqa: PLC0415
    from runtime.logs import configure_logging  # noqa: PLC0415

    configure_logging(fmt="console", level="warning", table=config.table)
    desk = prepared
    wired = wire_table(config)
    daemon = wired.daemon
    stop = asyncio.Event()
    dealer = virtual_table_task(wired, desk)
    dealer_done = asyncio.Event()

    async def play(d: TableDaemon) -> None:
        try:
            await dealer(d)
        finally:
            dealer_done.set()

    runner = asyncio.create_task(daemon.run(stop, extra=play))
    async with asyncio.timeout(30):
        await daemon.ready.wait()
    shoe = wired.devices.shoe_sim.path if wired.devices.shoe_sim else "?"
    print(f"table daemon t01 ready: simulated shoe on {shoe}, simulated chip reader, "
          f"embedded MQTT broker on 127.0.0.1:{port}")
    print(f"seed {args.seed}; a subscriber on the table's events and scores topics prints what"
          " it receives\n")
    await dealer_done.wait()
    for _ in range(300):  # let the outbox drain to the subscriber
        journal = daemon.journal
        if journal is not None and not journal.pending(1) \
                and watcher.last_seq >= journal.last_seq():
            break
        await asyncio.sleep(0.05)
    stop.set()
    await runner
    print(f"\n{watcher.received} messages received, signatures verified, seq 1.."
          f"{watcher.last_seq} with {len(watcher.gaps)} gaps; {len(watcher.scores)} scores:")
    for entry, score in sorted(watcher.scores.items(), key=lambda kv: -kv[1]):
        print(f"  {entry}: {format_rand(score)}")
    doc.update(received=watcher.received, last_seq=watcher.last_seq, gaps=watcher.gaps,
               scores=watcher.scores)
    return 0 if not watcher.gaps and watcher.scores else 1


class _Watcher:
    """The leaderboard side in miniature: verify, order, print."""

    def __init__(self, keyring: KeyRing) -> None:
        self.keyring = keyring
        self.received = 0
        self.last_seq = 0
        self.gaps: list[int] = []
        self.scores: dict[str, int] = {}
        self.subscribed = asyncio.Event()  # set once every topic is subscribed

    async def watch(self, port: int, config: Any) -> None:
        topics = TableTopics(config.venue, config.table)
        async with connect(MqttSettings(host="127.0.0.1", port=port),
                           client_id="demo-watcher") as client:
            for topic in (topics.events, topics.scores, topics.status):
                await client.subscribe(topic, qos=1)
            self.subscribed.set()
            async for message in client.messages():
                try:
                    env = verify_envelope(message.payload, self.keyring)
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
        if kind == HandSettled.TYPE:
            seats = ", ".join(
                f"seat {s['seat']} {s['hand'].lower()} {s['outcome']} {format_rand(s['net'])}"
                for s in body["settlement"]["seats"])
            print(f"[{seq:>4}] {body['hand_id']}: board {' '.join(body['board'])}; dealer "
                  f"{' '.join(body['dealer'])} ({body['settlement']['dealer']['hand'].lower()}); "
                  f"{seats}")
        elif kind == HandVoided.TYPE:
            print(f"[{seq:>4}] {body['hand_id']}: VOID ({body['void']['reason']})")
        elif kind == ScoreRecorded.TYPE:
            self.scores[body["entry_id"]] = body["score"]
            print(f"[{seq:>4}] SCORE {body['entry_id']}: {format_rand(body['score'])} after "
                  f"{body['hands']} hands ({body['status']})")
        elif kind == ScoreAcknowledged.TYPE:
            print(f"[{seq:>4}] acknowledged by {body['method']}: {body['entry_id']}")
        elif kind == Alert.TYPE:
            print(f"[{seq:>4}] ALERT {body['kind']}: {body['message']}")
        elif kind == ChipsReconciled.TYPE:
            print(f"[{seq:>4}] CHIPS {body['entry_id']}: issued {len(body['issued'])} chips"
                  f" {format_rand(body['issued_cents'])}, held {len(body['held'])}"
                  f" {format_rand(body['held_cents'])}, returned {len(body['returned'])}"
                  f" {format_rand(body['returned_cents'])}, missing {len(body['missing'])}"
                  f" {format_rand(body['missing_cents'])}")
        elif kind in (HeatOpened.TYPE, HeatClosed.TYPE, EntrySeated.TYPE):
            detail = body.get("entry_id") or body.get("heat_id")
            print(f"[{seq:>4}] {kind} {detail}")
