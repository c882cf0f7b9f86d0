"""The whole-tournament runner with a supervisor's rulings after the last qualifying heat, so
that the end-to-end test also runs the paths a calm floor never takes: a recorded score voided
(rule 23), a score corrected at the desk, and a patron disqualified (rule 57),
each through the real desk functions under the supervisor's own signed-in session.

The rulings are taken on scores of the last heat day only: its prize week has not been awarded
yet, so the round is still open (rules 22, 37, 53). Which entries are ruled on follows from
the seeded run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.orm import Session

from floor.tournament import SimulatedFloor
from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.models import Entry, Score

__all__ = ["Ruling", "RulingFloor"]

CORRECTED_TO = 500_000  # R5,000.00: enough to move the corrected entry to the top


@dataclass(frozen=True, slots=True)
class Ruling:
    """One ruling taken: ``voided``, ``corrected`` or ``disqualified``, on whom."""

    kind: str
    entry_id: str
    patron_id: str


def _last_day(session: Session, _: TournamentSettings) -> list[tuple[str, str, date, int]]:
    rows = session.execute(
        select(Entry.entry_id, Entry.patron_id, Entry.heat_day, Score.score_cents)
        .join(Score, Score.entry_id == Entry.entry_id)
        .where(Entry.stage == "qualifying", Entry.heat_day.is_not(None))).all()
    dated = [(r[0], r[1], r[2], r[3]) for r in rows if r[2] is not None]
    last = max(r[2] for r in dated)
    return sorted((r for r in dated if r[2] == last), key=lambda r: (-r[3], r[0]))


def _days_of(session: Session, _: TournamentSettings) -> dict[str, set[date]]:
    days: dict[str, set[date]] = {}
    for patron, day in session.execute(select(Entry.patron_id, Entry.heat_day)
                                       .where(Entry.stage == "qualifying")):
        if day is not None:
            days.setdefault(patron, set()).add(day)
    return days


class RulingFloor(SimulatedFloor):
    """`SimulatedFloor` with a void, a correction and a disqualification after qualifying."""

    rulings: list[Ruling]

    async def _qualifying(self) -> None:
        await super()._qualifying()
        self.rulings = []
        await self._rule()

    async def _rule(self) -> None:
        scored = self.desk.read(_last_day)
        if len(scored) < 3:
            return
        best, worst = scored[0], scored[-1]
        await self.desk.at_desk("score.void", lambda s, st, by: desk.void_score(
            s, st, self.clock.wall, actor=by, entry_id=best[0],
            why="e2e: the dealer paid from the wrong stack all heat; management voids it"))
        self.rulings.append(Ruling("voided", best[0], best[1]))
        await self.desk.at_desk("score.correct", lambda s, st, by: desk.correct_score(
            s, st, self.clock.wall, actor=by, entry_id=worst[0], score_cents=CORRECTED_TO,
            why="e2e: the pit's recount after the dispute"))
        self.rulings.append(Ruling("corrected", worst[0], worst[1]))
        days = self.desk.read(_days_of)
        last = scored[0][2]
        for entry_id, patron_id, _, _ in scored[1:-1]:
            if days.get(patron_id) == {last} and patron_id not in (best[1], worst[1]):
                await self.desk.at_desk(
                    "patron.disqualify", lambda s, _st, by: desk.disqualify_patron(
                    s, self.clock.wall, actor=by, patron_id=patron_id,  # noqa: B023
                    why="e2e: rule 57, passed chips to another player"))
                self.rulings.append(Ruling("disqualified", entry_id, patron_id))
                if patron_id in self.patrons:
                    self.patrons.remove(patron_id)  # never a proxy later
                break
        self.say("e2e rulings: " + ", ".join(f"{r.kind} {r.entry_id}" for r in self.rulings))
