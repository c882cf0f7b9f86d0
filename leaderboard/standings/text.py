"""The standings document as plain text for a terminal (`showdown leaderboard standings`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["format_text"]


def _ack_text(row: Mapping[str, Any]) -> str:
    if row.get("disputed"):
        return "disputed"
    return "yes" if row["acknowledged"] else "no"


def _code(row: Mapping[str, Any]) -> str:
    """An entry as people see it (D331): its short code; the id only where none is known."""
    return str(row.get("code") or row["entry_id"])


def format_text(doc: Mapping[str, Any]) -> str:
    """The standings as plain text for a terminal (`showdown leaderboard standings`): each
    entry by its short code, as the page shows it (the JSON keeps the ids)."""
    lines: list[str] = []
    board = doc["board"]
    lines.append(f"{doc['title']} - {board['label']} (as of {doc['generated_local']}"
                 f" {doc['timezone']})")

    def who(row: Mapping[str, Any]) -> str:
        return _code(row) + (f" ({row['name']})" if row.get("name") else "")

    width = max([16, *(len(who(row)) for row in board["rows"])])
    lines.append(f"{'rank':>4}  {'entry':<{width}} {'score':>14}  hands  ack")
    advance = board.get("advance")
    for row in board["rows"]:
        mark = "=" if row["tied"] and board["tie_rule"] == "split" else " "
        lines.append(f"{row['position']:>4}{mark} {who(row):<{width}} {row['score']:>14}"
                     f"  {row['hands']:>5}"
                     f"  {_ack_text(row)}"
                     + (f"  prize {row['prize']['text']}" if "prize" in row else ""))
        if advance is not None and row["rank"] == advance:
            lines.append(f"      ---- top {advance} advance ----")
    if not board["rows"]:
        lines.append("      (no counted scores yet)")
    if board["more"]:
        lines.append(f"      ... and {board['more']} more")
    if board.get("cut_line_tie"):
        lines.append(f"  note: {board['cut_line_tie']}")
    lines.append(f"  awaiting acknowledgement: {board['awaiting_acknowledgement']},"
                 f" voided: {board['voided']}")
    week = doc["week"]
    leaders = ", ".join(f"{_code(r)} {r['score']}" for r in week["leaders"]) or "none yet"
    lines.append(f"week {week['week']} ({week['starts']} to {week['ends']}): {leaders}")
    pools = doc["pools"]
    for key, label in (("final_pool", "Final Prize Pool"), ("top_score", "Top Score Progressive")):
        pool = pools[key]
        split = ", ".join(f"{p['place']}: {p['text']}" for p in pool["places"])
        lines.append(f"{label} ({pool['percent']}% of {pools['entries']} buy-ins):"
                     f" {pool['text']} [{split}; remainder {pool['remainder']['text']}]")
    lines.append(f"pool split remainder: {pools['remainder']['text']}")
    for key in ("semi_final", "final"):
        lineup = doc[key]
        for heat in lineup["heats"]:
            seats = ", ".join(f"seat {s['seat']}: {_code(s)}" for s in heat["seats"])
            lines.append(f"{lineup['label']} {heat['heat_id'] or ''} table"
                         f" {heat['table'] or '-'}: {seats}")
    for x in doc["excluded"]:
        lines.append(f"not ranked: {_code(x)} [{x['entry_id']}] ({x['table']}, {x['text']}):"
                     f" {x['reason']}")  # a problem to look into: the id beside the code
    return "\n".join(lines)

