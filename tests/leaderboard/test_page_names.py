"""How the page names patrons, from the desk to the standings document (SQLite and
PostgreSQL): consent and a screen name recorded at registration (the desk, its API and
`showdown desk register --consent-name --screen-name`), every entry given a short code
when stored (revision 0011 gives existing entries theirs), and the document under each
house setting: a name only with consent or when chosen, the code otherwise, never the id."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.db import upgrade
from leaderboard.desk import Conflict, DeskError
from leaderboard.display_names import entry_code
from leaderboard.models import AuditEntry, Base, Entry, Patron
from leaderboard.standings.live import LiveStandings
from leaderboard.standings.view import ViewOptions, standings, strip_names
from tests.cli.test_desk import ADULT as CLI_ADULT
from tests.cli.test_desk import Desk, central, run  # noqa: F401 (the fixtures)
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import buy
from tests.leaderboard.desk_helpers import ADULT, FakeClock, settings
from tests.leaderboard.test_schema_constraints import HEAD, at_revision, downgrade_to, revision_of

AT = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def register(session: Session, clock: FakeClock, number: str, name: str, **display: object
             ) -> str:
    return desk.register_patron(session, settings(), clock, actor="desk-1", name=name,
                                id_kind="id_document", id_number=number, birth_date=ADULT,
                                **display).patron_id  # type: ignore[arg-type]


def test_consent_and_a_screen_name_are_recorded_at_registration(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", "Thandiwe Mokoena", name_consent=True,
                   screen_name="  Lucky   Thandi ")
    patron = session.get(Patron, pid)
    assert patron is not None
    assert (patron.name_consent, patron.screen_name) == (True, "Lucky Thandi")
    audit = session.scalars(select(AuditEntry).where(
        AuditEntry.action == "patron.registered")).one()
    assert audit.detail["name_consent"] is True
    assert audit.detail["screen_name"] == "Lucky Thandi"
    other = register(session, clock, "7001015009087", "Sipho Dlamini")
    plain = session.get(Patron, other)
    assert plain is not None and (plain.name_consent, plain.screen_name) == (False, None)


def test_a_screen_name_taken_or_unfit_is_refused_and_nothing_is_registered(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", "Thandiwe Mokoena",
                   screen_name="Lucky Thandi")
    with pytest.raises(Conflict, match=f"already patron {pid}'s: choose another"):
        register(session, clock, "7001015009087", "Sipho Dlamini", screen_name="lucky  THANDI")
    with pytest.raises(DeskError, match="letters, digits, spaces"):
        register(session, clock, "7001015009087", "Sipho Dlamini", screen_name="<script>")
    assert session.scalar(select(sa.func.count()).select_from(Patron)) == 1


def test_every_entry_gets_its_code_when_stored(session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", "Thandiwe Mokoena")
    entries = [buy(session, clock, pid) for _ in range(3)]
    codes = {e.entry_id: e.entry_code for e in session.scalars(select(Entry))}
    assert codes == {e: entry_code(e) for e in entries}
    assert len(set(codes.values())) == 3


def colliding_ids() -> tuple[str, str]:
    """Two entry ids whose short codes are the same (found by trying ids in turn)."""
    seen: dict[str, str] = {}
    for n in range(1_000_000):
        entry_id = f"E-{n:016x}"
        code = entry_code(entry_id)
        if code in seen:
            return seen[code], entry_id
        seen[code] = entry_id
    raise AssertionError("no collision among a million ids")


def test_a_code_another_entry_of_the_stage_has_is_made_longer(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", "Thandiwe Mokoena")
    first, second = colliding_ids()
    for entry_id in (first, second):
        desk.buy_entry(session, settings(), clock, actor="desk-1", patron_id=pid,
                       payment="cash", entry_id=entry_id)
    one, two = session.get(Entry, first), session.get(Entry, second)
    assert one is not None and two is not None
    assert one.entry_code == entry_code(first) and len(one.entry_code) == 6
    assert two.entry_code is not None and len(two.entry_code) == 7
    assert two.entry_code.startswith(one.entry_code)  # K7-42F, then K7-42FQ


def test_the_document_names_only_those_who_may_be_named(
        engine: Engine, session: Session, clock: FakeClock) -> None:
    consent = register(session, clock, "8001015009087", "Thandiwe Mokoena", name_consent=True)
    chosen = register(session, clock, "7001015009087", "Sipho Dlamini",
                      screen_name="Ace of Spades")
    neither = register(session, clock, "6001015009087", "Pieter van der Merwe")
    entries = {p: buy(session, clock, p) for p in (consent, chosen, neither)}
    session.commit()
    with Session(engine) as s:
        for entry_id in entries.values():
            s.execute(sa.text(
                "INSERT INTO scores (entry_id, table_id, seq, stage, heat_id, score_cents,"
                " hands, status, recorded_at, acknowledged_at, ack_method) VALUES"
                " (:e, 't01', :seq, 'qualifying', 'h', 100000, 10, 'finished', :at, :at,"
                " 'tap')"), {"e": entry_id, "seq": len(entry_id), "at": AT})
        s.commit()
    now = datetime(2026, 7, 3, 18, 0, tzinfo=UTC)

    def rows(names: str) -> dict[str, tuple[str, str | None]]:
        options = ViewOptions(venue="v", title="T", names=names)  # type: ignore[arg-type]
        full = standings(engine, settings(), options, now=now)
        live = LiveStandings(engine, settings(), options).document(now)
        assert [r["code"] for r in full["board"]["rows"]] == [
            r["code"] for r in live["board"]["rows"]]
        assert [r.get("name") for r in full["board"]["rows"]] == [
            r.get("name") for r in live["board"]["rows"]]
        return {r["entry_id"]: (r["code"], r.get("name")) for r in full["board"]["rows"]}

    code = {p: entry_code(entries[p]) for p in entries}
    assert rows("first_name_initial") == {
        entries[consent]: (code[consent], "Thandiwe M."),
        entries[chosen]: (code[chosen], None), entries[neither]: (code[neither], None)}
    assert rows("screen_name") == {
        entries[consent]: (code[consent], None),
        entries[chosen]: (code[chosen], "Ace of Spades"), entries[neither]: (code[neither], None)}
    assert rows("entry_code") == {e: (code[p], None) for p, e in entries.items()}
    named = standings(engine, settings(), ViewOptions(venue="v", title="T",
                                                      names="first_name_initial"), now=now)
    public = json.dumps(strip_names(named))
    assert "Thandiwe" not in public and code[consent] in public  # codes are not PII


def test_0011_gives_existing_entries_codes_and_no_one_consent(database_url: Database) -> None:
    engine = at_revision(database_url, "0010")
    with engine.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO patrons (patron_id, name, id_kind, id_number, birth_date, created_at)"
            " VALUES ('P-1', 'Thandiwe Mokoena', 'id_document', '8001015009087', :born, :at)"),
            {"born": ADULT, "at": AT})
        for n, stage in enumerate(("qualifying", "qualifying", "semi_final")):
            prefix = {"qualifying": "E-", "semi_final": "S-"}[stage]
            connection.execute(sa.text(
                "INSERT INTO entries (entry_id, patron_id, stage, buy_in_cents, bought_at,"
                " status) VALUES (:e, 'P-1', :stage, 10000, :at, 'registered')"),
                {"e": f"{prefix}{n:016x}" if n < 2 else "S-0000000000000000", "stage": stage,
                 "at": AT})
    upgrade(engine)
    assert revision_of(engine) == HEAD
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    with Session(engine) as s:
        codes = {e.entry_id: e.entry_code for e in s.scalars(select(Entry))}
        patron = s.get(Patron, "P-1")
        assert patron is not None and patron.name_consent is False
    assert codes == {"E-0000000000000000": entry_code("E-0000000000000000"),
                     "E-0000000000000001": entry_code("E-0000000000000001"),
                     "S-0000000000000000": entry_code("E-0000000000000000")}  # one code
    downgrade_to(engine, "0010")
    assert "entry_code" not in {c["name"] for c in sa.inspect(engine).get_columns("entries")}
    if engine.dialect.name == "sqlite":  # the standings' triggers survive the way down
        with engine.connect() as connection:
            triggers = connection.execute(sa.text(
                "SELECT name FROM sqlite_master WHERE type = 'trigger'")).scalars().all()
        assert len(triggers) == 6
    upgrade(engine)
    engine.dispose()


def test_the_desk_cli_records_consent_and_a_screen_name(run: Desk) -> None:  # noqa: F811
    shown = run.json("register", *CLI_ADULT, "--consent-name", "--screen-name", "Lucky Thabo")
    assert (shown["name_consent"], shown["screen_name"]) == (True, "Lucky Thabo")
    code, out, err = run("buy", "--patron", shown["patron_id"], "--payment", "cash")
    assert code == 0, err
    entry_id = out.rstrip().split()[-1]  # the line names the entry by its code (D331)
    assert out.startswith(f"entry {entry_code(entry_id)} for the heat of")
    assert out.rstrip().endswith(f"entry id {entry_id}")
    code, out, err = run("patron", "display", "--patron", shown["patron_id"],
                         "--no-consent-name", "--no-screen-name")
    assert code == 0, err
    assert out == f"patron {shown['patron_id']}: no consent to be named, no screen name\n"
    code, _, err = run("register", "--name", "Sipho Dlamini", "--id-kind", "id_document",
                       "--id-number", "7001015009087", "--birth-date", "1970-01-01",
                       "--screen-name", "x")
    assert code != 0 and err.count("\n") == 1
    assert "the screen name must be 2 to 20 characters, got 1" in err




def test_consent_and_the_screen_name_can_be_recorded_after_registration(
        session: Session, clock: FakeClock) -> None:
    pid = register(session, clock, "8001015009087", "Thandiwe Mokoena")  # before the page did
    other = register(session, clock, "7001015009087", "Sipho Dlamini", screen_name="Ace")
    patron = desk.set_patron_display(session, clock, actor="desk-1", patron_id=pid,
                                     name_consent=True, screen_name="Lucky Thandi")
    assert (patron.name_consent, patron.screen_name) == (True, "Lucky Thandi")
    again = desk.set_patron_display(session, clock, actor="desk-1", patron_id=pid,
                                    screen_name="LUCKY thandi")  # their own name, retyped
    assert again.screen_name == "LUCKY thandi"
    with pytest.raises(Conflict, match=f"already patron {other}'s"):
        desk.set_patron_display(session, clock, actor="desk-1", patron_id=pid,
                                screen_name="ace")
    with pytest.raises(DeskError, match="give the name consent"):
        desk.set_patron_display(session, clock, actor="desk-1", patron_id=pid)
    gone = desk.set_patron_display(session, clock, actor="desk-1", patron_id=pid,
                                   name_consent=False, clear_screen_name=True)
    assert (gone.name_consent, gone.screen_name, gone.screen_name_key) == (False, None, None)
    changes = session.scalars(select(AuditEntry.detail).where(
        AuditEntry.action == "patron.display").order_by(AuditEntry.id)).all()
    assert [c.get("name_consent") for c in changes] == [True, None, False]
