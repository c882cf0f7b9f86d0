"""A minimal MQTT 3.1.1 publisher on asyncio streams, for the ingest benchmark's fake tables."""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from support.ingest_tables import T0, VENUE, FakeTable
from wire.envelope import EnvelopeError, seal, verify_envelope
from wire.signing import KeyRing, Signer
from wire.topics import TableTopics


def _remaining(length: int) -> bytes:
    """MQTT's variable-length encoding of a packet's remaining length."""
    out = bytearray()
    while True:
        length, digit = divmod(length, 128)
        out.append(digit | (0x80 if length else 0))
        if not length:
            return bytes(out)


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    return len(data).to_bytes(2, "big") + data


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + _remaining(len(body)) + body


class Publisher:
    """A fake table on the broker: publishes its messages (QoS 1, ``window`` in flight) and
    answers the ingest's signed resend requests from what it has published so far.

    A minimal MQTT 3.1.1 client on asyncio streams, whose PUBLISH packets are encoded before
    the clock starts: the fake tables share the machine with the ingest under test, and an
    aiomqtt or paho client costs about as much CPU per message as verifying it. The broker
    sees an ordinary client (clean session, QoS 1 publishes acknowledged one by one).
    """

    def __init__(self, table: FakeTable, host: str, port: int, root: str,
                 leaderboard: Signer) -> None:
        self.table = table
        self.host, self.port = host, port
        self.cmd = TableTopics(VENUE, table.table, root).cmd
        self.commands = KeyRing([leaderboard.public_key])
        self.published = 0  # messages 1..published have left
        self.resent = 0
        # Each message's PUBLISH (QoS 1): the part before the packet id, and the payload.
        self._heads = [_packet(0x32, _text(topic) + bytes(2 + len(payload)))[:-(2 + len(payload))]
                       for topic, payload in table.messages]
        # What a table says when its link comes up: the last seq it has published, so that
        # a lost tail (a broker that dropped messages) is noticed and asked for.
        status = TableTopics(VENUE, table.table, root).status
        birth = seal(venue=VENUE, table=table.table, seq=0, wall=T0, type="availability",
                     body={"state": "online", "link": {"last_published_seq": len(
                         table.messages)}}, boot="bench", mono=0, signer=table.key).encode()
        self._birth = _packet(0x32, _text(status) + (1).to_bytes(2, "big") + birth)
        self._in_flight: dict[int, bool] = {}  # packet id -> counts in the window
        self._last_id = 0
        self._window: asyncio.Semaphore | None = None
        self._subscribed = asyncio.Event()

    async def run(self, window: int, ready: asyncio.Event, go: asyncio.Event) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        reading: asyncio.Task[None] | None = None
        try:
            reading = await self._connect(reader, writer, window)
            slots = self._window
            assert slots is not None  # made by _connect
            ready.set()
            await go.wait()
            for index in range(len(self.table.messages)):
                await slots.acquire()  # given back by the PUBACK
                if reading.done():  # the connection is lost: say why
                    reading.result()
                self._send(writer, index, in_window=True)
                self.published = index + 1
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()
            self._in_flight[1] = False  # its packet id is reserved at start: see _send
            writer.write(self._birth)
            await reading  # answers resend requests until cancelled at the end
        finally:
            if reading is not None:
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await reading
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       window: int) -> asyncio.Task[None]:
        """CONNECT (MQTT 3.1.1, clean session, no keep-alive: a run is short), then SUBSCRIBE
        to the table's commands; the task reading the broker's packets, once subscribed."""
        client_id = f"bench-{self.table.table}-{secrets.token_hex(3)}"
        writer.write(_packet(0x10, _text("MQTT") + bytes([4, 0x02, 0, 0]) + _text(client_id)))
        connack = await reader.readexactly(4)
        if connack[0] != 0x20 or connack[3] != 0:
            raise RuntimeError(f"{client_id}: the broker refused the connection {connack!r}")
        self._window = asyncio.Semaphore(window)
        reading = asyncio.create_task(self._read(reader, writer))
        writer.write(_packet(0x82, (1).to_bytes(2, "big") + _text(self.cmd) + bytes([1])))
        await self._subscribed.wait()
        return reading

    def _send(self, writer: asyncio.StreamWriter, index: int, *, in_window: bool) -> None:
        packet_id = self._last_id
        while True:  # the next id not in flight (2..65535; 1 is the availability's)
            packet_id = 2 if packet_id >= 65_535 else max(packet_id + 1, 2)
            if packet_id not in self._in_flight:
                break
        self._last_id = packet_id
        self._in_flight[packet_id] = in_window
        writer.writelines((self._heads[index], packet_id.to_bytes(2, "big"),
                           self.table.messages[index][1]))

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._window is not None
        try:
            await self._read_packets(reader, writer, self._window)
        finally:
            self._window.release()  # wakes run() if it waits: it then finds this task done

    async def _read_packets(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            window: asyncio.Semaphore) -> None:
        while True:
            first = (await reader.readexactly(1))[0]
            length, shift = 0, 0
            while True:
                digit = (await reader.readexactly(1))[0]
                length |= (digit & 0x7F) << shift
                shift += 7
                if not digit & 0x80:
                    break
            body = await reader.readexactly(length)
            kind = first & 0xF0
            if kind == 0x40:  # PUBACK
                if self._in_flight.pop(int.from_bytes(body[:2], "big"), False):
                    window.release()
            elif kind == 0x90:  # SUBACK
                if body[2:3] != b"\x01":
                    raise RuntimeError(f"{self.cmd}: subscription refused ({body[2:]!r})")
                self._subscribed.set()
            elif kind == 0x30:  # PUBLISH (a command for this table)
                size = int.from_bytes(body[:2], "big")
                topic, rest = body[2:2 + size].decode("utf-8"), body[2 + size:]
                if (first >> 1) & 3:  # QoS 1 or 2: acknowledge it (QoS 1 subscription)
                    writer.write(b"\x40\x02" + rest[:2])
                    rest = rest[2:]
                if topic == self.cmd:
                    self._answer(writer, rest)

    def _answer(self, writer: asyncio.StreamWriter, payload: bytes) -> None:
        try:
            command = verify_envelope(payload, self.commands)
        except EnvelopeError:
            return
        from_seq = command.body.get("from_seq")
        if command.body.get("table") != self.table.table or not isinstance(from_seq, int):
            return
        for index in range(max(from_seq, 1) - 1, self.published):
            self._send(writer, index, in_window=False)
            self.resent += 1
