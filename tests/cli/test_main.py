"""cli.main.main: how every subcommand's failures reach the user."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib.metadata import version

import pytest

from cli.errors import EXIT_BROKEN_PIPE, EXIT_USAGE
from cli.main import build_parser, main


def test_a_reader_that_goes_away_stops_the_command_quietly() -> None:
    # `showdown heat ... | head -0`: the reader is gone before the command (still importing
    # its modules) writes its first line.
    with subprocess.Popen([sys.executable, "-m", "cli", "heat", "--seed", "3"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert code == EXIT_BROKEN_PIPE, err
    assert err == b""  # no traceback, no "error:" line


def test_an_internal_error_is_one_line_without_a_traceback() -> None:
    done = subprocess.run([sys.executable, "-m", "cli", "settle"], input=b"[1, 2",
                          capture_output=True, timeout=120, check=False)
    assert done.returncode != 0
    assert b"Traceback" not in done.stderr
    assert len(done.stderr.decode().strip().splitlines()) == 1


def test_version_names_the_release_and_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out == f"showdown {version('showdown')} (Python {platform.python_version()})\n"
    with pytest.raises(SystemExit) as done:  # the full parser's own --version says the same
        build_parser().parse_args(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == out


def test_a_bare_showdown_prints_the_help_and_exits_as_a_usage_error(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == EXIT_USAGE
    got = capsys.readouterr()
    assert got.out.startswith("usage: showdown [-h] [--version] COMMAND ...")
    assert "completion" in got.out and "exit codes:" in got.out and got.err == ""
