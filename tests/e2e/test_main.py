"""`python -m tests.e2e DIR`: a directory that is not a kept demo run is a clear one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.__main__ import main


def test_a_directory_that_is_not_a_kept_run_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{tmp_path}: not a kept demo run" in err
