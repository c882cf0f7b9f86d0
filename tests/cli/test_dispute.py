"""`showdown dispute export` / `verify`: a hand's signed game history, checked offline.

The journal is written through the real append path (`Journal.append`); the envelopes in the
bundle must be the very bytes the table's MQTT link publishes (`envelope_for` with its key).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from controller.clock import FakeClockSource
from controller.journal import Journal, JournalRecord
from tests.controller.journal.support import Message
from wire.envelope import envelope_for, verify_envelope
from wire.signing import KeyRing, Signer, save_private_key

VENUE = "grand"


def hand(n: int, heat: str, entries: tuple[str, str]) -> dict[str, Any]:
    """Hand n of a heat, seats 1 and 2 played by `entries`."""
    return {"hand_id": f"t07-{n:04d}", "status": "settled", "table": "t07", "heat_id": heat,
            "seats": [{"seat": 1, "entry_id": entries[0], "wagers": {"ante": 2500}},
                      {"seat": 2, "entry_id": entries[1], "wagers": {"ante": 5000}}],
            "nets": {"1": 2500, "2": -5000}}


def build(path: Path) -> None:
    """Heat H1: hands 1-2 (E-1, E-2); heat H2: hand 3 (E-1, E-3); a dispute and an ack."""
    fake = FakeClockSource()
    plan = [(1, "H1", ("E-1", "E-2")), (2, "H1", ("E-1", "E-2")), (3, "H2", ("E-1", "E-3"))]
    with Journal.open(path, clock=fake) as j:
        for n, heat, entries in plan:
            for card in ("Ah", "Kd"):
                j.append(kind="card", payload={"card": card, "hand": n}, clock=fake(),
                         outgoing=lambda _r: [])

            body = hand(n, heat, entries)

            def settle(_r: JournalRecord, body: dict[str, Any] = body) -> list[Message]:
                return [Message(topic_suffix="events", type="hand.settled", body=body)]

            j.append(kind="dealer", payload={"action": "settle", "hand": n}, clock=fake(),
                     outgoing=settle)
        j.append(kind="dealer", payload={"action": "dispute"}, clock=fake(),
                 outgoing=lambda _r: [Message(topic_suffix="events", type="hand.disputed", body={
                     "hand_id": "t07-0002", "entry_id": "E-2", "seat": 2, "claim": "short",
                     "by": "D1", "role": "dealer", "heat_id": "H1"})])
        j.append(kind="console", payload={"ack": "E-1"}, clock=fake(),
                 outgoing=lambda _r: [Message(topic_suffix="scores", type="score.acknowledged",
                                              body={"entry_id": "E-1", "score": 5000,
                                                    "method": "button", "heat_id": "H1"})])


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, Path, Signer, Path]:
    """A journal, the table's key file, its signer and an enrolment file."""
    journal = tmp_path / "t07.journal"
    build(journal)
    signer = Signer.generate("t07")
    key = tmp_path / "t07.key"
    save_private_key(signer, key)
    keys = tmp_path / "tables.keys"
    keys.write_text(signer.public_key.enrolment_line() + "\n", encoding="utf-8")
    return journal, key, signer, keys


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dispute", *args])
    out, err = capsys.readouterr()
    return code, out, err


def export(capsys: pytest.CaptureFixture[str], table: tuple[Path, Path, Signer, Path],
           out: Path, *selector: str) -> dict[str, Any]:
    journal, key, _, _ = table
    code, _, err = run(capsys, "export", *selector, "--journal", str(journal), "--key", str(key),
                       "--venue", VENUE, "--by", "S7", "--out", str(out))
    assert (code, err) == (0, "")
    bundle: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return bundle


def verify(capsys: pytest.CaptureFixture[str], path: Path, keys: Path) -> tuple[int, str]:
    code, out, _ = run(capsys, "verify", str(path), "--keys", str(keys))
    return code, out


def test_hand_export_holds_its_records_envelopes_as_sent_and_dispute(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        table: tuple[Path, Path, Signer, Path]) -> None:
    out = tmp_path / "hand.json"
    bundle = export(capsys, table, out, "--hand", "t07-0002")
    m, parts = bundle["manifest"], bundle["parts"]
    assert (m["table"], m["selector"], m["id"], m["exported_by"]) == ("t07", "hand",
                                                                       "t07-0002", "S7")
    assert m["hand_ids"] == ["t07-0002"] and m["entry_ids"] == ["E-1", "E-2"]
    # hand 2's inputs are records 5-7 (after hand 1's settling record 4), plus the records
    # that caused its dispute (11) and its entry's acknowledgement in the heat (12)
    assert [r["seq"] for r in parts["records"]] == [5, 6, 7, 11, 12]
    assert [r["payload"] for r in parts["records"]][:2] == [{"card": "Ah", "hand": 2},
                                                          {"card": "Kd", "hand": 2}]
    assert [s["hand_id"] for s in parts["settlements"]] == ["t07-0002"]
    assert [d["type"] for d in parts["disputes"]] == ["hand.disputed"]
    assert [a["entry_id"] for a in parts["acknowledgements"]] == ["E-1"]
    journal, _, signer, _ = table
    with Journal.open(journal, read_only=True) as j:
        sent = [envelope_for(s, venue=VENUE, table="t07", signer=signer).encode().decode()
                for s in j.messages(1)
                if s.type != "hand.settled" or s.body["hand_id"] == "t07-0002"]
    assert len(sent) == 3
    assert parts["envelopes"] == sent  # hand 1 and 3 settlements are not in it
    assert m["journal"]["head_record_seq"] == 12 and m["journal"]["integrity_problems"] == []
    ring = KeyRing([signer.public_key])
    assert all(verify_envelope(e.encode(), ring).venue == VENUE for e in parts["envelopes"])
    code, text = verify(capsys, out, table[3])
    assert code == 0 and "whole: table t07, hand t07-0002" in text


def test_entry_and_heat_selectors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  table: tuple[Path, Path, Signer, Path]) -> None:
    entry = export(capsys, table, tmp_path / "e.json", "--entry", "E-3")
    assert entry["manifest"]["hand_ids"] == ["t07-0003"]
    assert [r["seq"] for r in entry["parts"]["records"]] == [8, 9, 10]
    assert entry["parts"]["disputes"] == [] and entry["parts"]["acknowledgements"] == []
    heat = export(capsys, table, tmp_path / "h.json", "--heat", "H1")
    assert heat["manifest"]["hand_ids"] == ["t07-0001", "t07-0002"]
    assert [r["seq"] for r in heat["parts"]["records"]] == [2, 3, 4, 5, 6, 7, 11, 12]
    assert heat["manifest"]["parts"]["envelopes"]["count"] == 4
    for name in ("e.json", "h.json"):
        assert verify(capsys, tmp_path / name, table[3])[0] == 0


def test_unknown_hand_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       table: tuple[Path, Path, Signer, Path]) -> None:
    journal, key, _, _ = table
    code, _, err = run(capsys, "export", "--hand", "t07-9999", "--journal", str(journal),
                       "--key", str(key), "--venue", VENUE, "--by", "S7",
                       "--out", str(tmp_path / "x.json"))
    assert code == 2 and "no hand of hand 't07-9999'" in err and "internal" not in err
    assert not (tmp_path / "x.json").exists()


def tampered(tmp_path: Path, bundle: dict[str, Any], name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(bundle), encoding="utf-8")
    return path


def test_verify_names_a_changed_part_manifest_envelope_and_wrong_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        table: tuple[Path, Path, Signer, Path]) -> None:
    original = export(capsys, table, tmp_path / "hand.json", "--hand", "t07-0002")
    keys = table[3]

    part = json.loads(json.dumps(original))
    part["parts"]["settlements"][0]["nets"]["2"] = 5000
    code, out = verify(capsys, tampered(tmp_path, part, "p.json"), keys)
    assert code == 1 and "part settlements: SHA-256" in out and "1 problem(s)" in out

    manifest = json.loads(json.dumps(original))
    manifest["manifest"]["exported_by"] = "someone else"
    code, out = verify(capsys, tampered(tmp_path, manifest, "m.json"), keys)
    assert code == 1 and "manifest: the signature does not match" in out

    # an envelope changed: both its part's hash and its own signature say so
    env = json.loads(json.dumps(original))
    first = env["parts"]["envelopes"][0]
    env["parts"]["envelopes"][0] = first.replace('"ante":5000', '"ante":9900')
    code, out = verify(capsys, tampered(tmp_path, env, "env.json"), keys)
    assert code == 1 and "part envelopes: SHA-256" in out
    assert "envelope 1: rejected: bad_signature" in out

    other = tmp_path / "other.keys"
    other.write_text(Signer.generate("t07").public_key.enrolment_line() + "\n", encoding="utf-8")
    code, out = verify(capsys, tmp_path / "hand.json", other)
    assert code == 1 and "manifest: the signature does not match" in out
    assert out.count("rejected: bad_signature") == len(original["parts"]["envelopes"])

    pub = table[2].public_key.base64
    code, out, _ = run(capsys, "verify", str(tmp_path / "hand.json"), "--public-key", pub)
    assert code == 0


def test_verify_of_a_file_that_is_not_a_bundle(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               table: tuple[Path, Path, Signer, Path]) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("not json", encoding="utf-8")
    code, _, err = run(capsys, "verify", str(junk), "--keys", str(table[3]))
    assert code == 2 and "not a JSON dispute bundle" in err
    junk.write_text('{"manifest": NaN}', encoding="utf-8")
    code, _, err = run(capsys, "verify", str(junk), "--keys", str(table[3]))
    assert code == 2 and "NaN is not a JSON number" in err
    junk.write_text("[]", encoding="utf-8")
    code, out, _ = run(capsys, "verify", str(junk), "--keys", str(table[3]))
    assert code == 1 and "not a dispute bundle" in out


def test_verify_json_names_a_removed_and_an_added_part(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        table: tuple[Path, Path, Signer, Path]) -> None:
    bundle = export(capsys, table, tmp_path / "hand.json", "--hand", "t07-0002")
    del bundle["parts"]["disputes"]
    bundle["parts"]["notes"] = ["added later"]
    path = tampered(tmp_path, bundle, "parts.json")
    code, out, _ = run(capsys, "verify", str(path), "--keys", str(table[3]), "--json")
    got = json.loads(out)
    assert code == 1 and got["whole"] is False
    assert got["problems"] == ["part disputes: listed in the manifest but missing",
                               "part notes: in the bundle but not in the manifest"]
