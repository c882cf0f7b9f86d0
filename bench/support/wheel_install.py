"""Build showdown's wheel and install it into new, clean virtual environments.

For tests/packaging/test_wheel.py (does the wheel run from any folder, is a table install
lean) and bench/install_size.py (how big is a table install beside a full one). The wheel is
built from a copy of the files it is made of (never in the checkout, where setuptools' build/
folder could add stale modules). The dependencies come from a wheelhouse made once per set of
pins and cached under the machine's temporary folder: the pins are the versions installed in
the running environment, so a new venv gets what the tests ran against, and a warm cache
installs with `--no-index` in seconds.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "CACHE",
    "EXTRA_ONLY",
    "REPO",
    "Unreachable",
    "Venv",
    "build_wheel",
    "clean_env",
    "make_venv",
    "pins",
    "wheelhouse",
]

REPO: Final = Path(__file__).resolve().parents[2]
CACHE: Final = Path(tempfile.gettempdir()) / "showdown-wheelhouse"
# Distributions a table install (the base, no extra) must not carry: the embedded broker and
# what only it brings, the demo's progress bars, the house's reports, the central service's
# migrations, PostgreSQL's driver.
EXTRA_ONLY: Final = ("amqtt", "rich", "numpy", "matplotlib", "psycopg", "psycopg-binary",
                     "alembic", "mako", "typer", "pydantic", "psutil", "argon2-cffi",
                     "websockets", "transitions", "pyyaml", "dacite", "pillow", "tomli-w",
                     "evdev", "pyscard", "python-escpos", "qrcode", "python-barcode")
_TIMEOUT: Final = 600
_RUNTIME_EXTRAS: Final = ("central", "postgres", "demo", "reports", "readers",
                            "printer")  # `all`
# The ID readers' libraries publish no Linux wheels: the wheelhouse builds them here (python-
# evdev needs the kernel headers, pyscard swig and libpcsclite-dev: .ci/run installs them).
_SOURCE_ONLY: Final = ("evdev", "pyscard")


class Unreachable(RuntimeError):
    """The dependencies could not be fetched (no package index, no cached wheelhouse)."""


def _run(argv: list[str], *, check: bool = False, cwd: Path | None = None,
         timeout: float = _TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=check, cwd=cwd,  # noqa: S603 (our interpreters)
                          timeout=timeout, env=clean_env())


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args])


def _sources() -> list[Path]:
    """The files and folders the wheel is made of (pyproject's packages and their data)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    setup = project["tool"]["setuptools"]
    mapped = setup.get("package-dir", {})
    tops = {mapped.get(p, p.split(".")[0]) for p in setup["packages"] if "." not in p}
    return [REPO / "pyproject.toml", REPO / project["project"]["readme"],
            *sorted(REPO / t for t in tops)]


def build_wheel(out: Path, house: Path) -> Path:
    """Build the wheel of the checkout as it is now into `out`; returns its path."""
    src = out / "src"
    for item in _sources():
        if item.is_dir():
            shutil.copytree(item, src / item.name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, src / item.name)
    # The PEP 517 backend called as a build frontend does, in a cached venv that has
    # pyproject's build requirements (an isolated build env each time costs ~10 s).
    code = ("import sys; from setuptools import build_meta as b;"
            " print(b.build_wheel(sys.argv[1]))")
    run = _run([str(_builder(house) / "bin" / "python"), "-c", code, str(out)], cwd=src)
    if run.returncode != 0:
        raise RuntimeError(f"building the wheel failed:\n{run.stdout}\n{run.stderr}")
    return out / run.stdout.strip().splitlines()[-1]


def _builder(house: Path) -> Path:
    """The cached venv with pyproject's build requirements, from the wheelhouse."""
    root = house / "builder"
    if (root / ".complete").exists():
        return root
    with tempfile.TemporaryDirectory(dir=house) as tmp:
        staging = Path(tmp) / "builder"
        requires = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))[
            "build-system"]["requires"]
        _run([sys.executable, "-m", "venv", "--without-pip", str(staging)], check=True)
        run = _pip("--python", str(staging / "bin" / "python"), "install", "--quiet",
                   "--no-index", "--find-links", str(house), *requires)
        if run.returncode != 0:
            raise RuntimeError(f"installing {requires} failed:\n{run.stdout}\n{run.stderr}")
        (staging / ".complete").touch()
        try:
            staging.rename(root)
        except OSError:  # another process made it first
            if not (root / ".complete").exists():
                raise
    return root


def pins() -> list[str]:
    """name==version of every distribution of the running environment but showdown and the
    installers (the build needs its own setuptools, pyproject's build-system)."""
    found = {d.metadata["Name"].lower(): d.version for d in importlib.metadata.distributions()
             if d.metadata["Name"]}
    for own in ("showdown", "pip", "setuptools", "wheel"):
        found.pop(own, None)
    return sorted(f"{name}=={version}" for name, version in found.items())


def wheelhouse() -> Path:
    """The cached folder of wheels a full install needs (made on first use: Unreachable if
    they cannot be fetched)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    # Keyed on what it holds: the pins and pyproject's requirements (not the rest of it).
    wanted = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
    for extra, deps in project["project"]["optional-dependencies"].items():
        if extra in _RUNTIME_EXTRAS:
            wanted += [d for d in deps if not d.startswith("showdown[")]
    key = hashlib.sha256("\n".join([*pins(), "--", *wanted]).encode()).hexdigest()[:16]
    house = CACHE / key
    if (house / ".complete").exists():
        return house
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        staging = Path(tmp) / "wheels"
        constraints = Path(tmp) / "pins.txt"
        constraints.write_text("\n".join(pins()) + "\n", encoding="utf-8")
        source = [w for w in wanted if _requirement_name(w) in _SOURCE_ONLY]
        binary = [w for w in wanted if w not in source]
        run = _pip("download", "--quiet", "--only-binary", ":all:", "-c", str(constraints),
                   "--dest", str(staging), *binary)
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise Unreachable(f"pip download failed: {last}")
        if source:
            run = _pip("wheel", "--quiet", "--no-deps", "-c", str(constraints),
                       "--wheel-dir", str(staging), *source)
            if run.returncode != 0:
                last = (run.stderr.strip().splitlines() or ["(no message)"])[-1]
                raise RuntimeError(f"building wheels of {', '.join(source)} failed (they"
                                   f" need swig, libpcsclite-dev, the kernel headers): {last}")
        (staging / ".complete").touch()
        try:
            staging.rename(house)
        except OSError:  # another process made it first: theirs is as good
            if not (house / ".complete").exists():
                raise
    return house


def _requirement_name(requirement: str) -> str:
    """The distribution a requirement names ("pyscard>=2.1,<3" -> "pyscard")."""
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()


def clean_env() -> dict[str, str]:
    """The environment for a command of an installed venv: nothing pointing at the checkout
    (no PYTHONPATH) and no showdown settings of the caller."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONSAFEPATH")
    return {k: v for k, v in os.environ.items()
            if k not in drop and not k.startswith("SHOWDOWN_")}


@dataclass(frozen=True)
class Venv:
    """A virtual environment with showdown installed (and `extras`)."""

    root: Path
    extras: tuple[str, ...]

    @property
    def bin(self) -> Path:
        """Its scripts' folder (the `showdown` command, its python)."""
        return self.root / "bin"

    def site_packages(self) -> Path:
        """Its site-packages folder."""
        (found,) = self.root.glob("lib/python*/site-packages")
        return found

    def size_mb(self) -> float:
        """The size of its site-packages in MB (10^6 bytes) of file contents."""
        return sum(f.stat().st_size for f in self.site_packages().rglob("*")
                   if f.is_file() and not f.is_symlink()) / 1e6

    def distributions(self) -> set[str]:
        """The names (lower case) of every distribution installed in it."""
        code = ("import importlib.metadata as m\n"
                "print('\\n'.join(sorted({d.metadata['Name'].lower()"
                " for d in m.distributions()})))")
        run = _run([str(self.bin / "python"), "-c", code], check=True)
        return set(run.stdout.split())


def make_venv(root: Path, wheel: Path, house: Path, *extras: str,
              compile_bytecode: bool = False) -> Venv:
    """A new venv at `root` with `wheel[extras]` from the wheelhouse alone (no index)."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    run = _pip("--python", str(root / "bin" / "python"), "install", "--quiet", "--no-index",
               "--find-links", str(house), *([] if compile_bytecode else ["--no-compile"]),
               target)
    if run.returncode != 0:
        raise RuntimeError(f"pip install {target} failed:\n{run.stdout}\n{run.stderr}")
    return Venv(root, extras)
