"""The desk API answers with the table's verdict: 200/201 accepted, 409 refused with the
table's reason, 202 sent but not answered yet; the commands and the table check are listed.
Through a real table core and a real Ingestor (tests.leaderboard.roundtrip_support)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.routing import Mount

from game.errors import ConfigError
from leaderboard.config import read_leaderboard_config
from leaderboard.desk.sender import SendError
from leaderboard.desk_api.routes import desk_routes
from tests.leaderboard.desk_api_support import Api
from tests.leaderboard.desk_helpers import FakeClock, settings
from tests.leaderboard.roundtrip_support import TableLoop
from wire.signing import Signer

T01 = Signer.from_seed("t01", bytes(32)).public_key.base64
ADULT = {"name": "Thabo Mokoena", "id_kind": "id_document", "id_number": "8001015009087",
         "birth_date": "1980-01-01"}


class WaitingApi(Api):
    """The desk routes with a verdict wait, as the service mounts them."""

    def __init__(self, engine: Engine, clock: FakeClock, sender: Any, wait: float) -> None:
        self.engine, self.clock = engine, clock
        routes = desk_routes(engine, settings(), sender, clock, answer_wait=wait)
        self.app = Starlette(routes=[Mount("/api/desk", routes=routes)])
        self.token = self.sign_in("desk-1", "manager")


async def test_the_api_answers_with_the_tables_verdict(engine: Engine, clock: FakeClock
                                                       ) -> None:
    loop = TableLoop(engine, clock)
    api = WaitingApi(engine, clock, loop, wait=2.0)
    pid = (await api.call("POST", "/patrons", ADULT))[1]["patron_id"]
    e1 = (await api.call("POST", "/entries", {"patron_id": pid, "payment": "cash"}))[1]
    # The table is cut off: the heat is sent, not answered: 202, the command pending.
    loop.deliver = False
    status, opened = await api.call("POST", "/heats", {"table": "t01", "stage": "qualifying"})
    assert status == 202
    [command] = opened["commands"]
    assert (command["command"], command["state"]) == ("open_heat", "sent")
    # The seat reaches a table with no heat: 409 with the table's reason; not seated.
    loop.deliver = True
    status, body = await api.call("POST", "/seatings", {"entry_id": e1["entry_id"],
                                                        "table": "t01", "seat": 2})
    assert status == 409
    assert body["error"].endswith("no heat is open at this table")
    assert body["commands"][0]["state"] == "refused"
    status, patron = await api.call("GET", f"/patrons/{pid}")
    assert [e["status"] for e in patron["entries"]] == ["registered"]
    status, listed = await api.call("GET", "/commands?state=refused")
    assert [c["seq"] for c in listed["commands"]] == [body["commands"][0]["seq"]]
    status, mine = await api.call("GET", f"/commands?entry={e1['entry_id']}")
    assert [(c["command"], c["state"], c["reason"]) for c in mine["commands"]] == [
        ("seat", "refused", "no heat is open at this table")]
    status, check = await api.call("GET", "/table-check")
    assert status == 200 and not check["agree"]
    assert [f["kind"] for f in check["findings"]] == ["open_heat"]
    # The heat sent again is accepted (200); the seat then is too (201, confirmed).
    status, again = await api.call("POST", f"/commands/{command['seq']}/resend",
                                   {})
    assert status == 200 and again["commands"][0]["state"] == "accepted"
    status, seated = await api.call("POST", "/seatings", {"entry_id": e1["entry_id"],
                                                          "table": "t01", "seat": 2})
    assert status == 201 and seated["commands"][0]["state"] == "accepted"
    status, one = await api.call("GET", f"/commands/{seated['commands'][0]['seq']}")
    assert (status, one["state"], one["actor"]) == (200, "accepted", "desk-1")
    status, check = await api.call("GET", "/table-check")
    assert check["agree"] and check["findings"] == []
    assert (await api.call("GET", "/commands/12x"))[0] == 404
    assert (await api.call("GET", "/commands/99"))[0] == 404
    assert (await api.call("GET", "/commands?state=lost"))[0] == 400
    assert (await api.call("GET", "/commands?limit=0"))[0] == 400


class Unreachable:
    async def send(self, command: Any) -> None:
        raise SendError(f"seq {command.seq} is recorded but was not delivered")


async def test_a_command_the_broker_did_not_take_is_marked_not_delivered(
    engine: Engine, clock: FakeClock
) -> None:
    api = WaitingApi(engine, clock, Unreachable(), wait=2.0)
    status, body = await api.call("POST", "/heats", {"table": "t01", "stage": "qualifying"})
    assert status == 502 and "not delivered" in body["error"]
    [command] = body["recorded"]["commands"]
    assert command["state"] == "send_failed" and "not delivered" in command["reason"]
    status, pending = await api.call("GET", "/commands?pending=true")
    assert [c["state"] for c in pending["commands"]] == ["send_failed"]


@pytest.mark.parametrize(("value", "why"), [(31, "0..30"), (-1, "0..30"),
                                           ("soon", "expected a number")])
def test_the_answer_wait_is_a_setting_and_a_bad_one_names_its_key(
    tmp_path: Path, value: Any, why: str
) -> None:
    base: dict[str, Any] = {"service": {"venue": "casino-1"},
                            "mqtt": {"broker": "127.0.0.1:1883"},
                            "keys": {"signing_key": "lb.key", "tables": {"t01": T01}}}
    path = tmp_path / "leaderboard.toml"
    path.write_text(tomli_w.dumps(base))
    assert read_leaderboard_config(path).http.desk_answer_wait_s == 3.0
    path.write_text(tomli_w.dumps({**base, "http": {"desk_answer_wait_s": 0.5}}))
    assert read_leaderboard_config(path).http.desk_answer_wait_s == 0.5
    path.write_text(tomli_w.dumps({**base, "http": {"desk_answer_wait_s": value}}))
    with pytest.raises(ConfigError) as caught:
        read_leaderboard_config(path)
    assert (caught.value.key, caught.value.source) == ("http.desk_answer_wait_s", str(path))
    assert why in caught.value.reason
