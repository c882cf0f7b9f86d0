"""`showdown desk ...`: the tournament registration desk on the command line.

    showdown desk login [--staff-id ID] [--passphrase-file F]   showdown desk logout | whoami
    showdown desk sessions [revoke ID]          (the central database: showdown leaderboard init)

    showdown desk register --name "A. Patron" --id-kind id_document --id-number 9001015009087
                           --birth-date 1990-01-01
    showdown desk import-list self_exclusion FILE.csv --source "NGB register" --date 2026-07-01
    showdown desk check --patron P-...        (or --id-number, --name, --birth-date)
    showdown desk buy --patron P-...
    showdown desk open-heat --table t01 --stage qualifying
    showdown desk seat --entry E-... --table t01 --seat 3
    showdown desk unseat --entry E-... --why "left the table"
    showdown desk close-heat --table t01
    showdown desk table-fault --table t01 --why "shoe broken"
    showdown desk refund --entry E-... --why "bought by mistake"
    showdown desk void-score --entry E-... --why "dispute upheld: misdealt hand"
    showdown desk correct-score --entry E-... --score R1,500 --why "dispute upheld: miscount"
    showdown desk resend SEQ
    showdown desk semis [--allocate]      showdown desk final [--allocate]
    showdown desk proxy --entry S-... --proxy P-...
    showdown desk choose-seat --entry S-... --heat 1 --seat 4
    showdown desk draw --witness STAFF_ID [--replay ID]
    showdown desk award final|top_score|weekly [--week N --prize R500]
    showdown desk claim AWARD_ID --id-number ... [--receipt NO]
    showdown desk prizes      showdown desk audit [--limit N] [--action NAME]
    showdown desk commands [--pending|--refused|--state S] [--table T] [--entry E]
                           [--seq N [--wait S]]
    showdown desk check-tables [--table T]              (exit 1 when a table disagrees)

The tables' consoles (issue 12):

    showdown desk staff add --staff-id D12 --name "N. Dlamini" --role dealer
                            [--pin-file F | --pin (typed at a prompt)] [--card NUMBER]
                            [--passphrase-file F | --passphrase]   (the desk: clerks and up)
    showdown desk staff list | disable ID | enable ID | pin ID [--pin-file F] | card ID NUMBER
    showdown desk staff passphrase ID [--passphrase-file F]
    showdown desk staff send [--table T]
    showdown desk register ... [--rewards-card N] [--pin-file F | --pin]
                               [--consent-name] [--screen-name NAME]
    showdown desk patron credentials --patron P-... [--rewards-card N] [--pin-file F | --pin]
    showdown desk patron display --patron P-... [--consent-name | --no-consent-name]
                                 [--screen-name NAME | --no-screen-name]
    showdown desk acknowledge --entry E-... --method desk_signature|desk_id_check
    showdown desk disputes [--open]     showdown desk dispute resolve --entry E-... --resolution T
    showdown desk dispute raise|rule|close|show|list ...    (cli.desk.disputes)
    showdown desk payouts [--overridden]

Identities (issue 13):

    showdown desk buy --patron P-... --payment cash|value_chips
    showdown desk document add --patron P-... --kind passport --number A1234567
    showdown desk holds [--open] [--patron P-...]
    showdown desk hold approve|refuse HOLD_ID --why "..."          (a supervisor)
    showdown desk disqualify --patron P-... --why "..."  --key ... (a supervisor; sends unseat)
    showdown desk fees                                             entry fees by payment method

Every action reads the desk config (``--config FILE``, else $SHOWDOWN_DESK_CONFIG, else
the shipped desk.toml: the central service's desk API and this terminal's name;
docs/desk-config.md) and asks the desk API over HTTPS (cli.desk.api) as the person signed in
at this terminal (``--as ID`` or $SHOWDOWN_DESK_STAFF when several are), who is checked
against their role (leaderboard.desk.permissions) and recorded with why (``--why``). The
central service signs and sends the tables' commands; a sending action waits for the table's
answer (``--wait``): refused exits 3, not answered in time exits 75 (cli.desk.table_answers).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, Final

from cli.arguments import add_renamed, rand_amount
from cli.desk import actions as act
from cli.desk import disputes as disputes_cli
from cli.desk import draw as desk_draw
from cli.desk import identity as desk_identity
from cli.desk import login
from cli.desk import staff as console
from cli.desk import table_commands as desk_commands
from cli.desk.sessions import DESK_STAFF_ENV
from cli.desk.table_answers import EXIT_HELD, EXIT_NOT_CONFIRMED
from game.tournament.entries import Stage
from game.words import spoken
from leaderboard.desk import DESK_ACK_METHODS
from leaderboard.desk.config import DESK_CONFIG_ENV
from leaderboard.desk.permissions import STAFF_ROLES
from leaderboard.eligibility import ID_KINDS, LIST_KINDS

__all__ = ["DEFAULT_WAIT_S", "register"]

DEFAULT_WAIT_S: Final = 5.0  # --wait: the command line's own wait for a table's answer


# ---- arguments ----------------------------------------------------------------------------


class _Retired(argparse.Action):
    """An option a workstation had while it opened the database and signed the tables'
    commands itself: refused, saying where the desk goes now (D353)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,  # noqa: ARG002
                 values: Any, option_string: str | None = None) -> None:  # noqa: ARG002
        parser.error(f"{option_string}: the desk no longer opens the database, signs or"
                     " sends the tables' commands itself; it goes through the central"
                     " service's desk API (desk.api_url in desk.toml, docs/desk-config.md)")


def _base() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--config", metavar="FILE", type=Path, default=None,
                   help=f"the desk config (default ${DESK_CONFIG_ENV}, else the shipped desk.toml)")
    p.add_argument("--as", dest="as_staff", metavar="STAFF_ID", default=None,
                   help=f"act as this person signed in at this terminal (default"
                   f" ${DESK_STAFF_ENV}, else the only person signed in here)")
    p.add_argument("--db", action=_Retired, nargs=1, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, parents=[_base()])
    p.add_argument("--tournament", metavar="FILE", type=Path,
                   help="tournament settings file, for the time zone times are shown in"
                   " (default: the config's, else the one in force)")
    p.add_argument("--why", metavar="TEXT", default=None, help="why, for the audit record")
    return p


def _sending() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--wait", metavar="SECONDS", type=float, default=DEFAULT_WAIT_S,
                   help="wait up to this long for the table's answer after the central"
                   f" service's own wait (default {DEFAULT_WAIT_S:g}); unanswered: exit"
                   f" {EXIT_NOT_CONFIRMED}")
    for retired in ("--key", "--venue", "--broker", "--username", "--password-file",
                    "--ca-file", "--topic-root"):
        p.add_argument(retired, action=_Retired, nargs=1, help=argparse.SUPPRESS)
    return p


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date such as 2026-07-03") from None


_Add = Callable[..., argparse.ArgumentParser]


def register(sub: Any) -> None:
    """Add the `desk` command and its actions."""
    p: argparse.ArgumentParser = sub.add_parser(
        "desk", help="the registration desk: patrons, lists, entries, seats, draws, prizes",
        description="Register patrons, keep the exclusion lists, sell entries, seat them,"
        " allocate the semi-final and Final places, draw the Final's seats and record prizes."
        " Sign in first (showdown desk login): every action is checked against your role and"
        " recorded under your name in the audit log.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    common, sending = _common(), _sending()

    def add(name: str, help_text: str, *, send: bool = False,
            group: bool = False) -> argparse.ArgumentParser:
        # A group (`desk staff ...`) takes no options of its own: its actions do.
        parents = [] if group else [common, sending] if send else [common]
        a: argparse.ArgumentParser = actions.add_parser(name, help=help_text,
                                                        description=help_text, parents=parents)
        return a

    _account_actions(actions)
    _patron_actions(add)
    _score_actions(add)
    _table_actions(add)
    _place_actions(add)
    _prize_actions(add)
    _staff_actions(add, common, sending)
    _console_actions(add, common, sending)
    desk_identity.add_actions(add, common)
    desk_commands.register(add)  # commands, check-tables


def _account_actions(actions: Any) -> None:
    base = _base()
    a = actions.add_parser(
        "init", parents=[base], help="(moved: showdown leaderboard init, on the central server)",
        description="The central database is created on the central server now: `showdown"
        " leaderboard init --db URL --staff-id ID --name NAME`. A desk workstation holds no"
        " database URL.")
    a.add_argument("--staff-id", default=None, help=argparse.SUPPRESS)
    a.add_argument("--name", default=None, help=argparse.SUPPRESS)
    a.add_argument("--passphrase-file", metavar="FILE", type=Path, help=argparse.SUPPRESS)
    a.set_defaults(handler=login.run_init)
    a = actions.add_parser(
        "login", parents=[base], help="sign in to the desk with your staff id and passphrase",
        description="Sign in at this terminal; later desk commands act as you and record you."
        " The session is kept per terminal and person in a file only you can read"
        " ($XDG_STATE_HOME/showdown/desk-sessions/TERMINAL/STAFF_ID.json); with two people"
        " signed in here each command names who acts (--as ID or $SHOWDOWN_DESK_STAFF).")
    add_renamed(a, "--staff-id", was="--staff", dest="staff", metavar="ID", default=None,
                help="your staff id (else --as, else asked)")
    add_renamed(a, "--passphrase-file", was="--password-file", dest="password_file",
                metavar="FILE", type=Path,
                help="a file holding your desk passphrase (else typed at a prompt)")
    a.set_defaults(handler=login.run_login)
    a = actions.add_parser("logout", parents=[base], help="sign out of the desk",
                           description="End your desk session at this terminal and forget it.")
    a.set_defaults(handler=login.run_logout)
    a = actions.add_parser("whoami", parents=[base], help="who is signed in to the desk",
                           description="Who is signed in here, as what, and until when.")
    a.set_defaults(handler=login.run_whoami)
    a = actions.add_parser(
        "sessions", parents=[base], help="the open desk sessions (a manager: everyone's)",
        description="The open desk sessions: who, at which terminal, from which address,"
        " signed in at, last used and expiry. A manager sees everyone's, others their own."
        " `showdown desk sessions revoke ID` ends one (a manager: anyone's; others: their"
        " own).")
    sessions = a.add_subparsers(dest="sessions_action", metavar="SESSIONS_ACTION")
    r = sessions.add_parser("revoke", parents=[base], help="end a desk session by its id",
                            description="End a desk session by its id (from `showdown desk"
                            " sessions`); its token is refused from then on.")
    r.add_argument("session_id", metavar="ID", help="the session's id (12 hex digits)")
    r.add_argument("--why", metavar="TEXT", default=None, help="why, for the audit record")
    r.set_defaults(handler=login.run_revoke)
    a.set_defaults(handler=login.run_sessions)


def _passphrase_options(a: argparse.ArgumentParser) -> None:
    group = a.add_mutually_exclusive_group()
    group.add_argument("--passphrase-file", metavar="FILE", type=Path,
                       help="a file holding their desk passphrase (clerks, supervisors and"
                       " managers sign in to the desk with it)")
    group.add_argument("--passphrase", action="store_true",
                       help="type their desk passphrase at a prompt (not echoed)")


def _pin_options(a: argparse.ArgumentParser, whose: str) -> None:
    pin = a.add_mutually_exclusive_group()
    pin.add_argument("--pin-file", metavar="FILE", type=Path,
                     help=f"a file holding {whose} PIN (4-8 digits)")
    pin.add_argument("--pin", action="store_true",
                     help=f"type {whose} PIN at a prompt (not echoed)")


def _staff_actions(add: _Add, common: argparse.ArgumentParser,
                   sending: argparse.ArgumentParser) -> None:
    staff = add("staff", "enrol the dealers, supervisors and managers who sign in at the tables'"
                " consoles (PINs and cards kept only as hashes) and send the roster",
                group=True)
    staff_actions = staff.add_subparsers(dest="staff_action", metavar="STAFF_ACTION",
                                         required=True)

    def sub(name: str, help_text: str, *, send: bool = False) -> argparse.ArgumentParser:
        parents = [common, sending] if send else [common]
        a: argparse.ArgumentParser = staff_actions.add_parser(
            name, help=help_text, description=help_text, parents=parents)
        return a

    a = sub("add", "enrol a dealer, clerk, supervisor or manager: a PIN and/or an employee card"
            " for the tables' consoles, a desk passphrase for the desk")
    a.add_argument("--staff-id", required=True)
    a.add_argument("--name", required=True)
    a.add_argument("--role", required=True, choices=STAFF_ROLES)
    _pin_options(a, "their")
    _passphrase_options(a)
    a.add_argument("--card", metavar="NUMBER", default=None,
                   help="the employee card's number (without a PIN option: card only)")
    a.set_defaults(handler=console.run_staff_add)
    a = sub("list", "list the enrolled staff and which credentials each has")
    a.set_defaults(handler=console.run_staff_list)
    for name, handler in (("disable", console.run_staff_disable),
                          ("enable", console.run_staff_enable)):
        a = sub(name, f"{name} a member's credentials (tables learn it from the next roster)")
        a.add_argument("staff_id", metavar="STAFF_ID")
        a.set_defaults(handler=handler)
    a = sub("pin", "give a member a new PIN")
    a.add_argument("staff_id", metavar="STAFF_ID")
    a.add_argument("--pin-file", metavar="FILE", type=Path,
                   help="a file holding the new PIN (else it is typed at a prompt)")
    a.set_defaults(handler=console.run_staff_pin)
    a = sub("passphrase", "set a desk passphrase: your own, or (a manager) anyone's; the"
            " member's desk sessions end")
    a.add_argument("staff_id", metavar="STAFF_ID")
    a.add_argument("--passphrase-file", metavar="FILE", type=Path,
                   help="a file holding the new passphrase (else it is typed at a prompt)")
    a.set_defaults(handler=console.run_staff_passphrase)
    a = sub("card", "give a member a new employee card")
    a.add_argument("staff_id", metavar="STAFF_ID")
    a.add_argument("card", metavar="NUMBER")
    a.set_defaults(handler=console.run_staff_card)
    a = sub("send", "send the staff roster to every active enrolled table", send=True)
    a.add_argument("--table", default=None, help="only this table")
    a.set_defaults(handler=console.run_staff_send)


def _console_actions(add: _Add, common: argparse.ArgumentParser,
                     sending: argparse.ArgumentParser) -> None:
    patron = add("patron", "a patron's proof at the table (rewards card, PIN)", group=True)
    patron_actions = patron.add_subparsers(dest="patron_action", metavar="PATRON_ACTION",
                                           required=True)
    a = patron_actions.add_parser(
        "credentials", parents=[common, sending],
        help="record a patron's rewards card and/or PIN",
        description="record a patron's rewards card and/or PIN (kept only as hashes); entries"
        " seated from now on carry them to the table, and a table where an entry of theirs"
        " is seated or waits for acknowledgement is sent them at once (signed)")
    a.add_argument("--patron", metavar="ID", required=True)
    a.add_argument("--rewards-card", metavar="NUMBER", default=None)
    _pin_options(a, "the participant's")
    a.set_defaults(handler=console.run_patron_credentials)
    a = patron_actions.add_parser(
        "display", parents=[common], help="how the page may name a patron",
        description="record the patron's consent to be shown by first name and initial,"
        " and/or the screen name they chose (or take it away); the page follows at once")
    a.add_argument("--patron", metavar="ID", required=True)
    consent = a.add_mutually_exclusive_group()
    consent.add_argument("--consent-name", dest="consent", action="store_const", const=True,
                         default=None, help="the patron agrees to be named")
    consent.add_argument("--no-consent-name", dest="consent", action="store_const",
                         const=False, help="the patron withdraws their consent")
    screen = a.add_mutually_exclusive_group()
    screen.add_argument("--screen-name", metavar="NAME", default=None,
                        help="the name the patron chose to be shown by on the page (2 to 20"
                             " letters, digits, spaces and . - ' _; unique)")
    screen.add_argument("--no-screen-name", action="store_true",
                        help="take the patron's screen name away")
    a.set_defaults(handler=console.run_patron_display)
    a = patron_actions.add_parser(
        "show", parents=[common], help="a patron's record: their entries, each one's score"
        " and how it was acknowledged",
        description="show a patron's record: standing, documents, and each entry they hold by"
        " its code and id, where it stands (seated, scored, the score, acknowledged by card,"
        " PIN or signature and when, disputed, voided)")
    a.add_argument("--patron", metavar="ID", required=True)
    a.set_defaults(handler=console.run_patron_show)

    a = add("acknowledge", "acknowledge an entry's recorded score at the desk: the table that"
            " recorded it is told", send=True)
    a.add_argument("--entry", metavar="ID", required=True)
    a.add_argument("--method", required=True, choices=DESK_ACK_METHODS)
    a.set_defaults(handler=console.run_acknowledge)

    a = add("disputes", "list the scores participants disputed at the tables")
    a.add_argument("--open", action="store_true", help="only those not resolved yet")
    a.set_defaults(handler=console.run_disputes)
    dispute = add("dispute", "a supervisor's resolution of a dispute", group=True)
    dispute_actions = dispute.add_subparsers(dest="dispute_action", metavar="DISPUTE_ACTION",
                                             required=True)
    a = dispute_actions.add_parser(
        "resolve", parents=[common], help="record how an entry's open dispute was resolved",
        description="record how an entry's open dispute was resolved (a changed score is a"
        " void-score or correct-score ruling besides)")
    a.add_argument("--entry", metavar="ID", required=True)
    a.add_argument("--resolution", metavar="TEXT", required=True)
    a.set_defaults(handler=console.run_dispute_resolve)
    disputes_cli.register(dispute_actions, common, _sending())

    a = add("payouts", "list the payout checks by the chip readers, newest first")
    a.add_argument("--overridden", action="store_true", help="only a supervisor's overrides")
    a.add_argument("--limit", type=int, default=200)
    a.set_defaults(handler=console.run_payouts)


def _patron_actions(add: _Add) -> None:
    a = add("register", "register a patron (rewards card, ID document or driver's licence);"
            f" exit {EXIT_HELD} when held for a supervisor (a possible list match)")
    a.add_argument("--name", required=True)
    a.add_argument("--id-kind", required=True, choices=ID_KINDS)
    a.add_argument("--id-number", required=True)
    a.add_argument("--birth-date", required=True, type=_day, metavar="YYYY-MM-DD")
    a.add_argument("--rewards-card", metavar="NUMBER", default=None,
                   help="the card the participant taps to acknowledge a score (hashed;"
                   " registered by rewards card, that card by default)")
    _pin_options(a, "the participant's")
    a.add_argument("--consent-name", action="store_true",
                   help="the patron agrees to be shown on the page by first name and initial"
                   " (when the house shows names so; otherwise by their entry code)")
    a.add_argument("--screen-name", metavar="NAME", default=None,
                   help="a name the patron chose to be shown by on the page (2 to 20 letters,"
                   " digits, spaces and . - ' _; unique)")
    a.set_defaults(handler=act.run_register)

    a = add("import-list", "import an exclusion or staff list (CSV: id_number, name[, ...])")
    a.add_argument("kind", choices=LIST_KINDS)
    a.add_argument("file", type=Path)
    a.add_argument("--source", required=True, help="who issued the list")
    a.add_argument("--date", required=True, type=_day, metavar="YYYY-MM-DD",
                   help="the list's date")
    a.set_defaults(handler=act.run_import_list)

    a = add("lists", "show the lists in force")
    a.set_defaults(handler=act.run_lists)

    a = add("check", "check a patron's (or a person's) eligibility now")
    a.add_argument("--patron", metavar="ID")
    a.add_argument("--id-number")
    a.add_argument("--name")
    a.add_argument("--birth-date", type=_day, metavar="YYYY-MM-DD")
    a.set_defaults(handler=act.run_check)

    a = add("buy", "sell a qualifying entry (inside the heat window)")
    a.add_argument("--patron", metavar="ID", required=True)
    a.add_argument("--payment", required=True, choices=desk_identity.PAYMENT_CHOICES,
                   help="how the buy-in is paid (rule 6)")
    a.set_defaults(handler=act.run_buy)

    a = add("refund", "refund an entry not yet seated: its buy-in leaves the pools; --why is"
            " required")
    a.add_argument("--entry", metavar="ID", required=True)
    a.set_defaults(handler=act.run_refund)


def _score_actions(add: _Add) -> None:
    a = add("void-score", "a supervisor's ruling on a disputed score (rules 22, 23): void the"
            " entry's recorded score, so it no longer counts; the table's record is kept;"
            " --why is required")
    a.add_argument("--entry", metavar="ID", required=True)
    a.set_defaults(handler=act.run_void_score)

    a = add("correct-score", "a supervisor's ruling on a disputed score (rules 22, 23): the"
            " standings count the corrected figure instead of the table's, whose record is"
            " kept; --why is required")
    a.add_argument("--entry", metavar="ID", required=True)
    a.add_argument("--score", metavar="AMOUNT", required=True,
                   help="the corrected score, e.g. R1,500.00")
    a.set_defaults(handler=act.run_correct_score)


def _table_actions(add: _Add) -> None:
    a = add("open-heat", "open a heat at a table", send=True)
    a.add_argument("--table", required=True)
    a.add_argument("--stage", required=True, choices=[s.value for s in Stage])
    a.add_argument("--heat-id", default=None)
    a.set_defaults(handler=act.run_open_heat)

    a = add("close-heat", "close the heat at a table", send=True)
    a.add_argument("--table", required=True)
    a.set_defaults(handler=act.run_close_heat)

    a = add("seat", "seat an entry at a table (eligibility checked again)", send=True)
    a.add_argument("--entry", metavar="ID", required=True)
    a.add_argument("--table", required=True)
    a.add_argument("--seat", type=int, default=None,
                   help="the seat (semi-final and Final places have theirs already)")
    a.set_defaults(handler=act.run_seat)

    a = add("unseat", "take an entry out of its seat (during a hand the table holds it until"
            " the hand ends): it records no score (rule 14) and is not seated again; --why is"
            " required", send=True)
    a.add_argument("--entry", metavar="ID", required=True)
    a.set_defaults(handler=act.run_unseat)

    a = add("table-fault", "take a table out of service mid-heat: its unfinished entries are"
            " refunded (semi-final and Final places freed to be seated again) and its heat"
            " closed; the table is told, for when it comes back; --why is required", send=True)
    a.add_argument("--table", required=True)
    a.set_defaults(handler=act.run_table_fault)

    a = add("resend", "send a recorded table command again (same seq)", send=True)
    a.add_argument("seq", type=int)
    a.set_defaults(handler=act.run_resend)


def _place_actions(add: _Add) -> None:
    for stage, name in ((Stage.SEMI_FINAL, "semis"), (Stage.FINAL, "final")):
        a = add(name, f"show the {spoken(stage)} places (--allocate: allocate"
                                    " them)")
        a.add_argument("--allocate", action="store_true")
        a.set_defaults(handler=act.run_places, stage=stage)

    a = add("proxy", "nominate a proxy for a patron's extra place")
    a.add_argument("--entry", metavar="PLACE", required=True)
    a.add_argument("--proxy", metavar="PATRON", required=True)
    a.set_defaults(handler=act.run_proxy)

    a = add("choose-seat", "select a semi-final place's heat and seat")
    a.add_argument("--entry", metavar="PLACE", required=True)
    a.add_argument("--heat", type=int, required=True)
    a.add_argument("--seat", type=int, required=True)
    a.set_defaults(handler=act.run_choose_seat)

    a = add("draw", "draw the Final's seats, its seed's digest committed first before a"
            " witness (or --replay a stored draw)")
    a.add_argument("--witness", metavar="STAFF_ID", default=None,
                   help="the staff member who witnesses the commitment (required to draw)")
    a.add_argument("--replay", metavar="ID", type=int, default=None)
    a.set_defaults(handler=desk_draw.run_draw)


def _prize_actions(add: _Add) -> None:
    a = add("award", "record a prize book's awards")
    a.add_argument("kind", choices=["weekly", "top_score", "final"])
    a.add_argument("--week", type=int, default=None)
    a.add_argument("--prize", type=rand_amount, default=None, metavar="AMOUNT",
                   help="the weekly prize, e.g. R5,000")
    a.set_defaults(handler=act.run_award)

    a = add("claim", "record a prize claimed and signed for")
    a.add_argument("award", type=int, metavar="AWARD_ID")
    a.add_argument("--id-number", required=True, help="the claimant's document number")
    a.add_argument("--receipt", default=None, help="the signed receipt's number")
    a.set_defaults(handler=act.run_claim)

    a = add("prizes", "list the prizes and their claim status")
    a.set_defaults(handler=act.run_prizes)

    a = add("audit", "show the audit log, newest first")
    a.add_argument("--limit", type=int, default=50)
    a.add_argument("--action", default=None)
    a.set_defaults(handler=act.run_audit)


