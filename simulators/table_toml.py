"""The config file of a simulated table (simulated shoe, chip reader and ID reader), for
demos, benches and tests: one writer, so every simulated table is configured the same way.

Participants acknowledge by a tap of their rewards card on the simulated ID reader; a table
written without an ID reader acknowledges by PIN instead. The console listens on any free
port (several simulated tables share one machine)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from wire.signing import Signer, load_private_key, save_private_key

__all__ = ["DESK_NAME", "desk_key_file", "new_table_home", "simulated_table_toml",
           "table_key_file"]

DESK_NAME = "virtual-desk"  # the key name a simulated table's virtual desk signs with


def _text(value: str | Path) -> str:
    """A TOML basic string (JSON's escaping is valid TOML for these values)."""
    return json.dumps(str(value))


def simulated_table_toml(*, venue: str, table: str, broker: str, tournament: Path,
                         paytables: Path, desk_keys: Mapping[str, str] | None = None,
                         journal: str | Path = "journal.sqlite", table_key: str | Path =
                         "table.key", socket: str | Path = "console.sock", seed: int = 2026,
                         players: int = 3, stage: str = "qualifying", heats: int = 1,
                         hand_pause: float = 0.0, desk_key: str | Path | None = None,
                         virtual_dealer: bool = False,
                         log_format: str = "console", log_level: str = "warning",
                         id_reader: bool = True,
                         acknowledge_with: Sequence[str] | None = None,
                         stall_seconds: float | None = None, rfid: str = "") -> str:
    """A table config (docs/table-config.md) with simulated devices; relative paths are
    relative to the file; `broker` is "embedded" or "host:port". ``acknowledge_with``
    defaults to the card with an ID reader, else the PIN; ``stall_seconds``: the shoe's and
    chip reader's stall timeouts (default theirs); ``rfid``: more lines of the ``[rfid]``
    section (another chip reader's driver and its keys). Nothing virtual runs unless named:
    ``desk_key`` (the virtual desk's key file, its public key among ``desk_keys``: see
    `desk_key_file`) names the virtual desk, ``virtual_dealer`` its dealer too."""
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
{_virtual(desk_key, virtual_dealer)}
[log]
format = {_text(log_format)}
level = {_text(log_level)}
"""


def _virtual(desk_key: str | Path | None, virtual_dealer: bool) -> str:
    """The [sim] lines that name the virtual desk (and dealer), if any."""
    if desk_key is None:
        if virtual_dealer:
            raise ValueError("a virtual dealer needs the virtual desk: give its desk_key")
        return ""
    dealer = "true" if virtual_dealer else "false"
    return f"virtual_desk = true\ndesk_key = {_text(desk_key)}\nvirtual_dealer = {dealer}\n"


def desk_key_file(directory: Path, *, name: str = DESK_NAME) -> tuple[Path, dict[str, str]]:
    """The virtual desk's key file in `directory` (desk.key, made if absent, mode 0600) and
    ``{name: public key}`` to enrol under the config's [keys.desk]: a composer that names a
    virtual desk makes its key and enrols it in the config it writes."""
    path = directory / "desk.key"
    signer = load_private_key(path) if path.exists() else Signer.generate(name)
    if not path.exists():
        save_private_key(signer, path)
    return path, {signer.key_id: signer.public_key.base64}


def table_key_file(directory: Path, table: str) -> Path:
    """The simulated table's own key in `directory` (table.key, made if absent): what
    `showdown keys generate` makes for a production table."""
    path = directory / "table.key"
    if not path.exists():
        save_private_key(Signer.generate(table), path)
    return path


def new_table_home(directory: Path, table: str) -> tuple[Path, str]:
    """A simulated table's new folder under `directory`, holding its newly generated signing
    key (table.key); returns the folder and the key's public half (base64) to enrol."""
    home = directory / table
    home.mkdir()
    key = Signer.generate(table)
    save_private_key(key, home / "table.key")
    return home, key.public_key.base64

