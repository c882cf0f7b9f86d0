"""The layering contracts (pyproject's [tool.importlinter], run by `make lint`): the tree
keeps them, and a deliberately wrong import in a copy of the tree breaks the right one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("game", "wire", "runtime", "drivers", "simulators", "controller", "leaderboard",
            "deploy")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the packages under `root`, with `root`'s pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=root, env=env,
                          capture_output=True, text=True, check=False, timeout=120)


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_pure_rules_import_only_the_standard_library_and_numpy() -> None:
    graph = grimp.build_graph("game", include_external_packages=True, cache_dir=None)
    outside = {m.split(".")[0] for m in graph.modules if not m.startswith("game")}
    assert outside - set(sys.stdlib_module_names) <= {"numpy"}, outside


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages' Python files and pyproject.toml, copied (no caches, no data files)."""
    root = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(REPO / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "static", "*.pyc"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


# (module that gets the bad import, the import, the contract it must break)
WRONG = [
    ("game/cards.py", "import controller.app", "game/ is the pure rules"),
    ("game/money.py", "import sqlalchemy", "game/ is the pure rules"),
    ("wire/envelope.py", "import leaderboard.models", "wire/ and runtime/ import only game"),
    ("leaderboard/projections/scores.py", "import controller.journal",
     "leaderboard/ never imports the table's packages"),
    ("drivers/shoe.py", "import controller.config", "drivers/ never import the daemon"),
    ("simulators/shoe.py", "import controller.app", "simulators/ stand in for devices"),
    ("controller/app.py", "import simulators.shoe",
     "only the wiring module and the command line import simulators/"),
    ("deploy/doctor.py", "import controller.app", "deploy/ never imports the running services"),
    ("controller/commands/table.py", "import deploy.plan",
     "only `showdown install` and `showdown doctor` import deploy/"),
]


@pytest.mark.parametrize(("module", "statement", "contract"), WRONG,
                         ids=[w[0] for w in WRONG])
def test_a_wrong_import_breaks_its_contract(tree_copy: Path, module: str, statement: str,
                                            contract: str) -> None:
    path = tree_copy / module
    original = path.read_text("utf-8")
    path.write_text(original + f"\n{statement}  # a deliberately wrong import\n", "utf-8")
    try:
        result = lint_imports(tree_copy)
    finally:
        path.write_text(original, "utf-8")
    assert result.returncode != 0, result.stdout
    # An import into a lower layer can break more contracts through the chains it makes
    # (game -> controller also reaches simulators); the one named must be among them.
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout
