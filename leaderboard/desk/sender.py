"""Sending the desk's commands to the tables: signed envelopes on each table's `cmd` topic.

A command (`leaderboard.desk.DeskCommand`) becomes the envelope the tables verify
(wire/envelope.py): ``table`` = the desk's key id, ``type`` = the command name, ``seq``
= the command's seq (never reused, leaderboard.desk.command_log), body ``{"table": ...,
"command": ..., "command_id": ..., ...args}``. `DeskSender` publishes it at QoS 1
(wire.mqtt, one connection per command: the desk sends a few a minute); `RecordingSender`
keeps what it would send, for tests and dry runs; `NullSender` drops everything.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol

from leaderboard.desk import DeskCommand
from wire.envelope import Envelope, seal
from wire.mqtt import MqttError, MqttSettings, publish_once
from wire.signing import Signer
from wire.topics import TableTopics, validate_id

__all__ = ["CommandSender", "DeskSender", "NullSender", "RecordingSender", "SendError",
           "seal_command"]

_BOOT: Final = f"desk-{uuid.uuid4().hex[:12]}"  # this process: tables log it with the command


class SendError(Exception):
    """A command recorded at the desk but not delivered to the broker (names the table, seq)."""


class CommandSender(Protocol):
    """Anything that delivers desk commands to tables."""

    async def send(self, command: DeskCommand) -> None:
        """Deliver one command (raise SendError if it cannot be)."""


def seal_command(command: DeskCommand, *, venue: str, signer: Signer,
                 wall: datetime | None = None) -> Envelope:
    """The signed envelope of a desk command (the envelope's sender is the desk's key id)."""
    return seal(venue=venue, table=signer.key_id, seq=command.seq,
                wall=wall or datetime.now(UTC), type=command.command,
                body=command.body(signer.key_id), boot=_BOOT, mono=time.monotonic_ns(),
                signer=signer)


class DeskSender:
    """Publishes signed desk commands to `showdown/v1/{venue}/tables/{table}/cmd` over MQTT."""

    def __init__(self, settings: MqttSettings, *, venue: str, signer: Signer,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.settings = settings
        self.venue = validate_id("venue", venue)
        self.signer = signer
        self._wall = wall

    async def send(self, command: DeskCommand) -> None:
        """Sign and publish one command at QoS 1; SendError if the broker cannot be reached."""
        envelope = seal_command(command, venue=self.venue, signer=self.signer,
                                wall=self._wall())
        topic = TableTopics(self.venue, command.table, self.settings.topic_root).cmd
        s = self.settings
        try:
            await publish_once(
                s, topic, envelope.encode(), qos=1,
                client_id=f"{self.signer.key_id}-{command.seq}-{uuid.uuid4().hex[:6]}")
        except (MqttError, OSError) as exc:
            raise SendError(
                f"{command.command} for table {command.table} (seq {command.seq}) is recorded"
                f" but was not delivered to {s.host}:{s.port}: {exc}"
            ) from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One command a RecordingSender received, with its envelope if it signs."""

    command: DeskCommand
    envelope: Envelope | None


class RecordingSender:
    """Keeps every command (signed with `signer` if one is given) instead of publishing."""

    def __init__(self, *, venue: str = "test-venue", signer: Signer | None = None) -> None:
        self.venue = venue
        self.signer = signer
        self.sent: list[Sent] = []

    async def send(self, command: DeskCommand) -> None:
        """Record the command."""
        envelope = (seal_command(command, venue=self.venue, signer=self.signer)
                    if self.signer is not None else None)
        self.sent.append(Sent(command=command, envelope=envelope))

    @property
    def commands(self) -> list[DeskCommand]:
        """The commands received, in order."""
        return [s.command for s in self.sent]


class NullSender:
    """Sends nothing (a desk without tables, or a dry run)."""

    async def send(self, command: DeskCommand) -> None:
        """Drop the command."""
        del command
