"""The table's chip duties as a component (`game.table.chip_duties.TableChips`): the core
holds one and calls it through its interface, and it works alone, driven by a test as the
core drives it (a session, and a `ChipOutput` collecting its messages and alerts)."""

from __future__ import annotations

import pytest

from game.chips.float import ChipFloat
from game.chips.registry import Chip, ChipRegistry
from game.chips.spot_book import SpotBook
from game.hand.deal import DEFAULT_DEAL
from game.messages.chips import ChipsReconciled
from game.messages.table import TableMessage
from game.table.chip_duties import ChipOutput, ChipRefused, TableChips
from game.table.core import TableCore
from game.table.session import TableSession
from game.tournament.entries import Entry, Stage
from tests.game.table.test_table_console import PAYTABLES, SETTINGS, T0

R25 = 2_500
RULES = SETTINGS.stage(Stage.QUALIFYING).rules
STACK = RULES.starting_chips_cents // R25


def uid(n: int) -> bytes:
    return bytes.fromhex(f"E0040000{n:08X}")


def registry() -> ChipRegistry:
    return ChipRegistry([Chip(uid=uid(i), value_cents=R25, chip_set="house")
                         for i in range(200)], chip_set="house")


class Fake:
    """What the core gives the component: a session, the heat, the messages, the alerts."""

    def __init__(self) -> None:
        chips = registry()
        chip_float = ChipFloat(chips)
        self.spots = SpotBook(chips, chip_float=chip_float)
        self.chips = TableChips(chip_float, self.spots)
        self.session = TableSession(table_id="T9", rules=RULES, paytables=PAYTABLES,
                                    deal=DEFAULT_DEAL)
        self.out: list[TableMessage] = []
        self.alerts: list[tuple[str, str, int]] = []

    def to(self) -> ChipOutput:
        return ChipOutput(heat_id="Q7", at=T0, out=self.out,
                          alert=lambda kind, message, seat: self.alerts.append(
                              (kind, message, seat)))

    def seat(self, entry_id: str, seat: int) -> None:
        self.session.seat_entry(Entry.start(entry_id=entry_id, rules=RULES), seat)
        self.chips.seated(entry_id, seat, self.to())


def test_the_core_holds_the_chip_duties_as_a_component_not_a_mixin() -> None:
    assert TableCore.__mro__ == (TableCore, object)
    core = TableCore(table_id="T1", settings=SETTINGS, paytables=PAYTABLES,
                     deal=DEFAULT_DEAL, registry=registry())
    assert isinstance(core.chips, TableChips)
    assert core.chips.spots is core.spots and core.spots.chip_float is core.chips.chip_float
    assert not {"_chip_seats", "_pay_before", "chip_float"} & set(vars(core))


def test_the_component_issues_a_stack_and_reconciles_it_through_its_interface() -> None:
    fake = Fake()
    fake.seat("E1", 2)
    fake.spots.see_chips(2, "ante", frozenset(uid(n) for n in range(STACK)))
    issued = fake.chips.issue(2, fake.session, fake.to())
    assert issued == {"entry_id": "E1", "issued": STACK, "value": STACK * R25}
    with pytest.raises(ChipRefused, match="still playing at seat 2"):
        fake.chips.give_back(2, fake.session, fake.to())
    fake.session.unseat(2)
    fake.spots.see_chips(2, "ante", frozenset(uid(n) for n in range(STACK - 1)))
    assert fake.chips.view(fake.session)["waiting_return"] == {"2": "E1"}
    back = fake.chips.give_back(2, fake.session, fake.to())
    assert back == {"entry_id": "E1", "returned": STACK - 1, "missing": 1,
                    "missing_value": R25}
    [message] = fake.out
    assert isinstance(message, ChipsReconciled) and message.heat_id == "Q7"
    [(kind, words, seat)] = fake.alerts
    assert (kind, seat) == ("chips_missing", 2) and "E0040000" in words
    assert fake.chips.seats == {} and fake.spots.seat_entries == {}


def test_a_stack_that_is_wrong_is_an_alert_and_refused() -> None:
    fake = Fake()
    with pytest.raises(ChipRefused, match="no entry to issue chips to"):
        fake.chips.issue(1, None, fake.to())
    fake.seat("E1", 1)
    fake.spots.see_chips(1, "ante", frozenset(uid(n) for n in range(3)))
    with pytest.raises(ChipRefused, match="the starting stack is"):
        fake.chips.issue(1, fake.session, fake.to())
    assert [(k, s) for k, _, s in fake.alerts] == [("chip_issue_wrong", 1)]
    assert fake.out == [] and fake.chips.chip_float.issued == {}


def test_a_new_entry_at_a_seat_first_reconciles_the_chips_left_there() -> None:
    fake = Fake()
    fake.seat("E1", 3)
    fake.spots.see_chips(3, "ante", frozenset(uid(n) for n in range(STACK)))
    fake.chips.issue(3, fake.session, fake.to())
    fake.session.unseat(3)
    fake.seat("E2", 3)  # E1's chips still lie on the seat: they come back as they lie
    [message] = fake.out
    assert isinstance(message, ChipsReconciled) and message.entry_id == "E1"
    assert fake.alerts == [] and fake.chips.seats == {3: "E2"}
