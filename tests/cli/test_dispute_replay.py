"""`showdown dispute replay`: a bundle's hands replayed through the table's own core and
compared with what was published and paid, line by line.

The journals are real: every input was journaled and applied by `TableService` in one
transaction as the daemon does (tests/dispute_play.py); bundles come from `dispute export
--config`. A bundle that differs from its replay can only be made by hand, re-signed here
with the table's key.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from game.wagers.settle import SeatWagers
from tests.dispute_play import R25, VENUE, PlayedTable
from wire.dispute_bundle import part_hash
from wire.envelope import canonical_json, parse_ts, seal
from wire.signing import Signer

QUAL = {1: SeatWagers(ante=2 * R25, odds=2 * R25, trips_plus=R25),
        3: SeatWagers(ante=2 * R25, odds=2 * R25, pocket_bonus=R25)}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dispute", *args])
    out, err = capsys.readouterr()
    return code, out, err


def export(capsys: pytest.CaptureFixture[str], t: PlayedTable, *selector: str,
           name: str = "b.json") -> Path:
    t.close()
    out = t.root / name
    code, _, err = run(capsys, "export", *selector, "--journal", str(t.journal), "--key",
                       str(t.key), "--venue", VENUE, "--by", "S7", "--out", str(out),
                       "--config", str(t.config))
    assert (code, err) == (0, "")
    return out


def replay(capsys: pytest.CaptureFixture[str], t: PlayedTable, path: Path,
           *extra: str) -> tuple[int, str, str]:
    return run(capsys, "replay", str(path), "--keys", str(t.keys), *extra)


def as_json(capsys: pytest.CaptureFixture[str], t: PlayedTable, path: Path) -> dict[str, Any]:
    code, out, _ = replay(capsys, t, path, "--format", "json")
    got: dict[str, Any] = json.loads(out)
    assert code == (0 if got["match"] else 1)
    return got


@pytest.fixture(scope="module")
def heat(tmp_path_factory: pytest.TempPathFactory) -> PlayedTable:
    """Heat Q1: E1 in seat 1 and E3 in seat 3 play three hands (the third with a misread
    card the supervisor corrects), then a void."""
    t = PlayedTable(tmp_path_factory.mktemp("heat"))
    assert t.desk("open_heat", stage="qualifying", heat_id="Q1", command_id="c1").ok
    for seat in (1, 3):
        assert t.desk("seat", entry_id=f"E{seat}", seat=seat, command_id=f"s{seat}").ok
    t.hand(QUAL, play={1: 3, 3: 3})
    t.hand(QUAL, play={1: 3})
    t.hand(QUAL, play={3: 3}, misread=True)
    t.hand(QUAL, void="shoe jammed")
    return t


def test_a_heat_replays_line_by_line_and_matches(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    path = export(capsys, heat, "--heat", "Q1")
    code, out, err = replay(capsys, heat, path)
    assert (code, err) == (0, "")
    assert "REPLAY MATCHES" in out and "DIFFERS" not in out
    assert "times in Africa/Johannesburg" in out and "SAST" in out
    got = as_json(capsys, heat, path)
    assert got["hand_ids"] == ["t07-000001", "t07-000002", "t07-000003", "t07-000004"]
    lines = got["lines"]
    seat1 = {(g["hand_id"], g["item"]): g for g in lines if g["subject"] == "seat 1"}
    assert {"ante", "odds", "play", "trips_plus", "net", "hand rank"} <= {
        item for (h, item) in seat1 if h == "t07-000001"}
    assert seat1[("t07-000001", "play")]["recorded"]["stake"] == 15_000  # 3x the R50 Ante
    [fold] = [g for g in lines if (g["hand_id"], g["subject"], g["item"]) == (
        "t07-000002", "seat 3", "decision")]
    assert fold["recorded"] == fold["replayed"] == {"fold": True}
    # the misread card and its correction, beside the replayed one
    [fix] = [g for g in lines if g["hand_id"] == "t07-000003"
             and g["item"] == "card corrections"]
    assert fix["recorded"][0]["reason"] == "shoe misread the card" and fix["match"]
    payouts = [g for g in lines if g["subject"] == "payout.checked" and g["item"] == "outcome"]
    assert [g["recorded"] for g in payouts] == ["verified"] * 3
    assert got["differences"] == []


def test_one_hand_of_the_heat_replays_from_its_context(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    """A later hand needs the chips each seat held: the context's earlier records give them."""
    path = export(capsys, heat, "--hand", "t07-000003")
    bundle = json.loads(path.read_text(encoding="utf-8"))
    assert bundle["manifest"]["parts"]["context"]["sha256"]
    assert bundle["parts"]["context"]["hands_before"] == 0
    assert bundle["parts"]["context"]["records"]  # the heat's opening and earlier hands
    code, out, _ = replay(capsys, heat, path)
    assert code == 0 and "hand t07-000003" in out and "REPLAY MATCHES" in out
    entry = export(capsys, heat, "--entry", "E3", name="e.json")
    assert as_json(capsys, heat, entry)["match"] is True


def test_a_voided_hand_is_replayed_and_explained(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    path = export(capsys, heat, "--hand", "t07-000004")
    code, out, _ = replay(capsys, heat, path)
    assert code == 0
    assert "voided by S1: shoe jammed; replayed void too" in out
    got = as_json(capsys, heat, path)
    status = [g for g in got["lines"] if g["item"] == "status"]
    assert [(g["recorded"], g["replayed"]) for g in status] == [("void", "void")]


def test_a_corrected_hand_shows_the_correction_beside_the_original(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = PlayedTable(tmp_path)
    t.desk("open_heat", stage="qualifying", heat_id="Q2", command_id="c1")
    t.desk("seat", entry_id="E1", seat=1, command_id="s1")
    first = t.hand({1: QUAL[1]}, play={1: 3})
    assert t.desk("correct_hand", hand_id="t07-000001", entry_id="E1", ruling="correct",
                  net=first["nets"]["1"] + 10_000, reason="odds paid short",
                  command_id="r1").ok
    t.hand({1: QUAL[1]}, play={1: 3})
    path = export(capsys, t, "--hand", "t07-000001")
    got = as_json(capsys, t, path)
    assert got["match"] is True
    fix = {g["item"]: g for g in got["lines"] if g["subject"] == "hand.corrected E1"}
    assert fix["recorded_net"]["recorded"] == first["nets"]["1"]
    assert fix["counted_net"]["replayed"] == first["nets"]["1"] + 10_000
    _, out, _ = replay(capsys, t, path)
    assert "hand.corrected E1" in out and "counted_net" in out
    assert ("corrected after settlement (hand_corrected, by -, dispute -: odds paid short): "
            f"entry E1 counts -R{(-first['nets']['1'] - 10_000) // 100}.00 instead of the "
            f"settled -R{-first['nets']['1'] // 100}.00") in out


def test_final_markers_and_side_bets_replay(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    t = PlayedTable(tmp_path)
    t.desk("open_heat", stage="final", heat_id="F1", command_id="c1")
    t.desk("seat", entry_id="F-1", seat=2, command_id="s2")
    bets = {2: SeatWagers(ante=2 * R25, odds=2 * R25, trips_plus=R25,
                          markers=frozenset({"trips_plus", "sweet16"}))}
    record = t.hand(bets, play={2: 3})
    assert sorted(record["settlement"]["seats"][0]["markers_used"]) == ["sweet16", "trips_plus"]
    got = as_json(capsys, t, export(capsys, t, "--heat", "F1"))
    assert got["match"] is True
    seat = {g["item"]: g for g in got["lines"] if g["subject"] == "seat 2"}
    assert seat["sweet16"]["recorded"]["marker"] and seat["markers used"]["match"]


def resign(path: Path, signer: Signer, edit: Any, *, parts_edit: Any = None) -> Path:
    """The bundle with its hand record edited by `edit(body)` (and its parts by
    `parts_edit(parts)`), every envelope and the manifest signed again with `signer` (what
    only a holder of that key can do)."""
    bundle = json.loads(path.read_text(encoding="utf-8"))
    parts = bundle["parts"]
    if parts_edit is not None:
        parts_edit(parts)
    envelopes = []
    for text in parts["envelopes"]:
        env = json.loads(text)
        if env["type"] == "hand.settled":
            edit(env["body"])
            parts["settlements"] = [env["body"]]
        envelopes.append(seal(venue=env["venue"], table=env["table"], seq=env["seq"],
                              wall=parse_ts(env["ts"]), type=env["type"], body=env["body"],
                              boot=env["boot"], mono=env["mono"],
                              signer=signer).encode().decode())
    parts["envelopes"] = envelopes
    for name, listed in bundle["manifest"]["parts"].items():
        listed["sha256"] = part_hash(parts[name])
    bundle["signature"] = base64.b64encode(
        signer.sign(canonical_json(bundle["manifest"]))).decode("ascii")
    out = path.with_name("edited-" + path.name)
    out.write_text(json.dumps(bundle), encoding="utf-8")
    return out


def pay_more(body: dict[str, Any]) -> None:
    """Seat 1's Ante recorded as won R50 more than it was."""
    seat = next(s for s in body["settlement"]["seats"] if s["seat"] == 1)
    seat["wagers"]["ante"]["net"] += 5_000
    seat["net"] += 5_000
    body["nets"]["1"] += 5_000


def test_tampered_or_resigned_bundles_are_refused_before_replay(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    path = export(capsys, heat, "--hand", "t07-000001")
    bundle = json.loads(path.read_text(encoding="utf-8"))
    bundle["parts"]["records"][0]["payload"]["uids"] = []
    damaged = path.with_name("damaged.json")
    damaged.write_text(json.dumps(bundle), encoding="utf-8")
    code, out, _ = replay(capsys, heat, damaged)
    assert code == 1 and "REFUSED, not replayed" in out and "part records: SHA-256" in out
    bundle = json.loads(path.read_text(encoding="utf-8"))
    bundle["parts"]["context"]["hands_before"] = 5
    damaged.write_text(json.dumps(bundle), encoding="utf-8")
    code, out, _ = replay(capsys, heat, damaged)
    assert code == 1 and "part context: SHA-256" in out
    other = resign(path, Signer.generate("t07"), pay_more)  # a key that is not the table's
    code, out, _ = replay(capsys, heat, other)
    assert code == 1 and "REFUSED" in out and "manifest: the signature does not match" in out
    assert "rejected: bad_signature" in out and "seat 1" not in out
    code, out, _ = replay(capsys, heat, other, "--format", "json")
    assert json.loads(out)["replayed"] is False


def test_a_recorded_payout_that_differs_from_the_replay_is_named(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    path = resign(export(capsys, heat, "--hand", "t07-000001"), heat.signer, pay_more)
    assert run(capsys, "verify", str(path), "--keys", str(heat.keys))[0] == 0
    code, out, _ = replay(capsys, heat, path)
    assert code == 1 and "REPLAY DIFFERS: 3 difference(s)" in out
    assert ("hand t07-000001: seat 1 ante: recorded lose R0.00 on R50.00, replayed lose"
            " -R50.00") in out
    assert "hand t07-000001: seat 1 net:" in out
    got = as_json(capsys, heat, path)
    assert [(g["subject"], g["item"]) for g in got["differences"]] == [
        ("seat 1", "ante"), ("seat 1", "net"), ("seat 1", "ante paid")]
    paid = got["differences"][2]
    assert paid["recorded_text"] == "spot to hold R50.00: verified by the chip readers"
    assert paid["replayed_text"] == "taken (nothing left): verified by the chip readers"


def test_a_bundle_without_context_or_not_json_is_a_usage_error(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    out = heat.root / "plain.json"
    code, _, _ = run(capsys, "export", "--hand", "t07-000001", "--journal", str(heat.journal),
                     "--key", str(heat.key), "--venue", VENUE, "--by", "S7", "--out", str(out))
    assert code == 0
    code, _, err = replay(capsys, heat, out)
    assert code == 2 and "exported without --config" in err
    junk = heat.root / "junk.json"
    junk.write_text("{", encoding="utf-8")
    code, _, err = replay(capsys, heat, junk)
    assert code == 2 and "not a JSON dispute bundle" in err


def test_devices_read_back_the_recorded_readings_through_the_real_drivers(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    """Cards through the simulated shoe on a pty and the serial driver, chips through the
    simulated reader's pyusb backend and the USB driver; the replay runs from what they
    report."""
    path = export(capsys, heat, "--hand", "t07-000002", name="dev.json")
    code, out, _ = replay(capsys, heat, path, "--devices", "--format", "json")
    got = json.loads(out)  # nothing but the JSON on stdout: the drivers' logs are kept off it
    assert code == 0 and got["match"] is True
    shoe, rfid = got["devices"]
    assert (shoe["device"], rfid["device"]) == ("shoe", "rfid")
    assert shoe["match"] and rfid["match"]
    assert shoe["readings"] == 26  # the context's hand 1 and this hand, 13 cards each
    assert all(r["recorded"] == r["driver"] for r in shoe["each"])
    assert rfid["readings"] > 0 and all(r["recorded"] == r["driver"] for r in rfid["each"])
    code, out, _ = replay(capsys, heat, path, "--devices")
    assert code == 0 and "SerialCardReader: each card as recorded [ok]" in out
    assert "UsbChipReader: each spot's chips as recorded [ok]" in out


def test_a_context_no_table_writes_and_a_wrong_tables_config_are_usage_errors(
        heat: PlayedTable, capsys: pytest.CaptureFixture[str]) -> None:
    path = export(capsys, heat, "--hand", "t07-000001", name="ctx.json")

    def break_paytables(parts: dict[str, Any]) -> None:
        parts["context"]["paytables"]["text"] = "[pocket_bonus\n"

    bad = resign(path, heat.signer, lambda _body: None, parts_edit=break_paytables)
    code, _, err = replay(capsys, heat, bad)
    assert code == 2 and "context is not usable" in err and "Traceback" not in err

    def drop_walls(parts: dict[str, Any]) -> None:
        for r in parts["records"]:
            del r["wall"]

    bad = resign(path, heat.signer, lambda _body: None, parts_edit=drop_walls)
    code, _, err = replay(capsys, heat, bad)
    assert code == 2 and "a record cannot be replayed" in err
    def records_not_a_list(parts: dict[str, Any]) -> None:
        parts["records"] = {"1": parts["records"][0]}

    bad = resign(path, heat.signer, lambda _body: None, parts_edit=records_not_a_list)
    code, _, err = replay(capsys, heat, bad)
    assert code == 2 and "not as `dispute export` writes a bundle: parts.records" in err
    other = heat.root / "t08.toml"
    other.write_text(heat.config.read_text(encoding="utf-8").replace('"t07"', '"t08"'),
                     encoding="utf-8")
    code, _, err = run(capsys, "export", "--hand", "t07-000001", "--journal",
                       str(heat.journal), "--key", str(heat.key), "--venue", VENUE, "--by",
                       "S7", "--out", str(heat.root / "x.json"), "--config", str(other))
    assert code == 2 and "table 't08''s configuration, not table 't07''s" in err


def test_devices_read_back_a_spot_read_twice_and_a_chip_moved_between_spots(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = PlayedTable(tmp_path)
    t.desk("open_heat", stage="qualifying", heat_id="Q3", command_id="c1")
    t.desk("seat", entry_id="E1", seat=1, command_id="s1")
    two = t.chips(2 * R25)
    t.lay(1, "ante", two)
    t.lay(1, "ante", two)  # the reader reported the same spot alike twice
    t.lay(1, "odds", [two[0]])  # a chip slid from the Ante to the Odds ...
    t.lay(1, "ante", [two[1]])  # ... and the Ante reported after it
    assert not t.send("card", card="Zz").ok  # no shoe sends this: refused, then and now
    assert not t.send("chips", seat=1, spot="ante", uids=["nonsense"]).ok
    t.hand({1: QUAL[1]}, play={1: 3})
    path = export(capsys, t, "--hand", "t07-000001")
    code, out, _ = replay(capsys, t, path, "--devices", "--format", "json")
    got = json.loads(out)
    assert code == 0 and got["match"] is True
    shoe, rfid = got["devices"]
    assert shoe["readings"] == 11 and {"seq", "kind", "error"} <= set(got["inputs_refused"][0])
    assert rfid["match"] and [r["driver"] for r in rfid["each"][:4]] == [
        sorted(two), sorted(two), [two[0]], [two[1]]]
