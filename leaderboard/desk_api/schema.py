"""The desk API's one declaration per operation (its path, fields, types, bounds and answers),
what `leaderboard.desk_api.http.Body` checks a request against and what the OpenAPI document
(GET /api/desk/openapi.json, `openapi`) is generated from, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ITEMS",
    "OPERATIONS",
    "Field",
    "Spec",
    "openapi",
    "spec_of",
]

INT64_MAX: Final = 2**63 - 1
INT64_MIN: Final = -(2**63)
MAX_ITEMS: Final = 100  # a list field's length
_ID: Final = 64  # table, heat, staff and document ids (String(64) columns)
_KEY: Final = 40  # patron and entry ids (String(40) columns)
_NOTE: Final = 1000  # a reason, a resolution, a receipt
_CSV: Final = 2 * 1024 * 1024
Kind = Literal["text", "integer", "date", "flag", "texts"]


@dataclass(frozen=True, slots=True)
class Field:
    """One field an operation reads: from the JSON body (or the query of a GET) or the path."""

    name: str
    kind: Kind = "text"
    required: bool = False
    max_length: int = _ID
    minimum: int = INT64_MIN
    maximum: int = INT64_MAX
    multiline: bool = False  # tabs and line breaks allowed (a CSV, a reason)
    enum: tuple[str, ...] = ()
    description: str = ""

    def schema(self) -> dict[str, Any]:
        """The field's JSON Schema (as OpenAPI 3.1 writes it)."""
        if self.kind == "integer":
            return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}
        if self.kind == "flag":
            return {"type": "boolean"}
        if self.kind == "texts":
            return {"type": "array", "maxItems": MAX_ITEMS,
                    "items": {"type": "string", "minLength": 1, "maxLength": self.max_length}}
        if self.kind == "date":
            return {"type": "string", "format": "date", "maxLength": 10}
        out: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": self.max_length}
        if self.enum:
            out["enum"] = list(self.enum)
        return out


@dataclass(frozen=True, slots=True)
class Spec:
    """One operation: method, path (Starlette syntax), what it reads and what it answers."""

    name: str
    method: Literal["GET", "POST", "DELETE"]
    path: str
    summary: str
    fields: tuple[Field, ...] = ()
    path_fields: tuple[Field, ...] = ()
    created: bool = False  # 201 on success
    sends: bool = False  # sends commands to a table (502 when the broker is unreachable)
    refuses: bool = False  # a person may be refused on eligibility (403)
    by: dict[str, Field] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in (*self.fields, *self.path_fields):
            self.by[f.name] = f

    @property
    def query(self) -> bool:
        """True when the fields come from the query string (a GET)."""
        return self.method == "GET"


def _t(name: str, length: int = _ID, *, required: bool = True, multiline: bool = False,
       enum: tuple[str, ...] = ()) -> Field:
    return Field(name, "text", required, length, multiline=multiline, enum=enum)


def _i(name: str, low: int = INT64_MIN, high: int = INT64_MAX, *, required: bool = True
       ) -> Field:
    """A whole number: 64 bits at most; the desk's own rules check the house's bounds."""
    return Field(name, "integer", required, minimum=low, maximum=high)


def _i32(name: str, *, required: bool = True) -> Field:
    """A whole number stored in a 32-bit column (PostgreSQL's integer)."""
    return _i(name, -(2**31), 2**31 - 1, required=required)


def _texts(name: str) -> Field:
    """A list of ids (at most 100, each an id's length)."""
    return Field(name, "texts", False)


def _d(name: str) -> Field:
    return Field(name, "date", True)


def _flag(name: str) -> Field:
    return Field(name, "flag")


WHY: Final = _t("why", _NOTE, required=False, multiline=True)
_PATRON: Final = _t("patron_id", _KEY)
_ENTRY: Final = _t("entry_id", _KEY)
_TABLE: Final = _t("table", _ID)
_STAGE: Final = ("semi_final", "final")
_POS: Final = 1  # ids the database numbers start at 1


def _op(name: str, method: Literal["GET", "POST", "DELETE"], path: str, summary: str,
        *fields: Field, path_fields: tuple[Field, ...] = (), created: bool = False,
        sends: bool = False, refuses: bool = False) -> Spec:
    """One operation; who performs it is the signed-in person (never a field)."""
    return Spec(name, method, path, summary, fields, path_fields, created, sends, refuses)


OPERATIONS: Final[tuple[Spec, ...]] = (
    _op("register", "POST", "/patrons", "Register a patron",
        _t("name", 200), _t("id_kind", 20), _t("id_number", 64), _d("birth_date"),
        _t("rewards_card", 200, required=False), _t("pin", 64, required=False),
        _flag("name_consent"), _t("screen_name", 40, required=False), WHY,
        created=True, refuses=True),
    _op("patron", "GET", "/patrons/{patron_id}", "A patron and their entries",
        path_fields=(_PATRON,)),
    _op("check", "POST", "/check", "Check a person's eligibility (by patron id or document)",
        _t("patron_id", _KEY, required=False), _t("id_number", 64, required=False),
        _t("name", 200, required=False), Field("birth_date", "date")),
    _op("import_list", "POST", "/lists", "Import an exclusion or staff list (CSV)",
        _t("kind", 32), _t("source", 200), _d("source_date"),
        _t("csv", _CSV, multiline=True), created=True),
    _op("buy", "POST", "/entries", "Buy an entry (rule 6: paid in cash or value_chips)",
        _PATRON, _t("payment", 16), WHY, created=True, refuses=True),
    _op("open_heat", "POST", "/heats", "Open a heat at a table",
        _TABLE, _t("stage", 16), _t("heat_id", _ID, required=False), WHY,
        created=True, sends=True),
    _op("close_heat", "POST", "/heats/close", "Close a table's heat", _TABLE, WHY, sends=True),
    _op("seat", "POST", "/seatings", "Seat an entry at a table",
        _ENTRY, _TABLE, _i32("seat", required=False), WHY, created=True, sends=True),
    _op("unseat", "POST", "/unseatings", "Unseat an entry", _ENTRY, _t("why", _NOTE,
        multiline=True), created=True, sends=True),
    _op("refund", "POST", "/refunds", "Refund an entry (unseated)", _ENTRY,
        _t("why", _NOTE, multiline=True), created=True),
    _op("void_score", "POST", "/score-voids", "Void an entry's score", _ENTRY,
        _t("why", _NOTE, multiline=True), created=True),
    _op("correct_score", "POST", "/score-corrections", "Correct an entry's score", _ENTRY,
        _i("score_cents"), _t("why", _NOTE, multiline=True), created=True),
    _op("table_fault", "POST", "/table-faults", "Take a table out of service", _TABLE,
        _t("why", _NOTE, multiline=True), created=True, sends=True),
    _op("resend", "POST", "/commands/{seq}/resend", "Send a desk command again", WHY,
        path_fields=(_i("seq", _POS),), sends=True),
    _op("places", "GET", "/places/{stage}", "The places of a stage",
        path_fields=(_t("stage", 16, enum=_STAGE),)),
    _op("allocate", "POST", "/places/{stage}", "Allocate the places of a stage", WHY,
        path_fields=(_t("stage", 16, enum=_STAGE),)),
    _op("proxy", "POST", "/proxies", "Nominate a proxy for a place", _ENTRY,
        _t("proxy_patron_id", _KEY), WHY, created=True),
    _op("choose_seat", "POST", "/seat-choices", "Choose a Final seat",
        _ENTRY, _i32("heat"), _i32("seat"), WHY),
    _op("draw_commit", "POST", "/draw-commitments",
        "Commit the Final's seat draw: its seed drawn and its SHA-256 shown before the draw",
        _t("stage", 16, enum=("final",)), _t("witness", _KEY), WHY, created=True),
    _op("draw", "POST", "/draws", "The Final's seat draw, from a commitment's seed",
        _t("stage", 16, required=False, enum=("final",)), _i("commitment_id", _POS), WHY,
        created=True),
    _op("replay", "GET", "/draws/{draw_id}/replay", "Replay a seat draw",
        path_fields=(_i("draw_id", _POS),)),
    _op("prizes", "GET", "/prizes", "The prizes"),
    _op("award", "POST", "/prizes", "Award prizes", _t("kind", 32),
        _i32("week", required=False), _i("prize_cents", required=False),
        WHY, created=True),
    _op("claim", "POST", "/prizes/{award_id}/claim", "Claim a prize",
        _t("id_number", 64), _t("receipt", 200, required=False), WHY,
        path_fields=(_i("award_id", _POS),)),
    _op("audit", "GET", "/audit", "The audit log, newest first",
        _i("limit", 1, INT64_MAX, required=False), _t("action", 64, required=False)),
    _op("enrol", "POST", "/staff", "Enrol a dealer, clerk, supervisor or manager",
        _t("staff_id", _ID), _t("name", 200), _t("role", 32),
        _t("pin", 64, required=False), _t("card", 200, required=False),
        _t("passphrase", 200, required=False), WHY, created=True),
    _op("members", "GET", "/staff", "The enrolled staff"),
    _op("send_roster", "POST", "/staff/roster", "Send the staff roster to the tables",
        _t("table", _ID, required=False), WHY, created=True, sends=True),
    _op("disable", "POST", "/staff/{staff_id}/disable", "Disable a member's credentials",
        WHY, path_fields=(_t("staff_id", _ID),)),
    _op("enable", "POST", "/staff/{staff_id}/enable", "Enable a member's credentials",
        WHY, path_fields=(_t("staff_id", _ID),)),
    _op("pin", "POST", "/staff/{staff_id}/pin", "Give a member a new PIN",
        _t("pin", 64), WHY, path_fields=(_t("staff_id", _ID),)),
    _op("card", "POST", "/staff/{staff_id}/card", "Give a member a new employee card",
        _t("card", 200), WHY, path_fields=(_t("staff_id", _ID),)),
    _op("credentials", "POST", "/patrons/{patron_id}/credentials",
        "Record a patron's rewards card and/or PIN", _t("rewards_card", 200, required=False),
        _t("pin", 64, required=False), WHY, path_fields=(_PATRON,), sends=True),
    _op("acknowledge", "POST", "/acknowledgements", "A score's acknowledgement at the desk",
        _ENTRY, _t("method", 32), WHY, created=True, sends=True),
    _op("disputes", "GET", "/disputes", "The disputes", _flag("open"),
        _t("entry_id", _KEY, required=False)),
    _op("resolve", "POST", "/dispute-resolutions", "Resolve an entry's open dispute",
        _ENTRY, _t("resolution", _NOTE, multiline=True), created=True),
    _op("payouts", "GET", "/payouts", "The payout checks", _flag("overridden")),
    # signing in (leaderboard.desk_api.session): the one operation without a session
    _op("sign_in", "POST", "/session", "Sign in with a staff id and desk passphrase",
        _t("staff_id", _ID), _t("passphrase", 200), _t("terminal", 64, required=False),
        created=True),
    _op("whoami", "GET", "/session", "Whose session the bearer token is"),
    _op("sign_out", "DELETE", "/session", "End the bearer token's session"),
    _op("passphrase", "POST", "/staff/{staff_id}/passphrase", "A new desk passphrase",
        _t("passphrase", 200), WHY, path_fields=(_t("staff_id", _ID),)),
    # issue 33: the desk as a client (sessions per terminal, the reads the CLI needs)
    _op("open_sessions", "GET", "/sessions", "The open desk sessions (a manager: everyone's)"),
    _op("revoke", "POST", "/sessions/{session_id}/revoke", "End a desk session", WHY,
        path_fields=(_t("session_id", 12),)),
    _op("lists", "GET", "/lists", "The exclusion and staff lists in force"),
    _op("display", "POST", "/patrons/{patron_id}/display",
        "How the page may name a patron (consent, screen name)", _flag("name_consent"),
        _t("screen_name", 40, required=False), _flag("clear_screen_name"), WHY,
        path_fields=(_PATRON,)),
    # identities (leaderboard.desk_api.identity)
    _op("add_document", "POST", "/patrons/{patron_id}/documents",
        "Record another document a patron presents", _t("kind", 32), _t("number", 64), WHY,
        path_fields=(_PATRON,), created=True, refuses=True),
    _op("holds", "GET", "/holds", "Registrations held on a possible list match",
        _flag("open"), _t("patron_id", _KEY, required=False)),
    _op("approve", "POST", "/holds/{hold_id}/approve", "A supervisor approves a held match",
        WHY, path_fields=(_i("hold_id", _POS, 2**31 - 1),)),
    _op("refuse", "POST", "/holds/{hold_id}/refuse", "A supervisor refuses a held match",
        WHY, path_fields=(_i("hold_id", _POS, 2**31 - 1),)),
    _op("disqualify", "POST", "/disqualifications", "Disqualify a patron (rule 57)", _PATRON,
        WHY, created=True, sends=True),
    _op("fees", "GET", "/fees", "The entry fees kept, by payment method"),
    # the tables' verdicts (leaderboard.desk_api.commands)
    _op("commands", "GET", "/commands", "The desk's commands and their state, newest first",
        _t("state", 16, required=False), _flag("pending"), _t("table", _ID, required=False),
        _t("entry", _KEY, required=False), _i("limit", 1, 1000, required=False)),
    _op("command", "GET", "/commands/{seq}", "One desk command and its state",
        path_fields=(_i("seq", _POS),)),
    _op("table_check", "GET", "/table-check", "Each table as the desk and the table have it",
        _t("table", _ID, required=False)),
    # dispute records (leaderboard.desk_api.disputes)
    _op("raise_", "POST", "/dispute-records", "Record a participant's dispute",
        _ENTRY, _t("claim", _NOTE, multiline=True), _texts("hand_ids"), created=True),
    _op("list", "GET", "/dispute-records", "The dispute records",
        _t("status", 16, required=False), _t("entry_id", _KEY, required=False)),
    _op("show", "GET", "/dispute-records/{dispute_id}", "One dispute record",
        path_fields=(_i("dispute_id", _POS, 2**31 - 1),)),
    _op("rule", "POST", "/dispute-records/{dispute_id}/ruling", "A supervisor's ruling",
        _t("ruling", 32), _t("why", _NOTE, multiline=True), _t("hand_id", _ID, required=False),
        _i("net", required=False), path_fields=(_i("dispute_id", _POS, 2**31 - 1),), created=True,
        sends=True),
    _op("close", "POST", "/dispute-records/{dispute_id}/closing", "Close a ruled dispute",
        _t("outcome", _NOTE, multiline=True), path_fields=(_i("dispute_id", _POS, 2**31 - 1),)),
    # a table's bundle countersigned by the central key (leaderboard.desk_api.dispute_bundles)
    _op("countersign", "POST", "/dispute-records/{dispute_id}/bundles",
        "Hand in a table's dispute bundle: checked, countersigned by the central key, stored",
        _t("bundle", _CSV, multiline=True), path_fields=(_i("dispute_id", _POS, 2**31 - 1),),
        created=True),
    _op("bundles", "GET", "/dispute-records/{dispute_id}/bundles",
        "A dispute's countersigned bundles", path_fields=(_i("dispute_id", _POS, 2**31 - 1),)),
)
_BY_NAME: Final = {s.name: s for s in OPERATIONS}


def spec_of(name: str) -> Spec | None:
    """The declaration of the operation named `name` (its handler's name), if any."""
    return _BY_NAME.get(name)


_ERROR: Final = {"type": "object", "required": ["error"],
                 "properties": {"error": {"type": "string"}}}
_ANSWERS: Final = {
    400: "bad input: the error names the field and what is wrong",
    401: "no valid credential",
    403: "the person is refused on eligibility (reasons, refusal_id); recorded",
    404: "no such record, or no such path",
    405: "the path does not take this method",
    409: "the action contradicts the state (seat taken, window closed, already done)",
    413: "the request body is larger than the limit (limit_bytes)",
    502: "recorded, but the command could not be delivered to the table",
    503: "the database did not answer",
}


def _responses(spec: Spec) -> dict[str, Any]:
    codes = [400, 401, 404, 405, 409, 503]
    if spec.method == "POST":
        codes.append(413)
    if spec.refuses:
        codes.append(403)
    if spec.sends:
        codes.append(502)
    out: dict[str, Any] = {
        "201" if spec.created else "200": {
            "description": "done", "content": {"application/json": {
                "schema": {"type": "object"}}}}}
    for code in sorted(codes):
        out[str(code)] = {"description": _ANSWERS[code],
                          "content": {"application/json": {"schema": _ERROR}}}
    return out


def _operation(spec: Spec) -> dict[str, Any]:
    params = [{"name": f.name, "in": "path", "required": True, "schema": f.schema()}
              for f in spec.path_fields]
    op: dict[str, Any] = {"operationId": spec.name, "summary": spec.summary,
                          "security": [] if spec.name == "sign_in" else [{"desk": []}],
                          "responses": _responses(spec)}
    if spec.query:
        params += [{"name": f.name, "in": "query", "required": f.required,
                    "schema": f.schema()} for f in spec.fields]
    elif spec.fields:
        op["requestBody"] = {"required": any(f.required for f in spec.fields), "content": {
            "application/json": {"schema": {
                "type": "object",
                "required": [f.name for f in spec.fields if f.required],
                "properties": {f.name: f.schema() for f in spec.fields}}}}}
    if params:
        op["parameters"] = params
    return op


def openapi(specs: tuple[Spec, ...] = OPERATIONS, *, prefix: str = "/api/desk"
            ) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the desk API, generated from the declarations."""
    paths: dict[str, dict[str, Any]] = {}
    for spec in specs:
        path = prefix + re.sub(r"\{(\w+)(:\w+)?\}", r"{\1}", spec.path)
        paths.setdefault(path, {})[spec.method.lower()] = _operation(spec)
    return {
        "openapi": "3.1.0",
        "info": {"title": "showdown registration desk", "version": "1",
                 "description": "The desk operations (leaderboard.desk_api.routes). Text never"
                 " holds control characters (tabs and line breaks only where multi-line);"
                 " request bodies are at most 2 MiB and nested at most 32 deep."},
        "components": {"securitySchemes": {"desk": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }
