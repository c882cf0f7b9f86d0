"""MQTT topic names of a venue and its tables, and the ids that go into them.

    showdown/v1/{venue}/tables/{table}/status   retained availability (birth, will), status
    showdown/v1/{venue}/tables/{table}/events   hand settlements, alerts, command rejections
    showdown/v1/{venue}/tables/{table}/scores   scores recorded / acknowledged / voided
    showdown/v1/{venue}/tables/{table}/cmd      desk (and leaderboard) commands to the table
    showdown/v1/{venue}/standings               retained standings from the leaderboard

Venue and table ids are ``[a-z0-9-]+`` (at most 64 characters), so they can never hold an
MQTT wildcard or separator. The root is ``showdown/v1`` in production; tests put everything
under a root of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DEFAULT_ROOT",
    "ID_PATTERN",
    "TOPIC_SUFFIXES",
    "TableTopic",
    "TableTopics",
    "TopicError",
    "TopicSuffix",
    "parse_table_topic",
    "standings_topic",
    "tables_filter",
    "validate_id",
    "validate_root",
]

TopicSuffix = Literal["events", "scores", "status"]  # the topics a table publishes on
TOPIC_SUFFIXES: Final[tuple[TopicSuffix, ...]] = ("events", "scores", "status")
DEFAULT_ROOT: Final = "showdown/v1"
ID_PATTERN: Final = re.compile(r"[a-z0-9-]{1,64}")
CMD_SUFFIX: Final = "cmd"
SHARED_PREFIX: Final = "$share/"  # a shared subscription: $share/{group}/{filter} (MQTT 5)
_ALL_SUFFIXES: Final = (*TOPIC_SUFFIXES, CMD_SUFFIX)


class TopicError(ValueError):
    """A venue id, table id or topic root that cannot be used in topic names."""


def validate_id(kind: str, value: object) -> str:
    """Return ``value`` if it is a valid venue/table/key id (``[a-z0-9-]+``), else raise."""
    if not isinstance(value, str):
        raise TopicError(f"{kind} id must be text, got {type(value).__name__}")
    if not ID_PATTERN.fullmatch(value):
        raise TopicError(
            f"{kind} id {value!r} is not valid: use 1 to 64 of a-z, 0-9 and '-'"
        )
    return value


def validate_root(root: str) -> str:
    """Return ``root`` if it is a usable topic prefix (no wildcards, no empty levels)."""
    if not root or root.startswith("/") or root.endswith("/") or "//" in root:
        raise TopicError(f"topic root {root!r} must be non-empty levels joined by '/'")
    if any(ch in root for ch in "+#\x00"):
        raise TopicError(f"topic root {root!r} must not contain '+', '#' or NUL")
    if root.startswith("$"):
        raise TopicError(f"topic root {root!r} must not start with '$' (reserved by brokers)")
    return root


@dataclass(frozen=True, slots=True)
class TableTopics:
    """The four topics of one table."""

    venue: str
    table: str
    root: str = DEFAULT_ROOT

    def __post_init__(self) -> None:
        validate_id("venue", self.venue)
        validate_id("table", self.table)
        validate_root(self.root)

    @property
    def base(self) -> str:
        """``{root}/{venue}/tables/{table}``."""
        return f"{self.root}/{self.venue}/tables/{self.table}"

    @property
    def status(self) -> str:
        """Retained availability and status."""
        return f"{self.base}/status"

    @property
    def events(self) -> str:
        """Hand settlements, alerts, command rejections."""
        return f"{self.base}/events"

    @property
    def scores(self) -> str:
        """Scores recorded, acknowledged, voided."""
        return f"{self.base}/scores"

    @property
    def cmd(self) -> str:
        """Commands to the table (desk, leaderboard resend requests)."""
        return f"{self.base}/{CMD_SUFFIX}"

    def for_suffix(self, suffix: str) -> str:
        """The topic of an outbox message's ``topic_suffix``."""
        if suffix not in TOPIC_SUFFIXES:
            raise TopicError(f"unknown topic suffix {suffix!r}; expected one of {TOPIC_SUFFIXES}")
        return f"{self.base}/{suffix}"


def standings_topic(venue: str, root: str = DEFAULT_ROOT) -> str:
    """``{root}/{venue}/standings`` (retained, published by the leaderboard service)."""
    return f"{validate_root(root)}/{validate_id('venue', venue)}/standings"


def tables_filter(venue: str, suffix: str = "+", root: str = DEFAULT_ROOT) -> str:
    """A subscription filter for every table of a venue, e.g. ``.../tables/+/scores``."""
    if suffix != "+" and suffix not in _ALL_SUFFIXES:
        raise TopicError(f"unknown topic suffix {suffix!r}; expected '+' or one of {_ALL_SUFFIXES}")
    return f"{validate_root(root)}/{validate_id('venue', venue)}/tables/+/{suffix}"


@dataclass(frozen=True, slots=True)
class TableTopic:
    """A parsed table topic: which venue, table and suffix it names."""

    venue: str
    table: str
    suffix: str


def parse_table_topic(topic: str, root: str = DEFAULT_ROOT) -> TableTopic | None:
    """Split ``{root}/{venue}/tables/{table}/{suffix}``; None if ``topic`` is not one."""
    prefix = validate_root(root) + "/"
    if not topic.startswith(prefix):
        return None
    parts = topic[len(prefix):].split("/")
    if len(parts) != 4 or parts[1] != "tables" or parts[3] not in _ALL_SUFFIXES:
        return None
    venue, _, table, suffix = parts
    if not (ID_PATTERN.fullmatch(venue) and ID_PATTERN.fullmatch(table)):
        return None
    return TableTopic(venue=venue, table=table, suffix=suffix)
