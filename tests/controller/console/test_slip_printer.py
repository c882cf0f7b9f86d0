"""The score slip printed on the table's receipt printer through the console (issue 32 point 6),
on a real daemon whose ``[printer] kind = "sim"`` is the real ESC/POS driver on a simulated
network printer: a dealer's Print press over the console's HTTP prints the slip (the decoded
bytes carry the player's name, the venue's time, the code and the QR payload of the HTML
slip) and is journaled naming the dealer and the entry; with ``print_on_acknowledge`` the slip
prints by itself when the participant acknowledges. Refused: no session, an unknown entry, a
printer offline, out of paper or switched off (each journaled as not printed, the answer
saying why), and a table with no printer (nothing journaled).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cli.errors import EXIT_REFUSED
from cli.main import main
from controller.console.app import COOKIE
from controller.console.views import ConsoleViews
from controller.slip_layout import qr_payload
from game.staff import hash_secret
from tests.controller.console.support import (
    DEALER,
    PLAYER_PIN,
    SALT,
    ConsoleTable,
    console_table,
    roster_body,
    unchunk,
)
from tests.controller.console.test_console_browser import (
    SHOTS,
    WAIT_MS,
    banner_text,
    browser_page,
    shot,
    sign_in_on_page,
)
from tests.controller.escpos_decoder import decode_escpos

PRINTER = 'kind = "sim"\ncapture = "slips.bin"\ntimeout = 1\nprint_on_acknowledge = true'


async def http(table: ConsoleTable, method: str, path: str, body: Mapping[str, Any] | None = None,
               *, cookie: str | None = None, raw: bool = False) -> Any:
    """One request to the daemon's console on its port: status, headers, JSON body (``raw``:
    the body's text alone)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", table.port)
    data = b"" if body is None else json.dumps(body).encode()
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{table.port}",
            "Connection: close", f"Content-Length: {len(data)}"]
    if body is not None:
        head.append("Content-Type: application/json")
    if cookie:
        head.append(f"Cookie: {COOKIE}={cookie}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    top, _, payload = answer.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        payload = unchunk(payload)
    if raw:
        return payload.decode("utf-8")
    return int(lines[0].split()[1]), headers, json.loads(payload)



async def sign_in(table: ConsoleTable, person: Mapping[str, str]) -> str:
    """The session cookie of a PIN sign-in over HTTP."""
    status, headers, answer = await http(table, "POST", "/api/sign-in",
                                         {"staff_id": person["staff_id"], "pin": person["pin"]})
    assert status == 200 and answer["ok"], answer
    return str(headers["set-cookie"].split(";", 1)[0].split("=", 1)[1])


async def scores_recorded(table: ConsoleTable) -> list[str]:
    """Two entries seated (code and name sent by the desk), their hands played: the ids."""
    await table.desk("staff_roster", **{k: v for k, v in roster_body().items()
                                        if k not in ("command", "signer")})
    await table.desk("open_heat", stage="qualifying", heat_id="H1")
    entries = []
    for seat in (1, 2):  # the code and the name as the desk sends them (D331, D332)
        entry = f"E-H1-{seat}"
        await table.desk("seat", entry_id=entry, seat=seat, entry_code=f"K7-4{seat}F",
                         name=f"Zoë M{seat}.", pin_hash=hash_secret(PLAYER_PIN[seat], SALT))
        entries.append(entry)
    await table.until("seated", lambda s: len(s.get("seats", {})) == 2)
    for seat, entry in zip((1, 2), entries, strict=True):  # the stacks issued (D346)
        await table.issue_stack(seat, entry)
    dealer = await table.sign_in(DEALER)
    for _ in range(2):
        await table.play_hand(dealer)
    await table.until("the scores", lambda s: len(s.get("unacknowledged_scores", [])) == 2)
    return entries


def slip_records(table: ConsoleTable) -> list[dict[str, Any]]:
    """The journal's ``slip`` records."""
    assert table.daemon.journal is not None
    return [dict(r.payload) for r in table.daemon.journal.records() if r.kind == "slip"]


async def test_a_dealer_prints_a_slip_and_an_acknowledgement_prints_its_own(
        tmp_path: Path) -> None:
    async with console_table(tmp_path, printer=PRINTER) as table:
        sim = table.devices.printer_sim
        assert sim is not None
        entries = await scores_recorded(table)
        first, second = entries
        # No session: refused before anything reaches the printer.
        status, _, answer = await http(table, "POST", "/api/action",
                                       {"action": "print_slip", "entry_id": second})
        assert status == 401 and answer["ok"] is False
        cookie = await sign_in(table, DEALER)
        # An entry with no score here, and no entry at all: refused naming the field.
        for entry_id, words in (("E-NOBODY", "entry_id: entry E-NOBODY has no score recorded"
                                 " at this table"),
                                (None, "entry_id: name the entry whose slip to print")):
            status, _, answer = await http(table, "POST", "/api/action",
                                           {"action": "print_slip", "entry_id": entry_id},
                                           cookie=cookie)
            assert (status, answer) == (200, {"ok": False, "error": words})
        assert sim.jobs == [] and slip_records(table) == []

        # The printer offers the scores to print.
        status, _, offered = await http(table, "GET", "/api/slips")
        assert offered["printer"]["kind"] == "sim" and offered["printer"]["auto"] is True
        assert {(s["entry_code"], s["name"], s["acknowledged"]) for s in offered["slips"]} == {
            ("K7-41F", "Zoë M1.", False), ("K7-42F", "Zoë M2.", False)}

        # The dealer presses Print: the slip prints and the record names the dealer.
        status, _, answer = await http(table, "POST", "/api/action",
                                       {"action": "print_slip", "entry_id": second},
                                       cookie=cookie)
        assert answer == {"ok": True, "detail": {"printed": True, "entry_id": second,
                                                 "message": "slip printed for K7-42F"}}
        slip = await ConsoleViews(table.daemon).slip(second)
        assert slip is not None
        receipt = decode_escpos(sim.wait_for_jobs(1)[0])
        lines = [line.rstrip() for line in receipt.lines]
        assert "Entry         K7-42F" in lines and "Player        Zoë M2." in lines
        time_line = next(line for line in lines if line.startswith("Time "))
        assert time_line.endswith(" SAST")  # the venue's zone (Africa/Johannesburg)
        assert slip.code_grouped in receipt.bold_lines
        assert receipt.qr == [qr_payload(slip)]
        assert (tmp_path / "slips.bin").read_bytes() == sim.jobs[0]
        # The HTML slip shows the same payload in its QR code.
        html = await http(table, "GET", f"/slip/{second}", raw=True)
        assert f'data-payload="{qr_payload(slip)}"' in html
        assert [(r["entry_id"], r["by"], r["printed"], r["seq"], r["code"])
                for r in slip_records(table)] == [(second, DEALER["staff_id"], True, slip.seq,
                                                   slip.code)]

        # The participant acknowledges: with print_on_acknowledge the slip prints by itself.
        status, _, answer = await http(table, "POST", "/api/action",
                                       {"action": "acknowledge", "entry_id": first,
                                        "pin": PLAYER_PIN[1]})
        assert answer["ok"] is True
        assert answer["detail"]["slip"]["ok"] is True
        jobs = sim.wait_for_jobs(2)
        assert "Player        Zoë M1." in [line.rstrip() for line in
                                            decode_escpos(jobs[1]).lines]
        assert "pin at" in decode_escpos(jobs[1]).lines[
            [line.startswith("Acknowledged") for line in decode_escpos(jobs[1]).lines]
            .index(True)]
        assert slip_records(table)[-1]["by"] is None  # printed by the table, as configured

        # Offline (cover open), out of paper, switched off: not printed, the answer says why,
        # and the attempt is journaled as not printed.
        faults = (("online", False, "is offline (its cover is open, or it is in error)"),
                  ("paper", "out", "is out of paper"),
                  ("off", True, "is offline or not connected"))
        for name, value, words in faults:
            if name == "off":
                sim.close()
            else:
                setattr(sim, name, value)
            status, _, answer = await http(table, "POST", "/api/action",
                                           {"action": "print_slip", "entry_id": second},
                                           cookie=cookie)
            assert answer["ok"] is False
            assert answer["error"].startswith("the slip for K7-42F was NOT printed: the"
                                              " printer at 127.0.0.1:")
            assert words in answer["error"]
            record = slip_records(table)[-1]
            assert (record["printed"], record["by"]) == (False, DEALER["staff_id"])
            assert words in record["error"]
            if name != "off":
                setattr(sim, name, True if name == "online" else "ok")
        assert len(sim.jobs) == 2  # nothing more came out
        status, _, offered = await http(table, "GET", "/api/slips")
        last = {s["entry_id"]: s["last_print"] for s in offered["slips"]}
        assert {s["entry_id"]: s["acknowledged"] for s in offered["slips"]} == {
            first: True, second: False}
        assert last[second]["printed"] is False and "offline" in last[second]["error"]
        assert last[first]["printed"] is True and last[first]["by"] is None
        # The table stays in play: no fault, no alert from the printer.
        assert table.status()["state"] == "running" and table.daemon.faults == []


async def test_a_table_without_a_printer_refuses_print_and_journals_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with console_table(tmp_path) as table:
        entries = await table.open_heat((1,))
        # The technicians' console too (`showdown table dealer print_slip --entry`).
        pin = tmp_path / "pin"
        pin.write_text(DEALER["pin"] + "\n")
        refused = await asyncio.to_thread(main, [
            "table", "dealer", "print_slip", "--socket", str(table.daemon.config.api.socket),
            "--staff-id", DEALER["staff_id"], "--pin-file", str(pin), "--entry", entries[0]])
        assert refused == EXIT_REFUSED
        assert "this table has no receipt printer" in capsys.readouterr().err
        cookie = await sign_in(table, DEALER)
        status, _, answer = await http(table, "POST", "/api/action",
                                       {"action": "print_slip", "entry_id": entries[0]},
                                       cookie=cookie)
        assert (status, answer["ok"]) == (200, False)
        assert answer["error"] == (
            'this table has no receipt printer ([printer] kind = "none"): open'
            f" /slip/{entries[0]} and print it from the browser")
        assert slip_records(table) == []
        status, _, offered = await http(table, "GET", "/api/slips")
        assert offered == {"printer": {"kind": "none", "auto": False}, "slips": []}


@pytest.mark.soak  # a long walk: make test-soak (D387)
async def test_the_dealers_print_button_tells_the_truth_in_the_browser(tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path, printer=PRINTER) as table, \
            browser_page(problems) as page:
        sim = table.devices.printer_sim
        assert sim is not None
        _, second = await scores_recorded(table)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, DEALER)
        button = f'#print-slips [data-print-slip="{second}"]'
        await page.wait_for_selector(button, timeout=WAIT_MS)
        assert "Receipt printer: sim (simulated)" in await page.inner_text("#printer-note")
        box = await page.locator(button).bounding_box()
        assert box is not None and box["height"] >= 48  # a touch target
        # Printed: a green banner, and the slip came out.
        await page.click(button)
        assert "Slip printed for K7-42F" in await banner_text(page, "good", "Slip printed")
        assert len(sim.wait_for_jobs(1)) == 1
        await page.wait_for_function(
            "e => document.querySelector(`[data-entry='${e}'] .slip-printed`)"
            "?.textContent.startsWith('printed ')", arg=second, timeout=WAIT_MS)
        # Out of paper: a red banner with the table's reason, never a green one.
        sim.paper = "out"
        await page.click(button)
        text = await banner_text(page, "bad", "NOT printed")
        assert "the slip for K7-42F was NOT printed" in text and "out of paper" in text
        await shot(page, "slip-not-printed")
        panel = await page.locator("#print-slips").screenshot(
            path=str(SHOTS / "console-slip-panel.png"))
        assert panel[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(sim.jobs) == 1
    assert problems == []
