"""The rehearsal venue's desk accounts, made the way a venue makes them (docs/desk-auth.md):
`showdown leaderboard init` enrols the first manager, who signs in (`showdown desk login`,
through the central service's desk API) and enrols a clerk, a pit supervisor and a dealer per
table (`showdown desk staff add`); once the tables are up the manager sends them the roster
(`showdown desk staff send`). Each step is the desk's own command in a process of its own,
with the venue's desk.toml; the sessions are kept in DIR/state, not in the technician's home.

Every secret is drawn with `secrets` and written owner-only (DIR/staff/, 0700; each file
0600): the passphrase and PIN files are what the commands read (`--passphrase-file`,
`--pin-file`), and DIR/staff/accounts.txt lists them all for the technician. A second run
finds the accounts in the database and enrols only those missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

from simulators.patrons import make_patrons

__all__ = [
    "PATRON_SEED",
    "DeskError",
    "SeatedPatron",
    "StaffAccount",
    "desk_env",
    "enrol_staff",
    "init_database",
    "seat_patrons",
    "send_roster",
    "staff_accounts",
]

MANAGER: Final = "M1"
PATRON_SEED: Final = 2026  # the made-up patrons' names, birth dates and cards (--patrons)
_TIMEOUT_S: Final = 60.0


class DeskError(Exception):
    """A desk command failed; the message is its own last words."""


@dataclass(frozen=True, slots=True)
class StaffAccount:
    """One member of the rehearsal's staff and their credentials (None: not held)."""

    staff_id: str
    name: str
    role: str
    passphrase: str | None = None
    pin: str | None = None
    card: str | None = None


@dataclass(frozen=True, slots=True)
class SeatedPatron:
    """A made-up patron the venue registered and seated (``--patrons``)."""

    name: str
    card: str  # the rewards card to tap on the bench
    entry_id: str
    code: str  # the entry's short code, as every screen shows it
    table: str
    seat: int


def _digits(n: int) -> str:
    """`n` random digits, the first not 0."""
    return str(secrets.randbelow(9) + 1) + "".join(str(secrets.randbelow(10))
                                                   for _ in range(n - 1))


def _drawn(staff_id: str, name: str, role: str) -> StaffAccount:
    desk = role in ("manager", "clerk", "supervisor")
    floor = role in ("supervisor", "dealer")
    return StaffAccount(staff_id=staff_id, name=name, role=role,
                        passphrase=secrets.token_urlsafe(18) if desk else None,
                        pin=_digits(6) if floor else None,
                        card=_digits(16) if floor else None)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _secret(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (value + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def staff_accounts(directory: Path, tables: Sequence[str]) -> list[StaffAccount]:
    """The rehearsal's staff: the manager M1, the clerk C1, the pit supervisor S1 and a dealer
    per table (D01 for t01, ...), with the secrets in DIR/staff (drawn and written the first
    time, read back after)."""
    folder = directory / "staff"
    folder.mkdir(mode=0o700, exist_ok=True)
    wanted = [(MANAGER, "Venue Manager", "manager"), ("C1", "Desk Clerk", "clerk"),
              ("S1", "Pit Supervisor", "supervisor")]
    wanted += [(f"D{t[1:]}", f"Dealer {t}", "dealer") for t in tables]
    accounts = []
    for staff_id, name, role in wanted:
        drawn = _drawn(staff_id, name, role)
        held = {}
        for what in ("passphrase", "pin", "card"):
            if getattr(drawn, what) is None:
                continue
            path = folder / f"{staff_id}.{what}"
            value = _read(path)
            if value is None:
                value = getattr(drawn, what)
                _secret(path, value)
            held[what] = value
        accounts.append(StaffAccount(staff_id=staff_id, name=name, role=role, **held))
    lines = ["# The rehearsal venue's staff accounts (written by `showdown venue rehearse`):"
             " secret, owner-only.", "# staff_id role name: desk passphrase, PIN,"
             " employee card"]
    lines += [f"{a.staff_id} {a.role} {a.name!r}: passphrase {a.passphrase or '-'}, PIN"
              f" {a.pin or '-'}, card {a.card or '-'}" for a in accounts]
    _secret(folder / "accounts.txt", "\n".join(lines))
    return accounts


def desk_env(directory: Path, desk_config: Path) -> dict[str, str]:
    """The environment of the venue's own desk commands: its desk.toml, and the manager's
    session kept in DIR/state."""
    state = directory / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    return {**os.environ, "SHOWDOWN_DESK_CONFIG": str(desk_config),
            "XDG_STATE_HOME": str(state), "PYTHONUNBUFFERED": "1"}


def _as(env: dict[str, str], staff_id: str) -> dict[str, str]:
    """The environment of desk commands acting as ``staff_id`` (several people are signed in
    at the venue's one desk terminal: each command says who acts, issue 33)."""
    return {**env, "SHOWDOWN_DESK_STAFF": staff_id}


async def _desk(env: dict[str, str], *args: str, group: str = "desk") -> str:
    """Run `showdown desk ARGS` and return what it printed; DeskError when it fails."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli", group, *args, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), _TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise DeskError(f"showdown desk {args[0]} did not finish in {_TIMEOUT_S:.0f} s") from None
    if process.returncode != 0:
        text = (err or out).decode("utf-8", "replace").strip().splitlines()
        raise DeskError(f"showdown desk {' '.join(args[:2])}: "
                        f"{text[-1] if text else f'exit {process.returncode}'}")
    return out.decode("utf-8", "replace")


async def init_database(directory: Path, env: dict[str, str], database: str,
                        accounts: Sequence[StaffAccount]) -> None:
    """Create the central database with its first manager (`showdown leaderboard init`),
    before the central service starts."""
    manager = accounts[0]
    await _desk(env, "init", "--db", database, "--staff-id", manager.staff_id, "--name",
                manager.name, "--passphrase-file",
                str(directory / "staff" / f"{manager.staff_id}.passphrase"),
                group="leaderboard")


async def enrol_staff(directory: Path, env: dict[str, str],
                      accounts: Sequence[StaffAccount]) -> list[str]:
    """Sign the manager in at the desk (through the running central service's desk API) and
    enrol every account the database lacks; the ids enrolled now."""
    staff = directory / "staff"
    manager = accounts[0]
    env = _as(env, manager.staff_id)
    await _desk(env, "login", "--staff-id", manager.staff_id,
                "--passphrase-file", str(staff / f"{manager.staff_id}.passphrase"))
    listed = json.loads(await _desk(env, "staff", "list", "--json"))
    rows = listed if isinstance(listed, list) else listed.get("staff", [])
    have = {row["staff_id"] for row in rows if isinstance(row, dict)}
    enrolled = []
    for a in accounts[1:]:
        if a.staff_id in have:
            continue
        args = ["staff", "add", "--staff-id", a.staff_id, "--name", a.name, "--role", a.role]
        for what, option in (("passphrase", "--passphrase-file"), ("pin", "--pin-file")):
            if getattr(a, what) is not None:
                args += [option, str(staff / f"{a.staff_id}.{what}")]
        if a.card is not None:
            args += ["--card", a.card]
        await _desk(env, *args)
        enrolled.append(a.staff_id)
    return enrolled


async def send_roster(env: dict[str, str], accounts: Sequence[StaffAccount],
                      tables: Sequence[str]) -> str:
    """The manager sends the staff roster to each of `tables` (`desk staff send --table`);
    their answers, a line each. Signs in again first: the session may have ended while the tables
    started."""
    manager = accounts[0]
    staff = Path(env["XDG_STATE_HOME"]).parent / "staff"
    env = _as(env, manager.staff_id)
    await _desk(env, "login", "--staff-id", manager.staff_id,
                "--passphrase-file", str(staff / f"{manager.staff_id}.passphrase"))
    answers = []
    for t in tables:
        try:
            answers.append((await _desk(env, "staff", "send", "--table", t)).strip())
        except DeskError as exc:
            # A table refuses a roster version it holds already (a restarted venue sends the
            # same roster again): it has what it needs, and the line says so.
            if "is not newer than the table's version" not in str(exc):
                raise
            answers.append(f"table {t} already holds the current staff roster ({exc})")
    return "\n".join(answers)


async def _desk_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(await _desk(env, *args, "--json"))


async def seat_patrons(env: dict[str, str], accounts: Sequence[StaffAccount],
                       tables: Sequence[str], count: int, *, today: date) -> list[SeatedPatron]:
    """The pit supervisor registers ``count`` made-up adult patrons (seeded by PATRON_SEED),
    sells each an entry, opens a qualifying heat at each table needed and seats them, the
    i-th at ``tables[i % len(tables)]``, seat ``i // len(tables) + 1``: each a desk command of
    its own, in the supervisor's name."""
    supervisor = next(a for a in accounts if a.role == "supervisor")
    staff = Path(env["XDG_STATE_HOME"]).parent / "staff"
    env = _as(env, supervisor.staff_id)
    await _desk(env, "login", "--staff-id", supervisor.staff_id,
                "--passphrase-file", str(staff / f"{supervisor.staff_id}.passphrase"))
    people = make_patrons(count, rng=random.Random(PATRON_SEED), today=today, under_age=0)
    opened: set[str] = set()
    seated = []
    for i, person in enumerate(people):
        table, seat = tables[i % len(tables)], i // len(tables) + 1
        patron = await _desk_json(env, "register", "--name", person.name, "--id-kind",
                                  person.id_kind, "--id-number", person.id_number,
                                  "--birth-date", person.birth_date.isoformat(),
                                  "--consent-name")
        entry = await _desk_json(env, "buy", "--patron", str(patron["patron_id"]),
                                 "--payment", "cash")
        if table not in opened:
            await _desk(env, "open-heat", "--table", table, "--stage", "qualifying")
            opened.add(table)
        await _desk(env, "seat", "--entry", str(entry["entry_id"]), "--table", table,
                    "--seat", str(seat))
        seated.append(SeatedPatron(name=person.name, card=person.id_number,
                                   entry_id=str(entry["entry_id"]), code=str(entry["code"]),
                                   table=table, seat=seat))
    return seated
