"""Every wager line paid as the paytables say, worked out by hand from rules.md §5-7."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.e2e.payouts import payout_problems, read_paytables
from tests.e2e.records import HandSeat, RecordedHand

PAYTABLES = read_paytables(Path(__file__).resolve().parents[2] / "config" / "paytables.toml")
MARKER = 50_000


def _line(result: str, stake: int, net: int, line: str | None = None,
          marker: bool = False) -> dict[str, Any]:
    return {"result": result, "stake": stake, "net": net, "line": line, "marker": marker}


def _hand(outcome: str, **lines: dict[str, Any]) -> RecordedHand:
    seat = HandSeat(seat=1, entry_id="E-1", net_cents=sum(v["net"] for v in lines.values()),
                    outcome=outcome, lines=lines)
    return RecordedHand(table="t01", seq=1, hand_id="t01-1", heat_id=None, stage=None,
                        status="settled", at=datetime(2026, 7, 3, tzinfo=UTC), seats=(seat,))


def test_every_line_paid_by_the_paytables() -> None:
    won = _hand(
        "win", ante=_line("win", 2500, 2500), play=_line("win", 7500, 7500),
        odds=_line("win", 2500, 3750, "flush"),  # 3:2 on R25 is R37.50 exactly
        trips_plus=_line("win", 2500, 10_000, "straight"),  # 4 to 1
        pocket_bonus=_line("win", 2500, 12_500, "Any other pair"),  # 5 to 1
        # a marker alone plays Sweet 16 at R500: same colour 16 pays 12 to 1 on it
        sweet16=_line("win", 0, 600_000, "same_colour_16", marker=True))
    assert payout_problems(won, PAYTABLES, MARKER) == []
    lost = _hand("lose", ante=_line("lose", 2500, -2500), play=_line("lose", 2500, -2500),
                 odds=_line("win", 2500, 10_000, "straight"),  # the bad beat: 4 to 1
                 sweet16=_line("lose", 0, 0, marker=True),  # the marker is used up, no chips
                 trips_plus=_line("push", 2500, 0))
    assert payout_problems(lost, PAYTABLES, MARKER) == []


def test_a_line_paid_wrong_is_named() -> None:
    hand = _hand("win", odds=_line("win", 2500, 2500, "flush"),  # paid 1:1, not 3:2
                 pocket_bonus=_line("win", 2500, 12_500, "no such line"),
                 play=_line("lose", 5000, -2500))
    problems = payout_problems(hand, PAYTABLES, MARKER)
    assert len(problems) == 3, problems
    assert "odds: win netted 2500, expected 3750" in problems[0]
    assert "no line 'no such line' in [pocket_bonus]" in problems[1]
    assert "play: lose netted -2500, expected -5000" in problems[2]
