"""The central leaderboard service's composition root: `showdown leaderboard serve`.

One event loop runs, as named tasks of one TaskGroup:

- ``mqtt``: the service's one broker connection (ServiceLink), whose receive loop is the
  ingest's (leaderboard.ingest.IngestLink): it verifies, stores and projects, asks tables to
  resend gaps (signed with the leaderboard key), and calls ``StandingsFeed.changed`` after
  each commit;
- ``standings``: the feed, the standings document kept up to date after changes
  (leaderboard/standings/live.py: only the entries that changed are read again);
- ``publisher``: the retained, signed standings on ``showdown/v1/{venue}/standings`` (QoS 1),
  published on every new version (names never leave: ``strip_names``);
- ``http``: uvicorn serving the page, the JSON API, SSE and the desk API (inside this loop);
- ``audit_heads``: signs the audit chain's head with the leaderboard key when one is due
  (``[audit]``, leaderboard.audit_trail.heads); a head is signed at start and at shutdown too;
- ``watchdog``: ``WATCHDOG=1`` pings to systemd at half its interval while the loop is alive,
  from the start (a long migration is not a hang), so pings may precede ``READY=1``;
- ``lease``: renews the central lease (leaderboard.central_lease) while active.

Active and standby (docs/operations/standby-central.md): after the migration the instance
listens at once (leaderboard.standby_web.RoleGate: 503 "standby" naming the active instance)
and sends ``READY=1`` as a standby; it waits for the central lease, and only once it holds it
enrols the tables, signs a head and starts the tasks above. Every commit on its engine is
fenced by the lease. An instance that loses the lease stops at once (the gate answers 503,
the ingest disconnects) and exits with EXIT_LEASE_LOST for systemd to start it again as a
standby; one that cannot prove it holds the lease (its renewals late) pauses the ingest
until a renewal succeeds.

Start-up: settings and keys are read and the database migrated first; ``READY=1`` is sent
once the web server listens (standby) and again once active and the broker has granted the
subscription. SIGTERM/SIGINT:
``STOPPING=1``, the ingest finishes its batch, streams end, the server and the publisher
close, the engine is disposed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

import uvicorn
from sqlalchemy import Engine, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from starlette.routing import BaseRoute

from game.tournament.schema import TournamentSettings
from leaderboard.audit_trail.chain import audit_row
from leaderboard.audit_trail.heads import keep_heads, sign_head
from leaderboard.central_lease import CentralLease, LeaseLost, install_fence, instance_name
from leaderboard.config import LeaderboardConfig
from leaderboard.db import configured_engine, connection_lost, database_answers, upgrade
from leaderboard.desk import DeskCommand
from leaderboard.ingest import IngestLink, Ingestor, MqttResender, subscription_filters
from leaderboard.models import TableRecord
from leaderboard.standby_web import RoleGate
from leaderboard.standings.live import LiveStandings
from leaderboard.standings.view import ViewOptions, standings, strip_names
from leaderboard.web import StandingsFeed, create_app
from runtime.clocks import WallClock, utc_now
from runtime.errors import one_line
from runtime.http_serving import BodyDeadline, InLoopServer, listen
from runtime.logs import get_logger
from runtime.process_memory import fix_malloc_mmap_threshold
from runtime.sd_notify import Notifier
from runtime.settings_files import read_tournament
from wire.envelope import EnvelopeError, seal
from wire.messages import Standings
from wire.mqtt import MqttClient, MqttError, MqttSettings, exception_leaves
from wire.signing import Signer, load_configured_key
from wire.topics import TableTopics, standings_topic

__all__ = [
    "EXIT_LEASE_LOST",
    "STANDINGS_TYPE",
    "LeaderboardService",
    "PublishError",
    "ServiceLink",
    "enrol_tables",
    "mqtt_settings",
    "run_service",
]

STANDINGS_TYPE: Final = Standings.TYPE
EXIT_LEASE_LOST: Final = 75  # EX_TEMPFAIL: the lease lost; systemd restarts it (D397)
_log = get_logger("leaderboard.app")

def mqtt_settings(config: LeaderboardConfig) -> MqttSettings:
    """The broker connection settings of the config."""
    m = config.mqtt
    return MqttSettings.for_brokers(
        m.brokers, username=m.username, password=m.password, tls=m.tls, ca_file=m.ca_file,
        cert_file=m.cert_file, key_file=m.key_file, topic_root=config.topic_root,
        keepalive_s=m.keepalive_s)


def enrol_tables(engine: Engine, config: LeaderboardConfig, now: datetime) -> list[str]:
    """Make the config's tables the enrolled ones of its venue (TableRecord rows).

    A table listed in the config is added, or re-activated; a listed table whose key differs
    from the stored one gets the config's key and an audit row names both (the config is the
    authority). Returns what changed, one line each, for the log.
    """
    changes: list[str] = []
    with Session(engine) as session, session.begin():
        stored = {r.table_id: r for r in session.scalars(select(TableRecord))}
        for table_id, key in sorted(config.tables.items()):
            row = stored.get(table_id)
            if row is None:
                session.add(TableRecord(table_id=table_id, venue=config.venue, public_key=key,
                                        enrolled_at=now, active=True))
                changes.append(f"enrolled {table_id}")
            elif row.public_key != key or not row.active or row.venue != config.venue:
                audit_row(session, now, f"config:{config.source}", "table.enrolment_changed",
                          {"table": table_id, "old_key": row.public_key, "new_key": key,
                           "old_venue": row.venue, "new_venue": config.venue,
                           "was_active": row.active})
                row.public_key, row.active, row.venue = key, True, config.venue
                changes.append(f"updated {table_id}")
    return changes


class PublishError(Exception):
    """A message the service could not hand to the broker (not connected, or the publish
    failed); the desk's commands become leaderboard.desk.sender.SendError."""


class ServiceLink:
    """The service's ONE connection to the venue broker, used for everything it does by MQTT.

    - the ingest subscription (every table's events, scores, status; optionally shared), read
      by the ingest's own receive loop (leaderboard.ingest.IngestLink: batches to the
      Ingestor, gap checks), the same loop ``Ingestor.run`` uses;
    - the retained, signed standings on ``{root}/{venue}/standings`` (QoS 1), published for
      every new version of the feed and again on every (re)connect;
    - resend requests to tables (the Ingestor's ``resend``) and the desk's commands (a
      ``CommandSender`` for leaderboard.desk_api.routes), signed with the leaderboard key.

    One connection, because the venue broker enforces client id = username
    (``use_username_as_clientid``, config/mosquitto/README.md): a second connection of the
    ``leaderboard`` user would take the first one's session over, and two long-lived ones
    would throw each other off for ever. The session is persistent (the broker queues the
    tables' messages while the service restarts); reconnects use jittered backoff.

    The standings envelope's ``seq`` is 0: a snapshot that replaces the last (retained), not
    part of the key's command sequence; ``body.version`` and ``ts`` say which is newer.
    """

    def __init__(self, settings: MqttSettings, signer: Signer, feed: StandingsFeed, *,
                 venue: str, client_id: str, shared_group: str | None = None,
                 clock: WallClock = utc_now, gap_check_s: float = 0.5) -> None:
        self.settings = settings
        self.venue = venue
        self.topic = standings_topic(venue, settings.topic_root)
        self.filters = subscription_filters(venue, root=settings.topic_root,
                                            shared_group=shared_group)
        self.ingestor: Ingestor | None = None
        self.subscribed = asyncio.Event()
        self.published = 0
        self.last_version = 0
        self.commands_sent = 0
        self._signer = signer
        self._feed = feed
        self._client_id = client_id
        self._shared_group = shared_group
        self._clock = clock
        self._gap_check_s = gap_check_s
        self._boot = f"leaderboard-{uuid.uuid4().hex[:12]}"
        self._resender = MqttResender(settings, signer, venue=venue, clock=clock,
                                      boot_id=self._boot)
        self._link: IngestLink | None = None

    @property
    def _client(self) -> MqttClient | None:
        return self._link.client if self._link is not None else None

    @property
    def connected(self) -> bool:
        """True while connected and subscribed."""
        return self._client is not None

    def heard(self) -> tuple[float | None, int]:
        """When a table last sent a live message (time.time(), None: not yet), and how many
        tables have been heard from."""
        link = self._link
        if link is None:
            return None, 0
        return link.last_message_at, len(link.tables_seen)

    # ---- what others send through the link ---------------------------------------------------

    def standings_payload(self, doc: Mapping[str, Any]) -> bytes:
        """The signed envelope of a standings document, names removed."""
        return seal(venue=self.venue, table=self._signer.key_id, seq=0, wall=self._clock(),
                    type=STANDINGS_TYPE, body=strip_names(doc), boot=self._boot,
                    mono=time.monotonic_ns(), signer=self._signer).encode()

    async def resend(self, table: str, from_seq: int) -> None:
        """Ask a table to publish again from `from_seq` (the Ingestor's ``resend``)."""
        topic, payload = self._resender.command(table, from_seq)
        await self._publish(topic, payload, what=f"resend request to {table}")

    async def send(self, command: DeskCommand) -> None:
        """Deliver one desk command (leaderboard.desk.sender.CommandSender)."""
        from leaderboard.desk.sender import SendError, seal_command  # noqa: PLC0415

        envelope = seal_command(command, venue=self.venue, signer=self._signer,
                                wall=self._clock())
        topic = TableTopics(self.venue, command.table, self.settings.topic_root).cmd
        try:
            await self._publish(topic, envelope.encode(),
                                what=f"{command.command} for table {command.table}")
        except PublishError as exc:
            raise SendError(f"{command.command} for table {command.table} (seq"
                                f" {command.seq}) is recorded but was not delivered: {exc}"
                                ) from exc
        self.commands_sent += 1

    async def _publish(self, topic: str, payload: bytes, *, what: str) -> None:
        client = self._client
        if client is None:
            raise PublishError(f"{what}: not connected to the broker"
                               f" ({self.settings.where_all})")
        try:
            await client.publish(topic, payload, qos=1)
        except MqttError as exc:
            raise PublishError(f"{what}: {exc}") from exc

    # ---- the connection ----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, subscribe, ingest and publish until `stop` is set (reconnecting).

        The connection and the receive loop are the ingest's own (leaderboard.ingest.
        IngestLink), with a persistent session under ``client_id``; the standings publisher
        runs beside the receive loop on each connection.
        """
        if self.ingestor is None:
            raise RuntimeError("ServiceLink.ingestor must be set before run()")
        self._link = IngestLink(self.ingestor, self.settings, shared_group=self._shared_group,
                                client_id=self._client_id, gap_check_s=self._gap_check_s,
                                subscribed=self.subscribed, alongside=self._standings)
        try:
            await self._link.run(stop)
        finally:
            self._link = None

    async def _standings(self, client: MqttClient, stop: asyncio.Event) -> None:
        seen = 0  # a new connection publishes the latest version again
        while not stop.is_set() and not self._feed.is_closed():
            current = self._feed.current
            if current is None or current.version == seen:
                await self._feed.wait_newer(seen, timeout=5.0)
                continue
            seen = current.version
            try:
                payload = self.standings_payload(current.doc)
            except EnvelopeError as exc:
                _log.error("standings_not_publishable", version=seen, error=str(exc))
                continue
            await client.publish(self.topic, payload, qos=1, retain=True)
            self.last_version = seen
            self.published += 1
            _log.info("standings_published", version=seen, bytes=len(payload))


class LeaderboardService:
    """The whole central service; `run(stop)` until `stop` is set (or SIGTERM)."""

    def __init__(self, config: LeaderboardConfig, *, notify: Notifier | None = None,
                 clock: WallClock = utc_now, settings: TournamentSettings | None = None,
                 full_recompute: bool = False) -> None:
        self.config = config
        # The standings recomputed from the whole database after every change, debounced:
        # how they were kept before the incremental standings (bench/standings.py compares).
        self.full_recompute = full_recompute
        self.notify = notify or Notifier(stopping_status="stopping")
        self.clock = clock
        self.settings = settings
        self.engine: Engine | None = None
        self.feed: StandingsFeed | None = None
        self.standings: LiveStandings | None = None
        self.ingestor: Ingestor | None = None
        self.link: ServiceLink | None = None
        self.port: int | None = None  # the HTTP port listened on (known once started)
        self.lease: CentralLease | None = None
        self.active = asyncio.Event()  # set once this instance holds the lease and serves
        self.lease_lost = asyncio.Event()
        self._tz: tzinfo = UTC  # the venue's, once the settings are read
        self.ready = asyncio.Event()

    def _options(self, settings: TournamentSettings) -> ViewOptions:
        page = self.config.page
        return ViewOptions(venue=self.config.venue, title=page.title or settings.venue_name,
                           rows=page.rows, names=page.names)

    def health(self) -> dict[str, Any]:
        """What /healthz adds: the broker subscription, published standings, ingest counters
        and the tables' freshness (`link_status`)."""
        link = self.link
        counters = self.ingestor.counters().as_dict() if self.ingestor else {}
        subscribed = bool(link and link.subscribed.is_set())
        lease = self.lease
        return {"ok": subscribed, "subscribed": subscribed,
                "standings_published": link.last_version if link else 0,
                "ingest": counters, "link": self.link_status(), "role": "active",
                "instance": lease.holder if lease else None,
                "epoch": lease.epoch if lease else None}

    def link_status(self) -> dict[str, Any]:
        """What the page's connection indicator tells: ``state`` is "live" (subscribed to the
        broker and a table sent something within ``[page] stale_after_s``), "stale" (nothing
        since ``since_local``), "waiting" (no table has sent anything live yet) or "offline"
        (the broker is not reachable or the subscription not granted)."""
        link = self.link
        connected = bool(link and link.subscribed.is_set())
        last, tables = link.heard() if link else (None, 0)
        age = None if last is None else round(max(0.0, time.time() - last), 1)
        stale_after = self.config.page.stale_after_s
        if not connected:
            state = "offline"
        elif age is None:
            state = "waiting"
        else:
            state = "live" if age <= stale_after else "stale"
        since = (datetime.fromtimestamp(last, self._tz).strftime("%H:%M")
                 if last is not None else None)
        return {"state": state, "broker_connected": connected, "last_message_age_s": age,
                "since_local": since, "tables_seen": tables, "stale_after_s": stale_after}

    def _desk(self, engine: Engine, settings: TournamentSettings,
              link: ServiceLink, signer: Signer) -> list[BaseRoute] | None:
        if not self.config.http.desk_api:
            return None
        from leaderboard.desk_api.routes import desk_routes  # noqa: PLC0415

        return list(desk_routes(engine, settings, link, self.clock,
                                policy=self.config.desk_auth,
                                answer_wait=float(self.config.http.desk_answer_wait_s),
                                names=self.config.page.names,
                                commitment_valid=timedelta(
                                    minutes=self.config.retention.commitment_minutes),
                                signer=signer))

    async def run(self, stop: asyncio.Event) -> int:
        """Start everything, tell systemd READY, run until `stop`, shut down cleanly."""
        cfg = self.config
        settings = self.settings or read_tournament(cfg.tournament)
        signer = load_configured_key(cfg.signing_key, source=cfg.source,
                                     key="keys.signing_key")
        mqtt = mqtt_settings(cfg)
        engine = self.engine = configured_engine(cfg.database, source=cfg.source,
                                                 key="service.database")
        # Pinged from the first await: a long migration must not look like a hung service.
        watchdog = asyncio.create_task(self._watchdog(), name="leaderboard.watchdog")
        server: InLoopServer | None = None
        http_task: asyncio.Task[None] | None = None
        try:
            with database_answers(cfg.source, "service.database"):
                await asyncio.to_thread(upgrade, engine)
            loop = asyncio.get_running_loop()

            def on_lost(_why: str) -> None:  # called from a database worker thread
                loop.call_soon_threadsafe(self.lease_lost.set)

            lease = self.lease = CentralLease(engine, instance_name(cfg.instance),
                                              lease_s=cfg.lease_s, on_lost=on_lost)
            install_fence(engine, lease)  # from here on, only the lease holder commits
            gate = RoleGate(lease)
            server = self._server(gate)
            sock = listen(cfg.http.host, cfg.http.port, source=cfg.source, key="http.port",
                          host_key="http.host")
            self.port = sock.getsockname()[1]
            http_task = asyncio.create_task(server.serve(sockets=[sock]),
                                            name="leaderboard.http")
            if not await self._take_lease(stop, lease, server, http_task):
                self.notify.stopping()  # stopped as a standby
                _log.info("stopping", lease_lost=False)
                return 0
            for change in await asyncio.to_thread(enrol_tables, engine, cfg, self.clock()):
                _log.info("table_enrolment", change=change)
            await asyncio.to_thread(sign_head, engine, signer, self.clock())  # the audit chain
            code = await self._serve(stop, engine, settings, mqtt, signer, gate=gate,
                                     server=server, http_task=http_task)
            if code == 0:
                await asyncio.to_thread(sign_head, engine, signer, self.clock())  # at shutdown
                await asyncio.to_thread(lease.release)
            return code
        finally:
            if server is not None:
                server.should_exit = True
            if http_task is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await http_task
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
            engine.dispose()

    def _server(self, app: RoleGate) -> InLoopServer:
        tls = self.config.http
        return InLoopServer(uvicorn.Config(
            BodyDeadline(app, seconds=tls.body_wait_s, name="leaderboard.http"),
            log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=3,
            ssl_certfile=str(tls.tls_cert_file) if tls.tls_cert_file else None,
            ssl_keyfile=str(tls.tls_key_file) if tls.tls_key_file else None))

    async def _take_lease(self, stop: asyncio.Event, lease: CentralLease,
                          server: uvicorn.Server, http_task: asyncio.Task[None]) -> bool:
        """Wait as a standby until this instance takes the central lease; False if stopped
        first. READY=1 is sent once the gate listens: a standby is a running service."""
        said: str | None = None
        while not stop.is_set():
            if http_task.done():  # the web server failed to start (a TLS file, ...)
                await http_task
                raise RuntimeError("the web server stopped by itself")
            if server.started and said is None:
                said = ""
                self.notify.ready(f"standby instance {lease.holder}: waiting for the lease")
            try:
                seen = await asyncio.to_thread(lease.view)
                epoch = await asyncio.to_thread(lease.take) if seen.expired else None
                if epoch is not None:
                    _log.info("central_lease_taken", instance=lease.holder, epoch=epoch,
                              previous=seen.holder or None)
                    return True
                if said != seen.holder:
                    said = seen.holder
                    _log.info("central_standby", instance=lease.holder, active=seen.holder,
                              epoch=seen.epoch, expires_in_s=round(seen.expires_in_s, 1))
            except SQLAlchemyError as exc:
                _log.warning("central_lease_not_read", error=one_line(exc)[:200])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), lease.renew_every_s)
        return False

    async def _keep_lease(self, lease: CentralLease, stop: asyncio.Event) -> None:
        """Renew the lease every ``renew_every_s`` until ``stop`` or until it is lost."""
        while not stop.is_set() and lease.epoch is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), lease.renew_every_s)
            if stop.is_set():
                return
            try:
                await asyncio.to_thread(lease.renew)
            except SQLAlchemyError as exc:
                _log.warning("central_lease_not_renewed", instance=lease.holder,
                             error=one_line(exc)[:200])

    async def _ingest_while_held(self, link: ServiceLink, lease: CentralLease,
                                 stop: asyncio.Event) -> None:
        """Run the broker link while the lease is ours by its local deadline: past it the
        link stops (no reconnect with the ingest's client id) until a renewal succeeds."""
        while not stop.is_set() and lease.epoch is not None:
            if not lease.active:
                await asyncio.sleep(0.05)
                continue
            link_stop = asyncio.Event()

            async def guard(link_stop: asyncio.Event = link_stop) -> None:
                while lease.active and not stop.is_set():
                    await asyncio.sleep(0.05)
                link_stop.set()

            guarding = asyncio.create_task(guard(), name="leaderboard.lease_guard")
            try:
                await link.run(link_stop)
            except* LeaseLost:
                pass  # a batch refused by the fence: lease_lost is set, the service stops
            finally:
                guarding.cancel()
            if not stop.is_set() and lease.epoch is not None:
                _log.warning("central_ingest_paused", instance=lease.holder,
                             reason="the lease's renewals are late")

    async def _serve(self, stop: asyncio.Event, engine: Engine, settings: TournamentSettings,
                     mqtt: MqttSettings, signer: Signer, *, gate: RoleGate,
                     server: uvicorn.Server, http_task: asyncio.Task[None]) -> int:
        cfg = self.config
        options = self._options(settings)
        self._tz = settings.tz
        if self.full_recompute:
            feed = self.feed = StandingsFeed(
                lambda: standings(engine, settings, options, now=self.clock()),
                debounce=cfg.debounce_seconds, unavailable=connection_lost)
        else:
            live = self.standings = LiveStandings(engine, settings, options)
            feed = self.feed = StandingsFeed(lambda: live.document(self.clock()),
                                             debounce=cfg.debounce_seconds, leading=True,
                                             unavailable=connection_lost)
        await feed.refresh()
        link = self.link = ServiceLink(mqtt, signer, feed, venue=cfg.venue,
                                       client_id=cfg.mqtt.client_id,
                                       shared_group=cfg.mqtt.shared_group, clock=self.clock)
        self.ingestor = link.ingestor = Ingestor(
            engine, None, venue=cfg.venue, topic_root=cfg.topic_root, clock=self.clock,
            resend=link.resend, on_change=feed.changed)
        await self.ingestor.refresh_keys()
        gate.inner = create_app(feed, desk=self._desk(engine, settings, link, signer),
                                health=self.health, status=self.link_status,
                                page_seconds=cfg.page.page_seconds)
        lease = self.lease
        assert lease is not None  # taken before _serve
        # Stops every task on SIGTERM and at once when the lease is lost.
        ending = asyncio.Event()
        watch = asyncio.create_task(self._until_either(stop, self.lease_lost, ending))
        try:
            return await self._run_tasks(ending, engine=engine, feed=feed, link=link,
                                         lease=lease, signer=signer, gate=gate, server=server,
                                         http_task=http_task)
        finally:
            watch.cancel()

    async def _run_tasks(self, ending: asyncio.Event, *, engine: Engine, feed: StandingsFeed,
                         link: ServiceLink, lease: CentralLease, signer: Signer,
                         gate: RoleGate, server: uvicorn.Server,
                         http_task: asyncio.Task[None]) -> int:
        """The active instance's tasks until ``ending`` (SIGTERM, or the lease lost)."""
        cfg = self.config
        async with asyncio.TaskGroup() as tg:
            # The web server runs from the start (the gate); a failure of it ends the group.
            http = tg.create_task(_awaited(http_task), name="leaderboard.http")
            tg.create_task(self._ingest_while_held(link, lease, ending),
                           name="leaderboard.mqtt")
            feed_task = tg.create_task(feed.run(), name="leaderboard.standings")
            tg.create_task(keep_heads(engine, signer, self.clock, cfg.audit, ending),
                           name="leaderboard.audit_heads")
            tg.create_task(self._keep_lease(lease, ending), name="leaderboard.lease")
            if await self._started(ending, link, server):
                scheme = "https" if cfg.http.uses_tls else "http"
                url = f"{scheme}://{cfg.http.host}:{self.port}/"
                self.notify.ready(f"serving {url}; ingesting venue {cfg.venue}; active"
                                  f" instance {lease.holder}")
                self.ready.set()
                self.active.set()
                _log.info("ready", url=url, venue=cfg.venue, brokers=link.settings.where_all,
                          desk_api=cfg.http.desk_api, instance=lease.holder,
                          epoch=lease.epoch)
                await ending.wait()
            lost = self.lease_lost.is_set()
            if lost:
                gate.inner = None  # 503 "standby" from now on
                self.notify.status("the central lease was lost: stepping down")
            else:
                self.notify.stopping()
            _log.info("stopping", lease_lost=lost)
            ending.set()
            await feed.close()
            feed_task.cancel()
            http.cancel()  # the server itself stops in run(), after the last head
        return EXIT_LEASE_LOST if self.lease_lost.is_set() else 0

    @staticmethod
    async def _until_either(first: asyncio.Event, second: asyncio.Event,
                            then: asyncio.Event) -> None:
        """Set ``then`` once ``first`` or ``second`` is set."""
        waits = {asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        then.set()

    async def _started(self, stop: asyncio.Event, link: ServiceLink,
                       server: uvicorn.Server) -> bool:
        """Wait for the broker subscription and the web server; False if stopped first."""
        waiting = asyncio.ensure_future(link.subscribed.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            stopped.cancel()
        while not server.started and not stop.is_set():
            await asyncio.sleep(0.05)
        return not stop.is_set()

    async def _watchdog(self) -> None:
        interval = self.notify.watchdog_interval()
        if interval is None:
            return
        while True:
            await asyncio.sleep(interval / 2)
            self.notify.watchdog()


async def _awaited(task: asyncio.Task[None]) -> None:
    """Wait for ``task`` without cancelling it when cancelled (its owner ends it)."""
    await asyncio.shield(task)


async def run_service(service: LeaderboardService) -> int:
    """Run the service until SIGTERM / SIGINT; the `showdown leaderboard serve` entry point."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    fix_malloc_mmap_threshold()  # the desk's scrypt working memory is returned after each call
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await service.run(stop)
    except BaseExceptionGroup as group:
        leaves = exception_leaves(group)
        if len(leaves) == 1:  # one task failed: report its error, not the group
            raise leaves[0] from None
        raise
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
