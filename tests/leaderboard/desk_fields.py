"""The tournament as the desk tests build it: fields of patrons and entries, played stages,
tables reporting, and what the desk recorded."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from game.tournament.entries import Stage
from game.tournament.standings import qualifying_leaderboard
from leaderboard import desk
from leaderboard.eligibility import import_list, parse_list
from leaderboard.models import (
    AuditEntry,
)
from leaderboard.projections import Projected, project
from leaderboard.standings.view import Snapshot, load_snapshot
from tests.leaderboard.desk_helpers import (
    FakeClock,
    add_score,
    local,
    register,
    settings,
)
from wire.envelope import seal
from wire.signing import Signer

HEAT_TIME = local(2026, 7, 3, 14, 0)
AFTER_QUALIFYING = local(2026, 8, 1, 10, 0)
AFTER_SEMIS = local(2026, 8, 1, 16, 50)


def exclude(session: Session, kind: str, number: str, *, at: datetime,
            source: str = "NGB") -> None:
    """Put a person on an exclusion list (one row, imported as compliance would)."""
    import_list(session, kind=kind, rows=parse_list(f"{number},Listed Person\n", "l.csv"),
                source=source, source_date=at.astimezone(UTC).date(), at=at, actor="compliance")
    session.commit()


def buy(session: Session, clock: FakeClock, patron: str) -> str:
    """Buy a qualifying entry for the patron; its entry id."""
    return desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=patron,
                          payment="cash").entry_id


def audit_actions(session: Session) -> list[str]:
    """The audit log's actions, oldest first."""
    return list(session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))


def table_reports(session: Session, kind: str, body: dict[str, Any], *, table: str,
                  seq: int = 9) -> Projected:
    """Project a table's message as the ingest does (same transaction rules)."""
    envelope = seal(venue="gold-reef", table=table, seq=seq, wall=HEAT_TIME, type=kind,
                    body=body, boot="b", mono=seq, signer=Signer.from_seed(table, bytes(32)))
    projected = project(session.connection(), envelope)
    session.commit()
    return projected


def table_reports_unseated(session: Session, entry_id: str, *, table: str, seat: int,
                           hands: int = 4, reason: str = "left") -> tuple[str, ...]:
    """Project the table's entry.unseated; the projection's changes."""
    return tuple(table_reports(session, "entry.unseated", {
        "entry_id": entry_id, "seat": seat, "hands_played": hands, "reason": reason,
        "at": "2026-07-03T12:30:00Z"}, table=table).changes)


def table_reports_seated(session: Session, entry_id: str, *, table: str, seat: int,
                         seq: int = 9) -> Projected:
    """Project the table's entry.seated (a late one, when `seq` is low)."""
    return table_reports(session, "entry.seated", {"entry_id": entry_id, "seat": seat},
                         table=table, seq=seq)


def snapshot(session: Session) -> Snapshot:
    """The standings snapshot as stored now (the session's cache dropped first)."""
    session.expire_all()
    return load_snapshot(session, settings())


@dataclass
class Field:
    """Patron A holds 3 of the 12 semi-final places; others[i] holds one (i < 9)."""

    a: str
    a_entries: list[str]
    others: list[str]
    other_entries: list[str]
    spare: list[str] = field(default_factory=list)  # registered patrons without a place


OTHER_SCORES = [700_000, 650_000, 600_000, 550_000, 400_000, 350_000, 300_000, 250_000,
                200_000, 150_000, 100_000]
A_SCORES = [900_000, 800_000, 360_000]


def qualifying_field(session: Session, clock: FakeClock) -> Field:
    """15 entries: A's three, eleven others, and an unacknowledged R9,900 that cannot count."""
    clock.now = HEAT_TIME
    a = register(session, clock, "5001015009087", name="Patron A")
    others = [register(session, clock, f"60010150{i:05d}", name=f"Other {i}") for i in range(11)]
    spare = [register(session, clock, f"70010150{i:05d}", name=f"Spare {i}") for i in range(3)]
    a_entries = [buy(session, clock, a) for _ in A_SCORES]
    other_entries = [buy(session, clock, o) for o in others]
    unacked = buy(session, clock, others[9])
    recorded = local(2026, 7, 3, 15, 0)
    for n, (entry, score) in enumerate(zip(a_entries + other_entries, A_SCORES + OTHER_SCORES,
                                           strict=True)):
        add_score(session, entry, score, stage="qualifying", recorded=recorded,
                  acknowledged=recorded + timedelta(minutes=n), seq=n + 1)
    add_score(session, unacked, 990_000, stage="qualifying", recorded=recorded,
              acknowledged=None, seq=99)
    return Field(a=a, a_entries=a_entries, others=others, other_entries=other_entries,
                 spare=spare)


def semis(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    """The qualifying field, and the twelve semi-final places allocated from it."""
    f = qualifying_field(session, clock)
    clock.now = AFTER_QUALIFYING
    return f, list(desk.allocate_semis(session, settings(), clock, actor="desk-1"))


SEMI_SCORES = [410_000, 120_000, 330_000, 90_000, 500_000, 275_000, 305_000, 60_000, 220_000,
               180_000, 260_000, 30_000]


def final_field(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    """Semis played (proxies x and y play A's extra places); the Final's six places allocated."""
    s = settings()
    f, places = semis(session, clock)
    a_places = [p.entry_id for p in places if p.holder == f.a]
    for extra, proxy in zip(a_places[1:], f.spare[:2], strict=True):
        desk.nominate_proxy(session, s, clock, actor="desk-1", entry_id=extra,
                            proxy_patron_id=proxy)
    for n, p in enumerate(places):
        desk.choose_seat(session, s, clock, actor="desk-1", entry_id=p.entry_id,
                         heat=1 + n // 6, seat=1 + n % 6)
    clock.now = local(2026, 8, 1, 15, 55)
    for heat, table in ((1, "t05"), (2, "t06")):
        desk.open_heat(session, s, clock, actor="desk-1", table=table, stage="semi_final",
                       heat_id=f"semi-final-{heat}")
    for n, p in enumerate(places):
        seating = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=p.entry_id,
                                  table="t05" if n < 6 else "t06")
        assert seating.seat == 1 + n % 6
    clock.now = local(2026, 8, 1, 16, 40)
    for n, (p, score) in enumerate(zip(places, SEMI_SCORES, strict=True)):
        add_score(session, p.entry_id, score, stage="semi_final", recorded=clock.now,
                  acknowledged=clock.now + timedelta(seconds=n), seq=100 + n)
    clock.now = AFTER_SEMIS
    return f, list(desk.allocate_final(session, s, clock, actor="desk-1"))


FINAL_SCORES = [180_000, 450_000, 320_000, 90_000, 260_000, 410_000]


def played_final(session: Session, clock: FakeClock) -> tuple[Field, list[desk.Place]]:
    """The Final played: drawn, seated at t07, and its six scores stored."""
    s = settings()
    f, finals = final_field(session, clock)
    desk.draw_final(session, s, clock, actor="desk-1")
    clock.now = local(2026, 8, 1, 16, 58)
    desk.open_heat(session, s, clock, actor="desk-1", table="t07", stage="final")
    for p in finals:
        desk.seat_entry(session, s, clock, actor="desk-1", entry_id=p.entry_id, table="t07")
    clock.now = local(2026, 8, 1, 18, 0)
    for n, (p, score) in enumerate(zip(finals, FINAL_SCORES, strict=True)):
        add_score(session, p.entry_id, score, stage="final", recorded=clock.now,
                  acknowledged=clock.now + timedelta(seconds=n), seq=200 + n)
    return f, finals


def counted(session: Session) -> list[tuple[str, int]]:
    """The qualifying board as it stands: (entry, counted cents), best first."""
    board = qualifying_leaderboard(desk.score_records(session, settings(), Stage.QUALIFYING),
                                   settings())
    return [(p.record.entry_id, p.record.score_cents) for p in board.places]
