"""Issue 31's "done" test (soak): docs/operations/rehearsal.md's commands, run verbatim as
separate processes, as a technician would from a checkout.

The doc marks its command blocks with `<!-- rehearsal: NAME -->` before each fenced `sh`
block: `setup` (git clone, which this checkout stands for, and `make venv`, run here in the
checkout), `venue` (the venue, in a terminal of its own: started in the background from a
fresh directory holding only a `.venv` link to the checkout's), `desk` (run by one `bash -e`,
so its shell variables carry from line to line; every line a process of its own). With the
entry seated at t01, a person plays its heat as the doc's section 3 says, in Debian's chromium
(Playwright): t01's bench page and its console side by side, the dealer D01 signed in with the
PIN the venue drew, each hand's chips placed, the cards dealt, the payout paid and taken on the
simulated reader, all on the bench page, the console's buttons pressed; after the 5th hand t01
and the central service are killed with SIGKILL and the venue starts them again; after the
10th the participant acknowledges on the player's view by tapping the rewards card on the
bench. The score reaches the central page, and the central database holds each of the 10
hands and the score once, with no gap in t01's messages. Ctrl-C (SIGINT) must then stop the
venue with exit 0 and nothing left running. Without chromium or Playwright it skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.local_api import call
from game.money import format_rand
from game.poker.cards import DECK
from tests import services
from tests.controller.console.test_console_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORT,
    WAIT_MS,
    _playwright_or_skip,
    banner_text,
)
from tests.printed_lines import PrintedLines

pytestmark = pytest.mark.soak

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/operations/rehearsal.md"
READY_S = 240.0  # guards against a hang only
HANDS = 10  # a qualifying entry's hands (the shipped settings)
KILL_AFTER = 5  # t01 and the central service are killed after this hand
CARD = "6009123412341234"  # the participant's rewards card, as the doc registers it
_BLOCK = re.compile(r"<!-- rehearsal: (\w+) -->\s*\n```sh\n(.*?)\n```", re.DOTALL)


def doc_blocks() -> dict[str, list[str]]:
    """The doc's marked command blocks, each a list of command lines (comments dropped)."""
    blocks: dict[str, list[str]] = {}
    for name, body in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        lines = [line for line in body.splitlines() if line.strip()
                 and not line.lstrip().startswith("#")]
        blocks.setdefault(name, []).extend(lines)
    return blocks


def test_the_doc_has_the_blocks_this_test_runs() -> None:
    blocks = doc_blocks()
    assert set(blocks) == {"setup", "venue", "desk", "quick", "own"}
    assert blocks["setup"][-1] == "make venv"
    assert len(blocks["venue"]) == 1 and "showdown venue rehearse" in blocks["venue"][0]
    # the number of commands a technician types, as the doc's timing section says
    assert len(blocks["setup"]) + len(blocks["venue"]) == 3
    assert len(blocks["desk"]) == 5
    assert len(blocks["quick"]) == 1 and "--patrons 1" in blocks["quick"][0]
    assert len(blocks["own"]) == 4 and "--own-table t02" in blocks["own"][0]


class Background(PrintedLines):
    """A command line run by the shell in the background, every line it printed kept."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        super().__init__(subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))

    def until(self, pattern: str, timeout: float = READY_S) -> re.Match[str]:
        """The first printed line matching ``pattern``."""
        return super().until(pattern, timeout)


def _processes_naming(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(directory) in cmdline or " rehearsal/" in cmdline:
                found.append(int(entry.name))
    return [pid for pid in found if pid != os.getpid()]


def _pid_of(needle: str, cwd: Path) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            here = os.readlink(entry / "cwd")
        except OSError:
            continue
        if needle in cmdline and here == str(cwd):
            return int(entry.name)
    raise AssertionError(f"no process runs {needle} in {cwd}")


@pytest.fixture
def technician(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh working directory with the checkout's .venv, and a home of its own."""
    services.mosquitto_binary()
    # a short folder: the tables' console sockets must fit a Unix socket path (~107 bytes),
    # and pytest-xdist's tmp_path is long
    short = Path(tempfile.mkdtemp(prefix="sd-"))
    work = short / "showdown"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".local/state"),
           "PYTHONUNBUFFERED": "1"}
    yield work, env
    for pid in _processes_naming(work):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(work):
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(short, ignore_errors=True)


def _rows(database: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return list(db.execute(sql))


def test_the_rehearsal_docs_commands_run_verbatim(
        technician: tuple[Path, dict[str, str]]) -> None:
    work, env = technician
    blocks = doc_blocks()
    started = time.monotonic()
    # setup: `git clone` is this checkout; `make venv` runs in it (a no-op once done)
    done = subprocess.run(blocks["setup"][-1], shell=True, cwd=ROOT, env=env,  # noqa: S602
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    venue = Background(blocks["venue"][0], work, env)
    try:
        venue.until(r"^venue ready", READY_S)
        ready_s = time.monotonic() - started
        directory = work / "rehearsal"
        assert venue.until(r"^venue directory: (.*)$").group(1) == str(directory)
        bench = int(venue.until(r"^t01: +console http://127\.0\.0\.1:\d+/  bench"
                                r" http://127\.0\.0\.1:(\d+)/").group(1))
        assert bench > 0

        # the desk block, one shell: each line a process of its own
        desk = subprocess.run(["bash", "-e", "-x", "-c", "\n".join(blocks["desk"])], cwd=work,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
        assert desk.returncode == 0, desk.stdout + desk.stderr
        assert re.search(r"^signed in as S1 \(Pit Supervisor, supervisor\)", desk.stdout,
                         re.MULTILINE), desk.stdout
        # the desk names the entry by its short code (D331); its id is the doc's $E
        seat_line = re.search(r"^entry (\S+) seated at table t01 seat 1", desk.stdout,
                              re.MULTILINE)
        entry = re.search(r"^\+ E=(E-[0-9a-f]+)$", desk.stderr, re.MULTILINE)
        assert seat_line is not None and entry is not None, desk.stdout + desk.stderr
        code = seat_line.group(1)
        assert code != entry.group(1)

        def seated() -> str:
            status = subprocess.run(
                [".venv/bin/showdown", "table", "status", "--config", "rehearsal/t01/table.toml"],
                cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False)
            return status.stdout

        deadline = time.monotonic() + 60
        while f"seat 1: {code} chips R2,000.00" not in (text := seated()):
            assert time.monotonic() < deadline, text
            time.sleep(0.5)

        # section 3: the heat on the bench page with the console open (t01 and the central
        # service killed with SIGKILL after hand KILL_AFTER), the participant's card tap
        _playwright_or_skip()
        ports = {name: int(venue.until(rf"^{name}: +console http://127\.0\.0\.1:(\d+)/"
                                       ).group(1)) for name in ("t01",)}
        page_port = int(venue.until(r"^page: +http://127\.0\.0\.1:(\d+)/").group(1))
        heat = Heat(work=work, venue=venue, console=ports["t01"], bench=bench,
                    entry=entry.group(1), pin=(directory / "staff/D01.pin").read_text().strip())
        asyncio.run(heat.play())

        # section 4: the score on the page; in the database every hand and the score once
        standings = _json(f"http://127.0.0.1:{page_port}/api/standings")
        assert heat.score is not None and format_rand(heat.score) in json.dumps(standings)
        database = directory / "leaderboard.sqlite3"
        assert _rows(database, "SELECT count(*), count(DISTINCT hand_id) FROM hands"
                     " WHERE table_id = 't01' AND status = 'settled'") == [(HANDS, HANDS)]
        assert _rows(database, "SELECT entry_id, score_cents, hands, ack_method FROM scores"
                     ) == [(entry.group(1), heat.score, HANDS, "card")]
        assert _rows(database, "SELECT count(*) FROM entries") == [(1,)]
        [(contiguous, highest, gaps)] = _rows(
            database, "SELECT contiguous_seq, highest_seq, gaps FROM table_progress"
            " WHERE table_id = 't01'")
        assert contiguous == highest and json.loads(str(gaps)) == []
        assert _rows(database, "SELECT count(*), count(DISTINCT seq) FROM messages"
                     " WHERE table_id = 't01'") == [(highest, highest)]
        assert heat.restarts == ["t01", "central"]

        # Ctrl-C in the venue's terminal
        venue.process.send_signal(signal.SIGINT)
        assert venue.process.wait(timeout=120) == 0
        assert venue.until(r"^venue: stopped$")
        assert [p for p in _processes_naming(work)
                if os.path.exists(f"/proc/{p}") and os.readlink(f"/proc/{p}/cwd") == str(work)
                ] == []
        print(f"rehearsal: venue ready {ready_s:.0f} s after start; heat played in"
              f" {heat.seconds:.0f} s; whole run {time.monotonic() - started:.0f} s")
    finally:
        if venue.process.poll() is None:
            venue.process.kill()




def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - our own 127.0.0.1
        return json.loads(answer.read())


class Heat:
    """A person at t01's bench page and console, in one chromium: the heat's hands."""

    def __init__(self, *, work: Path, venue: Background, console: int, bench: int, entry: str,
                 pin: str) -> None:
        self.work, self.venue, self.entry, self.pin = work, venue, entry, pin
        self.console_url = f"http://127.0.0.1:{console}"
        self.bench_url = f"http://127.0.0.1:{bench}"
        self.socket = work / "rehearsal/t01/console.sock"
        self.score: int | None = None
        self.restarts: list[str] = []
        self.seconds = 0.0
        self.problems: list[str] = []

    async def status(self) -> dict[str, Any]:
        answer = await call(self.socket, {"action": "status"}, timeout=10)
        detail: dict[str, Any] = answer["detail"]
        return detail

    async def bench_state(self) -> dict[str, Any]:
        state: dict[str, Any] = await asyncio.to_thread(_json, f"{self.bench_url}/api/state")
        return state

    async def until(self, what: str, test: Any, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = await self.status()
                if test(status):
                    return status
            except (OSError, TimeoutError, KeyError):
                status = {}
            if time.monotonic() > deadline:
                raise AssertionError(f"t01 never showed {what}: {status}")
            await asyncio.sleep(0.2)

    def spots(self, status: dict[str, Any]) -> dict[str, int]:
        """What the table reads on seat 1's spots."""
        lying = (status.get("spots") or {}).get("1") or {}
        return {str(k): int(v) for k, v in lying.items() if int(v)}

    async def play(self) -> None:
        started = time.monotonic()
        async_playwright = _playwright_or_skip()
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                pages = []
                for name in ("bench", "console", "player"):
                    context = await browser.new_context(viewport=VIEWPORT)
                    page = await context.new_page()
                    page.on("pageerror", lambda e, n=name: self.problems.append(
                        f"{n} page error: {e}"))
                    pages.append(page)
                self.bench, self.console, self.player = pages
                await self.open_pages()
                await self.starting_stack()
                for hand in range(1, HANDS + 1):
                    await self.hand(hand)
                    if hand == KILL_AFTER:
                        await self.kill_and_restart()
                await self.acknowledge()
            finally:
                await browser.close()
        self.seconds = time.monotonic() - started
        assert self.problems == []

    async def open_pages(self) -> None:
        await self.console.goto(f"{self.console_url}/")
        await self.console.wait_for_selector("#live.on", timeout=WAIT_MS)
        await self.console.click("#sign-in-open")
        await self.console.fill("#staff-id", "D01")
        for digit in self.pin:
            await self.console.click(
                f'.keypad[data-keypad-for="staff-pin"] [data-key="{digit}"]')
        await self.console.click("#sign-in-pin")
        try:
            await self.console.wait_for_function(
                "() => document.getElementById('me').textContent.includes('Dealer t01')",
                timeout=WAIT_MS)
        except Exception as exc:
            banner = await self.console.inner_text("#banner")
            me = await self.console.inner_text("#me")
            raise AssertionError(f"D01 not signed in: {me!r}; banner {banner!r}") from exc
        await self.bench.goto(f"{self.bench_url}/")
        await self.bench.wait_for_selector('#chip-seat option[value="1"]', state="attached",
                                           timeout=WAIT_MS)

    async def press(self, button: str) -> str:
        page = self.bench
        await page.evaluate("document.getElementById('answer').textContent = ''")
        await page.click(button)
        await page.wait_for_function(
            "() => document.getElementById('answer').textContent !== ''", timeout=WAIT_MS)
        text = str(await page.inner_text("#answer"))
        assert await page.get_attribute("#answer", "class") == "ok", text
        return text

    async def chips(self, spot: str, amount: str | None = None) -> None:
        await self.bench.select_option("#chip-seat", "1")
        await self.bench.select_option("#chip-spot", spot)
        await self.bench.fill("#chip-amount", amount or "")

    async def console_action(self, action: str, words: str) -> None:
        await self.console.click(f'#actions [data-action="{action}"]')
        if action == "issue_chips":
            await self.console.select_option("#ask-seat", "1")
            await self.console.click("#ask-ok")
        try:
            await banner_text(self.console, "good", words)
        except Exception as exc:
            banner = await self.console.inner_text("#banner")
            raise AssertionError(f"{action}: the console says {banner!r};"
                                 f" t01: {await self.status()}") from exc

    async def starting_stack(self) -> None:
        await self.chips("ante", "R2,000")
        await self.press("#place-tray")
        await self.until("the stack to be issued as read (D346)", lambda s: bool(
            (s.get("chips") or {}).get("held")))
        await self.console.wait_for_function(
            "() => document.querySelector('#stacks .stack-line') === null", timeout=WAIT_MS)
        await self.press("#take-all")
        await self.until("the stack picked up", lambda s: self.spots(s) == {})

    async def hand(self, number: int) -> None:
        for spot in ("ante", "odds"):
            await self.chips(spot, "R25")
            await self.press("#place-stack")
        await self.until(f"hand {number}'s wagers",
                         lambda s: self.spots(s) == {"ante": 2_500, "odds": 2_500})
        await self.console_action("no_more_bets", "no more bets")
        # hands dealt with "Deal the next card" (the bench's shuffle, seeded by the hand: the
        # first hand after the SIGKILL gets a new order, not hand 1's again, which the deck
        # check would hold as a repeated run), but hands 2 and 4 with cards chosen on the card
        # picker from a deck the person shuffled
        deck = [str(c) for c in DECK]
        random.SystemRandom().shuffle(deck)
        status = await self.status()
        while (status.get("hand") or {}).get("next_target") is not None:
            read = int(status["hand"]["cards_read"])
            dealt = set((await self.bench_state())["devices"]["shoe"]["dealt"])
            if number not in (2, 4):
                await self.press("#deal-next")
            else:
                card = next(c for c in deck if c not in dealt)
                deck.remove(card)
                await self.press(f'#card-picker [data-card="{card}"]')
            status = await self.until(f"card {read + 1}", lambda s, r=read: int(
                (s.get("hand") or {}).get("cards_read") or 0) > r)
        await self.chips("play", "R25")
        await self.press("#place-stack")
        await self.until("the play", lambda s: self.spots(s).get("play") == 2_500)
        await self.console_action("settle", "settled")
        # the payout the readers must verify (none left when every spot holds what it must)
        status = await self.until("the hand settled", lambda s: s.get("payout") is not None
                                  or s.get("hand") is None)
        for line in (status.get("payout") or {}).get("spots", []):
            spot, expected, held = str(line["spot"]), int(line["expected"]), int(line["held"])
            if expected == 0 and held:
                await self.chips(spot)
                await self.press("#take-all")
            elif expected > held:
                await self.chips(spot, format_rand(expected - held))
                await self.press("#place-tray")
            elif expected < held:
                await self.chips(spot, format_rand(held - expected))
                await self.press("#take-amount")
        await self.until("the payout verified", lambda s: s.get("payout") is None)
        # the winnings and what is left go back to the player's stack
        for spot in list(self.spots(await self.status())):
            await self.chips(spot)
            await self.press("#take-all")
        if number < HANDS:
            await self.until(f"hand {number} done", lambda s: (s.get("seats") or {}).get(
                "1", {}).get("hands_played") == number and self.spots(s) == {})

    async def kill_and_restart(self) -> None:
        """SIGKILL t01 and the central service between hands; the venue starts them again."""
        for needle in ("rehearsal/t01/table.toml", "leaderboard serve"):
            os.kill(_pid_of(needle, self.work), signal.SIGKILL)
        for name in ("t01", "central"):
            await asyncio.to_thread(self.venue.until, rf"^venue: {name} restarted", 120)
            self.restarts.append(name)
        await self.until("t01 back", lambda s: bool((s.get("mqtt") or {}).get("connected")))
        await self.open_pages()  # the pages of the restarted daemon; the dealer signs in again

    async def acknowledge(self) -> None:
        """The participant presses Acknowledge and taps the rewards card on the bench."""
        await self.until("the score", lambda s: self.entry in (
            s.get("unacknowledged_scores") or []))
        await self.player.goto(f"{self.console_url}/player")
        await self.player.wait_for_selector(f'#scores [data-entry="{self.entry}"]',
                                            timeout=WAIT_MS)
        await self.player.click(f'[data-ack="{self.entry}"]')
        await self.player.click("#ack-ok")  # "tap your rewards card": the screen waits
        await self.player.wait_for_function(
            "() => document.getElementById('ack').dataset.waiting === '1'", timeout=WAIT_MS)
        await self.bench.fill("#tap-number", CARD)
        await self.press("#tap")
        await banner_text(self.player, "good", "score acknowledged")
        await self.until("the score acknowledged", lambda s: self.entry not in (
            s.get("unacknowledged_scores") or []))
        database = self.work / "rehearsal/leaderboard.sqlite3"
        deadline = time.monotonic() + 60
        while not (rows := _rows(database, "SELECT score_cents FROM scores WHERE ack_method"
                                 " = 'card'")):
            assert time.monotonic() < deadline, "the acknowledgement never reached the centre"
            await asyncio.sleep(0.5)
        self.score = int(str(rows[0][0]))


def test_the_quick_path_seats_a_patron_to_play(technician: tuple[Path, dict[str, str]]) -> None:
    """The doc's three-command path: its venue command, verbatim, seats one made-up patron at
    t01 seat 1 with a rewards card the readers produce; the table holds the entry (its code)
    with its starting stack; Ctrl-C stops it with exit 0."""
    work, env = technician
    venue = Background(doc_blocks()["quick"][0], work, env)
    try:
        found = venue.until(r"^  t01 seat 1: (\S+) (.+), rewards card (\d{8,19}) \(entry"
                            r" (E-[0-9a-f]+)\)$", READY_S)
        venue.until(r"^venue ready", READY_S)
        deadline = time.monotonic() + 60
        while True:
            status = subprocess.run(
                [".venv/bin/showdown", "table", "status", "--config", "rehearsal/t01/table.toml"],
                cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False)
            if f"seat 1: {found.group(1)} chips R2,000.00" in status.stdout:
                break
            assert time.monotonic() < deadline, status.stdout + status.stderr
            time.sleep(0.5)
        venue.process.send_signal(signal.SIGINT)
        assert venue.process.wait(timeout=120) == 0
    finally:
        if venue.process.poll() is None:
            venue.process.kill()


def test_a_table_with_a_real_device_runs_beside_the_venue(
        technician: tuple[Path, dict[str, str]]) -> None:
    """The doc's "real device" commands, verbatim, with `showdown simulate shoe` on a
    pseudo-terminal standing in for the shoe (as the doc says): the venue leaves t02 to the
    technician; t02 runs from its copied config with kind = "hardware" (the real shoe driver
    on the pty), connects through the venue's TLS broker with its own account, reads the
    shoe, and takes the roster a signed-in supervisor sends it."""
    work, env = technician
    blocks = doc_blocks()
    own = blocks["own"]
    venue = Background(own[0], work, env)
    table: Background | None = None
    shoe = None
    try:
        venue.until(r"^venue ready", READY_S)
        assert venue.until(r"^t02: +not started \(--own-table\)")
        subprocess.run(["bash", "-e", "-c", own[1]], cwd=work, env=env, check=True, timeout=60)
        shoe = subprocess.Popen([".venv/bin/showdown", "simulate", "shoe", "--link",
                                 "rehearsal/shoe"], cwd=work, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (work / "rehearsal/shoe").exists():
            assert time.monotonic() < deadline and shoe.poll() is None, "no simulated shoe"
            time.sleep(0.2)
        hardware = work / "rehearsal/t02/hardware.toml"
        text = hardware.read_text()
        assert '[shoe]\nkind = "sim"\n' in text
        hardware.write_text(text.replace('[shoe]\nkind = "sim"\n', '[shoe]\nkind = "hardware"\n'
                                         'driver = "showdown-shoe"\nurl = "../shoe"\n'
                                         'baudrate = 115200\n'))
        table = Background(own[2], work, env)

        def status() -> dict[str, Any]:
            done = subprocess.run([".venv/bin/showdown", "table", "status", "--json", "--config",
                                   "rehearsal/t02/hardware.toml"], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=60, check=False)
            return dict(json.loads(done.stdout)) if done.returncode == 0 else {}

        deadline = time.monotonic() + 120
        while (found := status()).get("roster_version") is None or found.get("device_faults"):
            if found and found.get("roster_version") is None and not found.get("device_faults"):
                # the table runs on its real shoe: a supervisor sends it the roster
                login = subprocess.run(["bash", "-e", "-c", blocks["desk"][0]], cwd=work,
                                       env=env, capture_output=True, text=True, timeout=60,
                                       check=False)
                assert login.returncode == 0, login.stdout + login.stderr
                sent = subprocess.run(["bash", "-e", "-c", own[3]], cwd=work, env=env,
                                      capture_output=True, text=True, timeout=60, check=False)
                assert sent.returncode == 0, sent.stdout + sent.stderr
            assert time.monotonic() < deadline, (found, table.lines[-20:])
            time.sleep(1)
        assert found["table"] == "t02" and found["device_faults"] in ({}, [])
        table.process.send_signal(signal.SIGTERM)
        assert table.process.wait(timeout=60) == 0
        venue.process.send_signal(signal.SIGINT)
        assert venue.process.wait(timeout=120) == 0
    finally:
        for process in (table.process if table else None, venue.process,
                        shoe):
            if process is not None and process.poll() is None:
                process.kill()
