"""MQTT for every client in the project: the only module that imports aiomqtt (2.x).

    async with connect(settings, client_id="t01", will=Will(topic, payload)) as client:
        await client.subscribe_all([topic_filter])          # SubscriptionRefused if refused
        await client.publish(topic, payload, qos=1, retain=True)
        async for message in client.messages(): ...

    session = MqttSession(settings, client_id="t01", clean_session=False)
    await session.run(on_connected, stop)   # reconnects with jittered backoff until stop

``connect`` is one connection; ``MqttSession`` keeps one up until ``stop`` is set, calling
``on_connected(client)`` on each, and waits a jittered exponential backoff
(runtime.backoff) after a failure. ``publish_once`` is a short connection for one message.
With several brokers (a cluster: ``MqttSettings.failover``) a lost connection or a failed
attempt moves to the next address in turn; ``publish_once`` tries each until one takes it.

Exceptions (aiomqtt's are mapped at this boundary, ``from`` the original)::

    MqttError
     +-- ConnectFailed         the broker could not be reached, or refused the CONNECT
     +-- ConnectionLost        an open connection failed (a publish, a subscribe, the reader)
     +-- SubscriptionRefused   a SUBACK refused a filter (also a ConfigError: retrying cannot help)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiomqtt
import paho.mqtt.client as paho
import structlog

from game.errors import ConfigError
from runtime.backoff import Backoff
from wire.topics import DEFAULT_ROOT, SHARED_PREFIX, TopicError, validate_root

__all__ = [
    "ConnectFailed",
    "ConnectionLost",
    "MqttClient",
    "MqttError",
    "MqttSession",
    "MqttSettings",
    "Received",
    "SubscriptionRefused",
    "Will",
    "connect",
    "exception_leaves",
    "publish_once",
    "stopped_within",
    "suback_refused",
]

_SOURCE: Final = "mqtt settings"
# With several brokers, how long a CONNECT may wait for its CONNACK before the next node is
# tried: a NATS node whose session stream is electing a leader does not answer at all, and
# answers within 4 s when it loads a session normally.
CLUSTER_CONNECT_WAIT_S: Final = 5.0
_log = structlog.get_logger("wire.mqtt")


@dataclass(frozen=True, slots=True, kw_only=True)
class MqttSettings:
    """Where and how to connect; validated on construction (ConfigError names the key)."""

    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    keepalive_s: int = 30
    timeout_s: float = 10.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    topic_root: str = DEFAULT_ROOT
    batch_size: int = 100
    failover: tuple[tuple[str, int], ...] = ()  # the cluster's other nodes, tried in turn
    connect_timeout_s: float | None = None  # CONNACK wait; None: see connect_wait_s

    def __post_init__(self) -> None:
        if not self.host:
            raise ConfigError(_SOURCE, "host", "must not be empty")
        if not 1 <= self.port <= 65535:
            raise ConfigError(_SOURCE, "port", f"must be 1..65535, got {self.port}")
        for host, port in self.failover:
            if not host or not 1 <= port <= 65535:
                raise ConfigError(_SOURCE, "failover", f"{host}:{port} is not host:port")
        if len(set(self.brokers)) != len(self.brokers):
            raise ConfigError(_SOURCE, "failover", "a broker address is listed twice")
        if self.password is not None and self.username is None:
            raise ConfigError(_SOURCE, "password", "given without a username")
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError(_SOURCE, "key_file", "given without cert_file")
        if not 1 <= self.keepalive_s <= 65535:
            raise ConfigError(_SOURCE, "keepalive_s", f"must be 1..65535, got {self.keepalive_s}")
        if not self.timeout_s > 0:
            raise ConfigError(_SOURCE, "timeout_s", f"must be positive, got {self.timeout_s}")
        if self.connect_timeout_s is not None and not self.connect_timeout_s > 0:
            raise ConfigError(_SOURCE, "connect_timeout_s",
                              f"must be positive, got {self.connect_timeout_s}")
        if not 0 < self.backoff_initial_s <= self.backoff_max_s:
            raise ConfigError(
                _SOURCE, "backoff_initial_s",
                f"need 0 < backoff_initial_s <= backoff_max_s, got {self.backoff_initial_s} "
                f"and {self.backoff_max_s}",
            )
        if self.batch_size < 1:
            raise ConfigError(_SOURCE, "batch_size", f"must be at least 1, got {self.batch_size}")
        try:
            validate_root(self.topic_root)
        except TopicError as exc:
            raise ConfigError(_SOURCE, "topic_root", str(exc)) from None

    @classmethod
    def for_brokers(cls, brokers: Sequence[tuple[str, int]], **options: Any) -> MqttSettings:
        """Settings for these addresses, the first tried first (at least one)."""
        if not brokers:
            raise ConfigError(_SOURCE, "host", "no broker address given")
        (host, port), *rest = brokers
        return cls(host=host, port=port, failover=tuple(rest), **options)

    @property
    def brokers(self) -> tuple[tuple[str, int], ...]:
        """Every broker address in the order tried: ``(host, port)``, then ``failover``."""
        return ((self.host, self.port), *self.failover)

    @property
    def where_all(self) -> str:
        """The addresses as ``host:port, host:port``, for messages."""
        return ", ".join(f"{h}:{p}" for h, p in self.brokers)

    @property
    def connect_wait_s(self) -> float:
        """How long a CONNECT waits for its CONNACK: ``connect_timeout_s`` if given, else
        ``timeout_s`` for one broker and at most CLUSTER_CONNECT_WAIT_S with several (the
        next node is a better bet than a node that does not answer)."""
        if self.connect_timeout_s is not None:
            return self.connect_timeout_s
        return min(self.timeout_s, CLUSTER_CONNECT_WAIT_S) if self.failover else self.timeout_s

    def at(self, index: int) -> MqttSettings:
        """The settings of one broker of ``brokers`` (the same credentials and CONNACK wait,
        no failover)."""
        host, port = self.brokers[index % len(self.brokers)]
        return dataclasses.replace(self, host=host, port=port, failover=(),
                                   connect_timeout_s=self.connect_wait_s)

    @property
    def uses_tls(self) -> bool:
        """True when TLS is asked for, explicitly or by giving a CA or client certificate."""
        return self.tls or self.ca_file is not None or self.cert_file is not None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context (server verified against ``ca_file`` or the system CAs), or None."""
        if not self.uses_tls:
            return None
        for key, path in (("ca_file", self.ca_file), ("cert_file", self.cert_file),
                          ("key_file", self.key_file)):
            if path is not None and not path.is_file():
                raise ConfigError(_SOURCE, key, f"{path} is not a readable file")
        try:
            context = ssl.create_default_context(
                cafile=str(self.ca_file) if self.ca_file is not None else None
            )
            if self.cert_file is not None:
                context.load_cert_chain(
                    str(self.cert_file), str(self.key_file) if self.key_file else None
                )
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(_SOURCE, "tls", f"cannot load certificates: {exc}") from None
        return context


# --- exceptions --------------------------------------------------------------------------------


class MqttError(Exception):
    """Something went wrong talking to the broker (the root of this module's exceptions)."""


class ConnectFailed(MqttError):
    """The broker could not be reached, or refused the connection (credentials, TLS, ACL)."""


class ConnectionLost(MqttError):
    """An open connection failed: a publish or subscribe that did not complete, the reader."""


class SubscriptionRefused(MqttError, ConfigError):
    """The broker refused a subscription; reconnecting cannot help, so nothing retries it.

    The message names the setting to look at: ``shared_group`` for a refused
    ``$share/...`` filter, the client's read rights (``username``) otherwise.
    """

    def __init__(self, topic_filter: str, host: str, port: int) -> None:
        self.topic_filter = topic_filter
        if topic_filter.startswith(SHARED_PREFIX):
            ConfigError.__init__(
                self, "mqtt", "shared_group",
                f"the broker at {host}:{port} refused the shared subscription {topic_filter}:"
                " it does not deliver shared subscriptions (the embedded amqtt broker does"
                " not); use Mosquitto, or remove shared_group")
        else:
            ConfigError.__init__(
                self, "mqtt", "username",
                f"the broker at {host}:{port} refused the subscription {topic_filter}:"
                " check this client's read rights in the broker's ACL")


def suback_refused(code: object) -> bool:
    """A SUBACK return code of failure (0x80 and above; paho gives ints or ReasonCodes)."""
    value = getattr(code, "value", code)
    return isinstance(value, int) and value >= 0x80


def exception_leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions inside a (nested) exception group, flattened."""
    leaves: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            leaves.extend(exception_leaves(exc))
        else:
            leaves.append(exc)
    return leaves


# --- one connection ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Will:
    """The last will: published by the broker if the connection ends without DISCONNECT."""

    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = True


@dataclass(frozen=True, slots=True)
class Received:
    """One message the broker delivered."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False


def _payload_bytes(payload: object) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return b"" if payload is None else str(payload).encode("ascii")


def _received(message: aiomqtt.Message) -> Received:
    return Received(topic=message.topic.value, payload=_payload_bytes(message.payload),
                    qos=int(message.qos), retain=bool(message.retain))


def _inbox_type(made: list[asyncio.Queue[aiomqtt.Message]]
                ) -> type[asyncio.Queue[aiomqtt.Message]]:
    """A queue class for aiomqtt.Client(queue_type=...) that hands its instance to ``made``,
    so that a reader can take a batch of what has arrived at once (MqttClient.take_nowait)."""

    class Inbox(asyncio.Queue[aiomqtt.Message]):
        def __init__(self, maxsize: int = 0) -> None:
            super().__init__(maxsize)
            made.append(self)

    return Inbox


# paho's lines about a failed socket (it also returns the failure, and the session reports the
# lost connection once, as a warning): debug, not error.
_PAHO_SOCKET_FAILURES: Final = ("failed to receive on socket", "timeout on socket")


class _PahoLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """paho's logger (through aiomqtt): its reports of a failed socket at debug, the rest as is."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        """Log, a failed socket's line at debug."""
        if isinstance(msg, str) and msg.startswith(_PAHO_SOCKET_FAILURES):
            level = logging.DEBUG
        super().log(level, msg, *args, **kwargs)


_PAHO_LOG: Final = _PahoLog(logging.getLogger("aiomqtt.paho"), {})


def _open_fileno(client: paho.Client, sock: Any) -> int | None:
    """The socket's descriptor while it is still paho's open socket, else None."""
    fileno = sock.fileno()
    return fileno if client.socket() is sock and fileno >= 0 else None


def _seen(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's exception as retrieved (the session reports the loss itself)."""
    if future.done() and not future.cancelled():
        future.exception()


class _Client(aiomqtt.Client):
    """aiomqtt 2.5's client with its event-loop callbacks made safe for a socket that closes.

    aiomqtt schedules paho's ``add_reader``/``add_writer`` with ``call_soon_threadsafe``; when
    the socket closes before they run (the broker dropped a frozen process), uvloop raises
    EBADF in the loop's exception handler (an error-level traceback) and nothing reaches the
    session. Here a callback whose socket has gone does nothing, an OSError is a lost
    connection, a connection closed before its CONNACK fails the connect at once (aiomqtt
    ignores it and waits its whole timeout), and the futures that say so are retrieved.
    """

    def lose(self, error: BaseException) -> None:
        """Record the connection as lost (what the messages iterator and ``__aexit__`` see)."""
        if not self._disconnected.done():
            self._disconnected.set_exception(error)
        _seen(self._disconnected)

    def abandon(self) -> None:
        """Close the socket of a connect that failed (a timeout leaves it open: a broker that
        wakes up would CONNACK it and take over our session with a connection nobody uses)."""
        close = getattr(self._client, "_sock_close", None)
        if self._client.socket() is not None and close is not None:
            close()

    def _on_socket_open(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        del userdata
        def read() -> None:
            try:
                while True:
                    client.loop_read()
                    current = client.socket()
                    if current is not None and getattr(current, "pending", lambda: 0)() > 0:
                        continue  # an SSL socket holds decoded bytes loop_read left
                    break
            except Exception as exc:
                self.lose(exc)

        def start() -> None:
            fileno = _open_fileno(client, sock)
            if fileno is None:
                return  # closed before the loop got to it
            try:
                self._loop.add_reader(fileno, read)
            except OSError as exc:
                self.lose(exc)
                return
            self._misc_task = self._loop.create_task(self._misc_loop())

        # Called from the executor thread that runs paho's connect().
        self._loop.call_soon_threadsafe(start)

    def _on_socket_register_write(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        del userdata
        def write() -> None:
            try:
                client.loop_write()
            except Exception as exc:
                self.lose(exc)

        def register() -> None:
            fileno = _open_fileno(client, sock)
            if fileno is None:
                return  # closed meanwhile: nothing to write to
            try:
                self._loop.add_writer(fileno, write)
            except OSError as exc:
                self.lose(exc)

        self._loop.call_soon_threadsafe(register)

    def _on_socket_unregister_write(self, client: paho.Client, userdata: Any,
                                    sock: Any) -> None:
        del client, userdata
        fileno = sock.fileno()
        if fileno >= 0:
            self._loop.remove_writer(fileno)

    def _on_disconnect(self, client: paho.Client, userdata: Any, flags: Any,
                       reason_code: Any, properties: Any = None) -> None:
        if not self._connected.done():
            # Closed before the CONNACK (paho's keepalive gave up on a silent broker): the
            # connect fails now rather than at its timeout.
            self._connected.set_exception(
                aiomqtt.MqttError(f"connection closed before the CONNACK: {reason_code}"))
            _seen(self._connected)
            return
        super()._on_disconnect(client, userdata, flags, reason_code, properties)
        _seen(self._disconnected)


class MqttClient:
    """A connected client, valid inside its ``connect`` block; errors are this module's."""

    def __init__(self, client: _Client, inbox: asyncio.Queue[aiomqtt.Message],
                 settings: MqttSettings) -> None:
        self._client = client
        self._inbox = inbox
        self.settings = settings

    @property
    def where(self) -> str:
        """host:port of the broker, for messages."""
        return f"{self.settings.host}:{self.settings.port}"

    async def publish(self, topic: str, payload: bytes, *, qos: int = 1,
                      retain: bool = False) -> None:
        """Publish; at QoS 1 returns once the broker has acknowledged (PUBACK).

        In aiomqtt 2.5.1 ``publish`` returns after the PUBACK: paho calls ``on_publish`` for
        QoS 1 only from its PUBACK handler.
        """
        try:
            await self._client.publish(topic, payload, qos=qos, retain=retain,
                                       timeout=self.settings.timeout_s)
        except aiomqtt.MqttError as exc:
            raise ConnectionLost(f"publish to {topic} on {self.where}: {exc}") from exc

    async def subscribe(self, topic_filter: str, *, qos: int = 1) -> bool:
        """Subscribe to one filter; True if the broker granted it, False if its SUBACK refused."""
        try:
            granted = await self._client.subscribe(topic_filter, qos=qos,
                                                   timeout=self.settings.timeout_s)
        except aiomqtt.MqttError as exc:
            raise ConnectionLost(f"subscribe to {topic_filter} on {self.where}: {exc}") from exc
        return not any(suback_refused(code) for code in granted)

    async def subscribe_all(self, filters: Iterable[str], *, qos: int = 1) -> None:
        """Subscribe to each filter in turn; SubscriptionRefused at the first one refused."""
        for topic_filter in filters:
            if not await self.subscribe(topic_filter, qos=qos):
                _log.error("mqtt_subscription_refused", filter=topic_filter, broker=self.where)
                raise SubscriptionRefused(topic_filter, self.settings.host, self.settings.port)

    async def next_message(self) -> Received:
        """The next message delivered (waits); ConnectionLost if the connection ends."""
        try:
            message = await anext(self._client.messages)
        except aiomqtt.MqttError as exc:
            raise ConnectionLost(f"reading from {self.where}: {exc}") from exc
        return _received(message)

    async def messages(self) -> AsyncIterator[Received]:
        """Every message delivered, as it arrives, until the connection ends."""
        while True:
            yield await self.next_message()

    def loss(self) -> str | None:
        """Why the connection is lost, or None while it holds.

        Runs paho's keepalive check (``loop_misc``: a PINGREQ once the link has been quiet
        for the keepalive, the connection closed when its PINGRESP is not back within the
        keepalive after it), then asks: has the client seen the connection end (a failed read
        or write, the broker closing it, the keepalive), does paho report itself connected.
        """
        paho_client = self._client._client
        if self._client._disconnected.done():
            return _loss_reason(self._client._disconnected)
        if paho_client.loop_misc() != paho.MQTT_ERR_SUCCESS:
            # The keepalive check closed the connection (no PINGRESP), or it had gone.
            if self._client._disconnected.done():
                return _loss_reason(self._client._disconnected)
            return "the connection is closed"
        if not paho_client.is_connected():
            return "the client reports itself disconnected"
        return None

    async def lost(self) -> str:
        """Wait until the connection is lost (see ``loss``), checking a few times a keepalive;
        returns why."""
        interval = min(1.0, self.settings.keepalive_s / 4)
        while (reason := self.loss()) is None:
            await asyncio.sleep(interval)
        return reason

    def mark_lost(self, reason: str) -> None:
        """Record the connection as lost, so that leaving ``connect`` sends no DISCONNECT."""
        self._client.lose(ConnectionLost(reason))

    def take_nowait(self, limit: int) -> list[Received]:
        """Up to ``limit`` messages that have already arrived, without waiting."""
        taken: list[Received] = []
        while len(taken) < limit:
            try:
                taken.append(_received(self._inbox.get_nowait()))
            except asyncio.QueueEmpty:
                break
        return taken


@contextlib.asynccontextmanager
async def connect(settings: MqttSettings, *, client_id: str | None = None,
                  clean_session: bool | None = None, will: Will | None = None
                  ) -> AsyncIterator[MqttClient]:
    """One connection (MQTT 3.1.1, TLS and credentials from ``settings``), closed on exit.

    ConnectFailed if it cannot be opened; an aiomqtt error in the block is ConnectionLost.
    """
    inboxes: list[asyncio.Queue[aiomqtt.Message]] = []
    client = _Client(
        settings.host, settings.port, identifier=client_id, clean_session=clean_session,
        will=aiomqtt.Will(will.topic, will.payload, qos=will.qos, retain=will.retain)
        if will is not None else None,
        keepalive=settings.keepalive_s, timeout=settings.connect_wait_s,
        username=settings.username, password=settings.password,
        tls_context=settings.ssl_context(), queue_type=_inbox_type(inboxes),
        logger=_PAHO_LOG,  # type: ignore[arg-type]
    )
    where = f"{settings.host}:{settings.port}"
    entered = False
    try:
        async with client:
            entered = True
            yield MqttClient(client, inboxes[0], settings)
    except aiomqtt.MqttError as exc:
        if not entered:
            raise ConnectFailed(f"cannot connect to {where}: {exc}") from exc
        raise ConnectionLost(f"connection to {where}: {exc}") from exc
    finally:
        if not entered:
            client.abandon()
        _retrieve_disconnect(client)


def _loss_reason(lost: asyncio.Future[None]) -> str:
    error = None if lost.cancelled() else lost.exception()
    return f"the connection ended: {error}" if error is not None else "the connection ended"


def _retrieve_disconnect(client: aiomqtt.Client) -> None:
    """Mark a dropped connection's reason as seen: aiomqtt 2.5 leaves it unretrieved when
    the block ends after the broker went away (asyncio then logs "Future exception was
    never retrieved" at error level for a loss the caller has already handled)."""
    lost = getattr(client, "_disconnected", None)
    if isinstance(lost, asyncio.Future) and lost.done() and not lost.cancelled():
        lost.exception()


async def publish_once(settings: MqttSettings, topic: str, payload: bytes, *, client_id: str,
                       qos: int = 1, retain: bool = False) -> None:
    """Publish one message on a short connection of its own (for rare messages).

    With several brokers each is tried in turn until one acknowledges; the error of the
    last is raised when none does (the message names every address tried).
    """
    errors: list[str] = []
    for index in range(len(settings.brokers)):
        one = settings.at(index)
        try:
            async with connect(one, client_id=client_id) as client:
                await client.publish(topic, payload, qos=qos, retain=retain)
        except MqttError as exc:
            errors.append(str(exc))
            if index + 1 < len(settings.brokers):
                _log.warning("mqtt_failover", client_id=client_id,
                             from_broker=f"{one.host}:{one.port}",
                             to_broker="{}:{}".format(*settings.brokers[index + 1]),
                             error=str(exc))
                continue
            if len(errors) == 1:
                raise
            raise type(exc)("; ".join(errors)) from exc
        return


async def stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    """Wait until ``stop`` is set or ``seconds`` pass; True if ``stop`` is set.

    ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` can swallow a
    cancellation that arrives as the inner wait completes.
    """
    if not stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await stop.wait()
    return stop.is_set()


# --- a connection kept up -----------------------------------------------------------------------

OnConnected = Callable[[MqttClient], Awaitable[None]]


class MqttSession:
    """Keeps one connection to the broker until ``stop``, reconnecting after any failure.

    ``run(on_connected, stop)`` connects, calls ``on_connected(client)`` (which returns when
    it is done with the connection, normally once ``stop`` is set), and after a
    ConnectFailed or ConnectionLost waits a jittered exponential backoff and connects again.
    The backoff starts again from its first step at every successful connection (CONNACK),
    so each outage's first retry comes at the initial delay (D402).
    While ``on_connected`` runs, a watchdog checks the connection a few times a keepalive
    (``MqttClient.loss``: paho's keepalive, so no PINGRESP within twice the keepalive; the
    client reporting itself disconnected; a failed read or write) and, when it is lost,
    cancels ``on_connected`` and reconnects: a publish waiting for a PUBACK that cannot come
    does not hold the link until its timeout.
    An outage is one warning: ``mqtt_disconnected`` for the lost connection, or
    ``mqtt_connect_failed`` for the first attempt that failed; its further attempts and the
    moves to a cluster's next node (``mqtt_failover``) are logged at info.
    ``will`` is called on each connect, so the will can carry fresh content.
    With several brokers (``settings.failover``), every lost connection or failed attempt
    moves to the next address, and stays there while it works: ``broker`` says which one is
    in use (logged at info). There the backoff grows by rounds of the node list, not by
    attempts (D419): within a round the next node is tried once the backoff's first step has
    passed since the failed attempt *began* (a node that held the CONNECT for seconds before
    refusing it, as a NATS node electing its session stream's leader does, is followed at
    once by the next), and only when every node has failed in turn is the growing backoff
    waited.
    Other exceptions (SubscriptionRefused, a bug) end ``run``. ``log`` is a structlog logger
    with the owner's context bound (the default names the client id).
    """

    def __init__(self, settings: MqttSettings, *, client_id: str,
                 clean_session: bool | None = None, will: Callable[[], Will] | None = None,
                 rng: random.Random | None = None, log: Any = None) -> None:
        self.settings = settings
        self.client_id = client_id
        self.clean_session = clean_session
        self.backoff = Backoff(initial=settings.backoff_initial_s,
                               maximum=settings.backoff_max_s, rng=rng)
        self.connections = 0  # connections opened
        self.connect_failures = 0  # attempts that never connected
        self.failovers = 0  # moves to the next broker of a cluster
        self._will = will
        self._connected = False
        self._outage = False  # a connection was lost or an attempt failed since the last CONNACK
        self._index = 0  # which of settings.brokers is tried next / in use
        self._round = 0  # failed attempts since the last growing wait (several brokers, D419)
        self._log = log if log is not None else _log.bind(client_id=client_id)

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of the broker in use (or tried next)."""
        return self.settings.brokers[self._index]

    @property
    def broker(self) -> str:
        """host:port of the broker in use (or tried next)."""
        return "{}:{}".format(*self.address)

    @property
    def connected(self) -> bool:
        """True while a connection is open."""
        return self._connected

    @property
    def reconnects(self) -> int:
        """Connections opened after the first."""
        return max(0, self.connections - 1)

    async def run(self, on_connected: OnConnected, stop: asyncio.Event) -> None:
        """Connect and reconnect until ``stop`` is set (see the class docstring)."""
        count = len(self.settings.brokers)
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            s = self.settings.at(self._index)
            began = loop.time()
            lost = False
            try:
                async with connect(s, client_id=self.client_id, clean_session=self.clean_session,
                                   will=self._will() if self._will is not None else None
                                   ) as client:
                    self.connections += 1
                    self._connected = True
                    self.backoff.reset()
                    self._round = 0
                    self._outage = False
                    self._log.info("mqtt_broker_in_use", broker=self.broker,
                                   node=self._index + 1, nodes=count)
                    await _watched(client, on_connected)
            except* (ConnectFailed, ConnectionLost) as group:
                lost = self._connected
                if not self._connected:
                    self.connect_failures += 1
                error = "; ".join(str(e) for e in group.exceptions)
                # One warning per outage (D404): the loss, or the first attempt that
                # failed; the outage's further attempts and moves are at info.
                say = self._log.info if self._outage else self._log.warning
                self._outage = True
                say("mqtt_disconnected" if self._connected else "mqtt_connect_failed",
                    error=error, host=s.host, port=s.port,
                    attempt=self.backoff.attempt + 1)
                if count > 1:
                    previous = self.broker
                    self._index = (self._index + 1) % count
                    self.failovers += 1
                    self._log.info("mqtt_failover", from_broker=previous, to_broker=self.broker,
                                   error=error)
            finally:
                self._connected = False
            if stop.is_set():
                break
            delay = self._delay(lost=lost, elapsed=loop.time() - began)
            self._log.info("mqtt_reconnect_wait", delay_s=round(delay, 3),
                           attempt=self.backoff.attempt)
            if await stopped_within(stop, delay):
                break


    def _delay(self, *, lost: bool, elapsed: float) -> float:
        """Seconds before the next attempt, after a lost connection (``lost``) or a failed
        attempt that began ``elapsed`` seconds ago (see the class docstring)."""
        count = len(self.settings.brokers)
        if count == 1 or lost:
            self._round = 0
            return self.backoff.next_delay()
        self._round += 1
        if self._round < count:  # the round goes on: the next node, spaced by the first step
            return max(0.0, self.backoff.first_delay() - elapsed)
        self._round = 0  # every node failed in turn: the growing backoff
        return self.backoff.next_delay()


async def _watched(client: MqttClient, on_connected: OnConnected) -> None:
    """Run ``on_connected(client)`` while a watchdog waits for the connection's loss; on a
    loss, cancel it and raise ConnectionLost (its own errors of the connection go with it)."""
    work = asyncio.ensure_future(on_connected(client))
    watch = asyncio.create_task(client.lost(), name=f"mqtt[{client.where}].watchdog")
    try:
        await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, watch):
            if not task.done():
                task.cancel()
        await asyncio.wait({work, watch})
    error = None if work.cancelled() else work.exception()
    if not work.cancelled() and (error is None or not _connection_error(error)):
        work.result()  # its return, or its own failure (a bug, SubscriptionRefused)
        return
    if watch.done() and not watch.cancelled():
        if (watch_error := watch.exception()) is not None:
            raise watch_error  # a bug in the watchdog
        reason = watch.result()
        client.mark_lost(reason)
        raise ConnectionLost(f"connection to {client.where} lost: {reason}")
    if error is not None:
        raise error  # the connection's failure, as on_connected met it
    raise asyncio.CancelledError


def _connection_error(error: BaseException | None) -> bool:
    """True for none, or a connection's failure (also inside exception groups)."""
    if error is None:
        return True
    if isinstance(error, BaseExceptionGroup):
        return all(_connection_error(e) for e in exception_leaves(error))
    return isinstance(error, ConnectFailed | ConnectionLost | asyncio.CancelledError)
