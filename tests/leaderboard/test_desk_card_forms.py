"""The rewards card checked against the forms the venue's readers produce (issue 31 item 5,
D329): a card no reader can produce is refused with the reason, and a card registered at
the desk is stored in the form the table's driver reports a tap of it, so the tap matches.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from drivers.id_codec import encode_tap, parse_line
from drivers.readings import IdForm, IdTap
from game.card_forms import CardForm, read_card
from game.errors import ConfigError
from game.staff import secret_matches
from game.tournament.schema import ConfigErrors
from leaderboard import desk
from leaderboard.desk import DeskError
from leaderboard.desk.config import parse_desk_config
from leaderboard.models import Patron, PatronDocument
from runtime.settings_files import read_tournament
from tests.leaderboard.desk_helpers import FakeClock, register, settings

REPO = Path(__file__).resolve().parents[2]


def tapped(number: str, form: IdForm) -> str:
    """The number the table's ID reader driver reports for a tap of this card."""
    read = parse_line(encode_tap(number, form).rstrip(b"\r\n"), device="id", at_mono=0.0)
    assert isinstance(read, IdTap), read
    return read.number


@pytest.mark.parametrize(("given", "number", "form"), [
    ("6012 3456 7890 1234", "6012345678901234", "track2"),
    ("6012-3456-78", "6012345678", "plain"),
    ("04 a1 b2 c3 d4 e5 f6", "04A1B2C3D4E5F6", "uid"),
    ("UID:04a1b2c3", "04A1B2C3", "uid"),
])
def test_a_card_registered_at_the_desk_matches_its_tap_at_the_table(
        session: Session, clock: FakeClock, given: str, number: str, form: IdForm) -> None:
    patron = desk.register_patron(session, settings(), clock, actor="desk-1", name="Card Holder",
                                  id_kind="id_document", id_number="8001015009087",
                                  birth_date="1980-01-01", rewards_card=given)
    assert patron.card_hash is not None
    assert secret_matches(tapped(number, form), patron.card_hash)
    # The document on file is the same number, so the card identifies one patron whatever
    # way it is written at the desk.
    stored = session.scalars(select(PatronDocument.number).where(
        PatronDocument.patron_id == patron.patron_id, PatronDocument.kind == "rewards_card"))
    assert list(stored) == [number]


def test_a_card_no_reader_produces_is_refused_saying_why(
        session: Session, clock: FakeClock) -> None:
    s = settings()
    with pytest.raises(DeskError) as refused:
        desk.register_patron(session, s, clock, actor="desk-1", name="Bad Card",
                             id_kind="rewards_card", id_number="RC-100001",
                             birth_date="1980-01-01")
    message = str(refused.value)
    assert message.startswith("field 'id_number': RC-100001: a rewards card reads as 8 to 19"
                              " digits or a hex UID")
    assert "this venue's readers produce swiped card numbers (track 2), typed or plain card" \
        " numbers and chip UIDs" in message
    assert session.scalar(select(Patron).where(Patron.name == "Bad Card")) is None
    pid = register(session, clock, "8001015009087")
    with pytest.raises(DeskError, match="field 'rewards_card': 12345: a rewards card reads"):
        desk.set_patron_credentials(session, clock, actor="desk-1", patron_id=pid,
                                    rewards_card="12345")
    with pytest.raises(DeskError, match="field 'number': RC-1: a rewards card reads"):
        desk.add_document(session, s, clock, actor="desk-1", patron_id=pid,
                          kind="rewards_card", number="RC-1")
    assert session.get(Patron, pid).card_hash is None  # type: ignore[union-attr]


def test_the_venue_setting_narrows_the_forms(session: Session, clock: FakeClock) -> None:
    uid_only = dataclasses.replace(settings(), card_forms=("uid",))
    with pytest.raises(DeskError, match="a card number is not read by this venue's card readers;"
                                        " they produce chip UIDs of 8, 14 or 20 hex digits"):
        desk.register_patron(session, uid_only, clock, actor="desk-1", name="Swipe Only",
                             id_kind="id_document", id_number="8001015009087",
                             birth_date="1980-01-01", rewards_card="6012345678901234")
    patron = desk.register_patron(session, uid_only, clock, actor="desk-1", name="Chip",
                                  id_kind="id_document", id_number="8001015009087",
                                  birth_date="1980-01-01", rewards_card="04A1B2C3D4E5F6")
    assert secret_matches(tapped("04A1B2C3D4E5F6", "uid"), patron.card_hash or "")
    swipe_only: tuple[CardForm, ...] = ("track2", "plain")
    with pytest.raises(ValueError, match="a chip UID is not read"):
        read_card("04A1B2C3D4E5F6", swipe_only)
    assert read_card("6012 3456 7890 1234", swipe_only) == "6012345678901234"


def test_the_settings_are_checked_naming_the_file_and_key(tmp_path: Path) -> None:
    shipped = (REPO / "config" / "tournament.toml").read_text(encoding="utf-8")
    assert 'card_forms = ["track2", "plain", "uid"]' in shipped
    bad = tmp_path / "tournament.toml"
    bad.write_text(shipped.replace('card_forms = ["track2", "plain", "uid"]',
                                   'card_forms = ["track2", "barcode"]'), encoding="utf-8")
    with pytest.raises(ConfigErrors, match=r"venue\.card_forms: list the forms the venue's card"
                                           r" readers produce"):
        read_tournament(bad)
    older = tmp_path / "older.toml"  # written before the key: every form
    older.write_text(shipped.replace('card_forms = ["track2", "plain", "uid"]', ""),
                     encoding="utf-8")
    assert read_tournament(older).card_forms == ("track2", "uid", "plain")
    # How names are shown is the central service's setting now ([page] names): a desk.toml
    # that still sets it is told so, naming the key (D353).
    with pytest.raises(ConfigError, match=r"desk\.names: .*central service"):
        parse_desk_config({"desk": {"api_url": "https://lb.casino.lan/", "names": "full"}},
                          source="desk.toml", base=tmp_path)
