"""Replay a dispute bundle's journal records through the table's own decision core.

Pure: a `game.table.core.TableCore` (built by the caller from the bundle's context, the way
the daemon builds it from its config) is given every record the bundle and its context hold,
in journal order, exactly as the daemon applies its journal on start-up; what the core says
for each record is kept. `published` reads the messages the table sent from the bundle's
envelopes, `relevant` picks the replayed messages a bundle of these hands would hold, and
`wire.replay_lines` compares the two, line by line. docs/disputes.md, "Replaying a bundle".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from game.table.core import TableCore
from game.table.inputs import TableInput, decode_input
from wire.dispute_bundle import SCORE_TYPES

__all__ = ["Message", "Produced", "published", "relevant", "replay_records"]

_OWN_PREFIX: Final = "journal."


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One table message: its type and body (and, when published, its seq)."""

    type: str
    body: Mapping[str, Any]
    seq: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Produced:
    """What the core did with one journal record on replay."""

    seq: int
    kind: str
    own: bool  # one of the bundle's records (else one of its context's)
    ok: bool
    error: str | None
    messages: tuple[Message, ...]


Decoder = Callable[[str, Mapping[str, Any]], TableInput]


def replay_records(core: TableCore, own: Sequence[Mapping[str, Any]],
                   context: Sequence[Mapping[str, Any]], *,
                   decode: Decoder = decode_input) -> list[Produced]:
    """Apply every record (the bundle's and its context's) in seq order; the journal's own
    records are skipped as the daemon skips them. ``decode`` may stand in for the journal's
    decoder (the device path feeds the drivers' readings through it)."""
    mine = {int(r["seq"]) for r in own}
    merged = sorted([*own, *context], key=lambda r: int(r["seq"]))
    out: list[Produced] = []
    for r in merged:
        kind = str(r["kind"])
        if kind.startswith(_OWN_PREFIX):
            continue
        wall = datetime.fromisoformat(str(r["wall"]))
        decision = core.apply(decode(kind, r.get("payload") or {}), wall)
        out.append(Produced(
            seq=int(r["seq"]), kind=kind, own=int(r["seq"]) in mine, ok=decision.ok,
            error=decision.error,
            messages=tuple(Message(type=m.TYPE, body=m.encode()) for m in decision.messages)))
    return out


def published(envelopes: Iterable[str]) -> list[Message]:
    """The messages as the table sent them (the bundle's verified envelopes)."""
    out = []
    for text in envelopes:
        env = json.loads(text)
        out.append(Message(type=str(env["type"]), body=env["body"], seq=int(env["seq"])))
    return out


def relevant(messages: Iterable[Message], *, manifest: Mapping[str, Any]) -> list[Message]:
    """The messages a bundle with this manifest holds: about its hands, its entries' scores,
    and (a heat's bundle) its heat."""
    hands, entries = set(manifest.get("hand_ids") or ()), set(manifest.get("entry_ids") or ())
    heat = manifest.get("id") if manifest.get("selector") == "heat" else None
    return [m for m in messages
            if m.body.get("hand_id") in hands
            or (m.type in SCORE_TYPES and m.body.get("entry_id") in entries)
            or (heat is not None and m.body.get("heat_id") == heat)]
