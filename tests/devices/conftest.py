"""The kit's test adapters installed by entry point, as a vendor's distribution installs
its own: a throw-away ``*.dist-info`` on sys.path (no pip, no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

ENTRY_POINTS = """\
[showdown.shoe]
kit-shoe-drops-a-card = tests.devices.kit_adapters:DROPPING_SHOE
kit-shoe-never-silent = tests.devices.kit_adapters:NEVER_SILENT
kit-text-line-silent-loss = tests.devices.kit_adapters:SILENT_LOSS

[showdown.rfid]
kit-sr48 = tests.devices.kit_adapters:CHIPS
kit-sr48-loses-a-chip = tests.devices.kit_adapters:LOSING_CHIPS
kit-sr48-no-faults = tests.devices.kit_adapters:NO_FAULTS

[showdown.id_reader]
"""


@pytest.fixture
def kit_drivers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test adapters registered under the distribution ``showdown-kit-tests``."""
    info = tmp_path / "site" / "showdown_kit_tests-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: showdown-kit-tests\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return tmp_path
