"""What the wheel is made of, checked without building it: pyproject's package list is every
package of the checkout, config/ is the shipped defaults, a missing extra is one line.

(tests/packaging/test_wheel.py builds and installs the wheel for real.)
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from cli.errors import EXIT_USAGE, exit_code
from cli.extras import EXTRA_OF, MissingExtra, missing_extra, register_command, require
from game.errors import ConfigError
from runtime.settings_files import (
    TOURNAMENT_ENV,
    default_paytables_path,
    default_tournament_path,
    shipped_dir,
)

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))


def test_the_package_list_names_every_package_of_the_checkout() -> None:
    listed = set(PROJECT["tool"]["setuptools"]["packages"])
    found = set(find_packages(where=str(REPO), include=[
        "game*", "wire*", "runtime*", "controller*", "drivers*", "simulators*", "leaderboard*",
        "deploy*", "cli*", "floor*", "adapters*"]))
    assert listed - {"showdown_config", "showdown_systemd"} == found


def test_the_shipped_defaults_are_the_config_folder_by_glob() -> None:
    setup = PROJECT["tool"]["setuptools"]
    assert setup["package-dir"] == {"showdown_config": "config", "showdown_systemd": "systemd"}
    assert setup["package-data"]["showdown_config"] == ["**/*"]
    # The installer's units and rules ship too, and every one of them is matched.
    shipped = setup["package-data"]["showdown_systemd"]
    units = [p for p in (REPO / "systemd").iterdir()
             if p.name not in ("__init__.py", "__pycache__")]
    assert all(any(p.match(glob) for glob in shipped) for p in units), units
    assert (REPO / "systemd" / "__init__.py").is_file()
    # A regular package: setuptools' editable install (make) gives importlib.resources an
    # unusable placeholder path for a namespace package.
    assert (REPO / "config" / "__init__.py").is_file()
    assert shipped_dir().resolve() == (REPO / "config").resolve()
    assert default_tournament_path() == shipped_dir() / "tournament.toml"
    assert default_paytables_path() == shipped_dir() / "paytables.toml"


def test_an_extra_is_not_in_the_base_install_and_all_gathers_them() -> None:
    base = " ".join(PROJECT["project"]["dependencies"]).lower()
    extras = PROJECT["project"]["optional-dependencies"]
    for library in ("amqtt", "rich", "numpy", "matplotlib", "psycopg", "alembic", "tomli",
                    "evdev", "pyscard", "escpos"):
        assert library not in base
    assert extras["all"] == ["showdown[central,postgres,demo,reports,readers,printer]"]
    assert set(EXTRA_OF.values()) <= set(extras)


def test_a_missing_environment_file_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setenv(TOURNAMENT_ENV, str(tmp_path / "nowhere.toml"))
    with pytest.raises(ConfigError, match=r"no such tournament settings file \(named by"
                                          r" \$SHOWDOWN_TOURNAMENT\)"):
        default_tournament_path()


def test_a_missing_library_of_an_extra_is_a_one_line_usage_error() -> None:
    try:
        import numpy.no_such_module  # type: ignore[import-not-found]  # noqa: F401
    except ModuleNotFoundError as exc:
        found = missing_extra(exc)
    assert isinstance(found, MissingExtra)
    assert str(found) == ("this needs the optional extra 'reports' (numpy is not installed):"
                          " pip install 'showdown[reports]'")
    assert exit_code(found) == EXIT_USAGE


def test_a_missing_module_of_ours_stays_a_bug() -> None:
    try:
        import controller.no_such_module  # type: ignore[import-not-found]  # noqa: F401
    except ModuleNotFoundError as exc:
        assert missing_extra(exc) is None
    assert missing_extra(ValueError("numpy")) is None


def test_require_refuses_a_library_that_is_not_installed(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    require("numpy", "alembic")  # installed in the test environment
    monkeypatch.setitem(sys.modules, "amqtt", None)  # as if not installed (the wheel test
    # checks a real table install): find_spec finds nothing
    with pytest.raises(MissingExtra, match=r"^this needs the optional extra 'demo' \(amqtt is"
                                           r" not installed\): pip install 'showdown\[demo\]'$"):
        require("amqtt")


def test_a_command_whose_module_needs_a_missing_extra_is_a_stand_in(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    (tmp_path / "showdown_test_cmd_needs_numpy.py").write_text(
        "import numpy.no_such_module\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    parser = argparse.ArgumentParser(prog="showdown")
    sub = parser.add_subparsers(dest="command")
    register_command(sub, "plot", "showdown_test_cmd_needs_numpy")
    assert "(not installed: pip install 'showdown[reports]')" in parser.format_help()
    args = parser.parse_args(["plot", "--help", "x"])
    with pytest.raises(MissingExtra, match=r"pip install 'showdown\[reports\]'"):
        args.handler(args)
