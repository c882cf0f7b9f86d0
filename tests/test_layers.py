"""The layering contracts (pyproject's [tool.importlinter], run by `make lint`): the tree
keeps them, and a deliberately wrong import in a copy of the tree breaks the right one; no
two files import each other, directly or through others (tests/import_circles.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("game", "wire", "runtime", "drivers", "simulators", "adapters", "controller",
            "leaderboard", "deploy", "cli", "floor")
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
    # The contract type of our own (pyproject's contract_types) and the circle counter.
    (root / "tests").mkdir()
    for helper in ("__init__.py", "import_contracts.py", "import_circles.py"):
        shutil.copy(REPO / "tests" / helper, root / "tests" / helper)
    return root


# (module that gets the bad import, the import, the contract it must break)
WRONG = [
    ("game/poker/cards.py", "import controller.app", "game/ is the pure rules"),
    ("game/money.py", "import sqlalchemy", "game/ is the pure rules"),
    ("game/table/core.py", "import cli.main", "game/ is the pure rules"),
    ("wire/envelope.py", "import leaderboard.models", "wire/ and runtime/ import only game"),
    ("runtime/logs.py", "import floor.run", "wire/ and runtime/ import only game"),
    ("leaderboard/projections/scores.py", "import controller.journal",
     "leaderboard/ never imports the table's packages"),
    ("leaderboard/app.py", "import floor.run", "leaderboard/ never imports the table's packages"),
    ("drivers/shoe.py", "import controller.config", "drivers/ never import the daemon"),
    ("simulators/shoe.py", "import controller.app", "simulators/ stand in for devices"),
    ("adapters/sr48.py", "import controller.wiring", "adapters/ join a driver to its simulator"),
    ("drivers/registry.py", "import simulators.shoe",
     "only adapters, cli, floor and the table's wiring import simulators/"),
    ("controller/app.py", "import leaderboard.models", "controller/ is the table daemon alone"),
    ("controller/wiring.py", "import floor.run", "controller/ is the table daemon alone"),
    ("controller/table_service.py", "import cli.main", "controller/ is the table daemon alone"),
    ("floor/run.py", "import cli.main", "the floor is a composition"),
    ("controller/app.py", "import simulators.shoe",
     "only adapters, cli, floor and the table's wiring import simulators/"),
    ("wire/topics.py", "import deploy.plan", "only the command line imports deploy/"),
    ("deploy/plan.py", "import controller.app",
     "deploy/ imports of ours only the services' config modules"),
    ("deploy/execute.py", "import controller.journal.admin",
     "deploy/ imports of ours only the services' config modules"),
    ("deploy/plan.py", "import leaderboard.db",
     "deploy/ imports of ours only the services' config modules"),
]


def _module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


@pytest.fixture(scope="module")
def broken_sections(tmp_path_factory: pytest.TempPathFactory,
                    tree_copy: Path) -> dict[str, str]:
    """Every wrong import of WRONG made at once in a copy of the tree, `lint-imports` run
    once: each broken contract's name and its report (what it found, import by import)."""
    root = tmp_path_factory.mktemp("wrong")
    shutil.copytree(tree_copy, root, dirs_exist_ok=True)
    for module, statement, _ in WRONG:
        with (root / module).open("a", encoding="utf-8") as f:
            f.write(f"\n{statement}  # a deliberately wrong import\n")
    result = lint_imports(root)
    assert result.returncode != 0, result.stdout
    report = result.stdout.split("Broken contracts", 1)[1]
    names = [line.removesuffix(" BROKEN") for line in result.stdout.splitlines()
             if line.endswith(" BROKEN")]
    starts = sorted((report.index(f"\n{name}\n"), name) for name in names)
    return {name: report[at:following] for (at, name), (following, _) in
            zip(starts, [*starts[1:], (len(report), "")], strict=True)}


@pytest.mark.parametrize(("module", "statement", "contract"), WRONG,
                         ids=[f"{w[0]}:{w[1]}" for w in WRONG])
def test_a_wrong_import_breaks_its_contract(broken_sections: dict[str, str], module: str,
                                            statement: str, contract: str) -> None:
    # The contract is broken, and its own report names this import (the others, made in
    # the same tree, break it or others; each must be found where it belongs).
    [name] = [n for n in broken_sections if n.startswith(contract)]
    importer, imported = _module_of(module), statement.removeprefix("import ")
    assert f"{importer} -> {imported}" in broken_sections[name], broken_sections[name]


def test_no_file_imports_another_that_imports_it_back() -> None:
    from tests.import_circles import import_circles

    assert import_circles() == []


def test_a_circle_between_files_is_counted(tree_copy: Path) -> None:
    # game.wagers.settle imports game.money; money importing settle back closes a circle.
    path = tree_copy / "game" / "money.py"
    original = path.read_text("utf-8")
    path.write_text(original + "\nimport game.wagers.settle  # a deliberate circle\n", "utf-8")
    try:
        result = subprocess.run([sys.executable, "-m", "tests.import_circles"], cwd=tree_copy,
                                env={**os.environ, "PYTHONPATH": str(tree_copy)},
                                capture_output=True, text=True, check=False, timeout=120)
    finally:
        path.write_text(original, "utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "circle: game.money <-> game.wagers.settle" in result.stdout, result.stdout
