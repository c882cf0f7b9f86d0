"""The registration desk over HTTP: the `showdown desk` operations as a small JSON API.

`desk_routes(...)` returns Starlette routes that the leaderboard service mounts under
``/api/desk``. A person signs in with ``POST /session`` {staff_id, passphrase} and every
other request carries ``Authorization: Bearer <session token>``; the action is recorded
under that person, checked against the permission matrix (leaderboard.desk.permissions), and a
body naming an ``actor`` is refused (docs/desk-auth.md). Answers are JSON: 200/201 with the
result, 400 with ``error`` for bad input, 401 with ``reason`` without a valid session, 403
with ``role_needed`` when the person's role may not take the action, 403 with ``reasons``
when a patron is refused on eligibility (the refusal is recorded), 404 for an unknown id,
409 on a conflict with the state (seat taken, buy-in window closed, already done) or when a
table refused the command, 202 when a command is sent but its table has not answered yet
(leaderboard.desk_api.commands), 502 when a command is recorded but the broker cannot be
reached (the answer says so; nothing is undone).

    POST /session            {staff_id, passphrase}      sign in (201, the token)
    GET  /session            DELETE /session             who is signed in | sign out
    POST /patrons            {name, id_kind, id_number, birth_date[, rewards_card, pin]}
    GET  /patrons/{id}                                                  a patron and entries
    POST /check              {patron_id} | {id_number, name, birth_date}
    POST /lists              {kind, source, source_date, csv}           import a list (201)
    POST /entries            {patron_id, payment}                       buy an entry (201)
    POST /heats              {table, stage[, heat_id]}                  open a heat (sends)
    POST /heats/close        {table}                                    close it (sends)
    POST /seatings           {entry_id, table[, seat]}                  seat (sends)
    POST /unseatings         {entry_id, why}                            unseat (sends)
    POST /refunds            {entry_id, why}                            refund, unseated (201)
    POST /score-voids        {entry_id, why}                            void a score (201)
    POST /score-corrections  {entry_id, score_cents, why}               correct a score (201)
    POST /table-faults       {table, why}                               out of service (sends)
    POST /commands/{seq}/resend                                         send a command again
    GET  /commands?state=&pending=&table=&entry=   GET /commands/{seq}  commands, their state
    GET  /table-check[?table=]                                          desk vs the tables
    GET  /places/{stage}                                                semi_final | final
    POST /places/{stage}                                                allocate them
    POST /proxies            {entry_id, proxy_patron_id}
    POST /seat-choices       {entry_id, heat, seat}
    POST /draw-commitments   {stage, witness}                           commit a draw's seed
    POST /draws              {stage, commitment_id}                     the Final's seat draw
    GET  /draws/{id}/replay                                             (desk_api.draws)
    GET  /prizes             POST /prizes {kind[, week, prize_cents]}
    POST /prizes/{id}/claim  {id_number[, receipt]}
    GET  /audit?limit=&action=
    GET  /lists                                                         the lists in force
    POST /patrons/{id}/display {name_consent, screen_name, clear_screen_name}
    GET  /sessions           POST /sessions/{id}/revoke     open sessions | end one
    GET  /openapi.json                                                  this API (no token)

Each operation's fields, types and bounds are declared once in `leaderboard.desk_api.schema`;
bodies are read within their limit and errors mapped to answers in `leaderboard.desk_api.input`.

The console's operations (staff and their roster, participants' credentials, desk
acknowledgements, disputes, payout checks) are in `leaderboard.desk_api.console`; the
identity operations (documents, holds, disqualification, fees) in
`leaderboard.desk_api.identity`. A registration held on a possible list match answers 202
with its ``hold_id``; a buy-in or seating held answers 409 with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from game.tournament.entries import Stage
from game.tournament.schema import TournamentSettings
from leaderboard import desk
from leaderboard.config import NameMode
from leaderboard.desk import (
    NotFound,
    Place,
    PrizeView,
    ScoreRuling,
)
from leaderboard.desk.auth import RoleRefused, SignInRefused, authorise
from leaderboard.desk.lookups import entry_codes
from leaderboard.desk.patron_record import patron_record
from leaderboard.desk.permissions import PERMISSIONS
from leaderboard.desk.policy import AuthPolicy
from leaderboard.desk.seat_draw import COMMITMENT_VALID
from leaderboard.desk.sender import CommandSender
from leaderboard.desk_api.commands import CommandsApi, deliver
from leaderboard.desk_api.console import ConsoleApi
from leaderboard.desk_api.dispute_bundles import BundlesApi, bundle_routes
from leaderboard.desk_api.disputes import DisputesApi, dispute_routes, entry_disputes
from leaderboard.desk_api.draws import DrawsApi, draw_routes
from leaderboard.desk_api.http import Body, Operation, Result, iso
from leaderboard.desk_api.identity import IdentityApi
from leaderboard.desk_api.input import error_answer, fallback_route, read_json
from leaderboard.desk_api.schema import Spec, openapi, spec_of
from leaderboard.desk_api.session import SessionApi, unauthorised
from leaderboard.eligibility import in_force, parse_list
from leaderboard.models import Entry
from runtime.clocks import WallClock
from wire.signing import Signer

__all__ = ["desk_routes"]



def _place(p: Place) -> dict[str, Any]:
    return {"entry_id": p.entry_id, "stage": p.stage.value, "won_by": p.won_by,
            "holder": p.holder, "played_by": p.played_by, "player": p.player,
            "position": p.position, "score_cents": p.score_cents, "heat": p.heat,
            "seat": p.seat, "table": p.table, "status": p.status}


def _prize(p: PrizeView) -> dict[str, Any]:
    return {"award_id": p.award_id, "kind": p.kind, "place": p.place, "entry_id": p.entry_id,
            "patron_id": p.patron_id, "amount_cents": p.amount_cents,
            "awarded_at": iso(p.awarded_at), "deadline": iso(p.deadline),
            "claimed_at": iso(p.claimed_at), "claimed_by": p.claimed_by, "status": p.status}


def _ruling(r: ScoreRuling) -> dict[str, Any]:
    return {"entry_id": r.entry_id, "ruling": r.ruling, "stage": r.stage, "table": r.table,
            "recorded_cents": r.recorded_cents, "counted_cents": r.counted_cents,
            "at": r.at.isoformat(), "why": r.why}


def _entry(e: Entry) -> dict[str, Any]:
    return {"entry_id": e.entry_id, "code": e.entry_code, "patron_id": e.patron_id,
            "stage": e.stage, "heat_id": e.heat_id,
            "heat_day": e.heat_day.isoformat() if e.heat_day else None,
            "table": e.table_id, "seat": e.seat, "buy_in_cents": e.buy_in_cents,
            "status": e.status, "played_by": e.played_by, "payment": e.payment,
            "disqualified": e.disqualified_at is not None}


def _coded(s: Session, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with its entry's code (the desk shows entries by code)."""
    entry_id = answer.get("entry_id")
    if not isinstance(entry_id, str):
        return answer
    return {**answer, "code": entry_codes(s, [entry_id]).get(entry_id, entry_id)}


def _stage(text: str) -> Stage:
    if text not in (Stage.SEMI_FINAL.value, Stage.FINAL.value):
        raise NotFound(f"no places for {text!r} (semi_final or final)")
    return Stage(text)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def _unread(request: Request, answer: Response) -> Response:
    """An answer given before the request's body was read: a body still on its way ends the
    connection (a client still sending would otherwise wait for an answer it never reads)."""
    if request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers:
        answer.headers["Connection"] = "close"
    return answer


async def _openapi(_: Request) -> Response:
    return JSONResponse(openapi())


class _DeskApi:
    """The endpoints, sharing the engine, settings, sender and clock."""

    def __init__(self, engine: Engine, settings: TournamentSettings, sender: CommandSender,
                 clock: WallClock, *, answer_wait: float | None = None) -> None:
        self.engine, self.answer_wait = engine, answer_wait
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.settings = settings
        self.sender = sender
        self.clock = clock
        self.names: NameMode = "entry_code"

    def _authorised(self, request: Request, action: str) -> str:
        """The signed-in person's staff id, when their session may take ``action``."""
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        token = given.strip() if scheme.lower() == "bearer" else None
        with self.sessions() as session:
            return authorise(session, self.clock, token, action).staff_id

    async def _body(self, request: Request, spec: Spec | None) -> Body:
        path = dict(request.path_params)
        if request.method in ("GET", "HEAD"):
            return Body(dict(request.query_params), spec, path=path, query=True)
        return Body(await read_json(request), spec, path=path)

    def _run(self, operation: Operation, body: Body, request: Request) -> Result:
        with self.sessions() as session:
            try:
                return operation(session, body, request)
            except BaseException:
                session.rollback()
                raise

    def endpoint(self, action: str, operation: Operation, spec: Spec | None = None
                 ) -> Callable[[Request], Awaitable[Response]]:
        """Wrap the operation of ``action`` (a name in leaderboard.desk.permissions.PERMISSIONS):
        authenticate and authorise, read the request as declared (`spec`, by default the
        declaration named as the operation), run off the event loop, send, map errors."""
        if action not in PERMISSIONS:
            raise KeyError(f"desk action {action!r} is not in leaderboard.desk.permissions")
        spec = spec or spec_of(getattr(operation, "__name__", ""))

        async def handle(request: Request) -> Response:
            try:
                staff_id = await run_in_threadpool(self._authorised, request, action)
                body = (await self._body(request, spec)).signed_in(staff_id)
                result = await run_in_threadpool(self._run, operation, body, request)
            except SignInRefused as exc:
                return _unread(request, unauthorised(exc))
            except RoleRefused as exc:
                return _unread(request, _error(403, str(exc), role_needed=exc.needed))
            except desk.NotPermitted as exc:
                return _error(403, str(exc))
            except desk.Held as exc:
                return _error(409, str(exc), hold_id=exc.hold_id, matches=list(exc.matches))
            except Exception as exc:  # every error gets its answer (a bug: 500, logged)
                return error_answer(exc, request.url.path)
            sent = await deliver(self.engine, self.sender, result.commands, self.clock,
                                 answer_wait=self.answer_wait)
            if sent.error is not None:
                return _error(502, sent.error, recorded=sent.body(dict(result.body)))
            return JSONResponse(sent.body(dict(result.body)),
                                status_code=sent.status(result.status))
        handle.__name__ = getattr(operation, "__name__", "operation")  # the route's name
        return handle

    # ---- operations (run in a worker thread with their own session) ---------------------

    def register(self, s: Session, b: Body, _: Request) -> Result:
        patron = desk.register_patron(
            s, self.settings, self.clock, actor=b.actor, name=b.text("name"),
            id_kind=b.text("id_kind"), id_number=b.text("id_number"),
            birth_date=b.day("birth_date"), why=b.optional_text("why"),
            rewards_card=b.optional_text("rewards_card"), pin=b.optional_text("pin"),
            name_consent=b.flag("name_consent"), screen_name=b.optional_text("screen_name"))
        held = desk.holds(s, open_only=True, patron_id=patron.patron_id)
        shown = {"patron_id": patron.patron_id, "standing": patron.standing,
                 "standing_reason": patron.standing_reason,
                 "card": patron.card_hash is not None, "pin": patron.pin_hash is not None,
                 "name_consent": patron.name_consent, "screen_name": patron.screen_name}
        if held:
            return Result({**shown, "hold_id": held[0].hold_id,
                           "matches": list(held[0].matches)}, status=202)
        return Result(shown, status=201)

    def patron(self, s: Session, b: Body, _: Request) -> Result:
        """The patron's record: each entry with where it stands in the central records (its
        score and how it was acknowledged, D333)."""
        patron = desk.get_patron(s, b.path_text("patron_id"))
        entries = s.scalars(select(Entry).where(Entry.patron_id == patron.patron_id)
                            .order_by(Entry.bought_at, Entry.entry_id)).all()
        record = patron_record(s, self.settings, patron.patron_id)
        progress = {p["entry_id"]: p for p in record["entries"]}
        return Result({**record,
                       "entries": [{**_entry(e), **progress[e.entry_id]} for e in entries],
                       "disputes": entry_disputes(s, [e.entry_id for e in entries])})

    def check(self, s: Session, b: Body, _: Request) -> Result:
        if b.given("patron_id"):
            verdict = desk.check_person(s, self.settings, self.clock, actor=b.actor,
                                        patron_id=b.text("patron_id"))
        else:
            verdict = desk.check_person(
                s, self.settings, self.clock, actor=b.actor, id_number=b.text("id_number"),
                name=b.text("name"), birth_date=b.day("birth_date"))
        return Result({"eligible": verdict.eligible and not verdict.held,
                       "reasons": list(verdict.reasons),
                       "possible_matches": [m.as_json() for m in verdict.possible]})

    def import_list(self, s: Session, b: Body, _: Request) -> Result:
        kind, source = b.text("kind"), b.text("source")
        rows = parse_list(b.text("csv"), f"{kind} list from {source}")
        result, found = desk.import_and_rescreen(
            s, self.settings, self.clock, actor=b.actor, kind=kind, rows=rows, source=source,
            source_date=b.day("source_date"))
        return Result({"kind": result.kind, "source": result.source,
                        "source_date": result.source_date.isoformat(), "rows": result.rows,
                        "replaced": result.replaced,
                        "rescreen": {"checked": found.checked, "refused": list(found.refused),
                                     "held": list(found.held),
                                     "refunded": list(found.refunded),
                                     "seated": list(found.seated)}}, status=201)

    def buy(self, s: Session, b: Body, _: Request) -> Result:
        entry = desk.buy_entry(s, self.settings, self.clock, actor=b.actor,
                               patron_id=b.text("patron_id"), payment=b.text("payment"),
                               why=b.optional_text("why"))
        return Result(_entry(entry), status=201)

    def open_heat(self, s: Session, b: Body, _: Request) -> Result:
        command = desk.open_heat(s, self.settings, self.clock, actor=b.actor,
                                 table=b.text("table"), stage=b.text("stage"),
                                 heat_id=b.optional_text("heat_id"), why=b.optional_text("why"))
        return Result({"table": command.table, "seq": command.seq, **command.args},
                       (command,), 201)

    def close_heat(self, s: Session, b: Body, _: Request) -> Result:
        command = desk.close_heat(s, self.clock, actor=b.actor, table=b.text("table"),
                                  why=b.optional_text("why"))
        return Result({"table": command.table, "seq": command.seq}, (command,))

    def seat(self, s: Session, b: Body, _: Request) -> Result:
        seating = desk.seat_entry(s, self.settings, self.clock, actor=b.actor,
                                  entry_id=b.text("entry_id"), table=b.text("table"),
                                  seat=b.optional_integer("seat"), why=b.optional_text("why"),
                                  names=self.names)
        return Result({"entry_id": seating.entry_id, "code": seating.entry_code,
                       "table": seating.table, "seat": seating.seat, "heat_id": seating.heat_id,
                       "player": seating.player, "seq": seating.command.seq},
                       (seating.command,), 201)

    def unseat(self, s: Session, b: Body, _: Request) -> Result:
        command = desk.unseat_entry(s, self.clock, actor=b.actor, entry_id=b.text("entry_id"),
                                    why=b.text("why"))
        return Result(_coded(s, {"table": command.table, "seq": command.seq, **command.args}),
                      (command,), 201)

    def refund(self, s: Session, b: Body, _: Request) -> Result:
        entry = desk.refund_entry(s, self.clock, actor=b.actor, entry_id=b.text("entry_id"),
                                  why=b.text("why"))
        return Result({"entry_id": entry.entry_id, "code": entry.entry_code,
                       "refund_cents": entry.buy_in_cents}, status=201)

    def void_score(self, s: Session, b: Body, _: Request) -> Result:
        ruling = desk.void_score(s, self.settings, self.clock, actor=b.actor,
                                 entry_id=b.text("entry_id"), why=b.text("why"))
        return Result(_coded(s, _ruling(ruling)), status=201)

    def correct_score(self, s: Session, b: Body, _: Request) -> Result:
        ruling = desk.correct_score(s, self.settings, self.clock, actor=b.actor,
                                    entry_id=b.text("entry_id"),
                                    score_cents=b.integer("score_cents"), why=b.text("why"))
        return Result(_coded(s, _ruling(ruling)), status=201)

    def table_fault(self, s: Session, b: Body, _: Request) -> Result:
        fault = desk.table_fault(s, self.clock, actor=b.actor, table=b.text("table"),
                                 why=b.text("why"))
        return Result({"table": fault.table, "heat_id": fault.heat_id,
                        "refunded": dict(fault.refunded), "released": list(fault.released),
                        "codes": entry_codes(s, [*fault.refunded, *fault.released]),
                        "seqs": [c.seq for c in fault.commands]}, fault.commands, 201)

    def resend(self, s: Session, b: Body, _: Request) -> Result:
        seq = b.path_integer("seq")
        command = desk.resend_command(s, self.clock, actor=b.actor, seq=seq,
                                      why=b.optional_text("why"))
        return Result({"table": command.table, "command": command.command,
                        "seq": command.seq}, (command,))

    def places(self, s: Session, b: Body, _: Request) -> Result:
        stage = _stage(b.path_text("stage"))
        return Result({"stage": stage.value,
                        "places": [_place(p) for p in desk.places(s, self.settings, stage)]})

    def allocate(self, s: Session, b: Body, _: Request) -> Result:
        stage = _stage(b.path_text("stage"))
        allocate = desk.allocate_semis if stage is Stage.SEMI_FINAL else desk.allocate_final
        result = allocate(s, self.settings, self.clock, actor=b.actor,
                          why=b.optional_text("why"))
        return Result({"stage": stage.value, "places": [_place(p) for p in result]})

    def proxy(self, s: Session, b: Body, _: Request) -> Result:
        row = desk.nominate_proxy(s, self.settings, self.clock, actor=b.actor,
                                  entry_id=b.text("entry_id"),
                                  proxy_patron_id=b.text("proxy_patron_id"),
                                  why=b.optional_text("why"))
        return Result({"entry_id": row.entry_id, "holder": row.holder_patron_id,
                        "proxy": row.proxy_patron_id}, status=201)

    def choose_seat(self, s: Session, b: Body, _: Request) -> Result:
        place = desk.choose_seat(s, self.settings, self.clock, actor=b.actor,
                                 entry_id=b.text("entry_id"), heat=b.integer("heat"),
                                 seat=b.integer("seat"), why=b.optional_text("why"))
        return Result(_place(place))

    def prizes(self, s: Session, _: Body, __: Request) -> Result:
        return Result({"prizes": [_prize(p) for p in desk.prizes(s, self.clock)]})

    def award(self, s: Session, b: Body, _: Request) -> Result:
        views = desk.award_prizes(s, self.settings, self.clock, actor=b.actor,
                                  kind=b.text("kind"), week=b.optional_integer("week"),
                                  prize_cents=b.optional_integer("prize_cents"),
                                  why=b.optional_text("why"))
        return Result({"prizes": [_prize(p) for p in views]}, status=201)

    def claim(self, s: Session, b: Body, _: Request) -> Result:
        award_id = b.path_integer("award_id")
        view = desk.claim_prize(s, self.settings, self.clock, actor=b.actor, award_id=award_id,
                                id_number=b.text("id_number"),
                                receipt=b.optional_text("receipt"), why=b.optional_text("why"))
        return Result(_prize(view))

    # ---- issue 33: reads and changes the command line needed (the desk is a client) ------

    def lists(self, s: Session, _: Body, __: Request) -> Result:
        """GET /lists: the exclusion and staff lists in force."""
        return Result({"lists": [{"kind": k, "source": src, "source_date": d.isoformat(),
                                  "rows": n} for k, src, d, n in in_force(s)]})

    def display(self, s: Session, b: Body, _: Request) -> Result:
        """POST /patrons/{id}/display: consent to be named and/or the screen name."""
        patron = desk.set_patron_display(
            s, self.clock, actor=b.actor, patron_id=b.path_text("patron_id"),
            name_consent=b.flag("name_consent") if b.given("name_consent") else None,
            screen_name=b.optional_text("screen_name"),
            clear_screen_name=b.flag("clear_screen_name"), why=b.optional_text("why"))
        return Result({"patron_id": patron.patron_id, "name_consent": patron.name_consent,
                       "screen_name": patron.screen_name})

    def audit(self, s: Session, b: Body, _: Request) -> Result:
        limit = b.optional_integer("limit") or 100
        rows = desk.audit_log(s, limit=min(limit, 1000), action=b.optional_text("action"))
        return Result({"audit": [{"id": r.id, "at": r.at.isoformat(), "actor": r.actor,
                                   "action": r.action, "detail": r.detail} for r in rows]})


def desk_routes(engine: Engine, settings: TournamentSettings, sender: CommandSender,
                clock: WallClock, *, policy: AuthPolicy | None = None,
                answer_wait: float | None = None,
                names: NameMode = "entry_code",
                commitment_valid: timedelta = COMMITMENT_VALID,
                signer: Signer | None = None) -> list[BaseRoute]:
    """The desk API's routes (mount them under /api/desk); people sign in at /session under
    ``policy`` (the house's lock-out and session rules; default: AuthPolicy's);
    `answer_wait`: how long an action waits for the tables' verdicts (None: not at all);
    ``names``: the page's name style, which the seat data carries (D332);
    ``commitment_valid``: how long a seat draw's commitment may be used (D380); ``signer``:
    the central key that countersigns the dispute bundles handed in (D383)."""
    api = _DeskApi(engine, settings, sender, clock, answer_wait=answer_wait)
    api.names = names
    cmds = CommandsApi()
    c = ConsoleApi(settings, clock)
    i = IdentityApi(settings, clock)
    signin = SessionApi(api.sessions, clock, lambda r: api._body(r, spec_of("sign_in")),
                        policy or AuthPolicy())
    e = api.endpoint
    routes: list[BaseRoute] = [
        Route("/openapi.json", _openapi, methods=["GET"]),
        Route("/session", signin.sign_in, methods=["POST"]),
        Route("/session", signin.whoami, methods=["GET"]),
        Route("/session", signin.sign_out, methods=["DELETE"]),
        Route("/patrons/{patron_id}/documents", e("patron.document_add", i.add_document),
              methods=["POST"]),
        Route("/holds", e("holds.show", i.holds), methods=["GET"]),
        Route("/holds/{hold_id}/approve", e("hold.approve", i.approve), methods=["POST"]),
        Route("/holds/{hold_id}/refuse", e("hold.refuse", i.refuse), methods=["POST"]),
        Route("/disqualifications", e("patron.disqualify", i.disqualify), methods=["POST"]),
        Route("/fees", e("fees.show", i.fees), methods=["GET"]),
        Route("/patrons", e("patron.register", api.register), methods=["POST"]),
        Route("/patrons/{patron_id}", e("patron.show", api.patron), methods=["GET"]),
        Route("/check", e("eligibility.check", api.check), methods=["POST"]),
        Route("/lists", e("lists.import", api.import_list), methods=["POST"]),
        Route("/entries", e("entry.buy", api.buy), methods=["POST"]),
        Route("/heats", e("heat.open", api.open_heat), methods=["POST"]),
        Route("/heats/close", e("heat.close", api.close_heat), methods=["POST"]),
        Route("/seatings", e("entry.seat", api.seat), methods=["POST"]),
        Route("/unseatings", e("entry.unseat", api.unseat), methods=["POST"]),
        Route("/refunds", e("entry.refund", api.refund), methods=["POST"]),
        Route("/score-voids", e("score.void", api.void_score), methods=["POST"]),
        Route("/score-corrections", e("score.correct", api.correct_score), methods=["POST"]),
        Route("/table-faults", e("table.fault", api.table_fault), methods=["POST"]),
        Route("/commands/{seq}/resend", e("command.resend", api.resend), methods=["POST"]),
        Route("/commands", e("commands.show", cmds.commands), methods=["GET"]),
        Route("/commands/{seq}", e("commands.show", cmds.command), methods=["GET"]),
        Route("/table-check", e("tables.check", cmds.table_check), methods=["GET"]),
        Route("/places/{stage}", e("places.show", api.places), methods=["GET"]),
        Route("/places/{stage}", e("places.allocate", api.allocate), methods=["POST"]),
        Route("/proxies", e("place.proxy", api.proxy), methods=["POST"]),
        Route("/seat-choices", e("place.choose_seat", api.choose_seat), methods=["POST"]),
        Route("/prizes", e("prizes.show", api.prizes), methods=["GET"]),
        Route("/prizes", e("prize.award", api.award), methods=["POST"]),
        Route("/prizes/{award_id}/claim", e("prize.claim", api.claim), methods=["POST"]),
        Route("/audit", e("audit.show", api.audit), methods=["GET"]),
        Route("/staff", e("staff.enrol", c.enrol), methods=["POST"]),
        Route("/staff", e("staff.list", c.members), methods=["GET"]),
        Route("/staff/roster", e("staff.send_roster", c.send_roster), methods=["POST"]),
        Route("/staff/{staff_id}/disable", e("staff.disable", c.disable), methods=["POST"]),
        Route("/staff/{staff_id}/enable", e("staff.enable", c.enable), methods=["POST"]),
        Route("/staff/{staff_id}/pin", e("staff.pin", c.pin), methods=["POST"]),
        Route("/staff/{staff_id}/card", e("staff.card", c.card), methods=["POST"]),
        Route("/patrons/{patron_id}/credentials", e("patron.credentials", c.credentials),
              methods=["POST"]),
        Route("/staff/{staff_id}/passphrase", e("passphrase.own", signin.passphrase),
              methods=["POST"]),
        Route("/acknowledgements", e("score.acknowledge", c.acknowledge), methods=["POST"]),
        Route("/disputes", e("disputes.show", c.disputes), methods=["GET"]),
        Route("/dispute-resolutions", e("dispute.resolve", c.resolve), methods=["POST"]),
        Route("/payouts", e("payouts.show", c.payouts), methods=["GET"]),
        *dispute_routes(e, DisputesApi(settings, clock)),
        # The Final's seat draw, committed before it is drawn (issue 33, D380).
        *draw_routes(e, DrawsApi(settings, clock, commitment_valid=commitment_valid)),
        *bundle_routes(e, BundlesApi(clock, signer)),
        # issue 33: the desk is a client of this API (sessions per terminal; the reads and
        # changes its command line needed)
        Route("/sessions", e("sessions.show", signin.open_sessions), methods=["GET"]),
        Route("/sessions/{session_id}/revoke", e("sessions.revoke", signin.revoke),
              methods=["POST"]),
        Route("/lists", e("lists.show", api.lists), methods=["GET"]),
        Route("/patrons/{patron_id}/display", e("patron.display", api.display),
              methods=["POST"]),
    ]
    return [*routes, fallback_route(routes)]
