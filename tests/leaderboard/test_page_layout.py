"""The page at every screen it is shown on, in a real browser (Debian's chromium, Playwright).

One service and one browser for the module's test; the page is opened at 1920x1080,
1280x720, a portrait 1080x1920 TV and a 390x844 phone, and in kiosk mode. At each size:
every row shown is inside the screen (a room screen) or reachable by scrolling (a phone) and
is what the browser finds at its centre (nothing covers or clips it); the footer and the
board's note overlap no row; the pools are inside the screen and not cut; a known patron who
consented is found by name with their score; no entry id (16 hex digits, or the seeded
short ones) is anywhere in the visible text. A room screen that cannot show all 20 rows
shows them page by page and every row comes on some page. Screenshots go to the test's tmp
folder; with SHOWDOWN_PAGE_SCREENS=DIR they are copied there (docs/page-screens/).

Needs chromium and the playwright package (see test_page_browser.py; skips without them).
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import UTC, date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from leaderboard.display_names import entry_code
from leaderboard.models import Patron
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import FIELD, add_entry, add_score, finish, local, start
from tests.leaderboard.test_page_browser import CHROMIUM, CHROMIUM_ARGS, _browser_or_skip, png_size

SIZES = [(1920, 1080), (1280, 720), (1080, 1920), (390, 844)]
PHONE = (390, 844)
HEX_ID = re.compile(r"[0-9a-f]{16}", re.IGNORECASE)
# Six more patrons with 16-hex-digit entries: 21 counted scores, the board shows 20.
MORE = [(f"P-M{n}", f"Extra Player{n}", f"E-{n:02d}c0ffee{n:02d}a1b2c3", 200_000 - n * 5_000)
        for n in range(1, 7)]
KNOWN_ENTRY = "E-1a07c2"  # Thandiwe Mokoena, first on the board


def seed(engine: Engine) -> None:
    """Consent for Thandiwe Mokoena (shown as "Thandiwe M."); six more hex-id entries."""
    with Session(engine) as s:
        patron = s.get(Patron, "P-01")
        assert patron is not None
        patron.name_consent = True
        for n, (patron_id, name, entry_id, _) in enumerate(MORE):
            s.add(Patron(patron_id=patron_id, name=name, id_kind="id_document",
                         id_number=f"91010150{n:05d}", birth_date=date(1990, 1, 1),
                         created_at=local(3, 13).astimezone(UTC)))
            add_entry(s, entry_id, patron_id, date(2026, 7, 6))
        s.flush()
        for _, _, entry_id, cents in MORE:
            add_score(s, entry_id, cents, local(6, 21, 40))
        s.commit()


_LAYOUT = """() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right,
            width: r.width, height: r.height}; };
  const rows = [...document.querySelectorAll('#board-rows tr')];
  const shown = rows.filter(r => !r.hidden);
  const pools = ['#final-pool', '#top-pool'].map(s => document.querySelector(s));
  const sections = [...document.querySelectorAll('main section')].filter(s => !s.hidden);
  return {
    rows: rows.length, shown: shown.map(box), codes: shown.map(r => r.dataset.code),
    footer: box(document.querySelector('footer')),
    note: box(document.querySelector('#board-foot')),
    header: box(document.querySelector('header')),
    pools: pools.map(box),
    poolsCut: pools.map(p => p.scrollWidth > p.clientWidth + 1),
    poolFont: parseFloat(getComputedStyle(pools[0]).fontSize),
    nameFont: parseFloat(getComputedStyle(document.querySelector('td.entry .who')).fontSize),
    scoreFont: parseFloat(getComputedStyle(document.querySelector('td.score')).fontSize),
    codeFont: parseFloat(getComputedStyle(document.querySelector('td.entry .code')).fontSize),
    sections: sections.map(box),
    scrollHeight: document.scrollingElement.scrollHeight,
    pages: Number(document.querySelector('#board-page').dataset.pages || '1'),
    text: document.body.innerText,
  };
}"""

# The element at the centre of an element's box (after scrolling it into view) is it or
# inside it: it is painted there, not clipped away nor covered by another element.
_HIT = """(selector) => {
  const all = [...document.querySelectorAll(selector)].filter(e => e.offsetParent !== null);
  return all.map(e => { e.scrollIntoView({block: 'center'});
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return hit !== null && (hit === e || e.contains(hit)); });
}"""


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    """True when two boxes share more than a pixel of area."""
    return (min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1
            and min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1)


def check_layout(layout: dict[str, Any], width: int, height: int, hits: list[bool]) -> None:
    """What every size must show (see the module docstring)."""
    where = f"{width}x{height}"
    assert layout["rows"] == 20, where
    assert hits and all(hits), f"{where}: a row is covered or clipped: {hits}"
    for row in layout["shown"]:
        assert not overlaps(row, layout["footer"]), f"{where}: a row under the footer"
        assert not overlaps(row, layout["note"]), f"{where}: a row under the note"
        assert row["left"] >= 0 and row["right"] <= width + 0.5, f"{where}: a row too wide"
    assert not overlaps(layout["note"], layout["footer"]), f"{where}: the note runs into it"
    for section in layout["sections"]:
        assert not overlaps(section, layout["footer"]), f"{where}: a panel under the footer"
    assert layout["poolsCut"] == [False, False], f"{where}: a pool amount is cut"
    assert layout["poolFont"] >= 24, f"{where}: the pools are too small to read"
    # Patrons find themselves: the name is the strongest text, the score next, the code small.
    assert layout["nameFont"] > layout["scoreFont"] > layout["codeFont"], where
    assert layout["nameFont"] >= 18, where
    visible = layout["text"]
    assert HEX_ID.search(visible) is None, f"{where}: a 16-hex-digit id is on the screen"
    for entry, *_ in FIELD:
        assert entry not in visible, f"{where}: entry id {entry} is on the screen"
    assert "Thandiwe M." in visible and "Mokoena" not in visible, where
    if (width, height) == PHONE:  # all 20 rows, the page scrolls to them
        assert len(layout["shown"]) == 20 and layout["pages"] == 1
        assert layout["scrollHeight"] > height
    else:  # the room screen is the screen: nothing below it, every shown row inside it
        assert layout["scrollHeight"] <= height + 1, f"{where}: the page scrolls"
        for box in [*layout["shown"], layout["footer"], *layout["pools"], *layout["sections"]]:
            assert box["top"] >= -0.5 and box["bottom"] <= height + 0.5, f"{where}: {box}"


@pytest.mark.soak  # the page in a real browser at every screen size: the soak tier
@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_page_fits_every_screen_and_names_patrons_shortly(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    async_playwright = _browser_or_skip()
    run = await start(tmp_path, mqtt_broker, unique_topic, names="first_name_initial",
                      page="page_seconds = 3", seed=seed)
    shots = tmp_path / "screens"
    shots.mkdir()
    problems: list[str] = []
    paged: dict[str, int] = {}
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for width, height in SIZES:
                    for kiosk in (False, True) if (width, height) != PHONE else (False,):
                        page = await browser.new_page(viewport={"width": width,
                                                                "height": height})
                        page.on("console", lambda m: problems.append(f"console: {m.text}")
                                if m.type in ("error", "warning") else None)
                        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
                        await page.goto(f"http://127.0.0.1:{run.port}/"
                                        + ("?kiosk=1" if kiosk else ""))
                        await page.wait_for_selector("body[data-version]", timeout=30_000)
                        name = f"{width}x{height}" + ("-kiosk" if kiosk else "")
                        await page.screenshot(path=str(shots / f"{name}.png"))
                        layout = await page.evaluate(_LAYOUT)
                        hits = await page.evaluate(_HIT, "#board-rows tr")
                        check_layout(layout, width, height, hits)
                        names = await page.evaluate(_HIT, "td.entry .who")
                        assert all(names), name
                        known = page.locator(f'tr[data-entry="{KNOWN_ENTRY}"]')
                        assert (await known.locator(".who").inner_text()) == "Thandiwe M."
                        assert (await known.locator(".code").inner_text()) == entry_code(
                            KNOWN_ENTRY)
                        assert (await known.locator(".score").inner_text()) == "R5,125.00"
                        if kiosk:
                            cursor = await page.evaluate(
                                "getComputedStyle(document.body).cursor")
                            assert cursor == "none"
                            assert await page.locator("a, button, input, select").count() == 0
                        paged[name] = layout["pages"]
                        if layout["pages"] > 1:  # every row comes on some page, in turn
                            seen, turns = set(layout["codes"]), 0
                            while len(seen) < 20 and turns <= layout["pages"]:
                                before = await page.inner_text("#board-page")
                                await page.wait_for_function(
                                    "t => document.querySelector('#board-page').innerText"
                                    " !== t", arg=before, timeout=15_000)
                                turn = await page.evaluate(_LAYOUT)
                                check_layout(turn, width, height,
                                             await page.evaluate(_HIT, "#board-rows tr"))
                                seen |= set(turn["codes"])
                                turns += 1
                            assert len(seen) == 20, f"{name}: rows never shown"
                        await page.close()
            finally:
                await browser.close()
    finally:
        assert await finish(run) == 0
    for width, height in SIZES:
        assert png_size((shots / f"{width}x{height}.png").read_bytes()) == (width, height)
    assert paged["1920x1080"] == 1  # the full board fits a landscape TV
    assert problems == []
    target = os.environ.get("SHOWDOWN_PAGE_SCREENS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for shot in shots.iterdir():
            shutil.copy(shot, Path(target) / shot.name)
    with capsys.disabled():
        print(f"\npage screenshots: {shots} (pages of rows: {paged})")
