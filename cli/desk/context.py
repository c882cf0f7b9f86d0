"""What every `showdown desk` command starts from: the desk config (``--config``, else
$SHOWDOWN_DESK_CONFIG, else the shipped desk.toml), read once per command. A workstation's
config names the central service's desk API and this terminal, nothing else it could use
to reach the records (no database URL, no signing key: docs/desk-config.md).
"""

from __future__ import annotations

import argparse
from typing import Final

from leaderboard.desk.config import DeskConfig, read_desk_config

__all__ = ["desk_config"]

_CACHE: Final = "_desk_config"


def desk_config(args: argparse.Namespace) -> DeskConfig:
    """The desk config the command runs with (read once per command)."""
    cached = getattr(args, _CACHE, None)
    if isinstance(cached, DeskConfig):
        return cached
    config = read_desk_config(getattr(args, "config", None))
    setattr(args, _CACHE, config)
    return config
