"""Rule 57: a patron who transgresses the rules is disqualified. Every entry of theirs
(bought, seated, scored; semi-final and Final places included) is marked disqualified with
the reason, so its score no longer counts in any standings or prize book; a seated entry is
taken out of its seat with the signed `unseat` command; prizes not yet claimed are withheld;
the patron cannot buy, be seated or nominated again. A supervisor's decision, audited.

The buy-ins stay in the pools: the entries were paid for and are not refunded (see
docs/identity.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboard.desk.action import begin_action, desk_now, require_reason, write_audit
from leaderboard.desk.errors import Conflict
from leaderboard.desk.holds import DISQUALIFIED
from leaderboard.desk.lookups import get_patron, has_score
from leaderboard.desk.roles import require_supervisor
from leaderboard.desk.seating import record_unseat
from leaderboard.desk.values import DeskCommand
from leaderboard.eligibility import as_utc
from leaderboard.models import Entry, PrizeAward
from leaderboard.projections import REFUNDED, SEATED
from runtime.clocks import WallClock

__all__ = ["Disqualification", "disqualify_patron"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Disqualification:
    """What a disqualification did: the entries marked, the unseat commands to send, and
    the prize awards withheld."""

    patron_id: str
    reason: str
    entries: tuple[str, ...]
    unseated: tuple[str, ...]
    withheld: tuple[int, ...]
    commands: tuple[DeskCommand, ...]


def disqualify_patron(session: Session, clock: WallClock, *, actor: str, patron_id: str,
                      why: str | None) -> Disqualification:
    """Disqualify a patron (rule 57, a supervisor's decision; see the module); the returned
    commands (`unseat` of each seated entry still playing) are for the caller to send."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    require_supervisor(session, actor, "patron.disqualified")
    reason = require_reason(why, "the patron is disqualified (rule 57)")
    patron = get_patron(session, patron_id)
    if patron.standing == DISQUALIFIED:
        raise Conflict(f"patron {patron.patron_id} is already disqualified:"
                       f" {patron.standing_reason}")
    patron.standing, patron.standing_reason = DISQUALIFIED, reason
    marked: list[str] = []
    unseated: list[str] = []
    commands: list[DeskCommand] = []
    # Places the patron holds or plays as a proxy both go: the person transgressed.
    entries = session.scalars(select(Entry).where(
        (Entry.patron_id == patron.patron_id) | (Entry.played_by == patron.patron_id))
        .order_by(Entry.entry_id)).all()
    for entry in entries:
        if entry.status == REFUNDED or entry.disqualified_at is not None:
            continue
        entry.disqualified_at, entry.disqualified_reason = as_utc(now), reason
        marked.append(entry.entry_id)
        if entry.status == SEATED and entry.table_id is not None and entry.seat is not None \
                and not has_score(session, entry.entry_id):
            commands.append(record_unseat(session, now, actor, entry,
                                    reason="disqualified (rule 57)", why=reason,
                                    entry_disqualified=True))
            unseated.append(entry.entry_id)
    withheld: list[int] = []
    for award in session.scalars(select(PrizeAward).where(
            PrizeAward.patron_id == patron.patron_id, PrizeAward.claimed_at.is_(None),
            PrizeAward.withheld_at.is_(None)).order_by(PrizeAward.id)).all():
        award.withheld_at, award.withheld_reason = as_utc(now), reason
        withheld.append(award.id)
    write_audit(session, now, actor, "patron.disqualified", detail={
        "patron_id": patron.patron_id, "supervisor": actor, "reason": reason,
        "entries": marked, "unseated": unseated, "withheld_awards": withheld,
        "seqs": [c.seq for c in commands]})
    session.commit()
    return Disqualification(patron_id=patron.patron_id, reason=reason, entries=tuple(marked),
                            unseated=tuple(unseated), withheld=tuple(withheld),
                            commands=tuple(commands))
