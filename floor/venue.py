"""The rehearsal venue's composition (`showdown venue rehearse`): from a laid-out directory
(floor.venue_layout) to a running venue. The desk's staff are enrolled (floor.venue_desk),
then the broker, the central service and each table start as processes of their own
(floor.venue_run), the manager sends the tables the staff roster, and the addresses and
the staff's credentials are printed. It runs until one of `signals` arrives, then stops the
tables, the central service and the broker in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from floor.venue_desk import (
    DeskError,
    SeatedPatron,
    StaffAccount,
    desk_env,
    enrol_staff,
    init_database,
    seat_patrons,
    send_roster,
    staff_accounts,
)
from floor.venue_layout import VenueLayout
from floor.venue_run import (
    ChildSpec,
    VenueProcesses,
    http_ready,
    port_ready,
    python_command,
    table_ready,
)

__all__ = ["READY_LINE", "VenueError", "child_specs", "run_venue"]

T = TypeVar("T")
READY_LINE = "venue ready"  # the line a script (or a test) waits for


class VenueError(Exception):
    """The venue could not start; the message says which part and why."""


def child_specs(layout: VenueLayout, *, mosquitto: str | None,
                own_tables: Sequence[str] = ()) -> list[ChildSpec]:
    """The venue's processes in the order they start: broker, central service, tables (but
    those the technician runs)."""
    logs = layout.directory / "logs"
    port = layout.ports.broker
    if mosquitto is not None:
        assert layout.broker.config is not None
        broker = [mosquitto, "-c", str(layout.broker.config)]
    else:
        import sys  # noqa: PLC0415

        broker = [sys.executable, "-m", "floor.venue_broker", str(port)]
    specs = [
        ChildSpec("broker", broker, logs / "broker.log", ready=lambda: port_ready(port)),
        ChildSpec("central", python_command("leaderboard", "serve", "--config",
                                            str(layout.leaderboard_config)),
                  logs / "central.log", ready=lambda: http_ready(layout.ports.http)),
    ]
    sockets = layout.table_sockets()
    for table in layout.tables:
        if table in own_tables:
            continue
        path = sockets[table]
        specs.append(ChildSpec(
            table, python_command("table", "run", "--config", str(layout.table_configs[table])),
            logs / f"{table}.log", ready=lambda path=path: table_ready(path)))  # type: ignore[misc]
    return specs


def addresses(layout: VenueLayout, *, tls: bool, own_tables: Sequence[str] = ()) -> list[str]:
    """The lines that tell a technician where everything is."""
    p = layout.ports
    lines = [f"venue directory: {layout.directory}",
             f"page:      http://127.0.0.1:{p.http}/",
             f"desk API:  http://127.0.0.1:{p.http}/api/desk/",
             f"desk:      showdown desk --config {layout.desk_config} ... (docs/desk-commands.md)",
             f"broker:    mqtts://127.0.0.1:{p.broker} (TLS, venue CA"
             f" {layout.broker.ca_file}; per-table ACL)" if tls else
             f"broker:    mqtt://127.0.0.1:{p.broker} (embedded: NO TLS, NO ACL, anyone may"
             " connect and publish anywhere)"]
    for n, table in enumerate(layout.tables):
        if table in own_tables:
            lines.append(f"{table}:       not started (--own-table): run it yourself with"
                         f" `showdown table run --config FILE` (its key, account and ports"
                         f" are in {layout.table_configs[table]}), then send it the roster"
                         f" with `showdown desk staff send --table {table}`")
            continue
        lines.append(f"{table}:       console http://127.0.0.1:{p.consoles[n]}/  bench"
                     f" http://127.0.0.1:{p.benches[n]}/  config"
                     f" {layout.table_configs[table]}")
    lines.append(f"logs:      {layout.directory / 'logs'}/")
    return lines


def credentials(accounts: Sequence[StaffAccount], folder: Path, *, new: bool) -> list[str]:
    """The staff's credentials (printed once, when they are drawn), else where they are."""
    if not new:
        return [f"staff accounts as before: {folder / 'accounts.txt'} (owner-only)"]
    lines = [f"staff accounts (shown once; kept owner-only in {folder / 'accounts.txt'}):"]
    for a in accounts:
        held = [f"passphrase {a.passphrase}" if a.passphrase else "",
                f"PIN {a.pin}" if a.pin else "", f"card {a.card}" if a.card else ""]
        lines.append(f"  {a.staff_id:<4} {a.role:<10} {a.name:<15} "
                     + ", ".join(h for h in held if h))
    return lines


async def run_venue(layout: VenueLayout, *, mosquitto: str | None, say: Callable[[str], None],
                    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
                    own_tables: Sequence[str] = (), patrons: int = 0) -> int:
    """Start the venue, run it until a signal, stop it: 0 when every child stopped cleanly,
    1 when one had to be killed or failed as it stopped (each said). ``patrons``: made-up
    patrons the pit supervisor registers and seats on a new venue's first run."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    if mosquitto is None:
        say("WARNING: the embedded broker has NO TLS and NO ACL: any client may connect and"
            " publish on any table's topics. This rehearses the software, not the venue's"
            " network security; install Mosquitto (apt-get install mosquitto) for that.")
    directory = layout.directory
    fresh = not (directory / "staff" / "accounts.txt").exists()
    accounts = staff_accounts(directory, layout.tables)
    env = desk_env(directory, layout.desk_config)
    processes = VenueProcesses(say)
    try:
        await init_database(directory, env, layout.database, accounts)
        count = len(layout.tables) - len(own_tables)
        say("venue: starting the broker, the central service and "
            f"{count} table{'s' if count != 1 else ''} ...")
        problem = await _unless(stop, processes.start(
            child_specs(layout, mosquitto=mosquitto, own_tables=own_tables)))
        if problem is not None:
            raise VenueError(problem)
        if not stop.is_set():  # the desk goes through the central service's desk API
            say(f"venue: enrolling the desk's staff in {layout.database.split('://')[0]} ...")
            enrolled = await enrol_staff(directory, env, accounts)
            if enrolled:
                say(f"venue: enrolled {', '.join(enrolled)}")
        if not stop.is_set():
            started = [t for t in layout.tables if t not in own_tables]
            answer = await _unless(stop, send_roster(env, accounts, started))
            for line in (answer or "").splitlines():
                say(f"venue: {line}")
            if patrons and not stop.is_set():
                for line in await _patrons(directory, env, accounts, started, patrons,
                                           fresh=fresh):
                    say(line)
    except DeskError as exc:
        await _stop(processes, say)
        raise VenueError(str(exc)) from None
    except VenueError:
        await _stop(processes, say)
        raise
    if not stop.is_set():
        for line in [*addresses(layout, tls=mosquitto is not None, own_tables=own_tables),
                     *credentials(accounts, directory / "staff", new=fresh),
                     f"{READY_LINE}: Ctrl-C (or SIGTERM) stops it"]:
            say(line)
        await stop.wait()
    say("venue: stopping ...")
    problems = await _stop(processes, say)
    for signum in signals:
        with contextlib.suppress(ValueError, RuntimeError):
            loop.remove_signal_handler(signum)
    say("venue: stopped" if not problems else "venue: stopped with problems")
    return 0 if not problems else 1


async def _patrons(directory: Path, env: dict[str, str], accounts: Sequence[StaffAccount],
                   tables: Sequence[str], count: int, *, fresh: bool) -> list[str]:
    """Seat ``count`` made-up patrons on a new venue; on a later run, where they are."""
    listing = directory / "patrons.txt"
    if not fresh:
        return [f"patrons: seated on this venue's first run ({listing}); none added"]
    seated = await seat_patrons(env, accounts, tables, count, today=date.today())
    lines = [_patron_line(p) for p in seated]
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["patrons (registered, bought and seated by S1; tap the card on the bench to"
            " acknowledge a score):", *(f"  {line}" for line in lines)]


def _patron_line(p: SeatedPatron) -> str:
    return (f"{p.table} seat {p.seat}: {p.code} {p.name}, rewards card {p.card}"
            f" (entry {p.entry_id})")


async def _stop(processes: VenueProcesses, say: Callable[[str], None]) -> list[str]:
    problems = await processes.stop()
    for problem in problems:
        say(f"venue: {problem}")
    return problems


async def _unless(stop: asyncio.Event, work: Coroutine[Any, Any, T]) -> T | None:
    """`work`'s result, or None as soon as `stop` is set (the work is cancelled)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None
