"""The event loop a table's process runs on: uvloop (libuv's loop, the same asyncio API) where
it is installed, else asyncio's own. A table daemon makes a dozen loop callbacks for each
device input (bench/floor_rate.py); uvloop does that work in C.

    from runtime.event_loop import run
    run(main())                      # as asyncio.run(main())

``SHOWDOWN_EVENT_LOOP`` chooses: ``auto`` (the default: uvloop if it imports), ``uvloop``
(required: an error if it is missing) or ``asyncio`` (the standard library's, e.g. to rule the
loop out when a technician chases a problem).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

__all__ = ["ENV", "EventLoopChoiceError", "loop_factory", "loop_name", "run"]

ENV: Final = "SHOWDOWN_EVENT_LOOP"
_CHOICES: Final = ("auto", "uvloop", "asyncio")

_T = TypeVar("_T")


class EventLoopChoiceError(RuntimeError):
    """SHOWDOWN_EVENT_LOOP names no loop this machine can run."""


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The chosen loop's factory (None: asyncio's default); `choice` defaults to the
    environment's ``SHOWDOWN_EVENT_LOOP``."""
    choice = (os.environ.get(ENV, "auto") if choice is None else choice).strip().lower() \
        or "auto"
    if choice not in _CHOICES:
        raise EventLoopChoiceError(f"{ENV}={choice!r}: choose one of {', '.join(_CHOICES)}")
    if choice == "asyncio":
        return None
    try:
        import uvloop  # noqa: PLC0415  # optional at import time: asyncio's loop is the fallback
    except ImportError as exc:
        if choice == "uvloop":
            raise EventLoopChoiceError(f"{ENV}=uvloop, but uvloop is not installed: {exc}"
                                       ) from exc
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """"uvloop" or "asyncio": which loop runs (for the start-up log)."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, _T], *, choice: str | None = None) -> _T:
    """Run `main` to completion on a new loop of the chosen kind, as `asyncio.run` does."""
    try:
        factory = loop_factory(choice)
    except EventLoopChoiceError:
        main.close()  # never started: no "coroutine was never awaited" warning
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
