"""The page shows everything of a whole tournament, panel by panel, at the four screen sizes.

The service runs on SQLite and on PostgreSQL with a tournament at the Final's draw (14
qualifying scores, two semi-final heats of 6 with their scores, the Final's 6 places
allocated, 7 prizes awarded). The page lists the Final's places without seats, after the
semi-finals; the test then draws the seats, plays the Final and awards its 6 prizes in the
database and tells the service (as a desk request does), and the open page shows the Final's
line-up first with the drawn seats. One browser then opens the page at 1920x1080, 1280x720,
a portrait 1080x1920 TV and a 390x844 phone (the sizes of test_page_layout.py). At each
size, on every page the screen turns to:

- no two panels' boxes intersect; no panel is over the header or the footer; on a room
  screen every panel is inside the screen; every item a panel shows is inside that panel;
- no list says "and N more": the prize and line-up lists turn pages instead, each saying
  "Page 2 of 3", and every prize awarded and every line-up seat (counted against the rows
  this test put in the database) comes on some page, the Final's seats included.

axe-core finds no serious or critical accessibility violation at 1920x1080 (the second
test, on SQLite; its browser context alone bypasses the page's Content-Security-Policy to
load axe, as tests/controller/console/test_accessibility_browser.py does).

Needs chromium and the playwright package (see test_page_browser.py; skips without them).
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

import leaderboard.app
from leaderboard.desk.ids import FINAL_HEAT, semi_heat_id
from leaderboard.models import Entry, Patron, PrizeAward, Score
from leaderboard.web import create_app
from tests import services
from tests.fixtures.services import Database, MqttBroker
from tests.leaderboard.support import FIELD, finish, local, start
from tests.leaderboard.test_page_browser import CHROMIUM, CHROMIUM_ARGS, _browser_or_skip
from tests.leaderboard.test_page_layout import SIZES, overlaps
from tests.leaderboard.test_page_light import serve_on

PHONE = (390, 844)
AXE = Path(__file__).resolve().parents[2] / "tests" / "browser" / "node_modules" / \
    "axe-core" / "axe.min.js"
# The semi-finalists: the first 12 qualifying entries; the finalists: the best 6 of them.
SEMI = [(f"S-{n:02d}5e3a1f", FIELD[n][1], semi_heat_id(1 + n // 6), f"t0{1 + n // 6}",
         1 + n % 6, 300_000 + 7_500 * n) for n in range(12)]
FINAL = [(f"F-{n:02d}f1a2b3", patron, n + 1, cents + 50_000)
         for n, (_, patron, _, _, _, cents) in enumerate(
             sorted(SEMI, key=lambda s: -s[5])[:6])]


@pytest.fixture
def on_database(database_url: Database, monkeypatch: pytest.MonkeyPatch) -> Database:
    """`support.start` runs the service on the test's database (SQLite or PostgreSQL)."""
    return serve_on(database_url, monkeypatch)


def seed_final_allocated(engine: Engine) -> None:
    """The semi-finals played, the Final's places allocated (no seats yet), the weekly and
    Top Score prizes awarded; every patron consented to their name on the page (the longest
    lines)."""
    with Session(engine) as s:
        for someone in s.scalars(select(Patron)):
            someone.name_consent = True
        for seq, (entry, patron, heat, table, seat, cents) in enumerate(SEMI, 1):
            s.add(Entry(entry_id=entry, patron_id=patron, stage="semi_final", heat_id=heat,
                        table_id=table, seat=seat, buy_in_cents=0, bought_at=BOUGHT,
                        status="registered"))
            s.add(_score(entry, table, seq=5_000 + seq, stage="semi_final", heat=heat,
                         cents=cents, hour=16))
        for entry, patron, _, _ in FINAL:
            s.add(Entry(entry_id=entry, patron_id=patron, stage="final", buy_in_cents=0,
                        bought_at=BOUGHT, status="registered"))
        s.flush()
        weekly = [FIELD[n] for n in (0, 2, 6, 9)]
        top = [FIELD[n] for n in (0, 1, 2)]
        _award(s, [("weekly", week, e, p, 100_000) for week, (e, p, *_) in enumerate(weekly, 1)]
               + [("top_score", place, e, p, 96_000 - 24_000 * place)
                  for place, (e, p, *_) in enumerate(top, 1)])
        s.commit()


def finish_the_tournament(database: Database) -> None:
    """The Final's seats drawn (each place its seat, as leaderboard.desk.seat_draw gives
    them), the Final played and its 6 prizes awarded."""
    engine = database.engine()
    with Session(engine) as s:
        for seq, (entry, _patron, seat, cents) in enumerate(FINAL, 1):
            place = s.get(Entry, entry)
            assert place is not None
            place.heat_id, place.table_id, place.seat = FINAL_HEAT, "t01", seat
            s.add(_score(entry, "t01", seq=6_000 + seq, stage="final", heat=FINAL_HEAT,
                         cents=cents, hour=17))
        _award(s, [("final", place, e, p, 200_000 - 20_000 * place)
                   for place, (e, p, _, _) in enumerate(FINAL, 1)])
        s.commit()
    engine.dispose()


BOUGHT = local(31, 20).astimezone(UTC)


def _award(s: Session, awards: list[tuple[str, int, str, str, int]]) -> None:
    """Prizes awarded on 1 August; every third one claimed an hour later."""
    awarded = local(1, 19, month=8).astimezone(UTC)
    for n, (kind, place, entry, patron, cents) in enumerate(awards):
        s.add(PrizeAward(kind=kind, place=place, entry_id=entry, patron_id=patron,
                         amount_cents=cents, awarded_at=awarded,
                         deadline=awarded + timedelta(days=15),
                         claimed_at=awarded + timedelta(hours=1) if n % 3 == 0 else None,
                         claimed_by="S-0042" if n % 3 == 0 else None))


def _score(entry: str, table: str, *, seq: int, stage: str, heat: str, cents: int,
           hour: int) -> Score:
    recorded = local(1, hour, month=8).astimezone(UTC)
    return Score(entry_id=entry, table_id=table, seq=seq, stage=stage, heat_id=heat,
                 score_cents=cents, hands=12, status="finished", recorded_at=recorded,
                 acknowledged_at=recorded + timedelta(minutes=1), ack_method="tap")


AWARDS = 4 + 3 + 6
SEATS = {f"semi_final/{e}" for e, *_ in SEMI} | {f"final/{e}" for e, *_ in FINAL}

# Every panel's box and what each shows (items hidden by paging left out), in page pixels.
_STATE = """() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right}; };
  const shown = e => e.offsetParent !== null;
  const panels = [...document.querySelectorAll('main section')].filter(shown);
  return {
    panels: panels.map(p => ({id: p.id || p.className, box: box(p),
      items: [...p.querySelectorAll('li, h3, .note, .pager, .leader, tr, .pool')]
        .filter(shown).map(box)})),
    header: box(document.querySelector('header')),
    footer: box(document.querySelector('footer')),
    awards: [...document.querySelectorAll('#awards li[data-award]')].filter(shown)
      .map(li => li.dataset.award),
    seats: [...document.querySelectorAll('#lineups li[data-seat]')].filter(shown)
      .map(li => li.dataset.seat),
    pagers: Object.fromEntries(['awards-page', 'lineups-page', 'pending-page']
      .map(id => document.getElementById(id)).filter(p => p && shown(p))
      .map(p => [p.id, {text: p.innerText, pages: Number(p.dataset.pages)}])),
    turns: Number(document.body.dataset.turns || '0'),
    text: document.body.innerText,
    scrollHeight: document.scrollingElement.scrollHeight,
  };
}"""
_TURNED = "n => Number(document.body.dataset.turns || '0') > n"


def inside(item: dict[str, float], box: dict[str, float]) -> bool:
    """True when `item` lies within `box` (half a pixel of rounding allowed)."""
    return (item["top"] >= box["top"] - 0.5 and item["bottom"] <= box["bottom"] + 0.5
            and item["left"] >= box["left"] - 0.5 and item["right"] <= box["right"] + 0.5)


def check_screen(state: dict[str, Any], width: int, height: int) -> None:
    """No panel over another, the header or the footer; each inside the screen (a room
    screen) and each item inside its panel; a paged list says which page it shows."""
    where = f"{width}x{height}"
    panels = state["panels"]
    assert len(panels) >= 6, where
    for n, panel in enumerate(panels):
        box, name = panel["box"], f"{where} {panel['id']}"
        for other in panels[n + 1:]:
            assert not overlaps(box, other["box"]), f"{name} over {other['id']}"
        assert not overlaps(box, state["footer"]), f"{name} over the footer"
        assert not overlaps(box, state["header"]), f"{name} over the header"
        assert box["bottom"] <= state["footer"]["top"] + 0.5, f"{name} below the footer"
        assert box["left"] >= -0.5 and box["right"] <= width + 0.5, f"{name} too wide"
        if (width, height) != PHONE:
            assert box["top"] >= -0.5 and box["bottom"] <= height + 0.5, f"{name} off screen"
        for item in panel["items"]:
            assert inside(item, box), f"{name}: an item outside its panel: {item} {box}"
    if (width, height) != PHONE:
        assert state["scrollHeight"] <= height + 1, f"{where}: the page scrolls"
        assert state["footer"]["bottom"] <= height + 0.5, where
    assert re.search(r"and \d+ more", state["text"]) is None, f"{where}: a list is cut"
    for pager, seen in state["pagers"].items():
        assert seen["pages"] >= 2, f"{where}: {pager} shown for one page"
        assert re.fullmatch(rf"Page [1-9]\d* of {seen['pages']}", seen["text"]), seen


async def walk_pages(page: Any, width: int, height: int) -> dict[str, Any]:
    """Every page the screen turns to until every prize and seat was shown (checking each);
    what was seen and the most pages a list had."""
    awards: set[str] = set()
    seats: set[str] = set()
    most = {"awards-page": 1, "lineups-page": 1}
    for _ in range(AWARDS + len(SEATS) + 1):  # a page shows one item at least
        state = await page.evaluate(_STATE)
        check_screen(state, width, height)
        awards |= set(state["awards"])
        seats |= set(state["seats"])
        for pager, seen in state["pagers"].items():
            most[pager] = max(most.get(pager, 1), seen["pages"])
        if len(awards) == AWARDS and seats == SEATS:
            break
        await page.wait_for_function(_TURNED, arg=state["turns"], timeout=15_000)
    return {"awards": awards, "seats": seats, "pages": most}


_FIRST = "() => document.querySelector('#lineups li[data-seat]').dataset.seat"
_LINEUP = """() => [...document.querySelectorAll('#lineups li[data-seat]')]
  .filter(li => li.offsetParent !== null)
  .map(li => [li.dataset.seat, li.querySelector('.seat').innerText])"""
_SEATED = ("() => [...document.querySelectorAll('#lineups li[data-seat]')].some(li =>"
           " li.dataset.seat.startsWith('final/') && li.querySelector('.seat').innerText"
           " !== 'Seat -')")


async def final_seats(page: Any) -> dict[str, str]:
    """The Final's places as the line-up list shows them ("Seat 3", "Seat -"), over as many
    pages as it takes to see every seat of the tournament."""
    seen: dict[str, str] = {}
    for _ in range(len(SEATS) + 1):
        seen |= dict(await page.evaluate(_LINEUP))
        if len(seen) == len(SEATS):
            break
        turns = await page.evaluate("() => Number(document.body.dataset.turns || '0')")
        await page.wait_for_function(_TURNED, arg=turns, timeout=15_000)
    return {k: v for k, v in seen.items() if k.startswith("final/")}


@pytest.mark.soak  # four screen sizes in chromium on both databases: make test-soak
@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_page_shows_a_whole_tournament_on_every_screen(  # noqa: PLR0917
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str, on_database: Database,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    async_playwright = _browser_or_skip()

    def quick_pages(*args: Any, **kwargs: Any) -> Any:  # pages turn 4 times a second
        return create_app(*args, **{**kwargs, "page_seconds": 0.25})

    monkeypatch.setattr(leaderboard.app, "create_app", quick_pages)
    run = await start(tmp_path, mqtt_broker, unique_topic, names="first_name_initial",
                      seed=seed_final_allocated)
    problems: list[str] = []
    seen: dict[str, dict[str, Any]] = {}
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                # Before the draw: the Final's places without seats, the semi-finals first.
                page = await browser.new_page(viewport={"width": 1920, "height": 1080})
                await page.goto(f"http://127.0.0.1:{run.port}/")
                await page.wait_for_selector("#lineups li[data-seat]", timeout=30_000)
                assert await final_seats(page) == dict.fromkeys(
                    (f"final/{e}" for e, *_ in FINAL), "Seat -")
                assert (await page.evaluate(_FIRST)).startswith("semi_final/")

                # The draw, the Final, its prizes: the open page follows.
                await asyncio.to_thread(finish_the_tournament, on_database)
                assert run.service.feed is not None
                run.service.feed.changed("draw")  # as a desk request does after it writes
                await page.wait_for_function(_SEATED, timeout=30_000)
                assert await final_seats(page) == {f"final/{e}": f"Seat {seat}"
                                                   for e, _, seat, _ in FINAL}
                assert (await page.evaluate(_FIRST)).startswith("final/")  # page 1: the Final
                await page.close()

                for width, height in SIZES:
                    page = await browser.new_page(viewport={"width": width, "height": height})
                    page.on("console", lambda m: problems.append(f"console: {m.text}")
                            if m.type in ("error", "warning") else None)
                    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
                    await page.goto(f"http://127.0.0.1:{run.port}/")
                    await page.wait_for_selector("body[data-version]", timeout=30_000)
                    where = f"{width}x{height}"
                    await page.screenshot(path=str(tmp_path / f"{where}.png"))
                    seen[where] = await walk_pages(page, width, height)
                    await page.close()
                    assert len(seen[where]["awards"]) == AWARDS, (where, seen[where])
                    assert seen[where]["seats"] == SEATS, (where, seen[where])
            finally:
                await browser.close()
    finally:
        assert await finish(run) == 0
    assert problems == []
    # 1920x1080 cannot show 13 prizes and 18 seats at once: they turn pages.
    assert seen["1920x1080"]["pages"]["awards-page"] >= 2
    assert seen["1080x1920"]["pages"]["lineups-page"] >= 2
    assert seen["390x844"]["pages"] == {"awards-page": 1, "lineups-page": 1}  # it scrolls
    with capsys.disabled():
        print(f"\npages per list: { {k: v['pages'] for k, v in seen.items()} }"
              f" (screenshots: {tmp_path})")


def _axe_or_skip() -> Path:
    if AXE.is_file():
        return AXE
    reason = f"axe-core is not installed at {AXE}: npm ci --prefix tests/browser (make venv)"
    if services.services_required():
        pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
    pytest.skip(reason)


@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_page_has_no_serious_accessibility_violation(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str) -> None:
    async_playwright = _browser_or_skip()
    axe = _axe_or_skip()
    run = await start(tmp_path, mqtt_broker, unique_topic, names="first_name_initial",
                      seed=seed_final_allocated)
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context = await browser.new_context(viewport={"width": 1920, "height": 1080},
                                                    bypass_csp=True)
                page = await context.new_page()
                await page.goto(f"http://127.0.0.1:{run.port}/")
                await page.wait_for_selector("#awards li[data-award]", timeout=30_000)
                await page.add_script_tag(path=str(axe))
                found = await page.evaluate(
                    "async () => (await axe.run(document, {resultTypes: ['violations']}))"
                    ".violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
                    " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))")
            finally:
                await browser.close()
    finally:
        assert await finish(run) == 0
    serious = [f"{v['impact']} {v['id']} ({v['help']}): {', '.join(v['nodes'])}"
               for v in found if v["impact"] in ("serious", "critical")]
    assert serious == []

