"""What became of a desk action's table commands, as the command line tells it (D355): the
central service sends them and waits ``http.desk_answer_wait_s`` for the tables' verdicts;
the command line then polls ``GET /commands/{seq}`` up to ``--wait`` seconds more.

    every table accepted          exit 0, the action's own lines
    a table refused               CommandRefused (exit 3) with the table's reason
    no answer in time             "sent, not confirmed yet: showdown desk commands --seq N",
                                  exit EXIT_NOT_CONFIRMED (75, EX_TEMPFAIL)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any, Final

from cli.desk import api
from cli.errors import CommandRefused

__all__ = ["EXIT_HELD", "EXIT_NOT_CONFIRMED", "Sent", "send"]

EXIT_HELD: Final = 4  # a registration held for a supervisor's decision (D356)
EXIT_NOT_CONFIRMED: Final = 75  # EX_TEMPFAIL: sent, the table has not answered yet (D355)
_POLL_S: Final = 0.2
_FINAL: Final = ("accepted", "refused")


class Sent:
    """A sending action's answer and the seqs no table has confirmed yet."""

    __slots__ = ("body", "error", "unconfirmed")

    def __init__(self, body: dict[str, Any], unconfirmed: Sequence[int],
                 error: str | None = None) -> None:
        self.body = body
        self.unconfirmed = tuple(unconfirmed)
        self.error = error  # the service recorded the action but the broker did not take it

    @property
    def confirmed(self) -> bool:
        """True when every command the action sent was accepted."""
        return not self.unconfirmed

    def note(self) -> str:
        """The line for commands not confirmed yet."""
        seqs = " ".join(f"--seq {s}" for s in self.unconfirmed[:1])
        more = (f" (and seq {', '.join(str(s) for s in self.unconfirmed[1:])})"
                if len(self.unconfirmed) > 1 else "")
        return f"sent, not confirmed yet: showdown desk commands {seqs}{more}"


def _refused(views: Sequence[dict[str, Any]]) -> CommandRefused | None:
    refused = [v for v in views if v.get("state") == "refused"]
    if not refused:
        return None
    return CommandRefused("; ".join(f"table {v.get('table')} refused {v.get('command')}"
                                    f" (seq {v.get('seq')}): {v.get('reason')}"
                                    for v in refused))


def _wait(args: argparse.Namespace, seqs: Sequence[int]) -> list[int]:
    """Poll each unanswered command until answered or ``--wait`` runs out; the unanswered."""
    deadline = time.monotonic() + max(0.0, float(getattr(args, "wait", 0.0) or 0.0))
    left = list(seqs)
    while left:
        answers = [api.exchange(args, "GET", api.path("commands", s), accept=(404,))
                   for s in left]
        # 404: a command the service keeps no state for (a dispute ruling's correct_hand,
        # whose record is its audit row): sent, and its answer is not tracked (D355).
        views = [a.body for a in answers if a.status != 404]
        problem = _refused(views)
        if problem is not None:
            raise problem
        left = [int(v["seq"]) for v in views if v.get("state") not in _FINAL]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(_POLL_S)
    return left


def send(args: argparse.Namespace, method: str, where: str, body: Any = None) -> Sent:
    """Call a sending action; a table's refusal is raised (exit 3), a command not answered
    within ``--wait`` is listed in the result's ``unconfirmed``, one the broker did not take
    (the action recorded all the same) is the result's ``error``."""
    answer = api.exchange(args, method, where, body, accept=(409, 502))
    data = answer.body if isinstance(answer.body, dict) else {}
    if answer.status == 502 and isinstance(data.get("recorded"), dict):
        recorded = data["recorded"]
        return Sent(recorded, [int(s) for s in _seqs(recorded)],
                    error=str(data.get("error", "the broker did not take the command")))
    views = data.get("commands")
    if answer.status == 409:
        problem = _refused(views) if isinstance(views, list) else None
        raise problem or CommandRefused(str(data.get("error", "refused")))
    if isinstance(views, list):
        pending = [int(v["seq"]) for v in views if v.get("state") not in _FINAL]
    else:  # the service does not wait: every seq it names is checked here
        pending = [int(s) for s in _seqs(data)]
    return Sent(data, _wait(args, pending) if pending else [])


def _seqs(data: dict[str, Any]) -> list[Any]:
    if isinstance(data.get("seqs"), list):
        return list(data["seqs"])
    if isinstance(data.get("sent"), list):
        return [s["seq"] for s in data["sent"] if isinstance(s, dict) and "seq" in s]
    return [data["seq"]] if isinstance(data.get("seq"), int) else []
