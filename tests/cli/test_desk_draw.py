"""Issue 33 point 8 at the desk: `showdown desk draw --witness` commits to the seed's digest
before it draws, on the real desk API (SQLite and PostgreSQL): the digest and the witness are
printed first, the draw reveals the seed, and anyone can check one against the other."""

from __future__ import annotations

import hashlib

from sqlalchemy import select
from sqlalchemy.orm import Session

from cli.errors import EXIT_REFUSED, EXIT_USAGE
from leaderboard.models import AuditEntry
from tests.cli.test_desk import Desk, central, run  # noqa: F401 (the fixtures)
from tests.leaderboard.desk_fields import final_field


def test_the_draw_is_committed_before_a_witness_first(run: Desk) -> None:  # noqa: F811
    with run.database() as engine, Session(engine, expire_on_commit=False) as s:
        final_field(s, run.clock)
    code, _, err = run("draw")
    assert code == EXIT_USAGE and "--witness STAFF_ID is required" in err
    code, _, err = run("draw", "--witness", "S-nobody")
    assert code == EXIT_USAGE and "S-nobody" in err
    code, _, err = run("staff", "add", "--staff-id", "S-night", "--name", "Night Supervisor",
                       "--role", "supervisor", "--passphrase-file", str(run.passphrase))
    assert code == 0, err
    code, out, err = run("draw", "--witness", "S-night")
    assert code == 0, err
    lines = out.splitlines()
    # The commitment is printed first, then the draw, the seed revealed, and the six seats.
    assert lines[0].startswith("commitment ") and lines[0].endswith("witnessed by S-night")
    digest = lines[0].split("seed SHA-256 ", 1)[1].split(",", 1)[0]
    assert lines[1].startswith("draw ") and " made, random bytes " in lines[1]
    seed = lines[2].split("seed revealed ", 1)[1].split(":", 1)[0]
    assert hashlib.sha256(bytes.fromhex(seed)).hexdigest() == digest
    assert lines[2].endswith("matches the commitment")
    assert sorted(int(line.rsplit(" ", 1)[1]) for line in lines[3:]) == [1, 2, 3, 4, 5, 6]
    with run.database() as engine, Session(engine) as s:  # the digest was audited first
        actions = [(a.action, a.detail) for a in s.scalars(
            select(AuditEntry).order_by(AuditEntry.id))]
    committed = [i for i, (a, d) in enumerate(actions)
                 if a == "final.draw_committed" and d.get("seed_sha256") == digest]
    drawn = [i for i, (a, _) in enumerate(actions) if a == "final.drawn"]
    assert committed and drawn and committed[0] < drawn[0]
    assert actions[committed[0]][1]["witness"] == "S-night"
    code, _, err = run("draw", "--witness", "S-night")
    assert code == EXIT_REFUSED and "drawn already" in err
