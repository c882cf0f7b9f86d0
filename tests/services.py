"""Which of the machine's own services the tests can use; `python -m tests.services` reports it.

Tests always run against the embedded defaults (an in-process amqtt broker, SQLite files).
Mosquitto on 127.0.0.1:1883 and PostgreSQL on 127.0.0.1:5432 are used when they answer.
With SHOWDOWN_REQUIRE_SERVICES=1 (CI) a missing service fails the run instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from functools import cache
from urllib.parse import urlsplit

from runtime.net import answers

__all__ = [
    "MOSQUITTO",
    "POSTGRES",
    "POSTGRES_URL",
    "mosquitto_binary",
    "mosquitto_up",
    "postgres_up",
    "services_required",
]

MOSQUITTO = ("127.0.0.1", int(os.environ.get("SHOWDOWN_TEST_MOSQUITTO_PORT", "1883")))
POSTGRES_URL = os.environ.get(
    "SHOWDOWN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# (host, port) of POSTGRES_URL, so that the probe follows the URL.
POSTGRES = (urlsplit(POSTGRES_URL).hostname or "127.0.0.1", urlsplit(POSTGRES_URL).port or 5432)



@cache
def mosquitto_up() -> bool:
    """True when something accepts connections on the Mosquitto port."""
    return answers(*MOSQUITTO)


@cache
def postgres_up() -> bool:
    """True when something accepts connections on POSTGRES_URL's host and port."""
    return answers(*POSTGRES)


def services_required() -> bool:
    """True when a missing service must fail the run (CI)."""
    return os.environ.get("SHOWDOWN_REQUIRE_SERVICES", "") not in ("", "0")


if __name__ == "__main__":
    state = {True: "reachable, tests use it", False: "absent, its tests skip"}
    print(f"services: Mosquitto {MOSQUITTO[0]}:{MOSQUITTO[1]} {state[mosquitto_up()]}; "
          f"PostgreSQL {POSTGRES[0]}:{POSTGRES[1]} {state[postgres_up()]}"
          + ("; required (SHOWDOWN_REQUIRE_SERVICES)" if services_required() else ""))


def mosquitto_binary() -> str:
    """The mosquitto program, for a test that starts a private broker; skips the test when it
    is not installed, and fails it under SHOWDOWN_REQUIRE_SERVICES (CI)."""
    import pytest

    path = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/sbin")
    if path is None:
        reason = "the mosquitto binary is not installed (apt-get install mosquitto)"
        if services_required():
            pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
        pytest.skip(reason)
    return path
