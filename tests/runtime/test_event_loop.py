"""runtime.event_loop: which loop a table's process runs on, chosen by SHOWDOWN_EVENT_LOOP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.event_loop import ENV, EventLoopChoiceError, loop_factory, loop_name, run


async def _which() -> str:
    return loop_name(asyncio.get_running_loop())


def test_auto_runs_on_uvloop_where_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    assert run(_which(), choice="auto") == "uvloop"
    assert run(_which(), choice="uvloop") == "uvloop"


def test_asyncio_runs_on_the_standard_loop() -> None:
    assert loop_factory("asyncio") is None
    assert run(_which(), choice="asyncio") == "asyncio"


def test_the_environment_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "asyncio")
    assert run(_which()) == "asyncio"
    monkeypatch.setenv(ENV, " UVLOOP ")
    pytest.importorskip("uvloop")
    assert run(_which()) == "uvloop"


def test_an_unknown_choice_is_refused_by_name_and_the_coroutine_is_closed() -> None:
    coro = _which()
    with pytest.raises(EventLoopChoiceError, match=r"SHOWDOWN_EVENT_LOOP='libev': choose one"
                                                   r" of auto, uvloop, asyncio"):
        run(coro, choice="libev")
    assert coro.cr_frame is None  # closed, never started: no "never awaited" warning


def test_uvloop_asked_for_but_missing_says_so() -> None:
    # A fresh interpreter where importing uvloop fails, as on a machine without it.
    code = ("import sys; sys.modules['uvloop'] = None\n"
            "from runtime.event_loop import loop_factory, EventLoopChoiceError\n"
            "assert loop_factory('auto') is None\n"
            "try:\n    loop_factory('uvloop')\nexcept EventLoopChoiceError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("SHOWDOWN_EVENT_LOOP=uvloop, but uvloop is not installed")


def test_a_bad_choice_stops_table_run_with_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A valid simulated table's config; the daemon never starts on an unknown loop."""
    from cli.errors import EXIT_USAGE
    from cli.main import main
    from runtime.settings_files import default_tournament_path
    from simulators.table_toml import new_table_home, simulated_table_toml

    home, _key = new_table_home(tmp_path, "t01")
    tournament = default_tournament_path()
    config = home / "table.toml"
    config.write_text(simulated_table_toml(
        venue="v", table="t01", broker="embedded", tournament=tournament,
        paytables=tournament.parent / "paytables.toml"), encoding="utf-8")
    monkeypatch.setenv(ENV, "fast")
    assert main(["table", "run", "--config", str(config)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "showdown table: error: SHOWDOWN_EVENT_LOOP='fast': choose one of" in err
    assert not (home / "journal.sqlite").exists()  # nothing started


def test_the_embedded_broker_listens_on_uvloop() -> None:
    """A simulated table may run the embedded broker in its own (uvloop) process."""
    pytest.importorskip("uvloop")
    from controller.embedded_broker import EmbeddedBroker

    async def port() -> tuple[str, int]:
        async with EmbeddedBroker() as broker:
            _reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
            writer.close()
            return loop_name(asyncio.get_running_loop()), broker.port

    name, number = run(port(), choice="uvloop")
    assert name == "uvloop" and number > 0
