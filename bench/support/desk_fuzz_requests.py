"""Hypothesis strategies for desk API requests, built from its OpenAPI document: mostly
well-typed requests (ids from the records the run created, so operations reach the database),
and malformed ones: wrong types, numbers past 64 bits, NUL and other control characters, lone
surrogates, over-long text, missing fields, deep nesting, bodies that are not JSON or too
large, unknown paths, wrong methods, no credential.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode

from hypothesis import strategies as st

__all__ = ["Pools", "Request", "requests"]

_MISSING: Final = object()
HUGE: Final = (2**63, 2**64, -(2**63) - 1, 10**30, 2**63 - 1, -(2**63), -1, 0)
# Plausible values of the enumerations the desk checks itself (not in the document).
PLAUSIBLE: Final[Mapping[str, tuple[str, ...]]] = {
    "id_kind": ("id_document", "rewards_card", "licence"),
    "stage": ("qualifying", "semi_final", "final"),
    "kind": ("self_exclusion", "excluded", "staff", "weekly", "qualifying"),
    "csv": ("id_number,name\n8001015009087,Thabo Mokoena\n", "7001015009083,A B\n"),
    "role": ("dealer", "supervisor"),
    "method": ("card", "pin", "signature"),
    "table": ("t01", "t02"),
    "birth_date": ("1980-01-01", "2010-01-01"),
    "source_date": ("2026-07-01",),
}
_CONTROL: Final = st.sampled_from(["\x00", "\x01", "\x1b", "\x7f", "\x85", "\ud800", "\udfff"])


@dataclass
class Pools:
    """Ids of records the run created, drawn for id fields so requests find their records."""

    ids: dict[str, list[Any]] = field(default_factory=dict)

    def of(self, name: str) -> list[Any]:
        """The known values of field `name` (a proxy's patron id is a patron id)."""
        key = "patron_id" if name == "proxy_patron_id" else name
        return self.ids.get(key, [])


@dataclass(frozen=True, slots=True)
class Request:
    """One request to send: method, path with query, body bytes, extra headers, variant."""

    method: str
    path: str
    body: bytes | None
    headers: tuple[tuple[str, str], ...] = ()
    authorised: bool = True
    variant: str = "typed"
    operation: str = "?"


def _weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each drawn in proportion to its weight (`one_of` is uniform)."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


def _bad_value(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    longest = int(schema.get("maxLength", 64))
    return st.one_of(
        st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(HUGE), st.integers(),
        st.lists(st.integers(0, 9), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                  st.integers(), max_size=2),
        st.builds(lambda a, c, b: a + c + b, st.text(max_size=8), _CONTROL,
                  st.text(max_size=8)),
        st.just("x" * (longest + 1)), st.just(" "), st.just(""), st.text(max_size=20),
        st.just("9" * 5000),
    )


def _good_value(name: str, schema: Mapping[str, Any], pools: Pools) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if kind == "integer":
        low, high = int(schema["minimum"]), int(schema["maximum"])
        known = pools.of(name)
        small = st.integers(max(low, -3), min(high, 12))
        return _weighted((3, small), (1, st.integers(low, high)),
                         *([(4, st.sampled_from(known))] if known else []))
    if kind == "boolean":
        return st.booleans()
    if schema.get("format") == "date":
        return st.one_of(st.sampled_from(PLAUSIBLE.get(name, ("2026-07-03",))),
                         st.dates().map(lambda d: d.isoformat()))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    longest = min(int(schema.get("maxLength", 64)), 300)
    choices: list[tuple[int, st.SearchStrategy[Any]]] = [
        (2, st.text(min_size=1, max_size=longest))]
    if name in PLAUSIBLE:
        choices.append((4, st.sampled_from(PLAUSIBLE[name])))
    if name == "name":
        choices.append((4, st.sampled_from(("Thabo Mokoena", "Fuzz Patron 1", "A B"))))
    if name == "id_number":
        choices.append((4, st.integers(10**12, 10**13 - 1).map(str)))
    known = pools.of(name)
    if known:
        choices.append((6, st.sampled_from(known)))
    return _weighted(*choices)


def _fields(schema: Mapping[str, Any], pools: Pools) -> st.SearchStrategy[dict[str, Any]]:
    required = set(schema.get("required", ()))
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for name, field_schema in schema.get("properties", {}).items():
        good = _good_value(name, field_schema, pools)
        value = _weighted((9, good), (1, _bad_value(field_schema)))
        missing = st.just(_MISSING)
        parts[name] = (_weighted((19, value), (1, missing)) if name in required
                       else _weighted((1, value), (1, missing)))
    extra = st.dictionaries(st.sampled_from(["extra", "__proto__", "actor2"]), st.integers(),
                            max_size=1)
    return st.builds(lambda given, more: {**more, **{k: v for k, v in given.items()
                                                     if v is not _MISSING}},
                     st.fixed_dictionaries(parts), extra)


def _path_value(schema: Mapping[str, Any], name: str, pools: Pools) -> st.SearchStrategy[str]:
    good = _good_value(name, schema, pools).map(str)
    bad = st.sampled_from(["18446744073709551616", "9223372036854775808", "-1", "0",
                           "\x00", "%", "a/b", "x" * 300, "1e3", " 1", "\ud800"])
    return _weighted((8, good), (1, bad), (1, st.text(min_size=1, max_size=20)))


def _encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=True, allow_nan=True).encode()


_BIG: Final = b'{"csv": "' + b"x" * (3 * 1024 * 1024) + b'"}'
_RAW_BODIES: Final = (b"[" * 100_000, b"{" * 50_000, b"{not json", b"[1, 2]", b'"text"',
                      b"\xff\xfe\x00", b"null", b'{"a": ' * 40 + b"1" + b"}" * 40,
                      b'{"actor": "fuzz"' + b", " * 10 + b"}", b"1" * 5000)


def _operation(method: str, path: str, op: Mapping[str, Any], pools: Pools
               ) -> st.SearchStrategy[Request]:
    params = op.get("parameters", [])
    path_params = [p for p in params if p["in"] == "path"]
    query_params = [p for p in params if p["in"] == "query"]

    def build(path_values: dict[str, str], query: dict[str, Any], body: dict[str, Any] | None,
              raw: bytes | None) -> Request:
        url = path
        for name, value in path_values.items():
            url = url.replace("{" + name + "}", quote(value, safe="", errors="surrogatepass"))
        if query:
            url += "?" + urlencode({k: "" if v is None else v for k, v in query.items()},
                                   errors="surrogatepass")
        data = raw if raw is not None else (None if body is None else _encode(body))
        return Request(method.upper(), url, data, variant="raw" if raw else "typed",
                       operation=op["operationId"])

    path_st = st.fixed_dictionaries({p["name"]: _path_value(p["schema"], p["name"], pools)
                                     for p in path_params})
    query_st = (_fields({"properties": {p["name"]: p["schema"] for p in query_params},
                         "required": [p["name"] for p in query_params if p["required"]]},
                        pools) if query_params else st.just({}))
    if "requestBody" in op:
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        body_st: st.SearchStrategy[Any] = _fields(schema, pools)
        typed = _fields(schema, pools)
        raw_st: st.SearchStrategy[bytes | None] = _weighted(
            (18, st.none()), (1, st.sampled_from(_RAW_BODIES)),
            (1, typed.map(lambda b: json.dumps([b]).encode())))
    else:
        body_st, raw_st = st.none(), st.none()
    return st.builds(build, path_st, query_st, body_st, raw_st)


def _oddities(paths: Sequence[str]) -> st.SearchStrategy[Request]:
    wrong_method = st.builds(lambda p, m: Request(m, p.replace("{", "").replace("}", ""), None,
                                                  variant="method"),
                             st.sampled_from(paths), st.sampled_from(["PUT", "DELETE",
                                                                      "PATCH"]))
    unknown = st.builds(lambda tail: Request("GET", "/api/desk/" + quote(
        tail, safe="/", errors="surrogatepass"), None, variant="unknown path"),
        st.text(min_size=1, max_size=30))
    huge = st.just(Request("POST", "/api/desk/patrons", None,
                           (("Content-Length", str(200 * 1024 * 1024)),), variant="claimed 200 MB"))
    big = st.sampled_from([Request("POST", "/api/desk/lists", _BIG, variant=kind)
                           for kind in ("3 MB", "3 MB streamed")])
    return st.one_of(wrong_method, unknown, huge, big)


def requests(document: Mapping[str, Any], pools: Pools) -> st.SearchStrategy[Request]:
    """One request to the API the document describes, mostly typed, sometimes malformed."""
    operations = [_operation(method, path, op, pools)
                  for path, methods in document["paths"].items()
                  for method, op in methods.items()]
    one = st.one_of(*operations)
    unauthorised = one.map(lambda r: Request(r.method, r.path, r.body, r.headers, False,
                                             "no credential", r.operation))
    return _weighted((40, one), (1, unauthorised), (1, _oddities(list(document["paths"]))))
