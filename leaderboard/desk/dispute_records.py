"""Disputes as records (rules 22, 37, 53: "all disputes must be raised within the round in
question"): raised, ruled by a supervisor, closed; each step audited under its person.

A dispute concerns one entry: its score, or its result in hands it played. It is raised by the
participant (at the table's console, ``score.disputed``, or recorded at the desk here), or by
a dealer or supervisor at the table (``hand.disputed``). A supervisor rules: ``dismissed``,
``hand_voided`` or ``hand_corrected``. A ruling on a hand never edits the hand's record:

- while the entry still plays at its table (no score recorded yet), the ruling is a signed
  ``correct_hand`` command; the table moves the entry's chips and publishes ``hand.corrected``
  (its correcting record, stored in ``hand_corrections``), and the score it records later
  counts it;
- once the entry's score is recorded, the ruling is a correction beside the score
  (leaderboard.desk.rulings), which the standings count.

The round is the entry's stage; it is over once its standings were used (the next stage's
places allocated, a prize awarded from them: ``rulings.round_over``). Raising or ruling after
that is refused with the reason; closing a ruled dispute (telling the participant) is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.messages.desk import CorrectHand
from game.money import format_rand
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import begin_action, desk_now, require_reason, write_audit
from leaderboard.desk.duties import check_duty
from leaderboard.desk.errors import Conflict, DeskError, NotFound
from leaderboard.desk.lookups import get_entry
from leaderboard.desk.rulings import apply_correction, round_over, ruled_score
from leaderboard.desk.values import DeskCommand
from leaderboard.eligibility import as_utc, from_db
from leaderboard.models import Dispute, Entry, Hand, HandCorrection, Score
from leaderboard.projections import SEATED, UNPAID_STATUSES
from runtime.clocks import WallClock

__all__ = ["DISPUTE_STATUSES", "RULINGS", "DisputeHandView", "DisputeRecord", "close_dispute",
           "dispute_record", "dispute_records", "raise_dispute", "raisers", "rule_dispute"]

DISPUTE_STATUSES: Final = ("open", "ruled", "closed")
RULINGS: Final = ("dismissed", "hand_voided", "hand_corrected")
RAISED: Final = "dispute.raised"
RULED: Final = "dispute.ruled"
CLOSED: Final = "dispute.closed"
_MAX_CLAIM: Final = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class DisputeHandView:
    """A hand a dispute concerns: where it was played, the entry's seat and net, and the
    correcting records the table published for it (the hand's record is never changed)."""

    hand_id: str
    table: str | None
    seq: int | None
    status: str | None  # settled | voided; None: not stored (yet)
    seat: int | None
    net_cents: int | None  # the entry's net in the hand as it settled
    corrections: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DisputeRecord:
    """A dispute with its hands, its score and its ruling (what an export bundle needs)."""

    dispute_id: int
    entry_id: str
    status: str
    raised_by_role: str
    raised_by: str | None
    recorded_by: str | None
    at: datetime
    claim: str
    stage: str | None
    heat_id: str | None
    table: str | None
    seq: int | None  # the table's message that raised it (None: recorded at the desk)
    score_cents: int | None  # the score disputed, when one was recorded
    counted_cents: int | None  # what the standings count for the entry now
    hands: tuple[DisputeHandView, ...] = ()
    ruling: str | None = None
    ruling_reason: str | None = None
    ruled_by: str | None = None
    ruled_at: datetime | None = None
    ruling_detail: dict[str, Any] = field(default_factory=dict)
    closed_at: datetime | None = None
    closed_by: str | None = None
    outcome: str | None = None  # what the participant was told at closing
    command: DeskCommand | None = None  # the table command a ruling sends, to be sent


def raise_dispute(session: Session, settings: TournamentSettings, clock: WallClock, *,
                  actor: str, entry_id: str, claim: str,
                  hand_ids: Sequence[str] = ()) -> DisputeRecord:
    """Record a participant's dispute at the desk (the clerk or supervisor is ``actor``);
    refused once the entry's round is over."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    text = _claim(claim)
    entry = get_entry(session, entry_id)
    if entry.status in UNPAID_STATUSES:
        raise Conflict(f"entry {entry.entry_id} was {entry.status}: it has nothing to dispute")
    score = session.get(Score, entry.entry_id)
    _round_open(session, settings, entry, score, "raised")
    hands = _unique(hand_ids)
    for hand_id in hands:
        _entry_net(_hand(session, hand_id), entry.entry_id)
    if not hands and score is None:
        raise DeskError(f"entry {entry.entry_id} has no recorded score yet: name the hand(s)"
                        " disputed (--hand)")
    row = Dispute(entry_id=entry.entry_id,
                  table_id=score.table_id if score is not None else entry.table_id, seq=None,
                  stage=entry.stage, heat_id=entry.heat_id,
                  score_cents=None if score is None else score.counted_cents, note=text,
                  at=as_utc(now), raised_by_role="participant", raised_by=entry.entry_id,
                  recorded_by=actor, hand_ids=list(hands) or None, status="open")
    session.add(row)
    session.flush()
    write_audit(session, now, actor, RAISED, detail={
        "dispute_id": row.id, "entry_id": entry.entry_id, "raised_by_role": "participant",
        "hand_ids": list(hands), "score_cents": row.score_cents, "claim": text})
    session.commit()
    return dispute_record(session, row.id)


def rule_dispute(session: Session, settings: TournamentSettings, clock: WallClock, *,
                 actor: str, dispute_id: int, ruling: str, why: str,
                 hand_id: str | None = None, net_cents: int | None = None) -> DisputeRecord:
    """A supervisor's ruling (``actor``) on an open dispute; refused once its round is over.

    ``hand_voided`` / ``hand_corrected`` (with the hand's corrected ``net_cents`` for the
    entry) are applied at the entry's table while it still plays there (the returned record's
    ``command`` is to be sent), else as a correction beside its recorded score."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    reason = require_reason(why, "the dispute is ruled on")
    if ruling not in RULINGS:
        raise DeskError(f"a ruling is one of {', '.join(RULINGS)}, not {ruling!r}")
    row = _dispute(session, dispute_id)
    check_duty("raise / rule dispute", actor=actor, earlier=raisers(row))
    entry = get_entry(session, row.entry_id)
    score = session.get(Score, entry.entry_id)
    if row.status != "open" and not _ruling_lapsed(session, row, score):
        raise Conflict(f"dispute {row.id} was already ruled {row.ruling} by {row.ruled_by}"
                       f" ({row.ruling_reason})")
    _round_open(session, settings, entry, score, "ruled on")
    detail: dict[str, Any] = {}
    command: DeskCommand | None = None
    if ruling == "dismissed":
        if hand_id is not None or net_cents is not None:
            raise DeskError("a dismissal changes no hand: leave out --hand and --net")
    else:
        detail, command = _rule_hand(session, settings, now, actor, row=row, entry=entry,
                                     score=score, ruling=ruling, hand_id=hand_id,
                                     net_cents=net_cents, reason=reason)
    row.status, row.ruling, row.ruling_reason = "ruled", ruling, reason
    row.ruled_by, row.ruled_at = actor, as_utc(now)
    audit = write_audit(session, now, actor, RULED, detail={
        "dispute_id": row.id, "entry_id": row.entry_id, "ruling": ruling, **detail,
        **({"table": command.table, "command": command.command, "args": dict(command.args)}
           if command is not None else {})}, why=reason)
    if command is not None:  # the audit row is the command's record: its id is its seq
        command = DeskCommand(seq=audit.id, table=command.table, command=command.command,
                              args={**command.args})
        detail = {**detail, "command_seq": audit.id}
    row.ruling_detail = detail
    session.commit()
    return _with_command(dispute_record(session, row.id), command)


def close_dispute(session: Session, clock: WallClock, *, actor: str, dispute_id: int,
                  outcome: str) -> DisputeRecord:
    """Close a ruled dispute with what the participant was told (kept in the record and the
    entry's disputes); refused while the table has not applied a ruling sent to it."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    told = require_reason(outcome, "the dispute is closed (what the participant was told)")
    row = _dispute(session, dispute_id)
    if row.status == "open":
        raise Conflict(f"dispute {row.id} is not ruled yet: a supervisor rules on it first"
                       " (showdown desk dispute rule)")
    if row.status == "closed":
        raise Conflict(f"dispute {row.id} was closed by {row.resolved_by}: {row.resolution}")
    detail = row.ruling_detail or {}
    if detail.get("applied") == "table" and not _corrections(session, row.id):
        raise Conflict(f"dispute {row.id}'s ruling has not been applied by table"
                       f" {detail.get('table')} yet (send it again with `showdown desk resend"
                       f" {detail.get('command_seq')}`)")
    row.status, row.resolved_at, row.resolved_by, row.resolution = (
        "closed", as_utc(now), actor, told)
    write_audit(session, now, actor, CLOSED, detail={
        "dispute_id": row.id, "entry_id": row.entry_id, "ruling": row.ruling,
        "outcome": told})
    session.commit()
    return dispute_record(session, row.id)


def raisers(row: Dispute) -> tuple[str | None, ...]:
    """The staff who raised a dispute or recorded it at the desk (not a participant)."""
    return (row.recorded_by, None if row.raised_by_role == "participant" else row.raised_by)


def dispute_records(session: Session, *, status: str | None = None,
                    entry_id: str | None = None) -> list[DisputeRecord]:
    """The disputes, oldest first, by ``status`` (open, ruled, closed) and/or entry."""
    query = select(Dispute)
    if status is not None:
        if status not in DISPUTE_STATUSES:
            raise DeskError(f"a dispute's status is one of {', '.join(DISPUTE_STATUSES)},"
                            f" not {status!r}")
        query = query.where(Dispute.status == status)
    if entry_id is not None:
        query = query.where(Dispute.entry_id == str(entry_id).strip())
    rows = session.scalars(query.order_by(Dispute.at, Dispute.id)).all()
    return [_record(session, row) for row in rows]


def dispute_record(session: Session, dispute_id: int) -> DisputeRecord:
    """One dispute with its hands, its score and its ruling."""
    return _record(session, _dispute(session, dispute_id))


# ---- rulings on a hand --------------------------------------------------------------------


def _rule_hand(session: Session, settings: TournamentSettings, now: datetime, actor: str, *,
               row: Dispute, entry: Entry, score: Score | None, ruling: str,
               hand_id: str | None, net_cents: int | None,
               reason: str) -> tuple[dict[str, Any], DeskCommand | None]:
    hands = list(row.hand_ids or [])
    if hand_id is None:
        if len(hands) != 1:
            raise DeskError(f"dispute {row.id} concerns {len(hands)} hands: name the one ruled"
                            " on (--hand)")
        hand_id = hands[0]
    elif hand_id not in hands:  # the supervisor names the hand a score dispute is about
        _entry_net(_hand(session, hand_id), entry.entry_id)
        row.hand_ids = [*hands, hand_id]
    if ruling == "hand_corrected":
        if isinstance(net_cents, bool) or not isinstance(net_cents, int):
            raise DeskError("a corrected hand needs the entry's corrected net for it (--net)")
    elif net_cents is not None:
        raise DeskError("a voided hand counts nothing: leave out --net")
    earlier = _hand_ruled(session, row, hand_id)
    if earlier is not None:
        raise Conflict(f"hand {hand_id} was already ruled on for entry {entry.entry_id} in"
                       f" dispute {earlier.id} ({earlier.ruling}, by {earlier.ruled_by}):"
                       " management's decision is final (rule 23)")
    hand = _hand(session, hand_id)
    seat, recorded_net = _entry_net(hand, entry.entry_id)
    counted_net = 0 if ruling == "hand_voided" else int(net_cents or 0)
    detail: dict[str, Any] = {"hand_id": hand_id, "table": hand.table_id, "seat": seat,
                              "recorded_net": recorded_net, "counted_net": counted_net}
    if score is not None:
        scored, _ = ruled_score(session, settings, entry.entry_id, ruling.replace("hand_", ""))
        before = scored.counted_cents
        after = before + counted_net - recorded_net
        if after < 0:
            raise Conflict(f"the ruling would take {format_rand(before - after)} from entry"
                           f" {entry.entry_id}'s score of {format_rand(before)}")
        apply_correction(session, now, actor, scored, score_cents=after,
                         reason=f"dispute {row.id}: {ruling.replace('_', ' ')} {hand_id}:"
                         f" {reason}")
        detail.update(applied="score", score_before=before, score_after=after)
        return detail, None
    if entry.status != SEATED or entry.table_id is None:
        raise Conflict(f"entry {entry.entry_id} has no recorded score and is not seated at a"
                       " table: there is nothing to correct yet")
    command = CorrectHand(hand_id=hand_id, entry_id=entry.entry_id,
                          ruling="void" if ruling == "hand_voided" else "correct",
                          net=None if ruling == "hand_voided" else counted_net,
                          reason=reason, dispute_id=row.id)
    detail.update(applied="table", table=entry.table_id)
    return detail, DeskCommand.of(seq=0, table=entry.table_id, command=command)


# ---- helpers ------------------------------------------------------------------------------


def _claim(claim: str) -> str:
    text = " ".join(str(claim or "").split())
    if not text:
        raise DeskError("say what is disputed (--claim): it goes into the record")
    if len(text) > _MAX_CLAIM:
        raise DeskError(f"the claim is longer than {_MAX_CLAIM} characters")
    return text


def _unique(hand_ids: Sequence[str]) -> list[str]:
    out: list[str] = []
    for hand_id in hand_ids:
        text = str(hand_id).strip()
        if not text or len(text) > 64:
            raise DeskError(f"{hand_id!r} is not a hand id")
        if text not in out:
            out.append(text)
    return out


def _round_open(session: Session, settings: TournamentSettings, entry: Entry,
                score: Score | None, doing: str) -> None:
    over = round_over(session, settings, entry, score)
    if over is not None:
        raise Conflict(f"entry {entry.entry_id}'s {entry.stage} round is over: {over}; a"
                       f" dispute can no longer be {doing} (rules 22, 37, 53: disputes are"
                       " raised within the round in question)")


def _dispute(session: Session, dispute_id: int) -> Dispute:
    if isinstance(dispute_id, bool) or not isinstance(dispute_id, int) or not (
            0 < dispute_id < 2**31):
        raise NotFound(f"no dispute {dispute_id!r}")
    row = session.get(Dispute, dispute_id)
    if row is None:
        raise NotFound(f"no dispute {dispute_id}")
    return row


def _hand(session: Session, hand_id: str) -> Hand:
    hand = session.get(Hand, hand_id)
    if hand is None:
        raise NotFound(f"no hand {hand_id!r} is stored (a table's hand reaches the desk once"
                       " it has ended)")
    return hand


def _entry_net(hand: Hand, entry_id: str) -> tuple[int, int]:
    """The entry's seat and net in a stored hand; DeskError if it did not play it."""
    body = hand.body or {}
    for seat in body.get("seats") or ():
        if isinstance(seat, dict) and seat.get("entry_id") == entry_id:
            number = int(seat.get("seat", 0))
            if hand.status != "settled":
                raise Conflict(f"hand {hand.hand_id} was {hand.status}: it settled nothing")
            return number, int((body.get("nets") or {}).get(str(number), 0))
    raise DeskError(f"entry {entry_id} did not play hand {hand.hand_id}")


def _ruling_lapsed(session: Session, row: Dispute, score: Score | None) -> bool:
    """A ruling sent to a table that never applied it (the table refused it: the entry's
    stage ended there first) and can no longer: its score is recorded, so it is ruled again
    on the score. The table never applies the old command now (the entry is not seated)."""
    detail = row.ruling_detail or {}
    return (row.status == "ruled" and detail.get("applied") == "table"
            and score is not None and not _corrections(session, row.id))


def _hand_ruled(session: Session, row: Dispute, hand_id: str) -> Dispute | None:
    """Another dispute of the entry whose ruling already changed this hand."""
    others = session.scalars(select(Dispute).where(
        Dispute.entry_id == row.entry_id, Dispute.id != row.id,
        Dispute.ruling.in_(RULINGS[1:])).order_by(Dispute.id))
    return next((d for d in others if (d.ruling_detail or {}).get("hand_id") == hand_id), None)


def _corrections(session: Session, dispute_id: int) -> list[HandCorrection]:
    return list(session.scalars(select(HandCorrection)
                                .where(HandCorrection.dispute_id == dispute_id)
                                .order_by(HandCorrection.id)))


def _hand_view(session: Session, hand_id: str, entry_id: str) -> DisputeHandView:
    hand = session.get(Hand, hand_id)
    seat = net = None
    if hand is not None:
        for item in (hand.body or {}).get("seats") or ():
            if isinstance(item, dict) and item.get("entry_id") == entry_id:
                seat = int(item.get("seat", 0))
                net = int(((hand.body or {}).get("nets") or {}).get(str(seat), 0))
    rows = session.scalars(select(HandCorrection).where(HandCorrection.hand_id == hand_id)
                           .order_by(HandCorrection.id))
    corrections = tuple({"table": c.table_id, "seq": c.seq, "entry_id": c.entry_id,
                         "ruling": c.ruling, "recorded_net": c.recorded_net,
                         "counted_net": c.counted_net, "balance_before": c.balance_before,
                         "balance_after": c.balance_after, "dispute_id": c.dispute_id,
                         "by": c.by, "reason": c.reason, "at": from_db(c.at)} for c in rows)
    return DisputeHandView(hand_id=hand_id, table=None if hand is None else hand.table_id,
                           seq=None if hand is None else hand.seq,
                           status=None if hand is None else hand.status, seat=seat,
                           net_cents=net, corrections=corrections)


def _record(session: Session, row: Dispute) -> DisputeRecord:
    score = session.get(Score, row.entry_id)
    return DisputeRecord(
        dispute_id=row.id, entry_id=row.entry_id, status=row.status,
        raised_by_role=row.raised_by_role, raised_by=row.raised_by,
        recorded_by=row.recorded_by, at=from_db(row.at), claim=row.note, stage=row.stage,
        heat_id=row.heat_id, table=row.table_id, seq=row.seq, score_cents=row.score_cents,
        counted_cents=None if score is None or score.voided_at is not None
        else score.counted_cents,
        hands=tuple(_hand_view(session, h, row.entry_id) for h in row.hand_ids or ()),
        ruling=row.ruling, ruling_reason=row.ruling_reason, ruled_by=row.ruled_by,
        ruled_at=from_db(row.ruled_at) if row.ruled_at else None,
        ruling_detail=dict(row.ruling_detail or {}),
        closed_at=from_db(row.resolved_at) if row.resolved_at else None,
        closed_by=row.resolved_by, outcome=row.resolution)


def _with_command(record: DisputeRecord, command: DeskCommand | None) -> DisputeRecord:
    return record if command is None else replace(record, command=command)
