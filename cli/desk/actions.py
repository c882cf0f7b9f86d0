"""What each `showdown desk` action does: ask the central service's desk API (cli.desk.api)
as the person signed in at this terminal, and print the answer (text, or JSON with
``--json``). The service checks the person's role (leaderboard.desk.permissions), records
them, and signs and sends the table commands; a sending action waits for the table's verdict
(cli.desk.table_answers).

The arguments are defined in `cli.desk.command`; every handler here takes the parsed
arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import UTC, date, datetime
from typing import Any

from cli.desk import api
from cli.desk.context import desk_config
from cli.desk.table_answers import EXIT_HELD, EXIT_NOT_CONFIRMED, Sent, send
from cli.errors import CommandError, CommandUnavailable
from cli.typed_secrets import secret_from_file, typed_secret
from game.money import InvalidAmount, format_rand, parse_amount
from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from game.words import spoken
from leaderboard.desk.action import require_reason
from leaderboard.eligibility import read_list
from runtime.settings_files import read_tournament

__all__ = [
    "clock",
    "finish",
    "local_time",
    "moment",
    "now",
    "read_pin",
    "run_audit",
    "run_award",
    "run_buy",
    "run_check",
    "run_choose_seat",
    "run_claim",
    "run_close_heat",
    "run_correct_score",
    "run_import_list",
    "run_lists",
    "run_open_heat",
    "run_places",
    "run_prizes",
    "run_proxy",
    "run_refund",
    "run_register",
    "run_resend",
    "run_seat",
    "run_table_fault",
    "run_unseat",
    "run_void_score",
    "show",
    "tournament_settings",
]


def now() -> datetime:
    """The desk's clock (UTC); tests replace it."""
    return datetime.now(UTC)


def clock() -> datetime:
    """The desk clock (reads `now`, so that tests can set it)."""
    return now()


def tournament_settings(args: argparse.Namespace) -> TournamentSettings:
    """The tournament settings: ``--tournament``, else the config's, else the ones in force
    (the desk shows times in their time zone)."""
    return read_tournament(getattr(args, "tournament", None) or desk_config(args).tournament)


def read_pin(args: argparse.Namespace, whose: str, *, required: bool = False) -> str | None:
    """The PIN from ``--pin-file``, else typed twice at a prompt that does not echo it
    (``--pin``, or when ``required``); None when no PIN is given."""
    path = getattr(args, "pin_file", None)
    if path is not None:
        return secret_from_file(path, "--pin-file")
    if not (getattr(args, "pin", False) or required):
        return None
    return typed_secret("PIN", f"{whose} PIN (4-8 digits)", twice=True,
                        unchanged="nothing was changed")


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def show(args: argparse.Namespace, data: Any, lines: Sequence[str]) -> None:
    """Print ``data`` as JSON (``--json``) or ``lines`` as text."""
    if args.json:
        print(json.dumps(_jsonable(data), sort_keys=True))
    else:
        for line in lines:
            print(line)


def finish(args: argparse.Namespace, sent: Sent, lines: Sequence[str],
           data: Any = None) -> int:
    """Print a sending action's outcome: its lines once every table accepted (exit 0), else
    what was sent and that it is not confirmed yet (EXIT_NOT_CONFIRMED)."""
    body = sent.body if data is None else data
    if sent.error is not None:
        seqs = ", ".join(str(s) for s in sent.unconfirmed)
        raise CommandUnavailable(f"{sent.error} (recorded at the desk; send it again with"
                                 f" `showdown desk resend SEQ`: seq {seqs})")
    if sent.confirmed:
        show(args, body, lines)
        return 0
    show(args, {**body, "confirmed": False, "unconfirmed": list(sent.unconfirmed)}
         if isinstance(body, dict) else body, [sent.note()])
    return EXIT_NOT_CONFIRMED


def moment(text: str | None) -> datetime | None:
    """An ISO time from an answer (None stays None)."""
    return None if text is None else datetime.fromisoformat(text)


def local_time(settings: TournamentSettings, when: datetime | str) -> str:
    """A moment in the venue's time zone, to the minute."""
    value = moment(when) if isinstance(when, str) else when
    assert value is not None
    return f"{value.astimezone(settings.tz):%Y-%m-%d %H:%M}"


def _code(data: dict[str, Any]) -> str:
    return str(data.get("code") or data.get("entry_id"))


# ---- actions ------------------------------------------------------------------------------


def run_register(args: argparse.Namespace) -> int:
    """Register a patron; prints the patron id (exit EXIT_HELD when held for a supervisor)."""
    pin = read_pin(args, "the participant's")
    data = api.call(args, "POST", "patrons", {
        "name": args.name, "id_kind": args.id_kind, "id_number": args.id_number,
        "birth_date": args.birth_date.isoformat(), "why": args.why,
        "rewards_card": args.rewards_card, "pin": pin, "name_consent": args.consent_name,
        "screen_name": args.screen_name})
    proof = [what for what, held in (("rewards card", data.get("card")),
                                     ("PIN", data.get("pin"))) if held]
    held = data.get("standing") == "held" or data.get("hold_id") is not None
    reason = data.get("standing_reason") or "a possible list match"
    show(args, data,
         [f"registered {data['patron_id']}"
          + (f" ({' and '.join(proof)} recorded for the table)" if proof else "")]
         + ([f"HELD for a supervisor's decision: {reason} (hold {data.get('hold_id')};"
             " showdown desk holds --open)"] if held else []))
    return EXIT_HELD if held else 0


def run_import_list(args: argparse.Namespace) -> int:
    """Import a list file (sent to the service as CSV text)."""
    read_list(args.file)  # checked here first: an error names the file and its line
    try:
        text = args.file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{args.file}: cannot read the list: {exc}") from None
    data = api.call(args, "POST", "lists", {"kind": args.kind, "source": args.source,
                                            "source_date": args.date.isoformat(), "csv": text})
    found = data["rescreen"]
    lines = [f"imported {data['rows']} rows: {data['kind']} list from {data['source']} dated"
             f" {data['source_date']}" + (f" (replaces {data['replaced']} rows)"
                                          if data.get("replaced") else ""),
             f"screened {found['checked']} registered patrons again"]
    lines += [f"patron {p} REFUSED: the list names a document of theirs"
              for p in found["refused"]]
    lines += [f"hold {h} opened: a possible match for a supervisor" for h in found["held"]]
    lines += [f"entry {e} refunded: pay the patron" for e in found["refunded"]]
    lines += [f"entry {e} is seated now: its patron is refused or held (a supervisor"
              " decides)" for e in found["seated"]]
    show(args, {"import": {k: v for k, v in data.items() if k != "rescreen"},
                "rescreen": found}, lines)
    return 0


def run_lists(args: argparse.Namespace) -> int:
    """Show the lists in force."""
    data = api.call(args, "GET", "lists")["lists"]
    show(args, data, [f"{d['kind']}: {d['source']}, dated {d['source_date']}, {d['rows']} rows"
                      for d in data] or ["no lists imported"])
    return 0


def _match_line(m: dict[str, Any]) -> str:
    born = f", born {m['list_birth_date']}" if m.get("list_birth_date") else ""
    return (f"possible match on the {m.get('list_kind')} list ({m.get('source')}, dated"
            f" {m.get('source_date')}): {m.get('list_name')!r}{born}, {m.get('how')}")


def run_check(args: argparse.Namespace) -> int:
    """Check eligibility; exit 0 if eligible, 1 if not (the refusal is recorded)."""
    if args.patron:
        body: dict[str, Any] = {"patron_id": args.patron}
    else:
        body = {"id_number": args.id_number, "name": args.name,
                "birth_date": None if args.birth_date is None else args.birth_date.isoformat()}
    answer = api.exchange(args, "POST", "check", body, accept=(403,))
    data = answer.body
    if answer.status == 403 and "reasons" not in data:
        raise CommandError(str(data.get("error")))
    data.setdefault("eligible", False)
    data.setdefault("possible_matches", [])
    lines = [f"not eligible: {r}" for r in data.get("reasons", [])]
    lines += [f"{_match_line(m)} (a supervisor decides)" for m in data["possible_matches"]]
    show(args, {k: data[k] for k in ("eligible", "reasons", "possible_matches") if k in data},
         lines or ["eligible"])
    return 0 if data["eligible"] else 1


def run_buy(args: argparse.Namespace) -> int:
    """Sell an entry; prints the entry id and the code the page shows it by."""
    e = api.call(args, "POST", "entries", {"patron_id": args.patron, "payment": args.payment,
                                           "why": args.why})
    show(args, {k: e.get(k) for k in ("entry_id", "code", "heat_day", "buy_in_cents",
                                      "payment")},
         [f"entry {e['code']} for the heat of {e['heat_day']}"
          f" ({format_rand(e['buy_in_cents'])}, paid in {e['payment']});"
          f" entry id {e['entry_id']}"])
    return 0


def run_refund(args: argparse.Namespace) -> int:
    """Refund an entry that has not been seated."""
    require_reason(args.why, "the entry is refunded")
    data = api.call(args, "POST", "refunds", {"entry_id": args.entry, "why": args.why})
    show(args, data, [f"entry {_code(data)} refunded: pay the patron"
                      f" {format_rand(data['refund_cents'])}"])
    return 0


def run_void_score(args: argparse.Namespace) -> int:
    """Void an entry's recorded score (a supervisor's ruling; nothing is sent to a table)."""
    require_reason(args.why, "the score is voided")
    r = api.call(args, "POST", "score-voids", {"entry_id": args.entry, "why": args.why})
    show(args, r, [f"entry {_code(r)} score voided: {format_rand(r['recorded_cents'])} from"
                   f" {r['table']} no longer counts"])
    return 0


def run_correct_score(args: argparse.Namespace) -> int:
    """Correct an entry's recorded score (a supervisor's ruling; nothing is sent to a table)."""
    try:
        score_cents = parse_amount(args.score)
    except InvalidAmount as exc:
        raise CommandError(f"--score: {exc}") from None
    require_reason(args.why, "the score is corrected")
    r = api.call(args, "POST", "score-corrections",
                 {"entry_id": args.entry, "score_cents": score_cents, "why": args.why})
    show(args, r, [f"entry {_code(r)} score corrected: {format_rand(r['recorded_cents'])} from"
                   f" {r['table']} now counts {format_rand(r['counted_cents'])}"])
    return 0


def run_table_fault(args: argparse.Namespace) -> int:
    """Take a table out of service mid-heat, and tell the table (for when it comes back)."""
    require_reason(args.why, "the table is out of service",
                   kept="the audit and the table's record")
    sent = send(args, "POST", "table-faults", {"table": args.table, "why": args.why})
    f = sent.body
    codes = f.get("codes", {})
    lines = [f"table {f['table']} out of service; heat {f['heat_id']} closed at the desk"]
    lines += [f"entry {codes.get(e, e)} refunded: pay the patron {format_rand(c)}"
              for e, c in f["refunded"].items()]
    lines += [f"place {codes.get(e, e)} freed: seat it again (it is played from the start)"
              for e in f["released"]]
    seqs = f.get("seqs", [])
    lines.append(f"the table is sent {len(seqs)} commands (seq"
                 f" {', '.join(str(s) for s in seqs)}); it applies them if it comes back, so"
                 " it does not play those entries on")
    if not sent.confirmed and not args.json:  # the desk's part is done either way
        show(args, f, lines[:-1])
    if sent.error is not None:
        raise CommandUnavailable(f"table {f['table']} is out of service at the desk, but the"
                                 f" table was not told: {sent.error}; unsent seq"
                                 f" {', '.join(str(s) for s in seqs)}")
    return finish(args, sent, lines)


def run_open_heat(args: argparse.Namespace) -> int:
    """Open a heat at a table."""
    sent = send(args, "POST", "heats", {"table": args.table, "stage": args.stage,
                                        "heat_id": args.heat_id, "why": args.why})
    c = sent.body
    return finish(args, sent, [f"heat {c['heat_id']} opened at table {c['table']}"
                               f" (seq {c['seq']})"])


def run_close_heat(args: argparse.Namespace) -> int:
    """Close the heat at a table."""
    sent = send(args, "POST", "heats/close", {"table": args.table, "why": args.why})
    c = sent.body
    return finish(args, sent, [f"heat closed at table {c['table']} (seq {c['seq']})"])


def run_seat(args: argparse.Namespace) -> int:
    """Seat an entry; prints "seated" only once the table accepted."""
    sent = send(args, "POST", "seatings", {"entry_id": args.entry, "table": args.table,
                                           "seat": args.seat, "why": args.why})
    s = sent.body
    return finish(args, sent, [f"entry {s['code']} seated at table {s['table']} seat"
                               f" {s['seat']}, heat {s['heat_id']} (seq {s['seq']})"])


def run_unseat(args: argparse.Namespace) -> int:
    """Record and send the unseat command for an entry that leaves before its last hand."""
    require_reason(args.why, "the entry leaves", kept="the table's record")
    sent = send(args, "POST", "unseatings", {"entry_id": args.entry, "why": args.why})
    c = sent.body
    return finish(args, sent, [f"entry {_code(c)} to leave table {c['table']} seat"
                               f" {c.get('seat')} (seq {c['seq']}); it is withdrawn once the"
                               " table confirms"])


def run_resend(args: argparse.Namespace) -> int:
    """Send a recorded command again."""
    sent = send(args, "POST", api.path("commands", args.seq, "resend"), {"why": args.why})
    c = sent.body
    return finish(args, sent, [f"{c['command']} for table {c['table']} sent again"
                               f" (seq {c['seq']})"])


def place_line(p: dict[str, Any]) -> str:
    """One semi-final or Final place in a line."""
    score = format_rand(p["score_cents"]) if p.get("score_cents") is not None else "-"
    where = f"heat {p['heat']} seat {p['seat']}" if p.get("seat") is not None else "no seat yet"
    proxy = f", played by proxy {p['played_by']}" if p.get("played_by") else ""
    return (f"{p.get('position') or '-':>2}. {p['entry_id']} (from {p['won_by']}, {score})"
            f" holder {p['holder']}{proxy}: {where}, {p['status']}")


def run_places(args: argparse.Namespace) -> int:
    """Show (or allocate) the semi-final or Final places."""
    stage: Stage = args.stage
    data = api.call(args, "POST" if args.allocate else "GET", api.path("places", stage.value),
                    {"why": args.why} if args.allocate else None)
    places = data["places"]
    show(args, places, [place_line(p) for p in places]
         or [f"no {spoken(stage)} places allocated yet"])
    return 0


def run_proxy(args: argparse.Namespace) -> int:
    """Nominate a proxy."""
    data = api.call(args, "POST", "proxies", {"entry_id": args.entry,
                                              "proxy_patron_id": args.proxy, "why": args.why})
    show(args, data, [f"{data['proxy']} plays place {data['entry_id']} for {data['holder']}"])
    return 0


def run_choose_seat(args: argparse.Namespace) -> int:
    """Select a semi-final heat and seat."""
    place = api.call(args, "POST", "seat-choices", {"entry_id": args.entry, "heat": args.heat,
                                                    "seat": args.seat, "why": args.why})
    show(args, place, [place_line(place)])
    return 0


def prize_line(settings: TournamentSettings, p: dict[str, Any]) -> str:
    """One prize award in a line (times in the venue's zone)."""
    claimed = (f", claimed {local_time(settings, p['claimed_at'])} by {p['claimed_by']}"
               if p.get("claimed_at") else "")
    return (f"#{p['award_id']} {p['kind']} {p['place']}: {format_rand(p['amount_cents'])} to"
            f" {p['patron_id']} (entry {p['entry_id']}) {p['status']}, deadline"
            f" {local_time(settings, p['deadline'])}{claimed}")


def run_award(args: argparse.Namespace) -> int:
    """Record a prize book."""
    settings = tournament_settings(args)
    views = api.call(args, "POST", "prizes", {"kind": args.kind, "week": args.week,
                                              "prize_cents": args.prize, "why": args.why})
    views = views["prizes"]
    show(args, views, [prize_line(settings, v) for v in views] or ["nothing to award"])
    return 0


def run_claim(args: argparse.Namespace) -> int:
    """Record a claim."""
    settings = tournament_settings(args)
    view = api.call(args, "POST", api.path("prizes", args.award, "claim"),
                    {"id_number": args.id_number, "receipt": args.receipt, "why": args.why})
    show(args, view, [prize_line(settings, view)])
    return 0


def run_prizes(args: argparse.Namespace) -> int:
    """List the prizes."""
    settings = tournament_settings(args)
    views = api.call(args, "GET", "prizes")["prizes"]
    show(args, views, [prize_line(settings, v) for v in views] or ["no prizes awarded"])
    return 0


def run_audit(args: argparse.Namespace) -> int:
    """Show the audit log."""
    data = api.call(args, "GET", "audit" + api.query(limit=args.limit, action=args.action))
    rows = data["audit"]
    show(args, rows, [f"{d['id']:>6} {moment(d['at']):%Y-%m-%d %H:%M:%S} {d['actor']}:"
                      f" {d['action']} {json.dumps(d['detail'], sort_keys=True)}"
                      for d in rows])
    return 0
