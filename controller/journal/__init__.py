"""The table's journal: an append-only, hash-chained record of every input, and the outbox.

The only package that writes the table's SQLite file (docs/journal.md, docs/dev/daemon-design.md).
Every input is appended with `Journal.append` in ONE transaction together with the outgoing
messages it causes; the daemon rebuilds its state after a crash by replaying `records()`.

Durability: WAL mode with ``synchronous=FULL`` (checked on every connection), so a committed
append survives power loss. Integrity: every row carries a SHA-256 checksum over its content
and the previous row's checksum (a hash chain per table), and a head row names the end of both
chains; `verify()` names every row that was changed, removed, reordered or cut off.

Faults (the error state) are journal records too: `record_fault` appends one, `open_faults`
lists those not yet cleared, and only `clear_faults(operator, reason)` clears them, by
appending a record saying who and why. Record kinds starting with ``journal.`` are the
journal's own (creation, faults, clearing); replay skips them (`is_own_kind`).

One process writes a journal at a time (an exclusive lock on ``<file>.lock``); readers, such as
`showdown recall`, open it read-only and need neither the lock nor the daemon.

Modules: `records` (the values and errors), `checksums` (canonical text, the hash chain),
`models` (the SQLite schema), `sqlite` (connections, lock), `rows` (rows to values), `store`
(`Journal`), `integrity` (the check), `admin` (replacing a damaged journal, `verify_file`),
`writer` (the daemon's one writer thread), `delivery` (the outbox feed the MQTT link drains,
delivery marks in batches).
"""

from controller.journal.admin import Replacement, replace_journal, verify_file
from controller.journal.checksums import (
    GENESIS,
    canonical_json,
    outbox_checksum,
    record_checksum,
)
from controller.journal.records import (
    CREATED_KIND,
    FAULT_KIND,
    FAULTS_CLEARED_KIND,
    OWN_KIND_PREFIX,
    CheckedMessage,
    Fault,
    IntegrityProblem,
    JournalBusy,
    JournalDamaged,
    JournalError,
    JournalRecord,
    JournalUnreadable,
    StoredMessage,
    is_own_kind,
)
from controller.journal.store import Journal

__all__ = [
    "CREATED_KIND",
    "FAULTS_CLEARED_KIND",
    "FAULT_KIND",
    "GENESIS",
    "OWN_KIND_PREFIX",
    "CheckedMessage",
    "Fault",
    "IntegrityProblem",
    "Journal",
    "JournalBusy",
    "JournalDamaged",
    "JournalError",
    "JournalRecord",
    "JournalUnreadable",
    "Replacement",
    "StoredMessage",
    "canonical_json",
    "is_own_kind",
    "outbox_checksum",
    "record_checksum",
    "replace_journal",
    "verify_file",
]
