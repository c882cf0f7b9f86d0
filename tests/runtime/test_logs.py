"""runtime.logs: where events go (journald, JSON lines, console) and what they carry, with
structlog and standard-library loggers, against a real socket standing in for journald's."""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from runtime import journald
from runtime.logs import NOISY_LIBRARIES, get_logger, message_text
from runtime.logs import configure_logging as _configure_logging
from tests.runtime.journal_wire import JournalReceiver


def configure_logging(**options: Any) -> None:
    """`runtime.logs.configure_logging`, with stderr announced again as journald's stream
    first when the `journal` fixture announced it: the stream is fd 2 as the test body sees
    it (CI once saw fd 2 as another file than at the fixture's setup, and the events went to
    stdout)."""
    if journald.JOURNAL_SOCKET_ENV in os.environ:  # the `journal` fixture's socket
        st = os.fstat(2)
        os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"  # monkeypatch restores it
    _configure_logging(**options)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Leave structlog and the root logger as the test found them."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in NOISY_LIBRARIES}
    try:
        yield
    finally:
        structlog.configure(**saved)
        structlog.contextvars.clear_contextvars()
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in levels.items():
            logging.getLogger(name).setLevel(was)


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch,
            capfd: pytest.CaptureFixture[str]) -> Iterator[JournalReceiver]:
    """A journald socket the test owns, and stderr (capfd's) announced as journald's stream."""
    del capfd  # requested first: fd 2 is then its file for the whole test
    with tempfile.TemporaryDirectory(prefix="jrn-", dir="/tmp") as name:
        receiver = JournalReceiver(Path(name) / "socket")
        st = os.fstat(2)
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        monkeypatch.setenv(journald.JOURNAL_SOCKET_ENV, str(receiver.path))
        yield receiver
        receiver.sock.close()


def received(journal: JournalReceiver, count: int) -> list[dict[str, str]]:
    """The next `count` entries (a hang guard of 0.1 s each, not a timed assertion)."""
    for got in range(count):
        data = journal.receive_one()
        assert data is not None, f"only {got} of {count} entries arrived"
        journal.entries.append((data, 0, 0))
    assert journal.receive_one() is None, "more entries than expected"
    return journal.parsed()


def test_under_journald_each_event_is_an_entry_with_priority_and_fields(
        journal: JournalReceiver, capfd: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="debug", table="t01")
    log = get_logger("showdown.table")
    here = sys._getframe()
    line = here.f_lineno + 1  # the next line's number
    log.debug("chips counted", seat=2)
    log.info("hand.settled", hand_id="t01-000042", seat=None, nets={"1": -2500})
    log.warning("shoe alert", device="SIM-1", kind="disconnected", seat=3)
    log.error("journal checkpoint not written", error="disk full")
    log.critical("journal write failed; entering the error state", message="no space")
    entries = received(journal, 5)
    assert [e["PRIORITY"] for e in entries] == ["7", "6", "4", "3", "2"]
    assert all(e["TABLE"] == "t01" and e["SYSLOG_IDENTIFIER"] == "showdown"
               and e["LOGGER_NAME"] == "showdown.table" for e in entries)
    settled = entries[1]
    assert settled["HAND_ID"] == "t01-000042" and json.loads(settled["NETS"]) == {"1": -2500}
    assert "SEAT" not in settled  # None: no field
    assert settled["EVENT"] == "hand.settled"
    assert settled["MESSAGE"] == 'hand.settled hand_id=t01-000042 nets={"1": -2500} table=t01'
    assert entries[2]["SEAT"] == "3" and entries[2]["KIND"] == "disconnected"
    assert entries[4]["SHOWDOWN_MESSAGE"] == "no space"  # a key named like a journal field
    assert entries[4]["MESSAGE"].startswith("journal write failed; entering the error state")
    assert entries[0]["CODE_FILE"] == __file__
    assert entries[0]["CODE_FUNC"] == here.f_code.co_name
    assert entries[0]["CODE_LINE"] == str(line)
    assert "LEVEL" not in entries[0] and "TIMESTAMP" not in entries[0]  # journald has both
    out = capfd.readouterr()
    assert out.out == "" and out.err == ""


def test_an_exception_travels_in_the_message(journal: JournalReceiver) -> None:
    configure_logging(level="info")
    try:
        raise ValueError("bad frame")
    except ValueError:
        get_logger("drivers.shoe").exception("shoe driver error while serving")
    (entry,) = received(journal, 1)
    assert entry["PRIORITY"] == "3"
    first, *rest = entry["MESSAGE"].splitlines()
    assert first == "shoe driver error while serving"
    assert rest[0].startswith("Traceback") and rest[-1] == "ValueError: bad frame"


def test_stdlib_loggers_go_to_the_journal_the_chatty_ones_from_warning(
        journal: JournalReceiver) -> None:
    configure_logging(level="info", table="t02")
    here = sys._getframe()
    line = here.f_lineno + 1  # the next line's number
    logging.getLogger("uvicorn.error").info("Started server process [%d]", 7)
    logging.getLogger("sqlalchemy.engine").info("SELECT 1")  # chatty: not at info
    logging.getLogger("amqtt.broker").debug("listener")
    logging.getLogger("uvicorn.access").info("GET / 200")
    logging.getLogger("aiomqtt").warning("keepalive missed")
    logging.getLogger("showdown.misc").debug("below the level")
    started, missed = received(journal, 2)
    assert started["MESSAGE"] == "Started server process [7] table=t02"
    assert started["PRIORITY"] == "6" and started["LOGGER_NAME"] == "uvicorn.error"
    assert started["TABLE"] == "t02"
    assert started["CODE_FUNC"] == here.f_code.co_name
    assert started["CODE_LINE"] == str(line)
    assert missed["PRIORITY"] == "4" and missed["LOGGER_NAME"] == "aiomqtt"


def test_when_the_socket_is_gone_lines_go_to_stderr_with_priority(
        journal: JournalReceiver, capfd: pytest.CaptureFixture[str]) -> None:
    journal.sock.close()
    journal.path.unlink()
    configure_logging(level="info")
    get_logger("wire.mqtt").warning("mqtt_connect_failed", host="10.0.0.5", port=8883)
    logging.getLogger("asyncio").error("Task exception was never retrieved")
    err = capfd.readouterr().err
    assert err.splitlines() == ["<4>mqtt_connect_failed host=10.0.0.5 port=8883",
                                "<3>Task exception was never retrieved"]


def test_outside_journald_json_lines_on_stdout_for_structlog_and_stdlib(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JOURNAL_STREAM", "1:2")  # inherited, but stderr is not that stream
    configure_logging(level="info", table="t03")
    get_logger("showdown.table").info("ready", state="running")
    logging.getLogger("alembic.runtime.migration").warning("no version table")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["event"], e["level"], e["table"]) for e in lines] == [
        ("ready", "info", "t03"), ("no version table", "warning", "t03")]
    assert lines[1]["logger_name"] == "alembic.runtime.migration"
    assert "_record" not in lines[1]


def test_a_second_configuration_replaces_the_first(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    configure_logging(level="info")
    configure_logging(fmt="json", level="warning")
    logging.getLogger("showdown.x").warning("once")
    get_logger("showdown.x").info("not at warning")
    assert [json.loads(x)["event"] for x in capsys.readouterr().out.splitlines()] == ["once"]


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging(level="loud")


@pytest.mark.parametrize(("event", "text"), [
    ({"event": "a", "note": "two words", "empty": "", "n": 3}, 'a empty="" n=3 note="two words"'),
    ({"event": "b", "level": "info", "logger_name": "x", "lineno": 4}, "b"),
])
def test_message_text(event: dict[str, Any], text: str) -> None:
    assert message_text(event) == text
