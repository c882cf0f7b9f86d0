"""A virtual tournament desk: sends signed desk commands to a table's `cmd` topic over MQTT,
exactly as the registration desk of the central service will."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from wire.envelope import seal
from wire.messages import COMMANDS, DeskOrder, MessageError
from wire.mqtt import MqttSettings, publish_once
from wire.signing import Signer
from wire.topics import TableTopics

__all__ = ["VirtualDesk"]


class VirtualDesk:
    """Publishes desk commands (QoS 1) signed with the desk's key; `seq` rises per command."""

    def __init__(self, *, host: str, port: int, venue: str, signer: Signer,
                 settings: MqttSettings | None = None) -> None:
        """``settings``: how to connect besides the address (the table's TLS, CA, client
        certificate and credentials); none: plain MQTT without credentials."""
        self.host, self.port, self.venue, self.signer = host, port, venue, signer
        self.settings = settings or MqttSettings(host=host, port=port)
        self._seq = time.time_ns() // 1_000_000  # ms: unique and rising across runs

    async def send(self, table: str, command: str, **body: Any) -> int:
        """Sign and publish one command for `table` (MessageError if it is not one a table
        accepts); returns its seq."""
        kind = COMMANDS.get(command)
        if kind is None:
            raise MessageError("desk command", "command", "must be a known command", command)
        self._seq += 1
        order = DeskOrder(command=kind.decode(body), table=table,
                          command_id=f"{self.signer.key_id}-{self._seq}")
        envelope = seal(venue=self.venue, table=self.signer.key_id, seq=self._seq,
                        wall=datetime.now(UTC), type=order.name, body=order.encode(),
                        boot="virtual-desk", mono=time.monotonic_ns(), signer=self.signer)
        topic = TableTopics(self.venue, table).cmd
        where = dataclasses.replace(self.settings, host=self.host, port=self.port, failover=())
        await publish_once(where, topic,
                           envelope.encode(), qos=1, client_id=f"{self.signer.key_id}-{self._seq}")
        return self._seq
