"""Where the installation's templates come from: config/templates/ (configs, journald,
sysusers) and systemd/ (units, udev rules) shipped with showdown."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from deploy.plan import Templates
from game.errors import ConfigError

__all__ = ["SYSTEMD_DIR", "TEMPLATE_DIR", "read_templates"]

_BASE: Final = Path(__file__).resolve().parents[1]
TEMPLATE_DIR: Final = _BASE / "config" / "templates"
SYSTEMD_DIR: Final = _BASE / "systemd"
_FILES: Final = {
    "table": TEMPLATE_DIR / "table.toml",
    "leaderboard": TEMPLATE_DIR / "leaderboard.toml",
    "desk": TEMPLATE_DIR / "desk.toml",
    "journald": TEMPLATE_DIR / "journald.conf",
    "sysusers": TEMPLATE_DIR / "sysusers.conf",
    "udev": SYSTEMD_DIR / "99-showdown-readers.rules",
    "table_unit": SYSTEMD_DIR / "showdown-table.service",
    "leaderboard_unit": SYSTEMD_DIR / "showdown-leaderboard.service",
    "backup_service": SYSTEMD_DIR / "showdown-leaderboard-backup.service",
    "backup_timer": SYSTEMD_DIR / "showdown-leaderboard-backup.timer",
    "screen_unit": SYSTEMD_DIR / "showdown-screen.service",
}


def read_templates() -> Templates:
    """Every template text; a missing one is a ConfigError naming it."""
    texts: dict[str, str] = {}
    for name, path in _FILES.items():
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(str(path), name, f"installation template unreadable: "
                              f"{exc.strerror or exc}") from None
    return Templates(**texts)
