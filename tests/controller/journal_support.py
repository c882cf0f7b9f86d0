"""What the journal tests share: a plain outgoing message (the journal reads only its
attributes; the table service has its own type)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Message"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """An outgoing message as `Journal.append`'s `outgoing` returns it."""

    topic_suffix: str
    type: str
    body: Mapping[str, Any]
    retain: bool = False
