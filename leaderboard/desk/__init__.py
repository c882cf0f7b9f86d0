"""The registration desk: patrons, entries, seating, semi-final and Final line-ups, prizes.

Plain functions on a SQLAlchemy `Session`, the tournament settings and a clock; each one is a
whole desk action: it checks everything first, writes its rows and an `AuditEntry` (who, what,
when, why) and commits, or raises a `DeskError` having changed nothing, except that a refusal
on eligibility is committed (the `Refusal` row) before `Refused` is raised. Actions that
instruct a table (open a heat, seat an entry, close a heat) return a `DeskCommand`; the caller
sends it with a `leaderboard.desk.sender` sender. A command's `seq` never repeats for the
desk's key, across processes, restarts and restores from backup (`command_log`); the table's
answer to it (accepted, refused and why, held) is its state, and a refusal undoes at the desk
what the command did there (leaderboard.projections.command_results). `table_check` compares
the desk's view of each table with what the table reports.

Two desks (or two HTTP requests) may act at the same moment: each checks, then writes. What
must be unique is also enforced by the database (one seat draw per stage, one semi-final or
Final place per heat and seat until seated, one award of a kind per entry, one patron per
document, one proxy per place); the loser of such a race gets a `Conflict` naming what the
other desk did, and nothing of its action is kept. A prize claim is a compare-and-set:
claimed once.

Staff enrolment (`staff`) keeps the dealers' and supervisors' PINs and employee cards as
hashes only and sends the roster to the tables; a participant's rewards card and PIN, hashed
too, go to the table in the `seat` command; a score may be acknowledged at the desk
(`acknowledge_score`); disputes and payout checks the tables report are listed, and a
dispute's resolution recorded.

Identities (issue 13): every document a patron presents is stored and checked (`documents`);
a name match on a list without a document match holds the registration, buy-in or seating
for a supervisor's decision (`holds`, `hold_decisions`); a list imported later screens the
registered patrons again (`rescreen`); rule 57 disqualifies a patron (`disqualify`); each
buy-in records how it was paid (rule 6) and `fees` sums them by method.

Rules: tournament.md "Entries and eligibility", "Stages", "Prize money"; promotion rules 1-3,
5-8, 14, 24-27, 39-41, 55. Nothing identifying a patron goes into a command: tables see the
opaque entry ids only. Times are stored in UTC and read in the venue's zone.
"""

from __future__ import annotations

from leaderboard.desk.acknowledgements import DESK_ACK_METHODS, acknowledge_score
from leaderboard.desk.awards import award_prizes, claim_prize, prize_status, prizes
from leaderboard.desk.commands import recorded_command, resend_command
from leaderboard.desk.disputes import disputes, payout_checks, resolve_dispute
from leaderboard.desk.disqualify import Disqualification, disqualify_patron
from leaderboard.desk.documents import add_document
from leaderboard.desk.entries import PAYMENT_METHODS, buy_entry, refund_entry
from leaderboard.desk.errors import Conflict, DeskError, NotFound, Refused
from leaderboard.desk.faults import table_fault
from leaderboard.desk.fees import FeeLine, entry_fees
from leaderboard.desk.heats import close_heat, open_heat
from leaderboard.desk.hold_decisions import HoldView, approve_hold, holds, refuse_hold
from leaderboard.desk.holds import Held
from leaderboard.desk.ids import FINAL_HEAT, semi_heat_id
from leaderboard.desk.lineups import (
    allocate_final,
    allocate_semis,
    choose_seat,
    nominate_proxy,
    places,
)
from leaderboard.desk.lookups import get_entry, get_patron
from leaderboard.desk.patrons import (
    CredentialsSet,
    check_person,
    register_patron,
    set_patron_credentials,
    set_patron_display,
)
from leaderboard.desk.record import audit_log, refusals
from leaderboard.desk.rescreen import Rescreen, import_and_rescreen
from leaderboard.desk.roles import NotPermitted
from leaderboard.desk.rulings import correct_score, void_score
from leaderboard.desk.scores import score_records
from leaderboard.desk.seat_draw import RandomBytes, commit_draw, draw_final, replay_draw
from leaderboard.desk.seating import seat_entry, unseat_entry
from leaderboard.desk.staff import (
    StaffView,
    change_staff_card,
    change_staff_pin,
    enrol_staff,
    list_staff,
    roster,
    send_roster,
    set_desk_passphrase,
    set_staff_active,
)
from leaderboard.desk.values import (
    DeskCommand,
    DisputeView,
    DrawOutcome,
    PayoutCheckView,
    Place,
    PrizeView,
    Replay,
    ScoreRuling,
    Seating,
    TableFault,
)

__all__ = [
    "DESK_ACK_METHODS",
    "FINAL_HEAT",
    "PAYMENT_METHODS",
    "Conflict",
    "CredentialsSet",
    "DeskCommand",
    "DeskError",
    "DisputeView",
    "Disqualification",
    "DrawOutcome",
    "FeeLine",
    "Held",
    "HoldView",
    "NotFound",
    "NotPermitted",
    "PayoutCheckView",
    "Place",
    "PrizeView",
    "RandomBytes",
    "Refused",
    "Replay",
    "Rescreen",
    "ScoreRuling",
    "Seating",
    "StaffView",
    "TableFault",
    "acknowledge_score",
    "add_document",
    "allocate_final",
    "allocate_semis",
    "approve_hold",
    "audit_log",
    "award_prizes",
    "buy_entry",
    "change_staff_card",
    "change_staff_pin",
    "check_person",
    "choose_seat",
    "claim_prize",
    "close_heat",
    "commit_draw",
    "correct_score",
    "disputes",
    "disqualify_patron",
    "draw_final",
    "enrol_staff",
    "entry_fees",
    "get_entry",
    "get_patron",
    "holds",
    "import_and_rescreen",
    "list_staff",
    "nominate_proxy",
    "open_heat",
    "payout_checks",
    "places",
    "prize_status",
    "prizes",
    "recorded_command",
    "refund_entry",
    "refusals",
    "refuse_hold",
    "register_patron",
    "replay_draw",
    "resend_command",
    "resolve_dispute",
    "roster",
    "score_records",
    "seat_entry",
    "semi_heat_id",
    "send_roster",
    "set_desk_passphrase",
    "set_patron_credentials",
    "set_patron_display",
    "set_staff_active",
    "table_fault",
    "unseat_entry",
    "void_score",
]
