"""The desk workstation's HTTPS connection to the central service's desk API: the URL and the
venue CA from desk.toml (``desk.api_url``, ``desk.api_ca_file``); the service's certificate must
chain to that CA and name the host, or nothing is sent."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any, Final
from urllib.parse import urljoin

from game.errors import ConfigError
from leaderboard.desk.config import DeskConfig
from runtime.errors import Unavailable

__all__ = ["OPENAPI_PATH", "api_context", "get_json", "unreachable"]

OPENAPI_PATH: Final = "api/desk/openapi.json"


def api_context(config: DeskConfig) -> ssl.SSLContext:
    """TLS client context trusting the venue CA only (the system CAs when none is named)."""
    try:
        return ssl.create_default_context(
            cafile=str(config.api_ca_file) if config.api_ca_file is not None else None)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(config.source, "desk.api_ca_file",
                          f"cannot load {config.api_ca_file}: {exc}") from None


def unreachable(exc: urllib.error.URLError) -> str:
    """Why the desk API could not be reached, in the words an operator needs (an untrusted
    certificate names the venue CA in desk.api_ca_file)."""
    reason = exc.reason
    if isinstance(reason, ssl.SSLCertVerificationError):
        return (f"the service's certificate is not trusted ({reason.verify_message}):"
                " it must be signed by the venue CA in desk.api_ca_file")
    return str(reason)


def get_json(config: DeskConfig, path: str, *, timeout: float = 5.0) -> Any:
    """GET ``path`` of the desk API as JSON; a refused certificate or an unreachable service
    is `Unavailable` naming desk.api_url and the cause."""
    if config.api_url is None:
        raise ConfigError(config.source, "desk.api_url", "missing: the central service's"
                          " desk API, e.g. \"https://leaderboard.casino.lan:8443/\"")
    url = urljoin(config.api_url, path)
    context = api_context(config) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as answer:  # noqa: S310
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise Unavailable(config.source, "desk.api_url", f"{url} answered {exc.code}") from None
    except urllib.error.URLError as exc:
        raise Unavailable(config.source, "desk.api_url", f"{url}: {unreachable(exc)}") from None
    except (TimeoutError, OSError, ValueError) as exc:
        raise Unavailable(config.source, "desk.api_url", f"{url}: {exc}") from None
