"""The reports as text for people (rand, venue time), JSON and CSV for machines (every amount
twice: ``_cents`` as a whole number and ``_rand`` as a plain decimal; times in venue time
with their offset)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Final

from game.money import format_rand
from leaderboard.reports.economics import CLAIM_STATES, Economics
from leaderboard.reports.facts import SIDE_BET_LABELS
from leaderboard.reports.play import CHOICES, MANUAL, PlayReport, PlayRow
from leaderboard.reports.window import ReportWindow, rand_plain

__all__ = ["economics_csv", "economics_json", "economics_text", "play_csv", "play_json",
           "play_text"]

_TITLE: Final = {"table": "Tables", "dealer": "Dealers", "heat": "Heats"}
_NAME: Final = {"table": "venue", "dealer": "name", "heat": "stage"}
_PRIZE_LABELS: Final = {"weekly": "Weekly prize", "top_score": "Top Score Progressive",
                        "final": "Final Prize Pool"}
_POOL_LABELS: Final = {"final_pool": "Final Prize Pool", "top_score": "Top Score Progressive"}


def _money(cents: int, prefix: str) -> dict[str, Any]:
    return {f"{prefix}_cents": cents, f"{prefix}_rand": rand_plain(cents)}


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 4)


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _row_json(row: PlayRow, by: str, window: ReportWindow) -> dict[str, Any]:
    return {
        by: row.key, _NAME[by]: row.name, **({"role": row.role} if by == "dealer" else {}),
        "tables": list(row.tables), "hands_settled": row.hands_settled,
        "hands_voided": row.hands_voided, "seat_hands": row.seat_hands, "entries": row.entries,
        "first_hand_at": window.local(row.first), "last_hand_at": window.local(row.last),
        "dealing_seconds": row.dealing_seconds, "dealing_hours": _hours(row.dealing_seconds),
        "hands_per_hour": row.hands_per_hour,
        "decisions": dict(row.decisions), "decisions_total": row.decisions_total,
        "decisions_per_hour": row.decisions_per_hour,
        "side_bets": {bet: {"seat_hands": use.seat_hands, "share": use.share,
                            **_money(use.wagered_cents, "wagered"), "markers": use.markers}
                      for bet, use in row.side_bets.items()},
        "alerts": dict(row.alerts), "alerts_total": row.alerts_total,
        "manual": dict(row.manual),
    }


def _head(report: str, window: ReportWindow, tz: str) -> dict[str, Any]:
    return {"report": report, "period": {"from": window.first and window.first.isoformat(),
                                         "to": window.last and window.last.isoformat()},
            "venue": window.venue, "timezone": tz}


def play_json(report: PlayReport, window: ReportWindow, tz: str) -> str:
    """The play report as a JSON document."""
    doc = {**_head(_TITLE[report.by].lower(), window, tz),
           "rows": [_row_json(r, report.by, window) for r in report.rows],
           "notes": list(report.notes)}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def play_csv(report: PlayReport, window: ReportWindow) -> str:
    """The play report as CSV: one row per group, one column per figure (an ``alert_<kind>``
    column for every kind in the report)."""
    kinds = sorted({k for r in report.rows for k in r.alerts})
    by = report.by
    head = [by, _NAME[by], *(["role"] if by == "dealer" else []), "tables", "hands_settled",
            "hands_voided", "seat_hands", "entries", "first_hand_at", "last_hand_at",
            "dealing_seconds", "dealing_hours", "hands_per_hour", "decisions_total",
            "decisions_per_hour",
            *(f"decisions_{c}" for c in CHOICES)]
    for bet in SIDE_BET_LABELS:
        head += [f"{bet}_seat_hands", f"{bet}_share", f"{bet}_wagered_cents",
                 f"{bet}_wagered_rand", f"{bet}_markers"]
    head += ["alerts_total", *(f"alert_{k}" for k in kinds), *(f"manual_{m}" for m in MANUAL)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(head)
    for row in report.rows:
        line: list[Any] = [row.key, row.name or "", *([row.role or ""] if by == "dealer" else []),
                           " ".join(row.tables), row.hands_settled, row.hands_voided,
                           row.seat_hands, row.entries, window.local(row.first) or "",
                           window.local(row.last) or "", row.dealing_seconds,
                           _hours(row.dealing_seconds),
                           _blank(row.hands_per_hour), row.decisions_total,
                           _blank(row.decisions_per_hour),
                           *(row.decisions.get(c, 0) for c in CHOICES)]
        for bet in SIDE_BET_LABELS:
            use = row.side_bets[bet]
            line += [use.seat_hands, _blank(use.share), use.wagered_cents,
                     rand_plain(use.wagered_cents), use.markers]
        line += [row.alerts_total, *(row.alerts.get(k, 0) for k in kinds),
                 *(row.manual.get(m, 0) for m in MANUAL)]
        writer.writerow(line)
    return out.getvalue()


def _blank(value: float | None) -> Any:
    return "" if value is None else value


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _row_text(row: PlayRow, by: str, window: ReportWindow) -> list[str]:
    name = f" ({_NAME[by]} {row.name})" if row.name else ""
    role = f", signed in as {row.role}" if by == "dealer" and row.role else ""
    where = f" at {', '.join(row.tables)}" if by != "table" and row.tables else ""
    lines = [f"{row.key}{name}{role}{where}",
             f"  hands {row.hands_settled} settled, {row.hands_voided} voided;"
             f" {row.seat_hands} seat-hands, {row.entries} entries;"
             f" {window.shown(row.first)} to {window.shown(row.last)}",
             f"  dealing {_clock(row.dealing_seconds)} (h:mm:ss): {_rate(row.hands_per_hour)}"
             f" hands/h, {row.decisions_total} decisions ({_rate(row.decisions_per_hour)}/h):"
             f" " + ", ".join(f"{c.replace('play_', 'play ')} {row.decisions.get(c, 0)}"
                              for c in CHOICES)]
    bets = []
    for bet, label in SIDE_BET_LABELS.items():
        use = row.side_bets[bet]
        share = "-" if use.share is None else f"{use.share * 100:.1f}%"
        markers = f", {use.markers} with a marker" if use.markers else ""
        bets.append(f"{label} {share} ({use.seat_hands}), {format_rand(use.wagered_cents)}"
                    f"{markers}")
    lines.append("  side bets: " + "; ".join(bets))
    alerts = ", ".join(f"{k} {n}" for k, n in row.alerts.items()) or "none"
    lines.append(f"  alerts {row.alerts_total}: {alerts}")
    manual = ", ".join(f"{m.replace('_', ' ')} {n}" for m, n in row.manual.items() if n)
    lines.append(f"  manual entries: {manual or 'none'}")
    return lines


def play_text(report: PlayReport, window: ReportWindow, tz: str) -> str:
    """The play report for people."""
    lines = [f"{_TITLE[report.by]} report, {window.label()}; times in {tz}"]
    for row in report.rows:
        lines += ["", *_row_text(row, report.by, window)]
    if report.notes:
        lines += ["", *(f"note: {n}" for n in report.notes)]
    return "\n".join(lines) + "\n"


def _economics_doc(eco: Economics, window: ReportWindow) -> dict[str, Any]:
    return {
        "fees": {m: {"entries": line.count, **_money(line.cents, "fees")} for m, line in eco.fees},
        "fees_total": {"entries": eco.fees_total.count, **_money(eco.fees_total.cents, "fees")},
        "refunds": {"entries": eco.refunds.count, **_money(eco.refunds.cents, "refunded")},
        "to_date": {"paid_entries": eco.paid_entries, **_money(eco.buy_ins_cents, "buy_ins"),
                    **_money(eco.split_remainder_cents, "split_remainder"),
                    "pools": {p.pool: {"percent": p.percent, **_money(p.cents, "pool"),
                                       **_money(p.awarded_cents, "awarded"),
                                       **_money(p.remainder_cents, "remainder"),
                                       "prizes_awarded": p.awarded} for p in eco.pools},
                    **_money(eco.house_weekly_cents, "weekly_prizes_by_house")},
        "prizes": {p.kind: {"awarded": p.awarded.count, **_money(p.awarded.cents, "awarded"),
                            **{s: {"prizes": p.states[s].count,
                                   **_money(p.states[s].cents, s)} for s in CLAIM_STATES}}
                   for p in eco.prizes},
        "as_of": window.local(eco.as_of),
    }


def economics_json(eco: Economics, window: ReportWindow, tz: str) -> str:
    """The economics report as a JSON document."""
    doc = {**_head("economics", window, tz), **_economics_doc(eco, window),
           "notes": list(eco.notes)}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def economics_csv(eco: Economics, window: ReportWindow) -> str:
    """The economics report as CSV, one figure a row: section, item, count, cents, rand."""
    rows: list[tuple[str, str, int | str, int]] = []
    rows += [("fees", m, line.count, line.cents) for m, line in eco.fees]
    rows.append(("fees", "total", eco.fees_total.count, eco.fees_total.cents))
    rows.append(("refunds", "refunded", eco.refunds.count, eco.refunds.cents))
    rows.append(("to_date", "buy_ins", eco.paid_entries, eco.buy_ins_cents))
    for p in eco.pools:
        rows += [(p.pool, "pool", "", p.cents), (p.pool, "awarded", "", p.awarded_cents),
                 (p.pool, "remainder", "", p.remainder_cents)]
    rows.append(("to_date", "split_remainder", "", eco.split_remainder_cents))
    rows.append(("to_date", "weekly_prizes_by_house", "", eco.house_weekly_cents))
    for prize in eco.prizes:
        rows.append((f"prizes_{prize.kind}", "awarded", prize.awarded.count, prize.awarded.cents))
        rows += [(f"prizes_{prize.kind}", s, prize.states[s].count, prize.states[s].cents)
                 for s in CLAIM_STATES]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["section", "item", "count", "cents", "rand", "as_of"])
    as_of = window.local(eco.as_of)
    for section, item, count, cents in rows:
        writer.writerow([section, item, count, cents, rand_plain(cents), as_of])
    return out.getvalue()


def economics_text(eco: Economics, window: ReportWindow, tz: str) -> str:
    """The economics report for people."""
    lines = [f"Economics report, {window.label()}; as of {window.shown(eco.as_of)} {tz}", "",
             "Entry fees collected (qualifying buy-ins bought in the period, refunds excluded):"]
    lines += [f"  {m.replace('_', ' '):<14} {line.count:>6} entries  {format_rand(line.cents):>14}"
              for m, line in eco.fees]
    lines.append(f"  {'total':<14} {eco.fees_total.count:>6} entries"
                 f"  {format_rand(eco.fees_total.cents):>14}")
    lines.append(f"  refunded       {eco.refunds.count:>6} entries"
                 f"  {format_rand(eco.refunds.cents):>14}")
    lines += ["", f"Pools to date ({eco.paid_entries} paid buy-ins,"
              f" {format_rand(eco.buy_ins_cents)}):"]
    for p in eco.pools:
        state = (f"awarded {format_rand(p.awarded_cents)}" if p.awarded
                 else "not awarded yet")
        lines.append(f"  {_POOL_LABELS[p.pool]} ({p.percent}): {format_rand(p.cents)};"
                     f" {state}; remainder {format_rand(p.remainder_cents)}")
    lines.append(f"  remainder of the split: {format_rand(eco.split_remainder_cents)}")
    lines.append(f"  weekly prizes (paid by the house, not a pool): "
                 f"{format_rand(eco.house_weekly_cents)}")
    lines += ["", "Prizes awarded in the period, by claim state now:"]
    for prize in eco.prizes:
        states = ", ".join(f"{s} {prize.states[s].count} {format_rand(prize.states[s].cents)}"
                           for s in CLAIM_STATES)
        lines.append(f"  {_PRIZE_LABELS[prize.kind]}: {prize.awarded.count} awarded"
                     f" {format_rand(prize.awarded.cents)} ({states})")
    if eco.notes:
        lines += ["", *(f"note: {n}" for n in eco.notes)]
    return "\n".join(lines) + "\n"
