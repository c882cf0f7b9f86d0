"""Reading a rendered config with its real reader as the target machine will, under a root.

A config's paths are the target machine's (``/etc/showdown/...``). The readers open two of
them at once, ``[mqtt] credentials_file`` and ``password_file``; everything else they only
name. Under ``--root`` (an image, a test) and in a dry run those files are looked up the way
the finished machine will have them: a file the same plan writes is read from the plan, one
already installed from under the root. A file that neither holds (a table installed before
`showdown broker config` has made its credentials) is left out of the check and said so.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from controller.config import parse_table_config
from deploy.steps import ConfigKind
from game.errors import ConfigError
from leaderboard.config import parse_leaderboard_config
from leaderboard.desk.config import parse_desk_config

__all__ = ["OPENED_KEYS", "read_under_root"]

OPENED_KEYS = ("credentials_file", "password_file")  # the [mqtt] files a reader opens


def _machine_path(value: str, config_path: str) -> str:
    p = PurePosixPath(value)
    return str(p if p.is_absolute() else PurePosixPath(config_path).parent / p)


def read_under_root(kind: ConfigKind, config_path: str, content: str, root: Path, *,
                    planned: Mapping[str, str] | None = None) -> tuple[object, list[str]]:
    """The config ``content`` (to be ``config_path`` on the machine) read by its real reader,
    with the files it opens found in ``planned`` (machine path -> content) or under ``root``.

    Returns the config and notes for people (a file left out of the check). A ConfigError
    names ``config_path`` and the key.
    """
    planned = planned or {}
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(config_path, "", f"not a TOML file: {exc}") from None
    notes: list[str] = []
    staged_as: dict[str, str] = {}  # staged copy -> the machine path it stands for
    base = root / config_path.lstrip("/")
    with tempfile.TemporaryDirectory(prefix="showdown-check-") as staging:
        mqtt = data.get("mqtt")
        if isinstance(mqtt, dict):
            mqtt = data["mqtt"] = dict(mqtt)
            for key in OPENED_KEYS:
                value = mqtt.get(key)
                if not isinstance(value, str):
                    continue  # the reader says what is wrong with it
                where = _machine_path(value, config_path)
                installed = root / where.lstrip("/")
                if where in planned:
                    staged = Path(staging) / f"{key}.toml"
                    staged.write_text(planned[where], encoding="utf-8")
                    mqtt[key] = str(staged)
                    staged_as[str(staged)] = where
                elif installed.exists() or installed.is_symlink():
                    mqtt[key] = str(installed)
                else:
                    del mqtt[key]
                    notes.append(f"{where} is not there yet: mqtt.{key} was left out of the"
                                 " check; the service will not start until it is installed")
        try:
            return _parse(kind, data, source=config_path, base=base.parent), notes
        except ConfigError as exc:
            reason = exc.reason
            for copy, machine in staged_as.items():  # name the file as the machine will
                reason = reason.replace(copy, machine)
            raise ConfigError(exc.source, exc.key, reason) from None


def _parse(kind: ConfigKind, data: dict[str, object], *, source: str, base: Path) -> object:
    if kind == "table":
        return parse_table_config(data, source=source, base=base)
    if kind == "leaderboard":
        return parse_leaderboard_config(data, source=source, base=base)
    return parse_desk_config(data, source=source, base=base)
