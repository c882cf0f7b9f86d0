"""The certifier's bundle (issue 33 point 6, D382): a promotion's records exported from the
central database (SQLite and PostgreSQL), signed with the central key, and checked offline;
every kind of tampering named. The scores reach the database through the real ingest of
messages the tables signed; the expected standings are worked out here from the rules."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from cli.main import main
from game.tournament.draw import draw_seats
from leaderboard import desk
from leaderboard.audit_trail.hashing import canonical_at, detail_text, row_hash
from leaderboard.audit_trail.heads import sign_head
from leaderboard.certifier.export import Exported, Period, export_bundle
from leaderboard.certifier.manifest import read_bundle, write_bundle
from leaderboard.certifier.verify import Verdict, verify_bundle
from leaderboard.desk.dispute_bundles import countersign_bundle
from leaderboard.models import AuditEntry, Dispute, PrizeAward
from runtime.settings_files import default_paytables_path, default_tournament_path
from tests.fixtures.clock import EPOCH, FakeClock
from tests.fixtures.services import Database
from tests.leaderboard.desk_api_support import PASSPHRASE
from tests.leaderboard.desk_helpers import settings
from tests.leaderboard.ingest_support import (
    VENUE,
    FakeTable,
    enroll,
    key_of,
    make_ingestor,
    register_entry,
)
from wire.dispute_bundle import Selection, build
from wire.signing import Signer, save_private_key

CENTRAL = key_of("leaderboard")
JULY = Period(date(2026, 7, 1), date(2026, 7, 31))
FINALISTS = [f"F-{n}" for n in range(1, 7)]
# entry -> (score in cents, acknowledged at the table?)
SCORES = {"E-1": (120_000, True), "E-2": (90_000, True), "E-3": (150_000, False)}


def rules() -> dict[str, bytes]:
    return {"rules/tournament.toml": default_tournament_path().read_bytes(),
            "rules/paytables.toml": default_paytables_path().read_bytes()}


async def promotion(engine: sa.Engine) -> None:
    """Three qualifying scores signed by t01 (two acknowledged), a dispute with t01's
    bundle countersigned, the Final's six places drawn from a witnessed commitment."""
    t01 = FakeTable("t01")
    enroll(engine, t01)
    clock = FakeClock(EPOCH)
    ingest = make_ingestor(engine, clock)
    for n, (entry, (cents, acked)) in enumerate(SCORES.items(), 1):
        register_entry(engine, entry, f"P{n}", heat_id="heat-1", table_id="t01", seat=n,
                       status="seated")
        assert (await ingest.handle(*t01.score(entry, cents, seat=n, hands=10))).outcome == "stored"
        if acked:
            assert (await ingest.handle(*t01.ack(entry, cents))).outcome == "stored"
    # t01's own records of a dispute at the table and a supervisor's ruling on the hand.
    for kind, body in (
            ("hand.disputed", {"hand_id": "t01-0004", "entry_id": "E-1", "seat": 1,
                               "claim": "paid short", "by": "D01", "role": "dealer",
                               "heat_id": "heat-1", "stage": "qualifying", "at": None}),
            ("hand.corrected", {"hand_id": "t01-0004", "entry_id": "E-1", "seat": 1,
                                "ruling": "hand_corrected", "recorded_net": 500,
                                "counted_net": 1_000, "balance_before": 200_000,
                                "balance_after": 200_500, "hands_played": 4,
                                "markers_returned": [], "dispute_id": None, "by": "S01",
                                "reason": "paid short", "heat_id": "heat-1", "at": None})):
        assert (await ingest.handle(*t01.message(kind, body))).outcome == "stored", kind
    for n, entry in enumerate(FINALISTS, 1):
        register_entry(engine, entry, f"P{n}", stage="final")
    desk_clock = FakeClock(EPOCH + timedelta(hours=1))
    with Session(engine, expire_on_commit=False) as s:
        for staff_id, role in (("M01", "manager"), ("S01", "supervisor")):
            desk.enrol_staff(s, desk_clock, actor="setup", staff_id=staff_id,
                             name=f"Staff {staff_id}", role=role, desk_passphrase=PASSPHRASE)
        c = desk.commit_draw(s, desk_clock, actor="M01", stage="final", witness="S01")
        assert sign_head(engine, CENTRAL, desk_clock()) is not None  # a head mid-period
        desk_clock.advance(60)
        desk.draw_final(s, settings(), desk_clock, actor="M01", commitment_id=c.commitment_id)
        s.add(PrizeAward(kind="weekly", place=1, entry_id="E-1", patron_id="P1",
                         amount_cents=500_000, awarded_at=desk_clock(),
                         deadline=desk_clock() + timedelta(days=15),
                         claimed_at=desk_clock() + timedelta(days=2), claimed_by="S01"))
        dispute = Dispute(entry_id="E-2", note="my score was short", at=desk_clock(),
                          raised_by_role="participant", raised_by="E-2", recorded_by="S01")
        s.add(dispute)
        s.commit()
        table_bundle = build(Selection(hand_ids=(), entry_ids=("E-2",), records=(),
                                       messages=()), [], selector="entry", ident="E-2",
                             signer=t01.key, chain={}, exported_at=EPOCH.isoformat(),
                             exported_by="S01")
        countersign_bundle(s, desk_clock, actor="S01", dispute_id=dispute.id,
                           bundle_text=json.dumps(table_bundle), signer=CENTRAL)
    assert sign_head(engine, CENTRAL, EPOCH + timedelta(hours=2)) is not None


def export(engine: sa.Engine, out: Path) -> Exported:
    return export_bundle(engine, settings(), rules=rules(), period=JULY, out=out,
                         signer=CENTRAL, exported_by="M01", venue=VENUE,
                         now=EPOCH + timedelta(days=40))


def check(path: Path, key: Signer | None = CENTRAL) -> Verdict:
    return verify_bundle(read_bundle(path.read_bytes(), str(path)),
                         key.public_key if key is not None else None)


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def forged(path: Path, out: Path, signer: Signer, **changed: Any) -> Path:
    """The bundle with members changed (``records__scores_json=...``), a manifest made
    for them and signed by ``signer``: what someone holding that key could make."""
    old = members(path)
    manifest = json.loads(old.pop("manifest.json"))
    old.pop("manifest.sig")
    for name, value in changed.items():
        old[name.replace("__", "/").replace("_json", ".json").replace("_pub", ".pub")] = (
            value if isinstance(value, bytes) else json.dumps(value).encode())
    header = {k: v for k, v in manifest.items() if k not in ("members", "format",
                                                             "signed_by")}
    write_bundle(out, old, header, signer)
    return out


def edited(path: Path, out: Path, name: str, data: bytes) -> Path:
    """The bundle with one member's bytes replaced and nothing else (manifest as signed)."""
    old = members(path)
    old[name] = data
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for n, d in old.items():
            z.writestr(n, d)
    out.write_bytes(buffer.getvalue())
    return out


@pytest.fixture
async def bundle(engine: sa.Engine, tmp_path: Path) -> Path:
    await promotion(engine)
    return export(engine, tmp_path / "certifier.zip").path


async def test_the_bundle_holds_the_records_and_verifies_whole(
        bundle: Path, engine: sa.Engine) -> None:
    verdict = check(bundle)
    assert verdict.problems == []
    # 3 scores, 2 acknowledgements, a dispute and a correction at the table
    assert verdict.checked["table messages verified"] == 7
    assert verdict.checked["hand corrections matched to signed messages"] == 1
    assert verdict.checked["disputes matched to signed messages"] == 1
    assert verdict.checked["scores matched to signed messages"] == 3
    assert verdict.checked["draws replayed against their commitment"] == 1
    assert verdict.checked["dispute bundles with both signatures"] == 1
    assert verdict.checked["prizes checked"] == 1
    got = members(bundle)
    manifest = json.loads(got["manifest.json"])
    assert manifest["period"]["from"] == "2026-07-01" and manifest["exported_by"] == "M01"
    assert manifest["rules"]["rules/tournament.toml"] == hashlib.sha256(
        default_tournament_path().read_bytes()).hexdigest()
    assert got["keys/central.pub"].decode().split() == ["leaderboard",
                                                       CENTRAL.public_key.base64]
    # Acknowledged scores only count (the shipped rules): E-1 before E-2; E-3 is not placed.
    standings = json.loads(got["records/standings.json"])
    assert [(r["position"], r["entry_id"], r["score_cents"])
            for r in standings["qualifying"]] == [(1, "E-1", 120_000), (2, "E-2", 90_000)]
    (draw,) = json.loads(got["records/draws.json"])
    seed = bytes.fromhex(draw["commitment"]["seed_hex"])
    assert {a["finalist"]: a["seat"] for a in draw["result"]["assignments"]} == {
        a.finalist: a.seat for a in draw_seats(FINALISTS, range(1, 7), seed).assignments}
    assert draw["commitment"]["witness"] == "S01" and draw["drawn_by"] == "M01"
    with Session(engine) as s:
        row = s.scalars(sa.select(AuditEntry).where(
            AuditEntry.action == "certifier.exported")).one()
        assert (row.actor, row.detail["file"]) == ("M01", "certifier.zip")
        assert row.detail["manifest_sha256"] == hashlib.sha256(got["manifest.json"]).hexdigest()
    audit = json.loads(got["records/audit.json"])
    assert {"final.draw_committed", "final.drawn",
            "dispute.bundle_countersigned"} <= {r["action"] for r in audit}
    # The period's audit rows against their chain, and both signed heads (D421).
    assert verdict.checked["audit rows chained"] == len(audit) > 5
    assert verdict.checked["audit chain heads verified"] == 2


async def test_audit_rows_changed_removed_or_unsigned_are_named(
        bundle: Path, tmp_path: Path) -> None:
    """Even re-signed with the central key: the chain's hashes and the heads signed when the
    rows were written still tell (D421)."""
    got = {n: json.loads(d) for n, d in members(bundle).items() if n.endswith(".json")}
    audit, heads = got["records/audit.json"], got["records/audit_heads.json"]
    changed = [dict(r) for r in audit]
    changed[2]["detail"] = {**changed[2]["detail"], "note": "added later"}
    assert check(forged(bundle, tmp_path / "a.zip", CENTRAL,
                        records__audit_json=changed)).problems == [
        f"records/audit.json: row {changed[2]['id']} ({changed[2]['action']} by"
        f" {changed[2]['actor']}) does not match its hash: it was changed after it was written"]
    removed = audit[:3] + audit[4:]
    found = check(forged(bundle, tmp_path / "b.zip", CENTRAL, records__audit_json=removed))
    assert found.problems == [f"records/audit.json: ids jump from {audit[2]['id']} to"
                              f" {audit[4]['id']}: rows of the period are missing (removed, or"
                              " never stored before the chain began)"]
    other = Signer.from_seed("leaderboard", bytes(range(1, 33)))
    forged_heads = [dict(h) for h in heads]
    forged_heads[0]["signature"] = base64.b64encode(other.sign(b"x")).decode()
    assert check(forged(bundle, tmp_path / "c.zip", CENTRAL,
                        records__audit_heads_json=forged_heads)).problems == [
        f"records/audit_heads.json: head {heads[0]['id']} (row {heads[0]['row_id']}): the"
        " signature does not verify against the central key"]
    # A row rewritten with a hash that matches it (the chain recomputed from there): the
    # head signed over the old row tells.
    signed_row = next(r for r in audit if r["id"] == heads[0]["row_id"])
    at = signed_row["id"] - audit[0]["id"]
    rewritten = [dict(r) for r in audit]
    rewritten[at]["actor"] = "someone else"
    prev = rewritten[at]["prev_hash"]
    for row in rewritten[at:]:
        row["prev_hash"] = prev
        row["row_hash"] = prev = row_hash(
            id=row["id"], at=canonical_at(datetime.fromisoformat(row["at"])),
            actor=row["actor"], action=row["action"], detail=detail_text(row["detail"]),
            prev_hash=prev)
    found = check(forged(bundle, tmp_path / "d.zip", CENTRAL, records__audit_json=rewritten))
    assert found.problems[0] == (f"records/audit.json: row {heads[0]['row_id']} is not the"
                                 f" row signed head {heads[0]['id']} covers (changed, replaced"
                                 " or removed)")


async def test_a_changed_member_or_a_manifest_signed_by_another_key_is_named(
        bundle: Path, tmp_path: Path) -> None:
    scores = json.loads(members(bundle)["records/scores.json"])
    scores[1]["score_cents"] += 50_000
    raw = json.dumps(scores).encode()
    verdict = check(edited(bundle, tmp_path / "a.zip", "records/scores.json", raw))
    assert len(verdict.problems) >= 1
    assert verdict.problems[0].startswith("member records/scores.json: SHA-256")
    someone = key_of("leaderboard", "not the central key")
    verdict = check(forged(bundle, tmp_path / "b.zip", someone, records__scores_json=scores))
    assert verdict.problems[0] == ("manifest: the signature does not match the manifest and"
                                   " the central key 'leaderboard'")
    # The forger's key put inside too: checked with the key the certifier holds, the
    # bundle is refused; checked with the key inside, the manifest verifies but the scores
    # do not match the tables' signatures, nor the standings the recomputation.
    line = (someone.public_key.enrolment_line() + "\n").encode()
    inside = forged(bundle, tmp_path / "c.zip", someone, records__scores_json=scores,
                    keys__central_pub=line)
    assert check(inside).problems[:2] == [
        "keys/central.pub: the bundle names another central key than the one given",
        "manifest: the signature does not match the manifest and the central key"
        " 'leaderboard'"]
    alone = check(inside, key=None)
    assert "key inside the bundle" in alone.key_source
    assert alone.problems[0] == ("records/scores.json: entry E-2: score_cents differ from the"
                                 " table's signed score.recorded (table t01 seq 3)")
    assert alone.problems[1].startswith("records/standings.json: the qualifying standings"
                                        " differ from those recomputed from the scores")
    extra = edited(bundle, tmp_path / "d.zip", "records/notes.json", b"[]")
    assert check(extra).problems == ["member records/notes.json: in the file but not in the"
                                     " manifest"]


async def test_records_changed_by_someone_holding_the_central_key_are_caught(
        bundle: Path, tmp_path: Path) -> None:
    """Re-signed with the central key itself: the tables' signatures, the recomputation
    and the commitment still tell."""
    got = {n: json.loads(d) for n, d in members(bundle).items() if n.endswith(".json")}
    standings = got["records/standings.json"]
    standings["qualifying"][0]["entry_id"], standings["qualifying"][1]["entry_id"] = "E-2", "E-1"
    assert check(forged(bundle, tmp_path / "a.zip", CENTRAL,
                        records__standings_json=standings)).problems == [
        "records/standings.json: the qualifying standings differ from those recomputed from"
        " the scores, from row 1: recomputed 1. E-1 R1,200.00, stated 1. E-2 R1,200.00"]
    draws = got["records/draws.json"]
    draws[0]["commitment"]["seed_hex"] = "00" * 64
    found = check(forged(bundle, tmp_path / "b.zip", CENTRAL, records__draws_json=draws))
    assert len(found.problems) == 1 and "SHA-256 of the revealed seed is" in found.problems[0]
    messages = got["records/messages.json"]
    messages[0]["envelope"] = messages[0]["envelope"].replace('"score":120000',
                                                              '"score":125000')
    found = check(forged(bundle, tmp_path / "c.zip", CENTRAL, records__messages_json=messages))
    assert found.problems[0].startswith("records/messages.json: table t01 seq 1: the signature"
                                        " does not verify")
    assert "records/scores.json: entry E-1: no verified score.recorded message" in \
        found.problems[1]
    prizes = got["records/prizes.json"]
    prizes[0]["claimed_at"] = "2026-08-30T00:00:00+00:00"
    assert check(forged(bundle, tmp_path / "e.zip", CENTRAL,
                        records__prizes_json=prizes)).problems == [
        f"records/prizes.json: award 1 (weekly 1): claimed at 2026-08-30T00:00:00+00:00,"
        f" after its deadline {prizes[0]['deadline']}"]
    scores = got["records/scores.json"]
    scores[0]["seq"] = "one"
    found = check(forged(bundle, tmp_path / "f.zip", CENTRAL, records__scores_json=scores))
    assert found.problems == ["the bundle's records are malformed, the check stopped there:"
                              " ValueError: invalid literal for int() with base 10: 'one'"]
    corrections = got["records/hand_corrections.json"]
    corrections[0]["balance_after"] += 10_000
    assert check(forged(bundle, tmp_path / "g.zip", CENTRAL,
                        records__hand_corrections_json=corrections)).problems == [
        f"records/hand_corrections.json: {corrections[0]['id']} (table t01 seq 7):"
        " balance_after differ from the table's signed hand.corrected"]
    bundles = got["records/dispute_bundles.json"]
    bundles[0]["countersignature"]["dispute_id"] += 1
    moved_to = bundles[0]["countersignature"]["dispute_id"]
    found = check(forged(bundle, tmp_path / "d.zip", CENTRAL,
                         records__dispute_bundles_json=bundles))
    assert found.problems == [
        f"records/dispute_bundles.json: bundle 1 (dispute {moved_to}, table t01):"
        " countersignature: the signature does not match the statement and the central key"
        " 'leaderboard'"]


def _config(tmp_path: Path, url: str) -> Path:
    save_private_key(CENTRAL, tmp_path / "leaderboard.key")
    path = tmp_path / "leaderboard.toml"
    path.write_text(f"""
[service]
venue = "{VENUE}"
database = "{url}"
[mqtt]
broker = "127.0.0.1:1883"
[keys]
signing_key = "leaderboard.key"
[keys.tables]
t01 = "{key_of("t01").public_key.base64}"
""")
    return path


async def test_the_export_command_names_what_is_wrong(
        bundle: Path, tmp_path: Path, database_url: Database,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, database_url.url)
    secret = tmp_path / "m01.passphrase"
    secret.write_text(PASSPHRASE + "\n")
    wrong = tmp_path / "wrong.passphrase"
    wrong.write_text("not the passphrase at all\n")

    def export_cli(*extra: str) -> tuple[int, str]:
        args = {"--config": str(config), "--from": "2026-07-01", "--to": "2026-07-31",
                "--by": "M01", "--out": str(tmp_path / "cli.zip"),
                "--passphrase-file": str(secret)}
        for flag, value in zip(extra[::2], extra[1::2], strict=True):
            args[flag] = value
        code = main(["leaderboard", "certifier-export",
                     *(x for pair in args.items() for x in pair)])
        out, err = capsys.readouterr()
        return code, out + err

    assert export_cli("--from", "July") == (
        2, "showdown leaderboard: error: --from 'July' is not a date such as 2026-07-01\n")
    code, said = export_cli("--to", "2026-06-30")
    assert code == 2 and "--to 2026-06-30 is before --from 2026-07-01" in said
    code, said = export_cli("--by", "nobody")
    assert code == 3 and "active supervisor or manager" in said
    code, said = export_cli("--passphrase-file", str(wrong))
    assert code == 3 and "--by M01:" in said and not (tmp_path / "cli.zip").exists()
    code, said = export_cli("--out", str(bundle))
    assert code == 2 and "is never overwritten" in said
    code, said = export_cli()
    assert code == 0 and "3 scores" in said and "7 messages" in said
    assert main(["leaderboard", "certifier-verify", str(tmp_path / "cli.zip")]) == 0
    out = capsys.readouterr().out
    assert "WHOLE" in out and "key inside the bundle" in out
    edited(tmp_path / "cli.zip", tmp_path / "bad.zip", "records/prizes.json", b"[]")
    assert main(["leaderboard", "certifier-verify", str(tmp_path / "bad.zip"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["whole"] is False and report["problems"][0].startswith(
        "member records/prizes.json: SHA-256")
    (tmp_path / "junk.zip").write_text("not a zip")
    assert main(["leaderboard", "certifier-verify", str(tmp_path / "junk.zip")]) == 2
    assert "not a certifier's bundle (not a zip file" in capsys.readouterr().err

