"""The simulated ID readers on their own, without the drivers: the simulated wedge's typing and
faults as the events it gives, a capture replayed at its pace, and the vpcd card speaking the
vicc protocol to a stand-in for vpcd (a TCP listener in the test: no pcscd needed).
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from drivers.errors import DeviceLost, DeviceNotFound
from drivers.id_wedge import GrabRefused
from drivers.readings import IdTap
from drivers.wedge_capture import Capture
from drivers.wedge_codec import EV_KEY, KEY_ENTER, InputEvent, WedgeDecoder, keystrokes
from simulators.vpcd_card import CTRL_ATR, CTRL_ON, VpcdCard, contactless_atr
from simulators.wedge import CaptureReplay, SimulatedWedge


def typed(wedge: SimulatedWedge, wait: float = 2.0) -> list[InputEvent]:
    """Everything the wedge types within ``wait`` seconds (until quiet for 0.2 s)."""
    out: list[InputEvent] = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        got = wedge.read(0.2)
        if not got and out:
            break
        out.extend(got)
    return out


def lines(events: list[InputEvent]) -> list[str | tuple[str, str]]:
    decoder = WedgeDecoder("sim")
    return [(r.number, r.form) if isinstance(r, IdTap) else r.detail
            for e in events if (r := decoder.feed(e, at_mono=0.0)) is not None]


def test_a_tap_is_typed_as_its_line_and_enter() -> None:
    wedge = SimulatedWedge(interval=0.001)
    wedge.open()
    wedge.tap("6012345678901234")
    wedge.tap("12345678", "plain")
    events = typed(wedge)
    assert lines(events) == [("6012345678901234", "track2"), ("12345678", "plain")]
    assert sum(1 for e in events if (e.type, e.code, e.value) == (EV_KEY, KEY_ENTER, 1)) == 2
    with pytest.raises(ValueError, match=r"8\.\.19 digits"):
        wedge.tap("1234", "plain")


def test_faults_drop_silence_and_delay_a_tap() -> None:
    wedge = SimulatedWedge(interval=0.001)
    wedge.open()
    wedge.inject("drop")
    wedge.tap("11111111", "plain")
    wedge.tap("22222222", "plain")
    assert lines(typed(wedge)) == [("22222222", "plain")]
    wedge.set_fault("silent", True)
    wedge.tap("33333333", "plain")
    assert wedge.read(0.2) == []
    wedge.set_fault("silent", False)
    wedge.set_fault("delay", 1.0)
    wedge.tap("44444444", "plain")
    assert wedge.read(0.05) == []  # held back
    assert lines(typed(wedge, wait=5.0)) == [("44444444", "plain")]


def test_unplug_loses_what_was_not_typed_and_refuses_opening_until_plugged() -> None:
    wedge = SimulatedWedge(interval=0.01)
    wedge.open()
    wedge.tap("6012345678901234")
    wedge.unplug()
    with pytest.raises(DeviceLost, match="unplugged"):
        wedge.read(0.1)
    with pytest.raises(DeviceNotFound):
        wedge.open()
    wedge.plug()
    wedge.open()
    assert wedge.read(0.1) == []  # the half-typed card went with the unplug
    wedge.set_fault("grab_busy", True)
    with pytest.raises(GrabRefused):
        wedge.open()


def test_a_capture_replays_at_its_pace_and_can_end_unplugged() -> None:
    events = tuple(keystrokes("12345678", start=100.0, interval=0.02))  # ~0.3 s of typing
    replay = CaptureReplay(Capture(events=events), speed=1.0, then="unplug")
    replay.open()
    started = time.monotonic()
    got: list[InputEvent] = []
    while len(got) < len(events):
        got.extend(replay.read(0.05))
    took = time.monotonic() - started
    assert got == list(events)
    assert took >= (events[-1].sec - events[0].sec) * 0.9  # not all at once: at its pace
    with pytest.raises(DeviceLost, match="ended"):
        replay.read(0.05)
    assert replay.done.is_set()


def _send(conn: socket.socket, payload: bytes) -> bytes:
    conn.sendall(struct.pack(">H", len(payload)) + payload)
    (length,) = struct.unpack(">H", _exact(conn, 2))
    return _exact(conn, length)


def _exact(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        assert chunk, "the card closed the connection"
        data += chunk
    return data


def test_the_card_speaks_the_vicc_protocol_to_a_listening_reader() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        card = VpcdCard("04a1b2c3d4e5f6", port=server.getsockname()[1])
        card.present()
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5.0)
            conn.sendall(struct.pack(">HB", 1, CTRL_ON))  # power on: no answer
            assert _send(conn, bytes([CTRL_ATR])) == contactless_atr(7)
            assert _send(conn, bytes.fromhex("FFCA000000")) == bytes.fromhex(
                "04A1B2C3D4E5F69000")
            card.once("unsupported")
            assert _send(conn, bytes.fromhex("FFCA000000")) == bytes.fromhex("6A81")
            card.withdraw()
            assert conn.recv(16) == b""  # withdrawn: the reader sees the connection end
        card.faults["silent"] = True  # laid down again, it leaves without giving its ATR
        card.present()
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5.0)
            conn.sendall(struct.pack(">HB", 1, CTRL_ATR))
            assert conn.recv(16) == b""
    assert card.stats["get_data"] == 2
    assert not card.present_now
    with pytest.raises(ValueError, match="4, 7 or 10 bytes"):
        VpcdCard("0102")
