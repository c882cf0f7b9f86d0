"""Who may read and write which topic at a venue's broker: one description, two renderers (pure).

Mosquitto's ACL file (deploy.broker_config) and NATS's user permissions (deploy.nats_config)
are both written from :func:`venue_acl`, so the rules exist once:

- every table (username = client id = table id) writes only its own ``status``, ``events``
  and ``scores`` and reads only its own ``cmd``;
- ``leaderboard`` reads every table's ``status``/``events``/``scores``, writes every table's
  ``cmd`` (resend requests) and the venue's ``standings``;
- ``desk`` writes every table's ``cmd`` and reads every table's ``status``/``events``/
  ``scores`` and the ``standings``;
- ``leaderboard`` and ``desk`` are denied the table topics named after themselves (Mosquitto's
  table patterns apply to every user).

Topics are MQTT topics; :data:`TABLE` in a table rule stands for the table's own id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["DESK_CLIENT", "LEADERBOARD_CLIENT", "TABLE", "ClientRights", "Grant", "venue_acl"]

LEADERBOARD_CLIENT: Final = "leaderboard"
DESK_CLIENT: Final = "desk"
TABLE: Final = "{table}"  # in a table rule: the authenticated table's own id

Access = Literal["read", "write", "deny"]


@dataclass(frozen=True, slots=True)
class Grant:
    """One right: ``read`` (subscribe), ``write`` (publish) or ``deny`` (both) on a topic."""

    access: Access
    topic: str

    def for_table(self, table: str) -> Grant:
        """This grant with :data:`TABLE` replaced by ``table``."""
        return Grant(self.access, self.topic.replace(TABLE, table))


@dataclass(frozen=True, slots=True)
class ClientRights:
    """The grants of one client (``client`` None: every table, each for its own id)."""

    client: str | None
    comment: str
    grants: tuple[Grant, ...]


def venue_acl(venue_prefix: str) -> tuple[ClientRights, ...]:
    """The venue's rights: the tables' (one rule set for all), the leaderboard's, the desk's."""
    tables = f"{venue_prefix}/tables"
    return (
        ClientRights(None, "Every table (username = client id = table id): its own topics only.", (
            Grant("write", f"{tables}/{TABLE}/status"),
            Grant("write", f"{tables}/{TABLE}/events"),
            Grant("write", f"{tables}/{TABLE}/scores"),
            Grant("read", f"{tables}/{TABLE}/cmd"),
        )),
        ClientRights(LEADERBOARD_CLIENT, "The leaderboard: reads every table, asks tables to"
                     " resend, publishes standings.", (
            Grant("deny", f"{tables}/{LEADERBOARD_CLIENT}/#"),
            Grant("read", f"{tables}/+/status"),
            Grant("read", f"{tables}/+/events"),
            Grant("read", f"{tables}/+/scores"),
            Grant("write", f"{tables}/+/cmd"),
            Grant("write", f"{venue_prefix}/standings"),
        )),
        ClientRights(DESK_CLIENT, "The registration desk: signed commands to tables; reads"
                     " their answers and scores.", (
            Grant("deny", f"{tables}/{DESK_CLIENT}/#"),
            Grant("write", f"{tables}/+/cmd"),
            Grant("read", f"{tables}/+/status"),
            Grant("read", f"{tables}/+/events"),
            Grant("read", f"{tables}/+/scores"),
            Grant("read", f"{venue_prefix}/standings"),
        )),
    )
