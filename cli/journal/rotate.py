"""`showdown journal rotate --config TABLE.toml --reason TEXT`: the technician's rotation of a
table's journal file (docs/journal.md, Rotation), with the daemon stopped.

It loads the table's state from the journal as the daemon's start-up does (newest checkpoint,
then the records after it), and, when the table is between hands and every message has been
delivered, keeps the current file read-only under a dated name and starts a new one that
continues both chains with a checkpoint of that state. The daemon also rotates by itself at
start-up when ``[journal] rotate`` says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.arguments import add_renamed
from cli.errors import CommandError, CommandRefused
from controller.config import read_table_config
from controller.journal import JournalError
from controller.journal.rotation import rotate_journal
from controller.startup import checkpoint_body, start_journal
from game.errors import ConfigError
from game.table.snapshot import SNAPSHOT_VERSION, is_safe_point, take_snapshot
from runtime.logs import get_logger

__all__ = ["register_rotate", "run_rotate"]


def register_rotate(actions: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `journal rotate`."""
    r = actions.add_parser(
        "rotate", help="start a new journal file that continues this one (logged)",
        description="Keep the journal read-only under a dated name and start a new file that "
                    "continues both chains and begins with a checkpoint. Needs the table "
                    "between hands and every message delivered. Stop the daemon first.")
    r.add_argument("--config", required=True, type=Path, metavar="FILE",
                   help="the table's config (its journal, key and settings)")
    add_renamed(r, "--why", was="--reason", dest="reason", required=True, metavar="TEXT",
                help="why, in words")
    r.set_defaults(handler=run_rotate)


def run_rotate(args: argparse.Namespace) -> int:
    """Rotate the journal the table config names."""
    from controller.wiring import wire_table  # noqa: PLC0415 (the daemon's whole wiring)

    try:
        config = read_table_config(args.config)
        daemon = wire_table(config).daemon
        service = daemon._load()[0]
        signer = daemon._table_signer()
    except ConfigError as e:
        raise CommandError(str(e)) from e
    reason = " ".join(str(args.reason).split())
    if not reason:
        raise CommandError("--why must say why")
    log = get_logger("showdown.journal")
    started = start_journal(config.journal, service=service, fresh=lambda: daemon._load()[0],
                            signer=signer, checkpoints=True, log=log, clock=daemon.clock)
    if started.journal is None or started.faults:
        if started.journal is not None:
            started.journal.close()
        raise CommandRefused("the journal is in its error state ("
                           + "; ".join(started.faults) + "): it is not rotated")
    started.journal.close()
    core = started.service.core
    if not is_safe_point(core):
        raise CommandRefused("a hand is in progress: rotate between hands")
    body = checkpoint_body(take_snapshot(core), started.shoe_reads)
    try:
        done = rotate_journal(config.journal, state=body, snapshot_version=SNAPSHOT_VERSION,
                              signer=signer, reason=f"by the technician: {reason}",
                              clock=daemon.clock)
    except JournalError as e:
        raise CommandError(str(e)) from e
    print(f"kept {config.journal} read-only as {done.archived}")
    print(f"  sha256 {done.sha256}; its last record {done.heads.journal_seq}, last message "
          f"seq {done.heads.outbox_seq}")
    print(f"new journal {config.journal}: continues both chains, starts with a checkpoint")
    return 0
