"""The exit codes tell a usage error, a refusal, an unavailable service and a bug apart
(docs/exit-codes.md), and `showdown --help` says so."""

from __future__ import annotations

import pytest

from cli.errors import (
    EXIT_INTERNAL,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CommandError,
    exit_code,
)
from cli.main import main
from game.errors import ConfigError, IllegalAction, InvalidCard
from leaderboard.desk import Conflict, DeskError, NotFound
from runtime.errors import Unavailable


@pytest.mark.parametrize(("exc", "code"), [
    (CommandError("needs --key"), EXIT_USAGE),
    (ConfigError("t.toml", "log.level", "must be info"), EXIT_USAGE),
    (InvalidCard("Zz"), EXIT_USAGE),
    (FileNotFoundError(2, "No such file or directory", "x.toml"), EXIT_USAGE),
    (DeskError("field 'why': required"), EXIT_USAGE),
    (NotFound("no entry 'E-x'"), EXIT_USAGE),
    (Conflict("seat 2 is taken"), EXIT_REFUSED),
    (IllegalAction("no hand open"), EXIT_REFUSED),
    (Unavailable("lb.toml", "service.database", "the database did not answer"),
     EXIT_UNAVAILABLE),
    (ConnectionRefusedError(111, "Connection refused"), EXIT_UNAVAILABLE),
    (TimeoutError("timed out"), EXIT_UNAVAILABLE),
    (KeyError("oops"), EXIT_INTERNAL),
    (RuntimeError("a bug"), EXIT_INTERNAL),
])
def test_each_kind_of_failure_has_its_code(exc: BaseException, code: int) -> None:
    assert exit_code(exc) == code


def test_the_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in ("2 usage or configuration error", "3 refused", "69 a service",
                 "70 internal error", "docs/exit-codes.md"):
        assert text in out
