"""The latency benchmark's simulated table (its files and keys), and clearing it off a broker."""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from support.latency_figures import PAYTABLES, PLAYERS, SEED, TOURNAMENT


@dataclass(slots=True)
class BenchTable:
    """A table config in a scratch directory: unique ids, its key, simulated devices."""

    dir: Path
    venue: str
    table: str
    config_path: Path
    public_key: str


def make_table(scratch: Path, broker: str, *, virtual_dealer: bool, heats: int = 1
               ) -> BenchTable:
    """Write a config (and the table key, 0600) for a simulated table on `broker`."""
    from simulators.table_toml import desk_key_file, simulated_table_toml  # noqa: PLC0415
    from wire.signing import Signer, save_private_key  # noqa: PLC0415

    token = secrets.token_hex(3)
    venue, table = f"bench-{token}", f"b-{token}"
    where = Path(tempfile.mkdtemp(prefix=f"{table}-", dir=scratch))
    signer = Signer.generate(table)
    save_private_key(signer, where / "table.key")
    path = where / "table.toml"
    desk_key, desk_keys = desk_key_file(where)  # the virtual desk (and dealer), named
    path.write_text(simulated_table_toml(
        venue=venue, table=table, broker=broker, tournament=TOURNAMENT, paytables=PAYTABLES,
        seed=SEED, players=PLAYERS, heats=heats, desk_keys=desk_keys, desk_key=desk_key.name,
        virtual_dealer=virtual_dealer, log_format="json"))
    return BenchTable(dir=where, venue=venue, table=table, config_path=path,
                      public_key=signer.public_key.base64)


async def forget_on_broker(host: str, port: int, table: BenchTable) -> None:
    """Clear the table's retained status and its persistent session on a shared broker."""
    from wire.mqtt import MqttError, MqttSettings, connect, publish_once  # noqa: PLC0415
    from wire.topics import TableTopics  # noqa: PLC0415

    settings = MqttSettings(host=host, port=port)
    with contextlib.suppress(MqttError):
        await publish_once(settings, TableTopics(table.venue, table.table).status, b"", qos=1,
                           retain=True, client_id=f"bench-clear-{table.table}")
        async with connect(settings, client_id=table.table, clean_session=True):
            pass
