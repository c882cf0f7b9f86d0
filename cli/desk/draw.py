"""`showdown desk draw`: the Final's seat draw, committed before it is drawn (issue 33 point 8).

    1. POST /draw-commitments {stage: "final", witness}  -> {commitment_id, seed_sha256,
       committed_at}: the seed's digest and the witness are printed BEFORE the draw;
    2. POST /draws {stage: "final", commitment_id}       -> the draw, its seed revealed
       (``seed_hex``), which anyone can check against the digest printed first.

Both steps are the central service's: the desk never draws without a commitment (D357).
``--replay ID`` replays a stored draw.
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

from cli.desk import actions as act
from cli.desk import api
from cli.errors import CommandError

__all__ = ["run_draw"]


def _replay(args: argparse.Namespace) -> int:
    r = api.call(args, "GET", api.path("draws", args.replay, "replay"))
    lines = [f"draw {r['draw_id']}: replay "
             + ("matches" if r["matches"] else "DIFFERS from the stored result")]
    stored, replayed = dict(r["stored"]), dict(r["replayed"])
    lines += [f"  {e}: stored seat {seat}, replayed seat {replayed.get(e)}"
              for e, seat in stored.items()]
    act.show(args, r, lines)
    return 0 if r["matches"] else 1


def _commit(args: argparse.Namespace) -> dict[str, Any]:
    """The commitment made before the draw (printed at once)."""
    c = api.call(args, "POST", "draw-commitments",
                 {"stage": "final", "witness": args.witness, "why": args.why})
    if not args.json:
        print(f"commitment {c['commitment_id']} made at {c['committed_at']}: seed SHA-256"
              f" {c['seed_sha256']}, witnessed by {args.witness}", flush=True)
    return dict(c)


def run_draw(args: argparse.Namespace) -> int:
    """Draw the Final's seats (committed first), or replay a stored draw."""
    if args.replay is not None:
        return _replay(args)
    if not args.witness:
        raise CommandError("--witness STAFF_ID is required: the staff member who watches the"
                           " seed's digest recorded before the draw")
    commitment = _commit(args)
    body: dict[str, Any] = {"why": args.why, "stage": "final",
                            "commitment_id": commitment["commitment_id"]}
    outcome = api.call(args, "POST", "draws", body)
    seed = outcome.get("seed_hex")
    lines = [f"draw {outcome['draw_id']} " + ("(already drawn: reused)" if outcome.get("reused")
                                              else "made")
             + f", random bytes {outcome.get('random_hex')}"]
    if seed is not None:
        matches = hashlib.sha256(bytes.fromhex(seed)).hexdigest() == commitment["seed_sha256"]
        lines.append(f"seed revealed {seed}: its SHA-256 "
                     + ("matches the commitment" if matches else "DOES NOT MATCH the commitment"))
    lines += [f"  {e}: seat {seat}" for e, seat in sorted(outcome["seats"].items(),
                                                           key=lambda x: x[1])]
    act.show(args, {**outcome, "commitment": commitment}, lines)
    return 0
