"""Device trouble the drivers heal by themselves is counted and shown (issue 32 point 5, D347):
a simulated shoe sending 5% corrupted frames, refused by the real driver and sent again, leaves
one `device_alert` of kind "recovered" with the counts in the journal, a `device_recovered`
alert carrying them, and a notice (not blocking play, nothing to resolve) in the console's
view document; healed frames no longer look as if nothing happened."""

from __future__ import annotations

import asyncio
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.console.views import ConsoleViews
from controller.console_config import parse_console
from controller.device_pumps import RecoveryWatch, recovered_since
from drivers.readings import RECOVERED, DeviceHealth
from game.errors import ConfigError
from tests.controller.console.support import GUARD_S, console_table


def _bad_frames(health: DeviceHealth) -> int:
    return int(health.counters.get("bad_frames", 0))


async def test_a_shoe_with_corrupted_frames_leaves_its_counts_in_the_journal_and_a_notice(
        tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        daemon = table.daemon
        assert daemon.devices is not None and daemon.journal is not None
        driver = daemon.devices.shoe
        table.shoe.set_fault("corrupt", 0.05)
        deadline = time.monotonic() + GUARD_S
        while _bad_frames(driver.health()) < 1:  # cards until one frame came damaged
            assert time.monotonic() < deadline, "no frame was corrupted"
            table.shoe.deal(1)
            await asyncio.sleep(0.02)
        table.shoe.set_fault("corrupt", 0.0)
        # The damaged frame is sent again and read: the driver counts it healed.
        while driver.health().counters.get("retransmits", 0) < 1:
            assert time.monotonic() < deadline, "the shoe never resent the frame"
            await asyncio.sleep(0.02)
        healed = recovered_since({}, driver.health())
        await daemon.flush_recoveries()  # what the interval's notice journals (default 60 s)
        records = [r.payload for r in daemon.journal.records()
                   if r.kind == "device_alert" and r.payload.get("kind") == "recovered"]
        [record] = [r for r in records if r["role"] == "shoe"]
        assert record["counts"]["bad_frames"] == healed["bad_frames"] >= 1
        assert record["counts"]["retransmits"] >= 1
        assert set(record["counts"]) <= set(RECOVERED)
        [alert] = [m.body for m in daemon.journal.messages(1)
                   if m.type == "alert" and m.body["kind"] == "device_recovered"]
        assert alert["evidence"]["counts"] == record["counts"]
        assert f"{healed['bad_frames']} bad frames refused and sent again" in alert["message"]
        doc: dict[str, Any] = ConsoleViews(daemon)._document()
        [notice] = [a for a in doc["alerts"] if a["kind"] == "device_recovered"]
        assert notice["notice"] is True and notice["resolvable"] is False
        assert notice["evidence"]["counts"] == record["counts"]
        assert "play goes on" in notice["what_to_do"]
        assert "shoe" not in table.status().get("device_faults", {})  # nothing blocks play
        await daemon.flush_recoveries()  # nothing healed since: no second notice
        assert len([r for r in daemon.journal.records() if r.kind == "device_alert"
                    and r.payload.get("kind") == "recovered"]) == len(records)


def test_a_recovery_notice_round_trips_through_the_journal_encoding() -> None:
    from game.table.inputs import DeviceTrouble, Unreadable, decode_input, encode_input
    given = DeviceTrouble(device="SIM-1", kind="recovered", detail="recovered by itself",
                          role="shoe", counts=(("bad_frames", 3), ("retransmits", 4)))
    kind, payload = encode_input(given)
    assert (kind, payload["counts"]) == ("device_alert", {"bad_frames": 3, "retransmits": 4})
    assert decode_input(kind, payload) == given
    plain = DeviceTrouble(device="SIM-1", kind="stalled", detail="silent", role="shoe")
    assert "counts" not in encode_input(plain)[1]  # old records are alike
    bad = decode_input("device_alert", {**payload, "counts": {"bad_frames": -1}})
    assert isinstance(bad, Unreadable) and "counts" in bad.reason


async def test_a_device_down_now_keeps_its_counts_for_the_notice_once_it_is_back() -> None:
    state: dict[str, Any] = {"connected": True, "counters": {"bad_frames": 2, "cards": 9}}

    def shoe() -> DeviceHealth:
        return DeviceHealth(device="S1", connected=state["connected"],
                            counters=dict(state["counters"]))

    sent: list[Any] = []

    async def submit(given: Any) -> None:
        sent.append(given)

    watch = RecoveryWatch({"shoe": shoe}, submit=submit, every=60)  # type: ignore[arg-type]
    state.update(connected=False, counters={"bad_frames": 4, "cards": 20})
    await watch.flush()
    assert sent == []  # down now: no notice yet
    state.update(connected=True, counters={"bad_frames": 5, "reconnects": 1, "cards": 30})
    await watch.flush()
    [notice] = sent
    assert notice.kind == "recovered" and notice.role == "shoe"
    assert dict(notice.counts) == {"bad_frames": 3, "reconnects": 1}  # carried over, healed only
    assert "3 bad frames refused and sent again, 1 reconnections" in notice.detail
    await watch.flush()
    assert len(sent) == 1  # nothing healed since
    assert set(RECOVERED) == {"bad_frames", "retransmits", "resends", "reconnects"}
    assert recovered_since({"bad_frames": 5}, shoe()) == {"reconnects": 1}


@pytest.mark.parametrize(("lines", "key", "words"), [
    ("require_issued = \"yes\"", "console.require_issued", "expected bool"),
    ("recovery_notice_seconds = 0", "console.recovery_notice_seconds", "must be 1..3600"),
    ("recovery_notice_seconds = \"1m\"", "console.recovery_notice_seconds", "expected float"),
])
def test_a_wrong_chip_or_notice_setting_names_its_key(lines: str, key: str,
                                                      words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_console(tomllib.loads(lines), source="t.toml", base=Path("."))
    assert key in str(caught.value) and words in str(caught.value)


def test_the_chip_and_notice_settings_default_to_the_float_and_a_minute() -> None:
    default = parse_console({}, source="t.toml", base=Path("."))
    assert (default.require_issued, default.recovery_notice_seconds) == (None, 60.0)
    given = parse_console({"require_issued": False, "recovery_notice_seconds": 5},
                          source="t.toml", base=Path("."))
    assert (given.require_issued, given.recovery_notice_seconds) == (False, 5.0)
