"""Console actions through the real console HTTP of a real table daemon (simulated shoe and
chip reader behind the real drivers): every field family refused at the door with the field
named, HTTP 400 and nothing journaled; several alerts resolved in one act, each resolution
recorded; a settled hand voided at the table into the same ``hand.corrected`` the desk's
ruling makes, naming the supervisor; the table's refusals of a ruling (HTTP 200, journaled)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.console_config import parse_console
from game.errors import ConfigError
from game.hand.events import AlertResolved
from game.messages.corrections import HandCorrected
from tests.controller.console.support import (
    DEALER,
    HANDS,
    SUPERVISOR,
    ConsoleTable,
    console_table,
    unchunk,
)
from tests.controller.console.test_app import _unchanged


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer from the console: status and JSON body (and a set cookie, if any)."""

    status: int
    body: dict[str, Any]
    cookie: str | None


async def http(table: ConsoleTable, path: str, body: Mapping[str, Any],
               cookie: str | None = None) -> Reply:
    """POST JSON to the daemon's console on its port (HTTP/1.1 over a socket)."""
    data = json.dumps(body).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", table.port)
    try:
        jar = f"Cookie: showdown_session={cookie}\r\n" if cookie else ""
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{table.port}\r\n"
                     f"Connection: close\r\nContent-Type: application/json\r\n{jar}"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await writer.drain()
        raw = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    head, _, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    set_cookie = [x.split(":", 1)[1].strip() for x in lines[1:]
                  if x.lower().startswith("set-cookie:")]
    token = set_cookie[0].split(";", 1)[0].split("=", 1)[1] if set_cookie else None
    if b"transfer-encoding: chunked" in head.lower():
        payload = unchunk(payload)
    return Reply(status, json.loads(payload), token)



async def signed_in(table: ConsoleTable, person: Mapping[str, str]) -> str:
    """A session cookie from the console's sign-in."""
    reply = await http(table, "/api/sign-in", {"staff_id": person["staff_id"],
                                               "pin": person["pin"]})
    assert reply.body["ok"] and reply.cookie, reply
    return reply.cookie


async def action(table: ConsoleTable, cookie: str, name: str, **fields: Any) -> Reply:
    """A staff action from the console's screen."""
    return await http(table, "/api/action", {"action": name, **fields}, cookie)


DOOR_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # the two: a float amount and a seat the table does not have
    ("manual_wager", {"seat": 1, "spot": "ante", "amount": 12.5}, "amount",
     "amount: R0.125 is not a whole number of cents"),
    ("manual_wager", {"seat": 9, "spot": "ante", "amount": 2_500}, "seat",
     "seat: 9 is not a seat at this table (seats 1..6)"),
    ("manual_wager", {"seat": 1, "spot": "ante", "amount": "2500"}, "amount", "is text"),
    ("manual_wager", {"seat": 1, "spot": "ante", "amount": False}, "amount",
     "amount: false is not"),
    ("manual_wager", {"seat": 1, "spot": "ante", "amount": 2_501}, "amount",
     "is not a multiple of the smallest chip"),
    ("manual_wager", {"seat": 1, "spot": "ante", "amount": -2_500}, "amount",
     "is below nothing"),
    ("manual_wager", {"seat": 3, "spot": "ante", "amount": 2_500}, "seat",
     "seat: no entry is seated at seat 3"),
    ("manual_wager", {"seat": 1, "spot": "banker", "amount": 2_500}, "spot",
     "spot: 'banker' is not a spot"),
    ("manual_card", {"card": "1x"}, "card", "card: '1x' is not a card"),
    ("correct_card", {"position": 0, "card": "As", "reason": "misread"}, "position",
     "position: no hand is in play"),
    ("resolve_alert", {"alert_id": 4, "reason": "fixed"}, "alert_id",
     "alert_id: no hand is in play"),
    ("resolve_alerts", {"alert_ids": [4, 5], "reason": "fixed"}, "alert_ids",
     "alert_ids: no hand is in play"),
    ("dispute_hand", {"hand_id": "nope-1", "seat": 1, "reason": "short"}, "hand_id",
     "hand_id: nope-1 is not a settled hand"),
    ("rule_hand", {"hand_id": "nope-1", "seat": 1, "ruling": "void", "reason": "r"},
     "hand_id", "hand_id: nope-1 is not a settled hand"),
    ("issue_chips", {"seat": 7}, "seat", "seat: 7 is not a seat"),
    ("void", {"reason": ""}, "reason", "reason: empty"),
    ("settle", {"seat": 1}, "seat", "seat: settle has no such field"),
]


async def test_every_field_family_is_refused_at_the_door_and_nothing_is_journaled(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1, 2))
        cookie = await signed_in(table, SUPERVISOR)
        local_session = await table.sign_in(SUPERVISOR)  # the local API's own session
        before, status = _unchanged(table), table.status()
        version = table.daemon.version  # the devices are idle: only our requests could move it
        for name, fields, field, words in DOOR_CASES:
            reply = await action(table, cookie, name, **fields)
            assert reply.status == 400, (name, fields, reply)
            assert reply.body["ok"] is False and reply.body["field"] == field, (name, reply)
            assert reply.body["error"].startswith(f"{field}: "), reply
            assert words in reply.body["error"], (name, reply.body)
        assert _unchanged(table) == before
        assert table.daemon.version == version
        assert table.status()["spots"] == status["spots"]
        # the local API (the technicians' socket) goes through the same door
        local = await table.daemon.on_console({"action": "manual_wager", "seat": 9,
                                               "spot": "ante", "amount": 2_500,
                                               "session": local_session})
        assert local["field"] == "seat" and local["ok"] is False
        assert _unchanged(table) == before
        # good fields pass the door and are journaled as sent, in whole cents
        good = await action(table, cookie, "manual_wager", seat=1, spot="ante", amount=2_500)
        assert good.status == 200 and good.body["ok"] is True, good
        assert table.daemon.journal is not None
        last = list(table.daemon.journal.records())[-1]
        assert (last.kind, last.payload["amount"], last.payload["by"]) == (
            "manual_wager", 2_500, SUPERVISOR["staff_id"])


async def test_a_supervisor_resolves_several_alerts_in_one_act(tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1, 2))
        session = await table.sign_in(DEALER)
        await table.place_wagers((1, 2))
        await table.act(session, "no_more_bets")
        assert table.daemon.service is not None
        await table.deal(len(table.daemon.service.deal.targets([1, 2])))
        for _ in range(3):  # three cards after the deal: three alerts
            table.shoe.deal_card(table.next_card())
        await table.until("three alerts", lambda s: len(s["hand"]["open_alerts"]) == 3)
        ids = [a["id"] for a in table.status()["hand"]["open_alerts"]]
        cookie = await signed_in(table, SUPERVISOR)
        before = _unchanged(table)

        not_open = await action(table, cookie, "resolve_alerts", alert_ids=[*ids, 99],
                                reason="cards set aside")
        assert not_open.status == 400 and not_open.body["field"] == "alert_ids"
        assert "99 is not open" in not_open.body["error"] and "none was resolved" in \
            not_open.body["error"]
        dealer = await action(table, await signed_in(table, DEALER), "resolve_alerts",
                              alert_ids=ids, reason="cards set aside")
        assert dealer.status == 200 and dealer.body["ok"] is False
        assert "supervisor" in dealer.body["error"]
        assert len(table.status()["hand"]["open_alerts"]) == 3

        cookie = await signed_in(table, SUPERVISOR)
        done = await action(table, cookie, "resolve_alerts", alert_ids=ids,
                            reason="cards set aside")
        assert done.status == 200 and done.body["ok"] is True, done
        assert table.status()["hand"]["open_alerts"] == []
        hand = table.daemon.service.core.hand
        assert hand is not None
        resolved = [(e.alert_id, e.reason, e.by) for e in hand.events
                    if isinstance(e, AlertResolved)]
        assert resolved == [(i, "cards set aside", SUPERVISOR["staff_id"]) for i in ids]
        new = [r for r in _unchanged(table) if r not in before]
        assert [k for _, k in new].count("dealer") == 2  # the dealer's refusal, the act


async def test_a_supervisor_voids_a_settled_hand_at_the_table(tmp_path: Path) -> None:
    async with console_table(tmp_path, hands=HANDS + 1) as table:
        await table.open_heat((1, 2))
        session = await table.sign_in(DEALER)
        await table.play_hand(session)
        assert table.daemon.service is not None
        core = table.daemon.service.core
        hand_id = core.recent[0]["hand_id"]
        net = int(core.recent[0]["nets"]["1"])
        session_seats = core.session.seats if core.session else {}
        balance = session_seats[1].balance_cents
        cookie = await signed_in(table, SUPERVISOR)
        journal = table.daemon.journal
        assert journal is not None
        mark = journal.last_seq()

        wrong_seat = await action(table, cookie, "rule_hand", hand_id=hand_id, seat=4,
                                  ruling="void", reason="misdeal")
        assert wrong_seat.status == 400 and wrong_seat.body["field"] == "seat"
        assert f"seat 4 did not play hand {hand_id}" in wrong_seat.body["error"]
        same = await action(table, cookie, "rule_hand", hand_id=hand_id, seat=1,
                            ruling="correct", net=net, reason="as settled")
        assert same.status == 200 and same.body["ok"] is False  # the table's refusal
        assert "already counts" in same.body["error"]

        ruled = await action(table, cookie, "rule_hand", hand_id=hand_id, seat=1,
                             ruling="void", reason="misdeal: the burn card was exposed")
        assert ruled.status == 200 and ruled.body["ok"] is True, ruled
        assert ruled.body["detail"]["moved"] == -net
        assert session_seats is not None
        assert core.session is not None and core.session.seats[1].balance_cents == \
            balance - net
        [message] = [m for m in journal.messages(1) if m.type == HandCorrected.TYPE
                     and m.record_seq > mark]
        body = dict(message.body)
        assert (body["ruling"], body["by"], body["made_at"], body["entry_id"]) == (
            "hand_voided", SUPERVISOR["staff_id"], "table", "E-H1-1")
        assert body["reason"] == "misdeal: the burn card was exposed"
        assert HandCorrected.decode(body).moved_cents == -net

        again = await action(table, cookie, "rule_hand", hand_id=hand_id, seat=1,
                             ruling="void", reason="twice")
        assert again.status == 200 and again.body == {
            "ok": False, "error": f"hand {hand_id} was already voided for entry E-H1-1"}


async def test_a_house_that_rules_at_the_desk_only_refuses_rule_hand_at_the_door(
        tmp_path: Path) -> None:
    async with console_table(tmp_path, console="rule_at_table = false\n") as table:
        await table.open_heat((1, 2))
        await table.play_hand(await table.sign_in(DEALER))
        assert table.daemon.service is not None
        hand_id = table.daemon.service.core.recent[0]["hand_id"]
        cookie = await signed_in(table, SUPERVISOR)
        before = _unchanged(table)
        reply = await action(table, cookie, "rule_hand", hand_id=hand_id, seat=1,
                             ruling="void", reason="misdeal")
        assert (reply.status, reply.body["field"]) == (400, "action")
        assert "rules on settled hands at the desk only" in reply.body["error"]
        assert _unchanged(table) == before


def test_rule_at_table_is_a_yes_or_no_setting(tmp_path: Path) -> None:
    assert parse_console(None, source="t", base=tmp_path).rule_at_table is True
    assert parse_console({"rule_at_table": False}, source="t",
                         base=tmp_path).rule_at_table is False
    with pytest.raises(ConfigError, match="rule_at_table"):
        parse_console({"rule_at_table": "no"}, source="t", base=tmp_path)
