"""controller.journal checkpoints and verified heads: written inside the chain, found newest
first, and every kind of damage to one makes it unusable with a reason (never a wrong state);
the incremental check starts after a signed mark and still finds damage after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.clock import FakeClockSource
from controller.journal import Journal, verify_file
from controller.journal.checkpoints import (
    CHECKPOINT_KIND,
    KEPT_STATES,
    find_checkpoints,
    read_heads,
    write_checkpoint,
)
from controller.journal.verified_head import latest_mark, record_verified, verify
from tests.controller.journal.support import add, found, raw, tamper
from wire.signing import Signer

KEY = Signer.from_seed("t01", b"k" * 32)
OTHER = Signer.from_seed("t01", b"o" * 32)


def checkpointed(path: Path, fake: FakeClockSource) -> tuple[int, int]:
    """A journal with two checkpoints (states {"n": 1} and {"n": 2}); their record seqs."""
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 3, per_record=1)
        first = write_checkpoint(j, {"n": 1}, covers=read_heads(j), snapshot_version=7,
                                 signer=KEY).seq
        add(j, fake, 2, per_record=2)
        second = write_checkpoint(j, {"n": 2}, covers=read_heads(j), snapshot_version=7,
                                  signer=KEY).seq
        add(j, fake, 1, per_record=1)
    assert verify_file(path) == []
    return first, second


def usable(path: Path) -> list[tuple[int, object, str | None]]:
    with Journal.open(path, read_only=True) as j:
        return [(c.seq, c.body, c.problem) for c in find_checkpoints(j, KEY.public_key)]


def test_checkpoints_are_chained_records_found_newest_first(path: Path,
                                                            fake: FakeClockSource) -> None:
    first, second = checkpointed(path, fake)
    assert usable(path) == [(second, {"n": 2}, None), (first, {"n": 1}, None)]
    with Journal.open(path, read_only=True) as j:
        kinds = [r.kind for r in j.records()]
        newest = next(iter(find_checkpoints(j, KEY.public_key)))
    assert kinds.count(CHECKPOINT_KIND) == 2
    assert newest.covers.journal_seq == second - 1 and newest.snapshot_version == 7
    assert newest.covers.outbox_seq == 3 + 4  # the messages before it


@pytest.mark.parametrize(("damage", "reason"), [
    ("UPDATE checkpoint_body SET body = '{\"n\":3}' WHERE body = '{\"n\":2}'",
     "does not match its SHA-256"),
    ("DELETE FROM checkpoint_body WHERE body = '{\"n\":2}'", "state is missing"),
    ("UPDATE checkpoint_body SET body = 'not json' WHERE body = '{\"n\":2}'",
     "does not match its SHA-256"),
])
def test_a_damaged_state_makes_only_that_checkpoint_unusable(
        path: Path, fake: FakeClockSource, damage: str, reason: str) -> None:
    first, second = checkpointed(path, fake)
    con = raw(path)
    con.execute(damage)
    con.close()
    (s2, body2, why2), (s1, body1, why1) = usable(path)
    assert (s2, body2) == (second, None) and why2 is not None and reason in why2
    assert (s1, body1, why1) == (first, {"n": 1}, None)
    assert verify_file(path) == []  # the chain is intact: no alert


def test_another_key_or_a_forged_signature_is_refused(path: Path,
                                                      fake: FakeClockSource) -> None:
    checkpointed(path, fake)
    with Journal.open(path, read_only=True) as j:
        problems = [c.problem for c in find_checkpoints(j, OTHER.public_key)]
    assert len(problems) == 2 and all("not the table key's" in str(p) for p in problems)


def test_a_changed_checkpoint_record_is_refused_and_is_chain_damage(
        path: Path, fake: FakeClockSource) -> None:
    _first, second = checkpointed(path, fake)
    edit = ("UPDATE journal SET payload = replace(payload, '\"snapshot_version\":7', "
            "'\"snapshot_version\":8') WHERE seq = ")
    tamper(path, edit + str(second))
    assert usable(path)[0][2] == "its record does not match its checksum (changed)"
    assert ("journal", "checksum_mismatch", second) in found(verify_file(path))


def test_incremental_verification_starts_after_the_signed_mark(path: Path,
                                                               fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 5, per_record=1)
        first = verify(j, KEY.public_key)
        assert first.scope == "full" and first.problems == []
        mark = record_verified(j, first.heads, KEY, first.scope).seq
        add(j, fake, 4, per_record=1)
        second = verify(j, KEY.public_key)
    assert second.scope == "incremental" and second.problems == []
    assert second.start == first.heads and second.mark_seq == mark
    # damage before the mark is not read again (that is the point); --full finds it
    tamper(path, "UPDATE journal SET payload = '{\"n\":99}' WHERE seq = 3")
    with Journal.open(path, read_only=True) as j:
        assert verify(j, KEY.public_key).problems == []
        full = verify(j, KEY.public_key, full=True)
    assert full.scope == "full" and ("journal", "checksum_mismatch", 3) in found(full.problems)
    # damage after the mark is found
    tamper(path, f"UPDATE journal SET payload = '{{\"n\":98}}' WHERE seq = {mark + 2}")  # noqa: S608
    with Journal.open(path, read_only=True) as j:
        after = verify(j, KEY.public_key)
    assert after.scope == "incremental"
    assert ("journal", "checksum_mismatch", mark + 2) in found(after.problems)


def test_a_mark_whose_rows_changed_or_another_keys_mark_is_not_trusted(
        path: Path, fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        add(j, fake, 5, per_record=1)
        heads = read_heads(j)
        record_verified(j, heads, OTHER, "full")
        add(j, fake, 1)
        check = verify(j, KEY.public_key)
        assert check.scope == "full" and "not signed by the table key" in check.note
        assert latest_mark(j, OTHER.public_key)[0] == heads
        record_verified(j, heads, KEY, "full")
    tamper(path, f"UPDATE journal SET checksum = '{'f' * 64}' "  # noqa: S608
                 f"WHERE seq = {heads.journal_seq}")
    with Journal.open(path, read_only=True) as j:
        check = verify(j, KEY.public_key)
    assert check.scope == "incremental"
    assert ("journal", "verified_changed", heads.journal_seq) in found(check.problems)


def test_only_the_newest_states_are_kept(path: Path, fake: FakeClockSource) -> None:
    with Journal.open(path, clock=fake) as j:
        for n in range(KEPT_STATES + 2):
            add(j, fake, 1, per_record=1)
            write_checkpoint(j, {"n": n}, covers=read_heads(j), snapshot_version=7,
                             signer=KEY)
    found = [(body, problem) for _, body, problem in usable(path)]
    assert found == [({"n": n}, None) for n in reversed(range(2, KEPT_STATES + 2))]
    con = raw(path)
    assert con.execute("SELECT count(*) FROM checkpoint_body").fetchone()[0] == KEPT_STATES
    con.close()
    with Journal.open(path, read_only=True) as j:  # the older records stay, their state gone
        older = list(find_checkpoints(j, KEY.public_key, limit=KEPT_STATES + 2))
    assert [c.problem for c in older[KEPT_STATES:]] == ["its state is missing"] * 2
    assert verify_file(path) == []
