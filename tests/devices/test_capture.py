"""`showdown devices record` and `devices check --capture`: a simulator stands in for the real
device (a pty for the serial shoe and ID reader, a TCP port for a networked one); the
recording replays through the kit with the same readings and no alert beyond those
recorded; a capture that is not one, and a USB driver that cannot be relayed, say so."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from simulators.id_reader import IdReaderSimulator
from simulators.shoe import ShoeSimulator

pytestmark = pytest.mark.usefixtures("kit_drivers")


def _record(words: list[str], act: Callable[[], None]) -> int:
    """Run `devices record` in a thread while ``act`` plays the device's part here."""
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(main(["devices", "record",
                                                                 *words])))
    thread.start()
    time.sleep(0.4)  # the driver connects through the relay
    act()
    thread.join(timeout=30)
    return result[0]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def shoe() -> Iterator[ShoeSimulator]:
    with ShoeSimulator(seed=7, heartbeat_interval=0.1, rto=0.05, rto_max=0.2) as sim:
        yield sim


def _config(tmp_path: Path, section: str, driver: str, key: str, port: str) -> Path:
    config = tmp_path / "table.toml"
    config.write_text(f'[{section}]\nkind = "hardware"\ndriver = "{driver}"\n{key} = "{port}"\n',
                      encoding="utf-8")
    return config


def test_a_shoe_recorded_through_the_relay_replays_with_the_same_cards(
        tmp_path: Path, shoe: ShoeSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    assert shoe.path is not None
    config = _config(tmp_path, "shoe", "showdown-shoe", "url", shoe.path)
    out = tmp_path / "shoe.capture.jsonl"
    dealt: list[str] = []

    def deal() -> None:
        for _ in range(8):
            dealt.append(str(shoe.deal(1)[0]))
            time.sleep(0.03)
        time.sleep(0.3)

    code = _record(["--driver", "showdown-shoe", "--config", str(config), "--out", str(out),
                    "--seconds", "1.2"], deal)
    assert code == 0
    assert "the driver read" in capsys.readouterr().out
    lines = _lines(out)
    assert lines[0]["capture"] == "showdown-devices"
    assert lines[0]["driver"] == "showdown-shoe"
    assert lines[0]["devices"] == [{"where": ["url"], "device": shoe.path}]
    assert {x["dir"] for x in lines if "dir" in x} == {"rx", "tx"}  # both directions
    cards = [x["reading"]["card"] for x in lines if x.get("reading", {}).get("kind") == "card"]
    assert cards == dealt
    assert lines[-1]["end"] is True
    assert out.stat().st_mode & 0o777 == 0o600  # for the owner only (D309)

    shoe.stop()  # the device is gone: only the capture is left
    assert main(["devices", "check", "--driver", "showdown-shoe", "--capture", str(out),
                 "--json"]) == 0
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert [r["status"] for r in rows.values()] == ["PASS"] * 4
    assert "8 card" in rows["readings"]["detail"]


@pytest.mark.soak
def test_a_capture_whose_readings_differ_fails_the_readings_row(
        tmp_path: Path, shoe: ShoeSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    assert shoe.path is not None
    config = _config(tmp_path, "shoe", "showdown-shoe", "url", shoe.path)
    out = tmp_path / "shoe.capture.jsonl"

    def deal() -> None:
        shoe.deal(12)
        time.sleep(0.3)

    assert _record(["--driver", "showdown-shoe", "--config", str(config), "--out", str(out),
                    "--seconds", "1"], deal) == 0
    capsys.readouterr()
    # The driver that drops its tenth card, on the same bytes: it does not read the same.
    assert main(["devices", "check", "--driver", "kit-shoe-drops-a-card", "--capture",
                 str(out), "--json"]) == 1
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["readings"]["status"] == "FAIL"
    assert rows["readings"]["detail"].startswith("reading ")


@pytest.mark.soak
def test_an_id_reader_recorded_replays_its_taps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with IdReaderSimulator() as sim:
        assert sim.path is not None
        config = _config(tmp_path, "id_reader", "serial-lines", "port", sim.path)
        out = tmp_path / "ids.capture.jsonl"

        def taps() -> None:
            sim.tap("6280001234567890", "track2")
            time.sleep(0.1)
            sim.tap("04A1B2C3D4E5F6", "uid")
            time.sleep(0.2)

        assert _record(["--driver", "serial-lines", "--config", str(config), "--out",
                        str(out), "--seconds", "0.8"], taps) == 0
    capsys.readouterr()
    assert main(["devices", "check", "--driver", "serial-lines", "--capture", str(out),
                 "--json"]) == 0
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert "2 tap" in rows["readings"]["detail"]
    assert "wrote none" not in rows["host requests"]["detail"]


class _TcpShoe:
    """The shoe simulator reachable over TCP (a networked device): a byte bridge."""

    def __init__(self, sim: ShoeSimulator) -> None:
        self.sim = sim
        self.port = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _TcpShoe:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import serial  # type: ignore[import-untyped]

        port = serial.Serial(self.sim.path, timeout=0)
        loop = asyncio.get_running_loop()

        def from_device() -> None:
            data = port.read(4096)
            if data:
                writer.write(data)

        loop.add_reader(port.fileno(), from_device)
        try:
            while data := await reader.read(4096):
                port.write(data)
        finally:
            loop.remove_reader(port.fileno())
            port.close()
            writer.close()


@pytest.mark.soak
def test_a_tcp_device_is_recorded_through_a_local_port_and_replayed(
        tmp_path: Path, shoe: ShoeSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    with _TcpShoe(shoe) as tcp:
        config = _config(tmp_path, "shoe", "showdown-shoe", "url",
                         f"socket://127.0.0.1:{tcp.port}")
        out = tmp_path / "tcp.capture.jsonl"

        def deal() -> None:
            shoe.deal(5)
            time.sleep(0.3)

        assert _record(["--driver", "showdown-shoe", "--config", str(config), "--out", str(out),
                        "--seconds", "1"], deal) == 0
    head = _lines(out)[0]
    assert head["devices"] == [{"where": ["url"], "device": f"socket://127.0.0.1:{tcp.port}"}]
    capsys.readouterr()
    assert main(["devices", "check", "--driver", "showdown-shoe", "--capture", str(out),
                 "--json"]) == 0
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert "5 card" in rows["readings"]["detail"]


@pytest.mark.soak
def test_ctrl_c_ends_a_recording_as_its_time_would(
        tmp_path: Path, shoe: ShoeSimulator) -> None:
    assert shoe.path is not None
    config = _config(tmp_path, "shoe", "showdown-shoe", "url", shoe.path)
    out = tmp_path / "shoe.capture.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "devices", "record", "--driver",
                             "showdown-shoe", "--config", str(config), "--out", str(out),
                             "--seconds", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not out.exists() or len(_lines(out)) < 3):
        time.sleep(0.1)  # recording: the header and the shoe's first frames are written
    shoe.deal(2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert (proc.returncode, stderr) == (0, "")
    assert stdout.startswith("recorded ")  # ended early, and said what it has
    assert "2 CardReading" in stdout
    lines = _lines(out)
    assert lines[-1]["end"] is True
    assert len([x for x in lines if x.get("reading", {}).get("kind") == "card"]) == 2


def test_a_usb_driver_cannot_be_relayed_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "table.toml"
    config.write_text('[rfid]\ndriver = "kit-sr48"\nspots = 4\n', encoding="utf-8")
    assert main(["devices", "record", "--driver", "kit-sr48", "--config", str(config),
                 "--out", str(tmp_path / "x.jsonl"), "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert "a USB device driven through pyusb" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty, not a capture"),
    ("{}\n", "not a capture of `showdown devices record`"),
    ('{"capture": "showdown-devices", "version": 9}\n', "capture version 9"),
    ('{"capture": "showdown-devices", "version": 1, "driver": "showdown-shoe", "role": "shoe",'
     ' "options": {}, "devices": [{"where": ["url"], "device": "/dev/x"}]}\n'
     '{"t": 0.1, "dir": "rx", "hex": "zz"}\n', "line 2: not a capture line"),
    ('{"capture": "showdown-devices", "version": 1, "driver": "showdown-shoe", "role": "shoe",'
     ' "options": {}, "devices": [{"where": ["url"], "device": "/dev/x"}]}\n'
     '{"t": 0.1, "dev": 3, "dir": "rx", "hex": "00"}\n', "line 2: not a capture line (dev 3)"),
    ('{"capture": "showdown-devices", "version": 1, "driver": "showdown-shoe", "role": "shoe",'
     ' "options": {}}\n', "line 1: the header lacks 'devices'"),
    ("not json\n", "line 1: not JSON"),
])
def test_a_bad_capture_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    assert main(["devices", "check", "--driver", "showdown-shoe", "--capture", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1
