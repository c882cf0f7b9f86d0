"""The registration desk over HTTP: the `showdown desk` operations as a small JSON API.

`desk_routes(...)` returns Starlette routes that the leaderboard service mounts under
``/api/desk``. Every request carries ``Authorization: Bearer <token>`` (the desk token from
the service's config; compared in constant time); every change names its operator in the
JSON field ``actor``. Answers are JSON: 200/201 with the result, 400 with ``error`` for bad
input, 401 without the token, 403 with ``reasons`` when a person is refused on eligibility
(the refusal is recorded), 404 for an unknown id, 409 on a conflict with the state (seat
taken, buy-in window closed, already done), 502 when a command is recorded but the broker
cannot be reached (the answer says so; nothing is undone).

    POST /patrons            {name, id_kind, id_number, birth_date[, rewards_card, pin]}
    GET  /patrons/{id}                                                  a patron and entries
    POST /check              {patron_id} | {id_number, name, birth_date}
    POST /lists              {kind, source, source_date, csv}           import a list (201)
    POST /entries            {patron_id}                                buy an entry (201)
    POST /heats              {table, stage[, heat_id]}                  open a heat (sends)
    POST /heats/close        {table}                                    close it (sends)
    POST /seatings           {entry_id, table[, seat]}                  seat (sends)
    POST /unseatings         {entry_id, why}                            unseat (sends)
    POST /refunds            {entry_id, why}                            refund, unseated (201)
    POST /score-voids        {entry_id, why}                            void a score (201)
    POST /score-corrections  {entry_id, score_cents, why}               correct a score (201)
    POST /table-faults       {table, why}                               out of service (sends)
    POST /commands/{seq}/resend                                         send a command again
    GET  /places/{stage}                                                semi_final | final
    POST /places/{stage}                                                allocate them
    POST /proxies            {entry_id, proxy_patron_id}
    POST /seat-choices       {entry_id, heat, seat}
    POST /draws                                                         the Final's seat draw
    GET  /draws/{id}/replay
    GET  /prizes             POST /prizes {kind[, week, prize_cents]}
    POST /prizes/{id}/claim  {id_number[, receipt]}
    GET  /audit?limit=&action=
    GET  /openapi.json                                                  this API (no token)

Each operation's fields, types and bounds are declared once in `leaderboard.desk_schema`;
bodies are read within their limit and errors mapped to answers in `leaderboard.desk_input`.

The console's operations (staff and their roster, participants' credentials, desk
acknowledgements, disputes, payout checks) are in `leaderboard.desk_api_console`.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from game.tournament import Stage
from game.tournament_schema import TournamentSettings
from leaderboard import desk
from leaderboard.desk import (
    NotFound,
    Place,
    PrizeView,
    ScoreRuling,
)
from leaderboard.desk_api_console import ConsoleApi
from leaderboard.desk_http import Body, Operation, Result, iso
from leaderboard.desk_input import error_answer, fallback_route, read_json
from leaderboard.desk_schema import Spec, openapi, spec_of
from leaderboard.desk_sender import CommandSender, SendError
from leaderboard.eligibility import EligibilityError, import_list, parse_list
from leaderboard.models import Entry
from runtime.clocks import WallClock

__all__ = ["MIN_TOKEN_LENGTH", "desk_routes"]

MIN_TOKEN_LENGTH: Final = 16


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
    return {"entry_id": e.entry_id, "patron_id": e.patron_id, "stage": e.stage,
            "heat_id": e.heat_id, "heat_day": e.heat_day.isoformat() if e.heat_day else None,
            "table": e.table_id, "seat": e.seat, "buy_in_cents": e.buy_in_cents,
            "status": e.status, "played_by": e.played_by}


def _stage(text: str) -> Stage:
    if text not in (Stage.SEMI_FINAL.value, Stage.FINAL.value):
        raise NotFound(f"no places for {text!r} (semi_final or final)")
    return Stage(text)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


async def _openapi(_: Request) -> Response:
    return JSONResponse(openapi())


class _DeskApi:
    """The endpoints, sharing the engine, settings, sender, clock and token."""

    def __init__(self, engine: Engine, settings: TournamentSettings, sender: CommandSender,
                 clock: WallClock, token: str) -> None:
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.settings = settings
        self.sender = sender
        self.clock = clock
        self._token = token.encode()

    def _authorised(self, request: Request) -> bool:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(
            given.strip().encode(), self._token)

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

    def endpoint(self, operation: Operation, spec: Spec | None = None
                 ) -> Callable[[Request], Awaitable[Response]]:
        """Wrap an operation: authenticate, parse, run off the event loop, send, map errors.

        `spec` is the operation's declaration (by default the one named as the operation).
        """
        spec = spec or spec_of(getattr(operation, "__name__", ""))

        async def handle(request: Request) -> Response:
            if not self._authorised(request):
                return JSONResponse({"error": "a valid desk token is required"},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            try:
                body = await self._body(request, spec)
                result = await run_in_threadpool(self._run, operation, body, request)
            except Exception as exc:  # every error gets its answer (a bug: 500, logged)
                return error_answer(exc, request.url.path)
            for command in result.commands:
                try:
                    await self.sender.send(command)
                except SendError as exc:
                    return _error(502, str(exc), recorded=dict(result.body))
            return JSONResponse(dict(result.body), status_code=result.status)
        handle.__name__ = getattr(operation, "__name__", "operation")  # the route's name
        return handle

    # ---- operations (run in a worker thread with their own session) ---------------------

    def register(self, s: Session, b: Body, _: Request) -> Result:
        patron = desk.register_patron(
            s, self.settings, self.clock, actor=b.actor, name=b.text("name"),
            id_kind=b.text("id_kind"), id_number=b.text("id_number"),
            birth_date=b.day("birth_date"), why=b.optional_text("why"),
            rewards_card=b.optional_text("rewards_card"), pin=b.optional_text("pin"))
        return Result({"patron_id": patron.patron_id}, status=201)

    def patron(self, s: Session, b: Body, _: Request) -> Result:
        patron = desk.get_patron(s, b.path_text("patron_id"))
        entries = s.scalars(select(Entry).where(Entry.patron_id == patron.patron_id)
                            .order_by(Entry.bought_at, Entry.entry_id)).all()
        return Result({"patron_id": patron.patron_id, "name": patron.name,
                        "id_kind": patron.id_kind, "entries": [_entry(e) for e in entries]})

    def check(self, s: Session, b: Body, _: Request) -> Result:
        if b.given("patron_id"):
            verdict = desk.check_person(s, self.settings, self.clock, actor=b.actor,
                                        patron_id=b.text("patron_id"))
        else:
            verdict = desk.check_person(
                s, self.settings, self.clock, actor=b.actor, id_number=b.text("id_number"),
                name=b.text("name"), birth_date=b.day("birth_date"))
        return Result({"eligible": verdict.eligible, "reasons": list(verdict.reasons)})

    def import_list(self, s: Session, b: Body, _: Request) -> Result:
        kind, source = b.text("kind"), b.text("source")
        rows = parse_list(b.text("csv"), f"{kind} list from {source}")
        result = import_list(s, kind=kind, rows=rows, source=source,
                             source_date=b.day("source_date"), at=self.clock(),
                             actor=b.actor)
        s.commit()
        return Result({"kind": result.kind, "source": result.source,
                        "source_date": result.source_date.isoformat(), "rows": result.rows,
                        "replaced": result.replaced}, status=201)

    def buy(self, s: Session, b: Body, _: Request) -> Result:
        entry = desk.buy_entry(s, self.settings, self.clock, actor=b.actor,
                               patron_id=b.text("patron_id"), why=b.optional_text("why"))
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
                                  seat=b.optional_integer("seat"), why=b.optional_text("why"))
        return Result({"entry_id": seating.entry_id, "table": seating.table,
                        "seat": seating.seat, "heat_id": seating.heat_id,
                        "player": seating.player, "seq": seating.command.seq},
                       (seating.command,), 201)

    def unseat(self, s: Session, b: Body, _: Request) -> Result:
        command = desk.unseat_entry(s, self.clock, actor=b.actor, entry_id=b.text("entry_id"),
                                    why=b.text("why"))
        return Result({"table": command.table, "seq": command.seq, **command.args},
                       (command,), 201)

    def refund(self, s: Session, b: Body, _: Request) -> Result:
        entry = desk.refund_entry(s, self.clock, actor=b.actor, entry_id=b.text("entry_id"),
                                  why=b.text("why"))
        return Result({"entry_id": entry.entry_id, "refund_cents": entry.buy_in_cents},
                       status=201)

    def void_score(self, s: Session, b: Body, _: Request) -> Result:
        ruling = desk.void_score(s, self.settings, self.clock, actor=b.actor,
                                 entry_id=b.text("entry_id"), why=b.text("why"))
        return Result(_ruling(ruling), status=201)

    def correct_score(self, s: Session, b: Body, _: Request) -> Result:
        ruling = desk.correct_score(s, self.settings, self.clock, actor=b.actor,
                                    entry_id=b.text("entry_id"),
                                    score_cents=b.integer("score_cents"), why=b.text("why"))
        return Result(_ruling(ruling), status=201)

    def table_fault(self, s: Session, b: Body, _: Request) -> Result:
        fault = desk.table_fault(s, self.clock, actor=b.actor, table=b.text("table"),
                                 why=b.text("why"))
        return Result({"table": fault.table, "heat_id": fault.heat_id,
                        "refunded": dict(fault.refunded), "released": list(fault.released),
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

    def draw(self, s: Session, b: Body, _: Request) -> Result:
        outcome = desk.draw_final(s, self.settings, self.clock, actor=b.actor,
                                  why=b.optional_text("why"))
        return Result({"draw_id": outcome.draw_id, "seats": dict(outcome.seats),
                        "random_hex": outcome.random_hex, "reused": outcome.reused},
                       status=200 if outcome.reused else 201)

    def replay(self, s: Session, b: Body, _: Request) -> Result:
        draw_id = b.path_integer("draw_id")
        replay = desk.replay_draw(s, draw_id)
        return Result({"draw_id": replay.draw_id, "matches": replay.matches,
                        "stored": dict(replay.stored), "replayed": dict(replay.replayed),
                        "bytes_used": replay.bytes_used})

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

    def audit(self, s: Session, b: Body, _: Request) -> Result:
        limit = b.optional_integer("limit") or 100
        rows = desk.audit_log(s, limit=min(limit, 1000), action=b.optional_text("action"))
        return Result({"audit": [{"id": r.id, "at": r.at.isoformat(), "actor": r.actor,
                                   "action": r.action, "detail": r.detail} for r in rows]})


def desk_routes(engine: Engine, settings: TournamentSettings, sender: CommandSender,
                clock: WallClock, *, token: str) -> list[BaseRoute]:
    """The desk API's routes (mount them under /api/desk); `token` is the bearer token."""
    if not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_LENGTH:
        raise EligibilityError(
            f"the desk API token must be at least {MIN_TOKEN_LENGTH} characters"
            " (e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    api = _DeskApi(engine, settings, sender, clock, token.strip())
    c = ConsoleApi(settings, clock)
    e = api.endpoint
    routes: list[BaseRoute] = [
        Route("/openapi.json", _openapi, methods=["GET"]),
        Route("/patrons", e(api.register), methods=["POST"]),
        Route("/patrons/{patron_id}", e(api.patron), methods=["GET"]),
        Route("/check", e(api.check), methods=["POST"]),
        Route("/lists", e(api.import_list), methods=["POST"]),
        Route("/entries", e(api.buy), methods=["POST"]),
        Route("/heats", e(api.open_heat), methods=["POST"]),
        Route("/heats/close", e(api.close_heat), methods=["POST"]),
        Route("/seatings", e(api.seat), methods=["POST"]),
        Route("/unseatings", e(api.unseat), methods=["POST"]),
        Route("/refunds", e(api.refund), methods=["POST"]),
        Route("/score-voids", e(api.void_score), methods=["POST"]),
        Route("/score-corrections", e(api.correct_score), methods=["POST"]),
        Route("/table-faults", e(api.table_fault), methods=["POST"]),
        Route("/commands/{seq}/resend", e(api.resend), methods=["POST"]),
        Route("/places/{stage}", e(api.places), methods=["GET"]),
        Route("/places/{stage}", e(api.allocate), methods=["POST"]),
        Route("/proxies", e(api.proxy), methods=["POST"]),
        Route("/seat-choices", e(api.choose_seat), methods=["POST"]),
        Route("/draws", e(api.draw), methods=["POST"]),
        Route("/draws/{draw_id}/replay", e(api.replay), methods=["GET"]),
        Route("/prizes", e(api.prizes), methods=["GET"]),
        Route("/prizes", e(api.award), methods=["POST"]),
        Route("/prizes/{award_id}/claim", e(api.claim), methods=["POST"]),
        Route("/audit", e(api.audit), methods=["GET"]),
        Route("/staff", e(c.enrol), methods=["POST"]),
        Route("/staff", e(c.members), methods=["GET"]),
        Route("/staff/roster", e(c.send_roster), methods=["POST"]),
        Route("/staff/{staff_id}/disable", e(c.disable), methods=["POST"]),
        Route("/staff/{staff_id}/enable", e(c.enable), methods=["POST"]),
        Route("/staff/{staff_id}/pin", e(c.pin), methods=["POST"]),
        Route("/staff/{staff_id}/card", e(c.card), methods=["POST"]),
        Route("/patrons/{patron_id}/credentials", e(c.credentials), methods=["POST"]),
        Route("/acknowledgements", e(c.acknowledge), methods=["POST"]),
        Route("/disputes", e(c.disputes), methods=["GET"]),
        Route("/dispute-resolutions", e(c.resolve), methods=["POST"]),
        Route("/payouts", e(c.payouts), methods=["GET"]),
    ]
    return [*routes, fallback_route(routes)]
