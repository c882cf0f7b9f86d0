"""An MQTT broker inside our own process (amqtt 0.12), the default when no Mosquitto is configured.

    async with EmbeddedBroker() as broker:        # 127.0.0.1, a free port
        ... connect clients to broker.host, broker.port (or broker.url) ...

The broker listens on one TCP address only, accepts every client without credentials (it is
meant for one machine: a demo, a simulated table, the tests), publishes no ``$SYS`` topics and
logs only warnings. Production points the daemon at Mosquitto instead.

Every client is accepted as an authenticated client rather than through amqtt's own
``AnonymousAuthPlugin``: that plugin marks each session anonymous, and amqtt 0.12.1 then neither
queues QoS 1/2 messages for a disconnected persistent session nor keeps the session (its monitor
drops it within a second), so a persistent session would silently lose what was published while
it was away. Known amqtt 0.12.1 differences from Mosquitto are listed in docs/testing.md.

amqtt 0.12.1 grants a shared subscription (``$share/{group}/{filter}``) but never delivers
anything to it, so a leaderboard configured with ``shared_group`` would silently receive
nothing. This broker says so instead: it refuses such a
subscription (SUBACK 0x80), and the leaderboard stops with an error naming the setting.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Final, Self

from amqtt.broker import Broker
from amqtt.errors import AMQTTError, BrokerError, PluginError, PluginLoadError
from amqtt.plugins.base import BaseAuthPlugin
from amqtt.session import Session

from wire.topics import SHARED_PREFIX

__all__ = ["EmbeddedBroker", "EmbeddedBrokerError"]

# amqtt logs every connection, packet and state change at INFO or DEBUG; `transitions` (its
# state machine library) logs every transition. Both stay at WARNING unless configured otherwise.
_NOISY_LOGGERS = ("amqtt", "transitions")
# amqtt logs the traceback of a failed start at ERROR before raising; we raise a clear
# EmbeddedBrokerError instead, so that record is dropped.
_STARTUP_FAILED_MSG = "Broker startup failed"


class EmbeddedBrokerError(OSError):
    """The embedded broker could not start or stop (address in use, bad address, ...)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        self.reason = reason
        super().__init__(f"embedded MQTT broker on {_hostport(host, port)}: {reason}")


class AcceptAnyClient(BaseAuthPlugin):
    """amqtt auth plugin: every client may connect, with or without a username.

    Unlike amqtt's AnonymousAuthPlugin it does not mark sessions anonymous, so persistent
    sessions keep their subscriptions and queued QoS 1/2 messages across reconnects.
    """

    async def authenticate(self, *, session: Session) -> bool:  # noqa: ARG002
        """Accept the client."""
        return True


_REFUSED: Final = 0x80  # SUBACK return code: failure


class _Subscriptions(dict[str, list[tuple[Session, int]]]):
    """amqtt's table of subscriptions (topic filter -> sessions), iterated over a snapshot.

    amqtt 0.12.1 awaits inside its loops over this table (a client's connection, every
    broadcast), so a subscription made meanwhile raised "dictionary changed size during
    iteration" and killed that connection's handler (seen on a floor of 8 tables).
    """

    def __iter__(self) -> Iterator[str]:
        return iter(list(super().keys()))

    def items(self) -> list[tuple[str, list[tuple[Session, int]]]]:  # type: ignore[override]
        """The (filter, subscribers) pairs as they are now."""
        return list(super().items())


class _Broker(Broker):
    """amqtt's broker, refusing ``$share/...`` subscriptions, which it cannot deliver to,
    and correcting two amqtt 0.12.1 faults: its subscription table is iterated over a
    snapshot (`_Subscriptions`), and a connecting client is sent the retained messages of
    its own subscriptions only (amqtt sent it those matching any client's subscriptions).

    (Checked here rather than in an amqtt topic plugin: a topic plugin is also consulted
    for every message published and delivered, through a task per call.)
    """

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self._subscriptions = _Subscriptions()

    async def _publish_retained_messages_for_subscription(
            self, subscription: tuple[str, int], session: Session) -> None:
        """Send the retained messages matching a topic filter the session subscribes to."""
        holders = self._subscriptions.get(subscription[0], [])
        if any(held.client_id == session.client_id for held, _qos in holders):
            await super()._publish_retained_messages_for_subscription(subscription, session)

    async def add_subscription(self, subscription: tuple[str, int], session: Session) -> int:
        """The SUBACK code for one topic filter: 0x80 for a shared subscription."""
        if subscription[0].startswith(SHARED_PREFIX):
            return _REFUSED
        code: int = await super().add_subscription(subscription, session)
        return code


class _DropStartupTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _STARTUP_FAILED_MSG


_startup_filter = _DropStartupTraceback()


def _quiet_amqtt() -> None:
    for name in _NOISY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    broker_logger = logging.getLogger("amqtt.broker")
    if _startup_filter not in broker_logger.filters:
        broker_logger.addFilter(_startup_filter)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_AMQTT_ERRORS = (AMQTTError, BrokerError, PluginError, PluginLoadError, OSError, ValueError)


def _reason(exc: BaseException) -> str:
    """The innermost cause, in words: "Address already in use" rather than amqtt's wrapping."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


class EmbeddedBroker:
    """An amqtt broker running in this process's event loop while the context is open.

    ``host`` must be an IP address (``127.0.0.1`` by default; ``0.0.0.0`` exposes it to the
    network). ``port=0`` picks a free port; read the chosen one from ``.port`` once started.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise EmbeddedBrokerError(host, port, "host must be an IP address") from None
        if not 0 <= port <= 65535:
            raise EmbeddedBrokerError(host, port, "port must be between 0 and 65535")
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._broker: Broker | None = None

    @property
    def port(self) -> int:
        """The TCP port the broker listens on (the chosen one when started with port 0)."""
        if self._port is None:
            raise EmbeddedBrokerError(self.host, self._requested_port, "not running")
        return self._port

    @property
    def url(self) -> str:
        """``mqtt://host:port`` of the running broker."""
        return f"mqtt://{_hostport(self.host, self.port)}"

    @property
    def running(self) -> bool:
        """True between a successful start and stop."""
        return self._broker is not None

    def _config(self) -> dict[str, Any]:
        return {
            "listeners": {
                "default": {"type": "tcp", "bind": _hostport(self.host, self._requested_port)},
            },
            # Only authentication: no $SYS publisher, no event or packet logger plugins.
            "plugins": {f"{__name__}.{AcceptAnyClient.__name__}": {}},
        }

    async def start(self) -> None:
        """Open the listener; raises EmbeddedBrokerError when it cannot (e.g. port in use)."""
        if self._broker is not None:
            raise EmbeddedBrokerError(self.host, self.port, "already running")
        _quiet_amqtt()
        try:
            broker = _Broker(self._config())
            await broker.start()
        except _AMQTT_ERRORS as exc:
            raise EmbeddedBrokerError(self.host, self._requested_port, _reason(exc)) from exc
        try:
            self._port = self._bound_port(broker)
        except (EmbeddedBrokerError, AttributeError, KeyError, OSError):
            await broker.shutdown()
            raise
        self._broker = broker

    def _bound_port(self, broker: Broker) -> int:
        # amqtt keeps its asyncio servers per listener name; there is no public accessor.
        server = broker._servers["default"].instance
        # asyncio's Server, or uvloop's (which is not an asyncio.AbstractServer)
        sockets = getattr(server, "sockets", None) or ()
        if not sockets:
            raise EmbeddedBrokerError(self.host, self._requested_port, "listener has no socket")
        return int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Disconnect every client and close the listener; does nothing when not running."""
        broker, self._broker = self._broker, None
        if broker is None:
            return
        try:
            await broker.shutdown()
        except _AMQTT_ERRORS as exc:
            reason = f"shutdown failed: {_reason(exc)}"
            raise EmbeddedBrokerError(self.host, self.port, reason) from exc
        finally:
            self._port = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
