"""Each message type's name is written in exactly one module of the packages: its definition.

Everything else names the definition (`HandSettled.TYPE`, `Resend.NAME`). A few names are
also ordinary words in the code (a `seat` field, the `device` that raised an alert, the
`standings` subcommand, the desk's `open_heat` action): for those the check is that no other
module uses the word *as a message type* (compared with, or passed as, a type).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wire.messages import COMMANDS, TABLE_MESSAGES, Standings

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("game", "wire", "runtime", "controller", "drivers", "simulators", "leaderboard",
            "cli", "floor", "deploy")
DEFINED_IN = {
    **{name: cls.__module__ for name, cls in TABLE_MESSAGES.items()},
    **{name: cls.__module__ for name, cls in COMMANDS.items()},
    Standings.TYPE: Standings.__module__,
}
# Names that are also plain words in the code, and where else they occur as such.
ALSO_WORDS = {"device", "seat", "alert", "standings", "resend", "unseat", "open_heat",
              "close_heat"}


def _modules() -> dict[str, str]:
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[module.removesuffix(".__init__")] = path.read_text(encoding="utf-8")
    return found


MODULES = _modules()


def _as_type(name: str) -> re.Pattern[str]:
    """The name used as a message type: compared with a type, passed as one, or defined."""
    quoted = rf"[\"']{re.escape(name)}[\"']"
    return re.compile(rf"(type|TYPE|NAME|command)\s*(==|!=|=|:[^=\n]*=)\s*{quoted}"
                      rf"|{quoted}\s*(==|!=)\s*\w*(type|command)\b"
                      rf"|\.get\([\"']type[\"']\)\s*==\s*{quoted}")


@pytest.mark.parametrize("name", sorted(DEFINED_IN))
def test_a_message_type_is_written_only_where_it_is_defined(name: str) -> None:
    home = DEFINED_IN[name]
    if name in ALSO_WORDS:
        pattern = _as_type(name)
        others = sorted(m for m, text in MODULES.items() if m != home and pattern.search(text))
    else:
        quoted = re.compile(rf"[\"']{re.escape(name)}[\"']")
        others = sorted(m for m, text in MODULES.items() if m != home and quoted.search(text))
    assert others == [], f"{name!r} is written in {others} as well as {home}"
    assert _as_type(name).search(MODULES[home]), f"{home} does not define {name!r}"


def test_the_check_sees_a_stray_literal() -> None:
    """The patterns find what they are for (so the test above can fail)."""
    assert _as_type("alert").search('if message.type == "alert":')
    assert _as_type("resend").search('            type="resend",')
    assert _as_type("close_heat").search('if command != "close_heat":')
    assert _as_type("open_heat").search('    "open_heat",') is None  # a name in __all__
    assert _as_type("seat").search('seat = body["seat"]') is None
    assert re.search(r"[\"']hand\.settled[\"']", 'if kind == "hand.settled":')
