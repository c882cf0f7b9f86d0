"""The config file of a simulated table (simulated shoe, chip reader and ID reader), for
demos, benches and tests: one writer, so every simulated table is configured the same way.

Participants acknowledge by a tap of their rewards card on the simulated ID reader; a table
written without an ID reader acknowledges by PIN instead. The console listens on any free
port (several simulated tables share one machine)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from wire.signing import Signer, save_private_key

__all__ = ["new_table_home", "simulated_table_toml"]


def _text(value: str | Path) -> str:
    """A TOML basic string (JSON's escaping is valid TOML for these values)."""
    return json.dumps(str(value))


def simulated_table_toml(*, venue: str, table: str, broker: str, tournament: Path,
                         paytables: Path, desk_keys: Mapping[str, str] | None = None,
                         journal: str | Path = "journal.sqlite", table_key: str | Path =
                         "table.key", socket: str | Path = "console.sock", seed: int = 2026,
                         players: int = 3, stage: str = "qualifying", heats: int = 1,
                         hand_pause: float = 0.0, virtual_dealer: bool = True,
                         log_format: str = "console", log_level: str = "warning",
                         id_reader: bool = True,
                         acknowledge_with: Sequence[str] | None = None,
                         stall_seconds: float | None = None, rfid: str = "") -> str:
    """A table config (docs/table-config.md) with simulated devices; relative paths are
    relative to the file; `broker` is "embedded" or "host:port". ``acknowledge_with``
    defaults to the card with an ID reader, else the PIN; ``stall_seconds``: the shoe's and
    chip reader's stall timeouts (default theirs); ``rfid``: more lines of the ``[rfid]``
    section (another chip reader's driver and its keys)."""
    desk = "".join(f"{name} = {_text(key)}\n" for name, key in (desk_keys or {}).items())
    methods = list(acknowledge_with or (["card"] if id_reader else ["pin"]))
    ids = '[id_reader]\nkind = "sim"\n\n' if id_reader else ""
    stall = "" if stall_seconds is None else f"stall_seconds = {stall_seconds}\n"
    return f"""\
# A simulated table: simulated card shoe, chip reader and ID reader behind the real drivers.
[table]
venue = {_text(venue)}
id = {_text(table)}
journal = {_text(journal)}

[files]
tournament = {_text(tournament)}
paytables = {_text(paytables)}

[keys]
table_key = {_text(table_key)}
{"[keys.desk]" + chr(10) + desk if desk else ""}
[shoe]
kind = "sim"
{stall}
[rfid]
kind = "sim"
{stall}{rfid}
{ids}[console]
port = 0
acknowledge_with = [{", ".join(_text(m) for m in methods)}]

[mqtt]
broker = {_text(broker)}

[api]
socket = {_text(socket)}

[sim]
seed = {seed}
players = {players}
stage = {_text(stage)}
heats = {heats}
hand_pause = {hand_pause}
virtual_dealer = {"true" if virtual_dealer else "false"}

[log]
format = {_text(log_format)}
level = {_text(log_level)}
"""


def new_table_home(directory: Path, table: str) -> tuple[Path, str]:
    """A simulated table's new folder under `directory`, holding its newly generated signing
    key (table.key); returns the folder and the key's public half (base64) to enrol."""
    home = directory / table
    home.mkdir()
    key = Signer.generate(table)
    save_private_key(key, home / "table.key")
    return home, key.public_key.base64

