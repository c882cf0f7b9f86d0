"""runtime.journald against a real datagram socket standing in for journald's."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import journald
from tests.runtime.journal_wire import JournalReceiver, parse_entry


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: AF_UNIX paths are limited to 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="jrn-", dir="/tmp") as name:
        yield Path(name)


@pytest.fixture
def receiver(short_dir: Path) -> Iterator[JournalReceiver]:
    """journald's socket, as a test owns it."""
    got = JournalReceiver(short_dir / "socket")
    yield got
    got.sock.close()


def test_encode_writes_plain_and_binary_fields_that_parse_back() -> None:
    fields = [("MESSAGE", "hand settled\nTraceback: x"), ("PRIORITY", "4"), ("TABLE", "t01"),
              ("NOTE", "rand R1,234.50 = ok")]
    data = journald.encode(fields)
    assert data.startswith(b"MESSAGE\n")  # a value with a newline goes length-prefixed
    assert b"PRIORITY=4\n" in data
    assert parse_entry(data) == [(name, value.encode()) for name, value in fields]


@pytest.mark.parametrize(("key", "name"), [
    ("hand_id", "HAND_ID"), ("seat", "SEAT"), ("delay-s", "DELAY_S"), ("_seq", "F_SEQ"),
    ("2fa", "F2FA"), ("", "F"), ("x" * 80, "X" * 64), ("zähler", "Z_HLER")])
def test_field_name_is_what_journald_accepts(key: str, name: str) -> None:
    assert journald.field_name(key) == name


def test_stream_is_journal_only_when_the_device_and_inode_name_the_fd(tmp_path: Path) -> None:
    with (tmp_path / "stream").open("wb") as mine, (tmp_path / "other").open("wb") as other:
        st = os.fstat(mine.fileno())
        env = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        assert journald.stream_is_journal(env, fds=(mine.fileno(),))
        assert not journald.stream_is_journal(env, fds=(other.fileno(),))  # inherited, moved
        assert not journald.stream_is_journal({}, fds=(mine.fileno(),))
        assert not journald.stream_is_journal({"JOURNAL_STREAM": "junk"}, fds=(mine.fileno(),))
        assert journald.stream_is_journal(env, fds=(987654, mine.fileno()))  # a closed fd


def test_send_delivers_one_datagram(receiver: JournalReceiver) -> None:
    sender = journald.JournalSocket(str(receiver.path))
    data = journald.encode([("MESSAGE", "ready"), ("PRIORITY", "6")])
    assert sender.send(data, priority=6, message="ready")
    assert receiver.receive_one() == data
    assert receiver.memfds == 0
    sender.close()


def test_an_entry_too_large_for_a_datagram_goes_as_a_sealed_memfd(
        receiver: JournalReceiver) -> None:
    sender = journald.JournalSocket(str(receiver.path))
    big = "x" * (4 << 20)  # above any datagram the socket takes
    data = journald.encode([("MESSAGE", "big"), ("PRIORITY", "6"), ("PAYLOAD", big)])
    assert sender.send(data, priority=6, message="big")
    assert receiver.receive_one() == data
    assert receiver.memfds == 1
    sealed = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE  # journald's demand
    assert receiver.memfd_seals[0] & sealed == sealed
    sender.close()


def test_without_the_socket_the_message_goes_to_stderr_with_its_priority(
        short_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sender = journald.JournalSocket(str(short_dir / "absent"))
    data = journald.encode([("MESSAGE", "journal write failed")])
    assert not sender.send(data, priority=2, message="journal write failed\nTraceback\n  x")
    assert capsys.readouterr().err == "<2>journal write failed\n<2>Traceback\n<2>  x\n"
    assert sender.fallbacks == 1


def test_the_socket_path_comes_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, receiver: JournalReceiver) -> None:
    monkeypatch.setenv(journald.JOURNAL_SOCKET_ENV, str(receiver.path))
    assert journald.JournalSocket().path == str(receiver.path)
    monkeypatch.delenv(journald.JOURNAL_SOCKET_ENV)
    assert journald.JournalSocket().path == "/run/systemd/journal/socket"
