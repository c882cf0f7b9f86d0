"""What the console's screen tests share: the screen sizes tables have, a check from bounding
boxes that what a step needs is on screen and not clipped, and screenshots per size and step.

`fits(page, selectors)` runs in the page and returns the problems found (an empty list when
all is well): for every element each selector matches (a selector matching nothing is a
problem) it must be rendered, lie wholly inside the viewport, not be cut by a scrolling or
clipping ancestor, not overflow its own box (scrollWidth <= clientWidth), and every text in it
must be at least 16 px; every button, key and link in it must be at least 48 x 48 px. The
page must not scroll sideways, and an open banner must not overlap the phase.

Screenshots go to build/screens/console/<width>x<height>/<step>.png (build/ is not committed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controller.console.test_console_browser import png_size

REPO = Path(__file__).resolve().parents[3]
SCREENS = REPO / "build" / "screens" / "console"
DEALER_SIZES = [(1024, 600), (1280, 800), (1920, 1080)]
PLAYER_SIZES = [(800, 480), (1024, 600), (1280, 800)]
MIN_TAP_PX = 48
MIN_TEXT_PX = 16

_FITS_JS = """
([selectors, minTap, minText]) => {
  const problems = [];
  const vw = window.innerWidth, vh = window.innerHeight;
  const name = (el) => el.id ? "#" + el.id : el.tagName.toLowerCase() +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\\s+/g, ".") : "") +
    (el.dataset && el.dataset.action ? "[" + el.dataset.action + "]" : "") +
    (el.dataset && el.dataset.key ? "[key " + el.dataset.key + "]" : "");
  const shown = (el) => { const st = getComputedStyle(el);
    return st.display !== "none" && st.visibility !== "hidden" && el.getClientRects().length > 0; };
  if (document.documentElement.scrollWidth > vw + 1)
    problems.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + vw);
  for (const sel of selectors) {
    const found = Array.from(document.querySelectorAll(sel)).filter(shown);
    if (!found.length) { problems.push(sel + ": nothing shown"); continue; }
    for (const el of found) {
      const r = el.getBoundingClientRect();
      const what = sel + " " + name(el);
      if (r.width < 1 || r.height < 1) { problems.push(what + ": empty box"); continue; }
      if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5)
        problems.push(what + ": outside the " + vw + "x" + vh + " viewport at " +
          [r.left, r.top, r.right, r.bottom].map(Math.round).join(","));
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== "inline")
        problems.push(what + ": clipped, " + el.scrollWidth + " wide in " + el.clientWidth);
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const st = getComputedStyle(a);
        if (/(hidden|auto|scroll|clip)/.test(st.overflow + st.overflowX + st.overflowY)) {
          const ar = a.getBoundingClientRect();
          if (r.top < ar.top - 0.5 || r.bottom > ar.bottom + 0.5 || r.left < ar.left - 0.5 || r.right > ar.right + 0.5)
            problems.push(what + ": cut by " + name(a));
        }
      }
      const taps = el.matches("button, a, .key, input, select") ? [el] : Array.from(el.querySelectorAll("button, a, .key"));
      for (const t of taps.filter(shown)) {
        const tr = t.getBoundingClientRect();
        if (tr.width < minTap - 0.5 || tr.height < minTap - 0.5)
          problems.push(what + " " + name(t) + ": touch target " + Math.round(tr.width) + "x" + Math.round(tr.height));
      }
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.currentNode; n; n = walker.nextNode()) {
        if (n.nodeType !== 3 || !n.textContent.trim() || !n.parentElement || !shown(n.parentElement)) continue;
        const size = parseFloat(getComputedStyle(n.parentElement).fontSize);
        if (size < minText - 0.01) problems.push(what + ": text " + JSON.stringify(n.textContent.trim().slice(0, 20)) + " at " + size + " px");
      }
    }
  }
  const banner = document.getElementById("banner"), phase = document.getElementById("phase");
  if (banner && phase && !banner.classList.contains("hidden")) {
    const b = banner.getBoundingClientRect(), p = phase.getBoundingClientRect();
    if (b.left < p.right && p.left < b.right && b.top < p.bottom && p.top < b.bottom)
      problems.push("the banner covers the phase");
  }
  return Array.from(new Set(problems));
}
"""


async def fits(page: Any, selectors: list[str]) -> list[str]:
    """The problems with what ``selectors`` match on the page now (see the module docstring)."""
    problems = await page.evaluate(_FITS_JS, [selectors, MIN_TAP_PX, MIN_TEXT_PX])
    return [str(p) for p in problems]


async def top_of(page: Any, selector: str) -> float:
    """The y of the first element ``selector`` matches, in px from the viewport's top."""
    return float(await page.evaluate(
        "s => document.querySelector(s).getBoundingClientRect().top", selector))


async def screen_shot(page: Any, size: tuple[int, int], step: str) -> Path:
    """Save the viewport at ``size`` for ``step``; checks it is a PNG of that size."""
    folder = SCREENS / f"{size[0]}x{size[1]}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{step}.png"
    await page.screenshot(path=str(path))
    data = path.read_bytes()
    assert png_size(data) == size
    assert len(data) > 10_000, f"{path} is almost empty"
    return path
