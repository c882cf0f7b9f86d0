"""Segregation of duties as data: the pairs of duties one person may not both perform on the
same subject (South Africa's National Gambling Regulations reg 33, Nevada's MICS: whoever
records a transaction does not approve it; staff administration is kept apart from one's own
record). docs/segregation-of-duties.md explains each pair.

`leaderboard.desk.permissions` says which role may take an action at all; this table says
which person may not take the second duty of a pair once they took the first on the same
subject (a hold, a dispute, a prize, a staff record). The desk functions call `check_duty`
with the pair's name, the people who took the first duty and the operator; a refusal is a
`DutyRefused` (HTTP 403, the command line's "refused") naming the pair. No pair is relaxed
by a setting (D371): a manager may take every supervisor's duty, so a house short of staff
calls one.

To add a pair: one line in `DUTY_PAIRS`, then one `check_duty` call where the second duty is
taken (tests/leaderboard/test_duties.py tests each enforced pair both ways).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from game.messages.corrections import HandDisputed
from leaderboard.desk.roles import NotPermitted

__all__ = ["DUTY_PAIRS", "DutyPair", "DutyRefused", "check_duty", "duty_refusal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DutyPair:
    """Two duties one person may not both perform on one subject: those who took ``first``
    (its desk actions, `leaderboard.desk.permissions`) may not take ``second`` on it."""

    name: str  # "register / approve hold": the rule as a refusal names it
    first: tuple[str, ...]  # the desk actions (or table/console events) of the first duty
    second: tuple[str, ...]  # the desk actions of the second duty
    subject: str  # what both act on, as the refusal says it ("this hold")
    did: str  # what the first person did, as the refusal says it ("raised")
    who: str  # who must take the second duty instead ("another supervisor")
    then: str  # what that person does ("decide it")
    grounds: str  # the rule it follows
    enforced_in: str | None  # the module that checks it; None: the duty is not built yet


_REG33: Final = "National Gambling Regulations reg 33; Nevada MICS"
_SELF: Final = ("National Gambling Regulations reg 33; Nevada MICS: staff administration is"
                " separate from operations")

DUTY_PAIRS: Final[Mapping[str, DutyPair]] = {p.name: p for p in (
    DutyPair(name="register / approve hold",
             first=("patron.register", "entry.buy", "entry.seat", "place.proxy",
                    "patron.document_add"),
             second=("hold.approve", "hold.refuse"), subject="this hold's registration",
             did="raised", who="another supervisor", then="decide it",
             grounds=f"{_REG33}: whoever records a transaction does not approve it",
             enforced_in="leaderboard.desk.hold_decisions"),
    DutyPair(name="raise / rule dispute",
             first=("dispute.raise", HandDisputed.TYPE),  # desk; console
             second=("dispute.rule", "dispute.resolve"), subject="this dispute",
             did="raised or recorded", who="another supervisor", then="rule on it",
             grounds=f"{_REG33}: a complaint is not ruled on by whoever raised it",
             enforced_in="leaderboard.desk.dispute_records"),
    DutyPair(name="award / pay prize",
             first=("prize.award",), second=("prize.claim",), subject="this prize",
             did="awarded", who="another supervisor or manager", then="pay it",
             grounds=f"{_REG33}: whoever records a payout does not also hand it over",
             enforced_in="leaderboard.desk.awards"),
    DutyPair(name="own staff record",
             first=("staff.self",),  # being the member: no action of its own
             second=("staff.disable", "staff.enable", "staff.pin", "staff.card"),
             subject="this staff record (their own)", did="holds",
             who="another manager", then="change it", grounds=_SELF,
             enforced_in="leaderboard.desk.staff"),
    DutyPair(name="enrol / approve enrolment",
             first=("staff.enrol",), second=("staff.approve_enrolment",),
             subject="this enrolment", did="made", who="another manager", then="approve it",
             grounds=_SELF, enforced_in=None),
    DutyPair(name="count / confirm chips",
             first=("chips.count",), second=("chips.confirm",), subject="this chip count",
             did="counted", who="another supervisor", then="confirm it",
             grounds="New Jersey 13:69D-1.21: a count is confirmed by a second person",
             enforced_in=None),
    DutyPair(name="draw / witness seats",
             first=("draw.final",), second=("draw.witness",), subject="this seat draw",
             did="drew", who="another staff member", then="witness it",
             grounds=f"{_REG33}: a draw is witnessed by someone who did not make it",
             enforced_in=None),
)}


class DutyRefused(NotPermitted):
    """One person took both duties of a `DutyPair` on one subject (HTTP 403)."""

    def __init__(self, message: str, pair: DutyPair) -> None:
        self.pair = pair
        super().__init__(message)


def duty_refusal(pair_name: str, *, actor: str, earlier: Iterable[str | None]) -> str | None:
    """Why ``actor`` may not take the second duty of the pair (they took its first duty:
    one of ``earlier``, the people who did), or None when they may."""
    pair = DUTY_PAIRS[pair_name]
    if actor not in {" ".join(e.split()) for e in earlier if e}:
        return None
    return (f"{actor} {pair.did} {pair.subject}: {pair.who} must {pair.then}"
            f" (segregation of duties: {pair.name})")


def check_duty(pair_name: str, *, actor: str, earlier: Iterable[str | None]) -> None:
    """Refuse (`DutyRefused`) when ``actor`` took the first duty of the pair (see
    `duty_refusal`); KeyError for a pair not in `DUTY_PAIRS`."""
    reason = duty_refusal(pair_name, actor=actor, earlier=earlier)
    if reason is not None:
        raise DutyRefused(reason, DUTY_PAIRS[pair_name])
