"""The desk's errors: each maps to one HTTP status and says what was refused and why."""

from __future__ import annotations

from game.errors import GameError, Refusal
from leaderboard.eligibility import Verdict


class DeskError(GameError, ValueError):
    """A desk action refused for bad input (HTTP 400); the message says what and why."""


class NotFound(DeskError):
    """No such patron, entry, award or draw (HTTP 404)."""


class Conflict(DeskError, Refusal):
    """The action contradicts the state (seat taken, outside the window, already done: 409)."""


class Refused(DeskError, Refusal):
    """The person is not eligible; the refusal is recorded (HTTP 403)."""

    def __init__(self, who: str, verdict: Verdict, refusal_id: int) -> None:
        self.verdict = verdict
        self.refusal_id = refusal_id
        super().__init__(f"{who} refused (refusal {refusal_id}): {verdict.reason}")
