"""The desk workstation's one way to the central records: the desk API over HTTPS (http:// only
to a loopback address, D353). Every `showdown desk` command calls `call`; the answer's
status says what became of it and an error answer becomes the command's one-line error:

    400, 404, 413, 422    CommandError (exit 2) with the API's own words
    401                   CommandRefused: not signed in, or the session expired or was revoked
    403, 409              CommandRefused (exit 3) with the API's words (a table's reason)
    502, 503, 5xx         CommandUnavailable (exit 69)
    unreachable, an untrusted certificate: CommandUnavailable naming desk.api_url

The session token sent is the one saved for this terminal and the person chosen
(cli.desk.sessions); the workstation holds no database URL and no signing key.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode, urljoin

from cli.desk.context import desk_config
from cli.desk.sessions import current_session
from cli.errors import CommandError, CommandRefused, CommandUnavailable
from game.errors import ConfigError
from leaderboard.desk.config import DeskConfig
from leaderboard.desk_api.client import api_context, unreachable

__all__ = ["API_PREFIX", "Answer", "call", "exchange", "path", "query"]

API_PREFIX: Final = "api/desk"
_TIMEOUT_S: Final = 30.0  # the service may wait desk_answer_wait_s for a table first


@dataclass(frozen=True, slots=True)
class Answer:
    """A desk API answer that is not an error: its HTTP status and decoded JSON body."""

    status: int
    body: Any


def path(*parts: object) -> str:
    """A path under /api/desk with each part quoted (ids typed by people)."""
    return "/".join(quote(str(p), safe="") for p in parts)


def query(**params: object) -> str:
    """``?a=1&b=x`` of the params that are not None (booleans as true)."""
    given = {k: ("true" if v is True else str(v)) for k, v in params.items()
             if v is not None and v is not False}
    return f"?{urlencode(given)}" if given else ""


def _url(config: DeskConfig, where: str) -> str:
    if config.api_url is None:
        raise ConfigError(config.source, "desk.api_url", "missing: the central service's"
                          " desk API, e.g. \"https://leaderboard.casino.lan:8443/\"")
    return urljoin(config.api_url, f"{API_PREFIX}/{where.lstrip('/')}")


def _words(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        for key in ("error", "reason"):
            if isinstance(body.get(key), str) and body[key].strip():
                return " ".join(str(body[key]).split())
    return fallback


def _decode(raw: bytes) -> Any:
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": raw[:200].decode("utf-8", "replace")}


def _failure(config: DeskConfig, url: str, status: int, body: Any) -> CommandError:
    words = _words(body, f"{url} answered {status}")
    if status == 401:
        reason = body.get("reason") if isinstance(body, dict) else None
        if reason == "no_session":
            return CommandRefused("nobody is signed in here: run `showdown desk login`")
        return CommandRefused(f"not signed in (session expired or revoked): {words}; run"
                              " `showdown desk login`")
    if status == 403 and isinstance(body, dict) and "role_needed" in body:
        return CommandRefused(f"refused: {words}")
    if status in (403, 409):
        return CommandRefused(words)
    if status >= 500:
        return CommandUnavailable(f"{config.source}: desk.api_url {url}: the central service"
                                  f" answered {status}: {words}")
    return CommandError(words)


def exchange(args: argparse.Namespace, method: str, where: str, body: Any = None, *,
             token: str | None = None, signed_in: bool = True,
             accept: tuple[int, ...] = ()) -> Answer:
    """Send one request; 2xx answers (and those in ``accept``) are returned, other answers
    raised as the command's error. The saved session's token is sent unless ``signed_in``
    is False or a ``token`` is given."""
    config = desk_config(args)
    url = _url(config, where)
    headers = {"Accept": "application/json"}
    if token is None and signed_in:
        token = current_session(args).token
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    try:
        context = api_context(config) if url.startswith("https:") else None
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S,  # noqa: S310
                                    context=context) as answer:
            return Answer(answer.status, _decode(answer.read()))
    except urllib.error.HTTPError as exc:
        decoded = _decode(exc.read())
        if exc.code in accept:
            return Answer(exc.code, decoded)
        raise _failure(config, url, exc.code, decoded) from None
    except urllib.error.URLError as exc:
        raise CommandUnavailable(f"{config.source}: desk.api_url {url}:"
                                 f" {unreachable(exc)}") from None
    except ConfigError:
        raise
    except (TimeoutError, OSError, ValueError) as exc:
        raise CommandUnavailable(f"{config.source}: desk.api_url {url}: {exc}") from None


def call(args: argparse.Namespace, method: str, where: str, body: Any = None) -> Any:
    """The decoded JSON answer of ``method where`` (under /api/desk) as the signed-in person;
    an error answer is raised as the command's error (see the module's table)."""
    return exchange(args, method, where, body).body
