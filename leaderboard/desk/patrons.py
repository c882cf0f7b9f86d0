"""Patrons: checking a person's eligibility, registering a patron (rules 1-3, 5) with every
document they present, and the proof a participant gives at the table (rewards card and PIN,
kept only as hashes). A possible list match by name holds the registration for a supervisor
(leaderboard.desk.holds)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Final

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from game.card_forms import CARD_FORMS, CardForm
from game.messages.desk import ParticipantProofs
from game.tournament.schema import TournamentSettings
from leaderboard.desk.action import (
    begin_action,
    conflict_on_race,
    desk_now,
    refuse,
    write_audit,
)
from leaderboard.desk.command_log import record_command
from leaderboard.desk.credentials import hashed, pin_number, rewards_card_number
from leaderboard.desk.documents import document_number, holder_of, store_documents
from leaderboard.desk.errors import Conflict, DeskError
from leaderboard.desk.holds import CLEAR, open_hold
from leaderboard.desk.ids import new_id
from leaderboard.desk.lookups import get_patron, local_day
from leaderboard.desk.values import DeskCommand
from leaderboard.display_names import check_screen_name as _check_screen_name
from leaderboard.display_names import screen_name_key
from leaderboard.eligibility import (
    ID_KINDS,
    Candidate,
    Verdict,
    as_utc,
    check,
    normalize_id,
    record_refusal,
)
from leaderboard.models import Entry, Patron, Score
from leaderboard.projections import SEATED
from runtime.clocks import WallClock

_MAX_AGE: Final = 130
REWARDS_CARD: Final = "rewards_card"
CREDENTIALS_SENT: Final = "patron.credentials_sent"  # the audit action of each command


def _birth_date(value: date | str) -> date:
    if isinstance(value, datetime):
        raise DeskError(f"birth date must be a date, not a date and time ({value!r})")
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise DeskError(f"birth date {value!r} is not a date such as 1990-05-31") from None


def _candidate(*, id_number: str, name: str, birth_date: date | str) -> Candidate:
    try:
        number = normalize_id(str(id_number))
    except ValueError as exc:
        raise DeskError(str(exc)) from None
    clean = " ".join(str(name).split())
    if not clean:
        raise DeskError("the patron's name is empty")
    if len(clean) > 200:
        raise DeskError("the patron's name is longer than 200 characters")
    return Candidate(id_number=number, name=clean, birth_date=_birth_date(birth_date))


def check_person(session: Session, settings: TournamentSettings, clock: WallClock, *, actor: str,
                 patron_id: str | None = None, id_number: str | None = None,
                 name: str | None = None, birth_date: date | str | None = None) -> Verdict:
    """Check a registered patron or a would-be one; a negative answer is recorded (context
    "check") like every refusal."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    person: Candidate | Patron
    if patron_id is not None:
        person = get_patron(session, patron_id)
    elif id_number is not None and name is not None and birth_date is not None:
        person = _candidate(id_number=id_number, name=name, birth_date=birth_date)
    else:
        raise DeskError("give a patron id, or an id number, name and birth date")
    verdict = check(session, person, now, tz=settings.tz, names=settings.name_checks)
    if not verdict.eligible:
        record_refusal(session, person, verdict, now, context="check", actor=actor)
    session.commit()
    return verdict


def _proof(patron: Patron, *, rewards_card: str | None, pin: str | None,
           forms: tuple[CardForm, ...]) -> dict[str, bool]:
    """Set the patron's card and PIN hashes from what is given (a patron registered by
    rewards card has that card by default); what was set (only that), for the audit. The
    card is hashed in the form a reader's tap of it has (game.card_forms), so it matches."""
    card = rewards_card
    if card is None and patron.card_hash is None and patron.id_kind == REWARDS_CARD:
        card = patron.id_number
    if card is not None:
        patron.card_hash = hashed(rewards_card_number(card, forms))
    if pin is not None:
        patron.pin_hash = hashed(pin_number(pin, "the participant's"))
    return {name: True for name, given in (("card", card), ("pin", pin)) if given is not None}


def register_patron(session: Session, settings: TournamentSettings, clock: WallClock, *,
                    actor: str, name: str, id_kind: str, id_number: str,
                    birth_date: date | str, why: str | None = None,
                    rewards_card: str | None = None, pin: str | None = None,
                    name_consent: bool = False, screen_name: str | None = None) -> Patron:
    """Register a patron by rewards card, ID document or driver's licence (rule 5), after
    the eligibility check (rules 1-3); an ineligible person is refused and recorded.

    ``rewards_card`` and ``pin`` are what the participant acknowledges a score with at the
    table (stored hashed); registered by rewards card, that card is theirs by default. The
    rewards card is one of the patron's documents too (checked against the lists). A name
    match on a list without a document match registers the patron HELD (``standing``) for a
    supervisor's decision: they can neither buy nor be seated meanwhile.

    ``name_consent``: the patron agreed to be shown by first name and initial (when the
    house shows names so); ``screen_name``: a name they chose to be shown by (checked,
    unique whatever its case and spacing)."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    if id_kind not in ID_KINDS:
        raise DeskError(f"unknown document kind {id_kind!r} (one of {', '.join(ID_KINDS)})")
    forms = settings.card_forms
    if id_kind == REWARDS_CARD:  # a card that can never be tapped is no rewards card
        id_number = rewards_card_number(id_number, forms, field="id_number")
    person = _candidate(id_number=id_number, name=name, birth_date=birth_date)
    documents = [(id_kind, person.id_number)]
    if rewards_card is not None:
        card = rewards_card_number(rewards_card, forms)
        if card != person.id_number:
            documents.append((REWARDS_CARD, document_number(REWARDS_CARD, card)))
    if pin is not None:
        pin_number(pin, "the participant's")
    shown = _screen_name(session, screen_name) if screen_name is not None else None
    today = local_day(settings, now)
    if person.birth_date > today or today.year - person.birth_date.year > _MAX_AGE:
        raise DeskError(f"birth date {person.birth_date} is not plausible")
    for kind, number in documents:
        existing = holder_of(session, number)
        if existing is not None:
            raise Conflict(f"{kind} {number} is already registered as patron {existing}")
    person = Candidate(id_number=person.id_number, name=person.name,
                       birth_date=person.birth_date,
                       documents=tuple(n for _, n in documents[1:]))
    verdict = check(session, person, now, tz=settings.tz, names=settings.name_checks)
    if not verdict.eligible:
        raise refuse(session, person, verdict, now, context="registration", actor=actor,
                     who="registration")
    patron = Patron(patron_id=new_id("P-"), name=person.name, id_kind=id_kind,
                    id_number=person.id_number, birth_date=person.birth_date,
                    created_at=as_utc(now), standing=CLEAR, name_consent=name_consent,
                    screen_name=shown, screen_name_key=screen_name_key(shown) if shown else None)
    proof = _proof(patron, rewards_card=rewards_card, pin=pin, forms=forms)
    display = {**({"name_consent": True} if name_consent else {}),  # only what was given
               **({"screen_name": shown} if shown else {})}

    def raced() -> str:
        for kind, number in documents:
            other = holder_of(session, number)
            if other is not None:
                return (f"{kind} {number} was registered at the same moment at another desk,"
                        f" as patron {other}")
        if shown is not None and _screen_name_holder(session, shown) is not None:
            return f"the screen name {shown!r} was taken at the same moment at another desk"
        return "the patron was registered at the same moment at another desk"

    with conflict_on_race(session, raced):
        session.add(patron)
        session.flush()
        store_documents(session, patron, documents, now=now, actor=actor)
        write_audit(session, now, actor, "patron.registered",
                    detail={"patron_id": patron.patron_id, "id_kind": id_kind,
                            "documents": [k for k, _ in documents], **proof, **display},
                    why=why)
        if verdict.held:
            open_hold(session, patron, verdict, now, context="registration", actor=actor)
        session.commit()
    return patron


def check_screen_name(raw: str) -> str:
    """A screen name as it will be shown, or DeskError saying what is wrong with it."""
    try:
        return _check_screen_name(raw)
    except ValueError as exc:
        raise DeskError(str(exc)) from None


def _screen_name_holder(session: Session, name: str) -> str | None:
    return session.scalar(select(Patron.patron_id).where(
        Patron.screen_name_key == screen_name_key(name)))


def _screen_name(session: Session, raw: str) -> str:
    """A screen name checked (DeskError) and free (Conflict naming who has it)."""
    name = check_screen_name(raw)
    holder = _screen_name_holder(session, name)
    if holder is not None:
        raise Conflict(f"the screen name {name!r} is already patron {holder}'s: choose another")
    return name


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialsSet:
    """A patron's proofs recorded, and the ``participant_proofs`` commands that carry them to every
    table where an entry they play is seated or has a score waiting for acknowledgement."""

    patron: Patron
    commands: tuple[DeskCommand, ...]


def _waiting_tables(session: Session, patron_id: str) -> list[tuple[str, str]]:
    """(entry id, table) of every entry the patron plays whose table holds its proofs: seated
    there and not yet acknowledged (nor voided)."""
    rows = session.execute(
        select(Entry, Score).outerjoin(Score, Score.entry_id == Entry.entry_id)
        .where(Entry.status == SEATED, Entry.table_id.is_not(None),
               or_(Entry.played_by == patron_id,
                   and_(Entry.played_by.is_(None), Entry.patron_id == patron_id)))
        .order_by(Entry.entry_id)).all()
    out: list[tuple[str, str]] = []
    for row in rows:
        entry: Entry = row[0]
        score: Score | None = row[1]  # the outer join: None when no score yet
        if score is None:
            out.append((entry.entry_id, str(entry.table_id)))
        elif score.acknowledged_at is None and score.voided_at is None:
            out.append((entry.entry_id, score.table_id))
    return out


def set_patron_credentials(session: Session, clock: WallClock, *, actor: str, patron_id: str,
                           rewards_card: str | None = None, pin: str | None = None,
                           why: str | None = None,
                           card_forms: tuple[CardForm, ...] = CARD_FORMS) -> CredentialsSet:
    """Record a patron's rewards card and/or PIN (hashed; each replaces the one before;
    the card checked against ``card_forms``, the venue's readers'); entries seated from now
    on carry them to the table, and a ``participant_proofs`` command is recorded for each table
    already holding an entry of theirs (D330), to send."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    patron = get_patron(session, patron_id)
    if rewards_card is None and pin is None:
        raise DeskError("give a rewards card number or a PIN (or both)")
    proof = _proof(patron, rewards_card=rewards_card, pin=pin, forms=card_forms)
    row = write_audit(session, now, actor, "patron.credentials",
                      detail={"patron_id": patron.patron_id, **proof}, why=why)
    commands = []
    for entry_id, table in _waiting_tables(session, patron.patron_id):
        command = ParticipantProofs(entry_id=entry_id, card_hash=patron.card_hash,
                              pin_hash=patron.pin_hash)
        sent = write_audit(session, now, actor, CREDENTIALS_SENT, detail={
            "table": table, "command": command.NAME, "args": command.args(),
            "entry_id": entry_id, "patron_id": patron.patron_id, "credentials": row.id,
            **proof}, why=why)
        commands.append(record_command(session, sent, table, command))
    session.commit()
    return CredentialsSet(patron=patron, commands=tuple(commands))


def set_patron_display(session: Session, clock: WallClock, *, actor: str, patron_id: str,
                       name_consent: bool | None = None, screen_name: str | None = None,
                       clear_screen_name: bool = False, why: str | None = None) -> Patron:
    """Record, after registration, whether the patron agrees to be shown by first name and
    initial and/or the screen name they chose (checked and unique, as at registration), or
    take the screen name away (``clear_screen_name``); the page follows at once."""
    actor = begin_action(session, actor)
    now = desk_now(clock)
    patron = get_patron(session, patron_id)
    if name_consent is None and screen_name is None and not clear_screen_name:
        raise DeskError("give the name consent, a screen name or no screen name")
    if screen_name is not None and clear_screen_name:
        raise DeskError("give a screen name or take it away, not both")
    detail: dict[str, object] = {"patron_id": patron.patron_id}
    if name_consent is not None:
        patron.name_consent = name_consent
        detail["name_consent"] = name_consent
    if screen_name is not None:
        shown = check_screen_name(screen_name)
        holder = _screen_name_holder(session, shown)
        if holder is not None and holder != patron.patron_id:
            raise Conflict(f"the screen name {shown!r} is already patron {holder}'s:"
                           " choose another")
        patron.screen_name, patron.screen_name_key = shown, screen_name_key(shown)
        detail["screen_name"] = shown
    if clear_screen_name:
        patron.screen_name = patron.screen_name_key = None
        detail["screen_name"] = None

    def raced() -> str:
        return f"the screen name {patron.screen_name!r} was taken at the same moment"

    with conflict_on_race(session, raced):
        write_audit(session, now, actor, "patron.display", detail=detail, why=why)
        session.commit()
    return patron
