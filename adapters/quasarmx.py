"""The Metratec QuasarMX chip readers as the table config chooses them:
``[rfid] driver = "metratec-quasarmx"`` (docs/protocols/metratec-quasarmx.md).

    [rfid]
    kind = "hardware"
    driver = "metratec-quasarmx"
    stall_seconds = 2.0
    [[rfid.readers]]
    url = "/dev/serial/by-id/usb-metratec_QuasarMX_1234-if00-port0"
    antennas = { "1" = "1/ante", "2" = "1/odds", "3" = "1/play", "4" = "1/trips_plus" }
    [[rfid.readers]]
    host = "10.0.7.21"            # port = 10001 by default
    antennas = { "1.1" = "2/ante", "1.2" = "2/odds" }   # antenna 1, multiplexer channels

An antenna key is "A" (antenna 1..4) or "A.C" (channel C 1..4 of a multiplexer on antenna
A); a value is "seat/spot" with a seat 1..6 and a spot of `drivers.readings.SPOTS`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any, Final

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.quasar import QuasarChipReader
from drivers.quasar_probe import probe_reader
from drivers.quasar_settings import (
    ANTENNAS,
    CHANNELS,
    DEFAULT_TCP_PORT,
    QuasarLink,
    QuasarSettings,
    port_name,
    port_of,
)
from drivers.readings import SPOTS, SpotId
from game.errors import ConfigError

__all__ = ["ADAPTER", "QuasarMxAdapter"]

_ANTENNA_KEY: Final = re.compile(r"([1-9])(?:\.([1-9]))?")
_SPOT_VALUE: Final = re.compile(r"([1-9])/([a-z_0-9]+)")


class QuasarMxAdapter:
    """The adapter object registered as ``metratec-quasarmx`` in ``showdown.rfid``."""

    role: Role = "rfid"
    name = "metratec-quasarmx"
    summary = "Metratec QuasarMX HF readers (ISO 15693), USB serial or TCP, several per table"
    keys: Mapping[str, str] = {
        "readers": "the readers: an array of tables, each with url (a serial device) or host"
                   " (+ port, default 10001), and antennas: {\"1\" | \"1.3\" = \"seat/spot\"}",
        "stall_seconds": "seconds a reader may leave a command unanswered before it counts as"
                         " stalled and is reopened (default 2.0)",
        "sweep_pause": "seconds to wait between two sweeps of every spot (default 0: sweep"
                       " continuously)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> QuasarSettings:
        """`QuasarSettings` from the section's keys; a bad value is ``place.error``."""
        unknown = sorted(set(options) - set(self.keys))
        if unknown:
            raise place.error(unknown[0], f"not a key of the {self.name} driver"
                                          f" (its keys: {', '.join(self.keys)})")
        raw = options.get("readers")
        if not isinstance(raw, list) or not raw:
            raise place.error("readers", "give at least one reader: [[rfid.readers]] with url"
                                         " or host, and antennas")
        readers: list[QuasarLink] = []
        seen: dict[SpotId, str] = {}
        for i, item in enumerate(raw, 1):
            readers.append(_reader(item, f"readers[{i}]", place, seen))
        kw: dict[str, float] = {}
        for key, default in (("stall_seconds", 2.0), ("sweep_pause", 0.0)):
            value = options.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise place.error(key, f"a number of seconds, got {value!r}")
            if value < 0 or (key == "stall_seconds" and not 0.1 <= value <= 60):
                raise place.error(key, "0.1..60 seconds" if key == "stall_seconds"
                                  else "0 or more seconds")
            kw[key] = float(value)
        try:
            return QuasarSettings(readers=tuple(readers), stall_seconds=kw["stall_seconds"],
                                  sweep_pause=kw["sweep_pause"])
        except ConfigError as exc:
            raise place.error("readers", exc.reason) from None

    def open(self, settings: QuasarSettings, context: DriverContext) -> QuasarChipReader:
        """The driver on the configured readers (not yet entered)."""
        return QuasarChipReader(settings, name=context.name)

    def simulate(self, settings: QuasarSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation:
        """One simulated QuasarMX per configured reader on one felt (a pty for a reader
        configured by url, TCP on 127.0.0.1 for one configured by host), the driver on them;
        the readers keep the real one's timing, ``context.sim_speed`` times faster."""
        from simulators.quasar_table import QuasarTable, ReaderPlan  # noqa: PLC0415

        plans = [ReaderPlan(ports=link.antennas,
                            transport="tcp" if link.host is not None else "pty")
                 for link in settings.readers]
        table = QuasarTable(plans, registry=context.registry, seed=context.seed,
                            speed=context.sim_speed).start()
        stack.callback(table.stop)
        driver = QuasarChipReader(replace(settings, readers=table.links()), name=context.name)
        return Simulation(device=driver, simulator=table)

    def probe(self, settings: QuasarSettings) -> Probe:
        """Each reader's model, firmware and serial number (doctor); ok when every reader
        answers as a QuasarMX with firmware 2.18 or newer."""
        found, problems = [], []
        model = firmware = None
        for link in settings.readers:
            answer = probe_reader(link, timeout=settings.stall_seconds,
                                  baudrate=settings.baudrate)
            rev = answer.revision
            if rev is None:
                problems.append(f"{link.where}: {answer.error}")
                continue
            model, firmware = rev.model, rev.firmware_text
            said = f"{rev.model} {answer.serial or '?'} firmware {rev.firmware_text}"
            if rev.model != settings.model:
                problems.append(f"{link.where}: a {rev.model}, not a {settings.model}")
            elif rev.firmware_version < settings.min_firmware:
                problems.append(f"{link.where}: firmware {rev.firmware_text} is too old")
            found.append(f"{said} at {link.where}")
        if problems:
            return Probe(ok=False, detail="; ".join(problems), model=model, firmware=firmware,
                         fix="check the reader's cable, power and address (docs/operations/"
                             "chip-readers.md); a QuasarMX needs firmware 2.18 or newer")
        return Probe(ok=True, detail="; ".join(found), model=model, firmware=firmware)


def _reader(item: object, key: str, place: ConfigPlace, seen: dict[SpotId, str]) -> QuasarLink:
    if not isinstance(item, Mapping):
        raise place.error(key, "a reader is a table with url or host, and antennas")
    extra = sorted(set(item) - {"url", "host", "port", "antennas"})
    if extra:
        raise place.error(f"{key}.{extra[0]}", "not a reader key (url, host, port, antennas)")
    url, host = item.get("url"), item.get("host")
    if (url is None) == (host is None):
        raise place.error(key, "give url (a serial device) or host (TCP), one of them")
    for name, value in (("url", url), ("host", host)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise place.error(f"{key}.{name}", f"a non-empty string, got {value!r}")
    port = item.get("port", DEFAULT_TCP_PORT)
    if url is not None and "port" in item:
        raise place.error(f"{key}.port", "a TCP port goes with host, not with url")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise place.error(f"{key}.port", f"a TCP port 1..65535, got {port!r}")
    antennas = item.get("antennas")
    if not isinstance(antennas, Mapping) or not antennas:
        raise place.error(f"{key}.antennas", "map at least one antenna: {\"1\" = \"1/ante\"}")
    ports: dict[int, SpotId] = {}
    for name, value in antennas.items():
        where = f"{key}.antennas.{name}"
        number = _port(str(name), where, place)
        if number in ports:
            raise place.error(where, f"the same antenna port as \"{port_name(number)}\"")
        spot = _spot(value, where, place)
        if spot in seen:
            raise place.error(where, f"seat {spot.seat} {spot.spot} is mapped twice (also"
                                     f" {seen[spot]})")
        seen[spot] = where
        ports[number] = spot
    return QuasarLink(url=place.path(url) if url is not None else None,
                      host=host.strip() if host is not None else None, port=port,
                      antennas=ports)


def _port(name: str, where: str, place: ConfigPlace) -> int:
    match = _ANTENNA_KEY.fullmatch(name)
    if match is None:
        raise place.error(where, f"an antenna is \"1\"..\"{ANTENNAS}\", or \"A.C\" for channel"
                                 f" C of a multiplexer on antenna A, got {name!r}")
    antenna, channel = int(match[1]), int(match[2]) if match[2] else None
    try:
        return port_of(antenna, channel)
    except ValueError as exc:
        raise place.error(where, f"{exc} (a QuasarMX has antennas 1..{ANTENNAS},"
                                 f" multiplexer channels 1..{CHANNELS})") from None


def _spot(value: object, where: str, place: ConfigPlace) -> SpotId:
    match = _SPOT_VALUE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise place.error(where, f"a spot is \"seat/spot\" such as \"2/ante\", got {value!r}")
    seat, spot = int(match[1]), match[2]
    if not 1 <= seat <= 6:
        raise place.error(where, f"seat {seat} is not 1..6")
    if spot not in SPOTS:
        raise place.error(where, f"unknown spot {spot!r}; spots are {', '.join(SPOTS)}")
    return SpotId(seat, spot)


ADAPTER = QuasarMxAdapter()
