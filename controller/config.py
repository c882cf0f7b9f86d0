"""The table daemon's configuration file (TOML), validated at start-up.

Every error names the file, the key and what was expected; unknown keys are refused so a typo
never silently falls back to a default. Relative paths are relative to the config file.
The format is documented in docs/table-config.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from controller.bench_config import BenchConfig, parse_bench
from controller.console_config import ConsoleConfig, parse_console
from controller.printer_config import PrinterConfig, parse_printer
from drivers.adapter import ConfigPlace, DeviceAdapter, Role
from drivers.registry import DriverLookupError, find_adapter
from game.errors import ConfigError
from runtime.config_paths import config_path
from runtime.logs import LOG_LEVELS
from runtime.settings_files import load_toml
from wire.mqtt import MqttSettings
from wire.mqtt_section import (
    KEEPALIVE_DEFAULT_S,
    Address,
    keepalive_problem,
    parse_brokers,
    read_credentials,
)
from wire.signing import KeyFormatError, load_configured_key, parse_public_key

__all__ = ["ApiConfig", "DeviceConfig", "JournalConfig", "MqttConfig",
           "SimConfig", "TableConfig", "read_table_config"]

T = TypeVar("T")
DeviceKind = Literal["hardware", "sim", "manual", "none"]
_KINDS: Mapping[Role, tuple[DeviceKind, ...]] = {
    "shoe": ("hardware", "sim", "manual"),
    "rfid": ("hardware", "sim", "manual"),
    "id_reader": ("hardware", "sim", "none"),
}
# The driver a section names when it names none: the project's own.
DEFAULT_DRIVERS: Mapping[Role, str] = {
    "shoe": "showdown-shoe", "rfid": "sr48", "id_reader": "serial-lines",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceConfig:
    """One device of the table: its kind (a real device, the driver on its simulator, manual
    entry by the dealer, or none: an ID reader), the driver chosen by name
    (`drivers.adapter`), and that driver's settings read from its keys of the section."""

    kind: DeviceKind
    driver: str = ""
    settings: Any = None  # the adapter's own settings object (None: kind = "none")
    adapter: DeviceAdapter | None = field(default=None, compare=False, repr=False)


def _no_id_reader() -> DeviceConfig:
    return DeviceConfig(kind="none")


@dataclass(frozen=True, slots=True, kw_only=True)
class MqttConfig:
    """The broker: "embedded" (in-process amqtt, the default), or the venue's broker or
    cluster: its addresses in the order tried (the link fails over to the next)."""

    brokers: tuple[Address, ...] = ()  # () = the embedded broker
    embedded_port: int = 0  # 0 = any free port (the embedded broker prints it)
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # password_file / credentials
    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    keepalive_s: int = KEEPALIVE_DEFAULT_S  # MQTT keepalive (D403)

    @property
    def embedded(self) -> bool:
        """True when the table runs its own in-process broker."""
        return not self.brokers

    @property
    def broker(self) -> str:
        """``"embedded"`` or the first broker's ``host:port`` (as `broker =` writes it)."""
        return "embedded" if self.embedded else "{}:{}".format(*self.brokers[0])

    def settings(self) -> MqttSettings:
        """The connection settings of the venue broker(s) (not for the embedded one)."""
        if self.embedded:
            raise ValueError("the embedded broker's settings come from its port")
        return MqttSettings.for_brokers(
            self.brokers, username=self.username, password=self.password, tls=self.tls,
            ca_file=self.ca_file, cert_file=self.cert_file, key_file=self.key_file,
            keepalive_s=self.keepalive_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalConfig:
    """[journal]: checkpoints and rotation of the journal file (docs/journal.md)."""

    checkpoints: bool = True  # off: every start verifies and replays the whole journal
    checkpoint_every: int = 500  # inputs between checkpoints (at the next safe point)
    rotate: Literal["month", "tournament", "never"] = "month"  # a new file at start-up


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiConfig:
    """The local API socket for the dealer's console."""

    socket: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class SimConfig:
    """A simulated table (a `[sim]` section, or a device of kind "sim"): the simulators'
    seed, and the virtual desk and dealer only when named (`virtual_desk`, `virtual_dealer`:
    both off by default; decision D317)."""

    seed: int = 2026
    virtual_desk: bool = False  # a virtual desk sends the roster, opens heats, seats players
    virtual_dealer: bool = False  # and a virtual dealer plays the hands (needs virtual_desk)
    desk_key: Path | None = None  # the virtual desk's private key (enrolled in [keys.desk])
    players: int = 3
    stage: str = "qualifying"
    heats: int = 1  # how many heats the virtual desk runs before the dealer stops
    hand_pause: float = 0.0  # seconds between hands, for watching a demo


@dataclass(frozen=True, slots=True, kw_only=True)
class TableConfig:
    """Everything the daemon needs to start."""

    source: str
    venue: str
    table: str
    journal: Path
    tournament: Path | None
    paytables: Path | None
    chips: Path | None
    chip_set: str | None
    marker_set: str
    table_key: Path
    desk_keys: Mapping[str, str]  # name -> base64 public key
    shoe: DeviceConfig
    rfid: DeviceConfig
    mqtt: MqttConfig
    api: ApiConfig
    console: ConsoleConfig = field(default_factory=ConsoleConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    printer: PrinterConfig = field(default_factory=PrinterConfig)  # [printer]: score slips
    journal_settings: JournalConfig = field(default_factory=JournalConfig)
    sim: SimConfig | None = None
    id_reader: DeviceConfig = field(default_factory=_no_id_reader)
    deal: Mapping[str, Any] = field(default_factory=dict)
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: str = "info"
    # [chips] count_tolerance_cents: a confirmed tray count differing from what the table
    # expected by more than this is an alert (D378)
    count_tolerance_cents: int = 0

    @property
    def simulated(self) -> bool:
        """True when every device is a simulator (a `[sim]` table with a simulated shoe, chip
        reader and ID reader or none): only such a table accepts its virtual people's
        credentials hashed at the simulator's cost (game.staff.SIMULATOR_COST)."""
        return (self.sim is not None and self.shoe.kind == "sim" and self.rfid.kind == "sim"
                and self.id_reader.kind in ("sim", "none"))


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str, base: Path) -> None:
        self.data, self.source, self.base = data, source, base

    def section(self, name: str, keys: set[str], *, required: bool = True) -> dict[str, Any]:
        value = self.data.get(name)
        if value is None:
            if required:
                raise ConfigError(self.source, f"[{name}]", "section missing")
            return {}
        if not isinstance(value, dict):
            raise ConfigError(self.source, name, "must be a table")
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ConfigError(self.source, f"{name}.{unknown[0]}",
                              f"unknown key (known: {', '.join(sorted(keys))})")
        return value

    def device_section(self, name: str, *, required: bool = True) -> dict[str, Any]:
        """A device's section: its keys are the driver's, checked once the driver is known."""
        value = self.data.get(name)
        if value is None:
            if required:
                raise ConfigError(self.source, f"[{name}]", "section missing")
            return {}
        if not isinstance(value, dict):
            raise ConfigError(self.source, name, "must be a table")
        return value

    def get(self, sec: str, d: Mapping[str, Any], key: str, kind: type[T], default: T | None = None,
            *, check: Callable[[T], str | None] | None = None) -> T:
        if key not in d:
            if default is None:
                raise ConfigError(self.source, f"{sec}.{key}", "missing")
            return default
        value = d[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise ConfigError(self.source, f"{sec}.{key}",
                              f"expected {kind.__name__}, got {type(value).__name__}")
        if check is not None and (why := check(value)):
            raise ConfigError(self.source, f"{sec}.{key}", why)
        return value  # type: ignore[no-any-return]

    def path(self, sec: str, d: Mapping[str, Any], key: str, *, required: bool = True
             ) -> Path | None:
        if key not in d and not required:
            return None
        # No resolve(): a symlink loop is reported by whoever opens the file, naming its key.
        return config_path(self.get(sec, d, key, str), self.base)


def _ident(value: str) -> str | None:
    ok = value and all(c.islower() or c.isdigit() or c == "-" for c in value)
    return None if ok else "use lower-case letters, digits and '-'"


def _device(r: _Reader, role: Role, d: Mapping[str, Any]) -> DeviceConfig:
    """A device section: ``kind``, ``driver`` (default: the project's own) and the driver's
    keys, read and checked by the driver's adapter."""
    kinds = _KINDS[role]
    kind = r.get(role, d, "kind", str, "none" if role == "id_reader" else None,
                 check=lambda v: None if v in kinds else f"must be one of {', '.join(kinds)}")
    driver = r.get(role, d, "driver", str, DEFAULT_DRIVERS[role])
    if kind == "none":
        extra = sorted(set(d) - {"kind", "driver"})
        if extra:  # keys left from a reader taken out: harmless, but say so rather than guess
            raise ConfigError(r.source, f"{role}.{extra[0]}",
                              "the section says kind = \"none\": remove the reader's keys or"
                              " set its kind")
        return DeviceConfig(kind="none", driver=driver)
    try:
        adapter = find_adapter(role, driver)
    except DriverLookupError as exc:
        raise ConfigError(r.source, f"{role}.driver", str(exc)) from None
    unknown = sorted(set(d) - {"kind", "driver"} - set(adapter.keys))
    if unknown:
        known = ", ".join(sorted({"kind", "driver", *adapter.keys}))
        raise ConfigError(r.source, f"{role}.{unknown[0]}",
                          f"unknown key for the {driver} driver (known: {known})")
    options = {k: v for k, v in d.items() if k not in ("kind", "driver")}
    place = ConfigPlace(source=r.source, section=role, base=r.base, kind=kind)
    settings = adapter.configure(options, place)
    return DeviceConfig(kind=kind, driver=driver, settings=settings,  # type: ignore[arg-type]
                        adapter=adapter)


def _mqtt(r: _Reader, m: dict[str, Any]) -> MqttConfig:
    """[mqtt]: broker or brokers, and credentials (a credentials file and/or the keys)."""
    creds_path = r.path("mqtt", m, "credentials_file", required=False)
    creds = read_credentials(creds_path, source=r.source) if creds_path is not None else {}
    brokers = parse_brokers(m, source=r.source, embedded=True)
    if brokers is None:
        brokers = ((creds["host"], creds["port"]),) if "host" in creds and "port" in creds \
            else ()
    if not brokers:
        given = sorted(set(m) & {"credentials_file", "username", "password_file", "tls",
                                 "ca_file", "cert_file", "key_file"})
        if given:
            raise ConfigError(r.source, f"mqtt.{given[0]}",
                              "is for a venue broker, but the table runs its embedded one:"
                              ' add broker = "host:port" or brokers = ["host:port", ...]')
    elif "embedded_port" in m:
        raise ConfigError(r.source, "mqtt.embedded_port",
                          "is for the embedded broker only (this table connects to"
                          f" {', '.join(f'{h}:{p}' for h, p in brokers)})")
    password_file = r.path("mqtt", m, "password_file", required=False)
    password: str | None = creds.get("password")
    if password_file is not None:
        try:
            password = password_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(r.source, "mqtt.password_file", f"cannot read {password_file}:"
                              f" {getattr(exc, 'strerror', None) or exc}") from None
        if not password:
            raise ConfigError(r.source, "mqtt.password_file", f"{password_file} is empty")
    username = r.get("mqtt", m, "username", str, "") or creds.get("username") or None
    if password is not None and username is None:
        raise ConfigError(r.source, "mqtt.password_file", "a password without mqtt.username")

    def file(name: str) -> Path | None:
        given = r.path("mqtt", m, name, required=False)
        return given if given is not None else (Path(creds[name]) if name in creds else None)

    key_file = file("key_file")
    cert_file = file("cert_file")
    if key_file is not None and cert_file is None:
        raise ConfigError(r.source, "mqtt.key_file", "given without mqtt.cert_file")
    return MqttConfig(
        brokers=brokers,
        embedded_port=r.get("mqtt", m, "embedded_port", int, 0,
                            check=lambda v: None if 0 <= v <= 65535 else "must be 0..65535"),
        username=username, password=password,
        tls=r.get("mqtt", m, "tls", bool, bool(creds.get("tls", False))),
        ca_file=file("ca_file"), cert_file=cert_file, key_file=key_file,
        keepalive_s=r.get("mqtt", m, "keepalive_s", int, KEEPALIVE_DEFAULT_S,
                          check=keepalive_problem),
    )


def _virtual(r: _Reader, s: Mapping[str, Any], desk: Mapping[str, Any]) -> dict[str, Any]:
    """[sim] virtual_desk, virtual_dealer and desk_key: nothing virtual unless named; the
    virtual desk signs with the key file `desk_key` names, enrolled under [keys.desk]."""
    virtual_desk = r.get("sim", s, "virtual_desk", bool, False)
    virtual_dealer = r.get("sim", s, "virtual_dealer", bool, False)
    if virtual_dealer and not virtual_desk:
        raise ConfigError(r.source, "sim.virtual_dealer",
                          "the virtual dealer plays at a heat the virtual desk opens: set"
                          " sim.virtual_desk = true (and sim.desk_key)")
    desk_key = r.path("sim", s, "desk_key", required=False)
    if desk_key is None:
        if virtual_desk:
            raise ConfigError(r.source, "sim.desk_key",
                              "missing: virtual_desk = true needs the virtual desk's private"
                              " key file (`showdown keys generate --out FILE --name"
                              " virtual-desk`), its public key enrolled under [keys.desk]")
        return {"virtual_desk": False, "virtual_dealer": False, "desk_key": None}
    if not virtual_desk:
        raise ConfigError(r.source, "sim.desk_key",
                          "given without sim.virtual_desk = true (remove it, or name the"
                          " virtual desk)")
    signer = load_configured_key(desk_key, source=r.source, key="sim.desk_key")
    public = signer.public_key.base64
    if desk.get(signer.key_id) != public:
        raise ConfigError(r.source, "sim.desk_key",
                          f"the public key of {desk_key} is not enrolled under [keys.desk]:"
                          f' add {signer.key_id} = "{public}"')
    return {"virtual_desk": True, "virtual_dealer": virtual_dealer, "desk_key": desk_key}


def parse_table_config(data: Mapping[str, Any], *, source: str, base: Path) -> TableConfig:
    """Validate a parsed TOML document into a TableConfig."""
    r = _Reader(data, source, base)
    top = set(data) - {"table", "files", "shoe", "rfid", "id_reader", "mqtt", "keys", "api",
                       "sim", "deal", "log", "console", "journal", "bench", "printer",
                       "chips"}
    if top:
        raise ConfigError(source, sorted(top)[0], "unknown section")
    t = r.section("table", {"venue", "id", "journal"})
    f = r.section("files", {"tournament", "paytables", "chips", "chip_set", "marker_set"},
                  required=False)
    k = r.section("keys", {"table_key", "desk"})
    desk = k.get("desk", {})
    if not isinstance(desk, dict) or not all(isinstance(v, str) for v in desk.values()):
        raise ConfigError(source, "keys.desk", "a table of name = \"base64 public key\"")
    for name, text in desk.items():
        try:
            parse_public_key(name, text)
        except KeyFormatError as exc:
            raise ConfigError(source, f"keys.desk.{name}",
                              f"{exc}: give the base64 part of the desk's line from"
                              " `showdown keys show`") from None
    m = r.section("mqtt", {"broker", "brokers", "credentials_file", "embedded_port", "username",
                           "password_file", "tls", "ca_file", "cert_file", "key_file",
                           "keepalive_s"},
                  required=False)
    a = r.section("api", {"socket"})
    s = r.section("sim", {"seed", "virtual_desk", "virtual_dealer", "desk_key", "players",
                          "stage", "heats", "hand_pause"}, required=False)
    lg = r.section("log", {"format", "level"}, required=False)
    jn = r.section("journal", {"checkpoints", "checkpoint_every", "rotate"}, required=False)
    ch = r.section("chips", {"count_tolerance_cents"}, required=False)
    shoe = _device(r, "shoe", r.device_section("shoe"))
    rfid = _device(r, "rfid", r.device_section("rfid"))
    id_reader = _device(r, "id_reader", r.device_section("id_reader", required=False))
    sim = None
    if "sim" in data or "sim" in (shoe.kind, rfid.kind):
        sim = SimConfig(
            seed=r.get("sim", s, "seed", int, 2026),
            **_virtual(r, s, desk),
            players=r.get("sim", s, "players", int, 3, check=lambda v: None if 1 <= v <= 6
                          else "must be 1..6"),
            stage=r.get("sim", s, "stage", str, "qualifying",
                        check=lambda v: None if v in ("qualifying", "semi_final", "final")
                        else "must be qualifying, semi_final or final"),
            heats=r.get("sim", s, "heats", int, 1, check=lambda v: None if v >= 0
                        else "must be >= 0"),
            hand_pause=r.get("sim", s, "hand_pause", float, 0.0,
                             check=lambda v: None if 0 <= v <= 60 else "must be 0..60"),
        )
    deal = data.get("deal", {})
    if not isinstance(deal, dict):
        raise ConfigError(source, "deal", "must be a table")
    fmt = r.get("log", lg, "format", str, "auto",
                check=lambda v: None if v in ("auto", "json", "console") else
                "must be auto, json or console")
    return TableConfig(
        source=source,
        venue=r.get("table", t, "venue", str, check=_ident),
        table=r.get("table", t, "id", str, check=_ident),
        journal=r.path("table", t, "journal"),  # type: ignore[arg-type]
        tournament=r.path("files", f, "tournament", required=False),
        paytables=r.path("files", f, "paytables", required=False),
        chips=r.path("files", f, "chips", required=False),
        chip_set=r.get("files", f, "chip_set", str, "") or None,
        marker_set=r.get("files", f, "marker_set", str, "bonus-marker"),
        table_key=r.path("keys", k, "table_key"),  # type: ignore[arg-type]
        desk_keys=dict(desk),
        shoe=shoe,
        rfid=rfid,
        mqtt=_mqtt(r, m),
        api=ApiConfig(socket=r.path("api", a, "socket")),  # type: ignore[arg-type]
        console=parse_console(data.get("console"), source=source, base=base),
        bench=parse_bench(data.get("bench"), source=source, simulated="sim" in (
            shoe.kind, rfid.kind, id_reader.kind)),
        printer=parse_printer(data.get("printer"), source=source, base=base),
        journal_settings=JournalConfig(
            checkpoints=r.get("journal", jn, "checkpoints", bool, True),
            checkpoint_every=r.get("journal", jn, "checkpoint_every", int, 500,
                                   check=lambda v: None if 1 <= v <= 1_000_000
                                   else "must be 1..1000000"),
            rotate=r.get("journal", jn, "rotate", str, "month",  # type: ignore[arg-type]
                         check=lambda v: None if v in ("month", "tournament", "never")
                         else "must be month, tournament or never"),
        ),
        sim=sim,
        id_reader=id_reader,
        deal=deal,
        log_format=fmt,  # type: ignore[arg-type]
        log_level=r.get("log", lg, "level", str, "info",
                        check=lambda v: None if v.lower() in LOG_LEVELS
                        else f"must be one of {', '.join(LOG_LEVELS)}"),
        count_tolerance_cents=r.get("chips", ch, "count_tolerance_cents", int, 0,
                                    check=lambda v: None if 0 <= v <= 100_000_000
                                    else "must be a whole number of cents, 0 to 100000000"),
    )


def read_table_config(path: Path) -> TableConfig:
    """Read and validate a table config file; errors name the file and key."""
    data = load_toml(path)
    return parse_table_config(data, source=str(path), base=path.resolve().parent)
