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

import pytest

from tests.controller.console.test_console_browser import png_size

REPO = Path(__file__).resolve().parents[3]
SCREENS = REPO / "build" / "screens" / "console"
DEALER_SIZES = [(1024, 600), (1280, 800), (1920, 1080)]
PLAYER_SIZES = [(800, 480), (1024, 600), (1280, 800)]
# `make test` walks the smallest screen of each kind (the hardest to fit); `make test-soak`
# walks every size (a whole walk per size costs 10-30 s of browser time).
QUICK_DEALER = (1024, 600)
QUICK_PLAYER = (800, 480)
MIN_TAP_PX = 48
MIN_TEXT_PX = 16

# The function itself, after its leading comment.
_FITS_JS = (Path(__file__).parent / "fits.js").read_text(encoding="utf-8").split("*/", 1)[1].strip()


def size_params(sizes: list[tuple[int, int]], quick: tuple[int, int]) -> list[Any]:
    """``sizes`` as test parameters named "WxH": ``quick`` in `make test`, the rest soak."""
    return [pytest.param(size, id=f"{size[0]}x{size[1]}",
                         marks=() if size == quick else (pytest.mark.soak,))
            for size in sizes]


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
