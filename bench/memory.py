"""The table daemon's resident memory at READY on a real table config, and what it is made of.

The daemon is started as systemd starts it (`python -m cli table run --config FILE`
with a `NOTIFY_SOCKET`, a real AF_UNIX datagram socket made here) on a real, non-demo table
config: no `[sim]` section, the machine's Mosquitto (127.0.0.1:1883, or `--mosquitto`), the
real serial shoe driver on `showdown simulate shoe` (another process, on a pseudo-terminal),
the chip float keyed by hand (`[rfid] kind = "manual"`, with the shipped chip registry), the
console on a free port. At READY=1 it prints VmRSS and VmHWM (/proc/PID/status) and the
anonymous and file-backed parts (RssAnon, RssFile: the heap versus mapped code and
libraries), then stops it with SIGTERM.

The breakdown: the interpreter alone (`python -c pass`) in the same run, then the modules the
daemon imported, in its own order (from `-X importtime`, which it ran with), imported again
one top-level module at a time in a fresh interpreter, the resident growth of each summed by
package; what is left between all those imports and READY is the daemon's own data (journal,
state, console, threads).

Run: ``.venv/bin/python bench/memory.py [--mosquitto HOST:PORT] [--goal-mib 80]``. Exit 0,
1 when the daemon did not reach READY or did not stop cleanly, 2 when no broker answers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support.latency_tables import BenchTable, forget_on_broker

ROOT = Path(__file__).resolve().parents[1]
_TREE: list[Path] = [ROOT]  # the source tree measured (--tree)
GOAL_MIB = 80.0
STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
READY_TIMEOUT_S = 120.0
OURS = ("controller", "game", "wire", "runtime", "drivers", "simulators", "leaderboard", "cli",
        "floor", "deploy")
# Run in a fresh interpreter: import each group of modules given on stdin ([[group,
# [module, ...]], ...]), in order, and print the resident size (kB) after each group and the
# imports that failed, as JSON.
_IMPORTER = """
import importlib, json, sys
def rss():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS:'))
out = [['(start)', rss(), []]]
for group, names in json.load(sys.stdin):
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(name + ': ' + repr(exc))
    out.append([group, rss(), failed])
print(json.dumps(out))
"""


def tree() -> Path:
    """The source tree whose daemon is measured: this one, or --tree."""
    return _TREE[0]


def proc_status(pid: int) -> dict[str, int]:
    """kB figures of /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile, RssShmem)."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in STATUS_KEYS:
                out[name] = int(value.split()[0])
    return out


def mib(kib: float) -> str:
    """kB as MiB, one decimal."""
    return f"{kib / 1024:.1f}"


def broker_answers(host: str, port: int) -> bool:
    """Whether something accepts TCP connections at host:port."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def start_shoe(scratch: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """`showdown simulate shoe` in its own process, and the stable link to its pty."""
    link = scratch / "shoe"
    shoe = subprocess.Popen(  # noqa: S603 (our own interpreter)
        [sys.executable, "-m", "cli", "simulate", "shoe", "--seed", "15", "--link",
         str(link), "--duration", "600"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=tree(), env={**os.environ, "PYTHONPATH": str(tree())})
    deadline = time.monotonic() + 60
    while not link.exists():
        if shoe.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the simulated shoe did not start")
        time.sleep(0.05)
    return shoe, link


def table_config(scratch: Path, broker: str, shoe: Path) -> BenchTable:
    """A real table's config (no [sim]) with unique ids and a fresh signing key."""
    from wire.signing import Signer, save_private_key  # noqa: PLC0415

    token = secrets.token_hex(3)
    venue, table = f"bench-{token}", f"m-{token}"
    signer = Signer.generate(table)
    save_private_key(signer, scratch / "table.key")
    config = scratch / "table.toml"
    config.write_text(f"""\
[table]
venue = "{venue}"
id = "{table}"
journal = "journal.sqlite"

[files]
tournament = {json.dumps(str(tree() / "config" / "tournament.toml"))}
paytables = {json.dumps(str(tree() / "config" / "paytables.toml"))}
chips = {json.dumps(str(tree() / "config" / "chips.example.csv"))}
chip_set = "showdown-2026"

[keys]
table_key = "table.key"

[shoe]
kind = "hardware"
url = {json.dumps(str(shoe))}

[rfid]
kind = "manual"

[console]
port = 0
acknowledge_with = ["pin"]

[mqtt]
broker = {json.dumps(broker)}

[api]
socket = "api.sock"

[log]
format = "json"
level = "warning"
""")
    return BenchTable(dir=scratch, venue=venue, table=table, config_path=config,
                      public_key=signer.public_key.base64)


def wait_ready(notify: socket.socket, daemon: subprocess.Popen[bytes]) -> float:
    """Seconds until READY=1 arrives on the notify socket (raises on exit or timeout)."""
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S:
        if daemon.poll() is not None:
            raise RuntimeError(f"the daemon exited ({daemon.returncode}) before READY")
        with contextlib.suppress(TimeoutError):
            if "READY=1" in notify.recv(4096).decode(errors="replace").splitlines():
                return time.monotonic() - started
    raise RuntimeError("no READY=1 in time")


def run_daemon(config: Path, scratch: Path) -> tuple[dict[str, int], float, list[str], int]:
    """Start the daemon as systemd does; (its /proc status at READY, seconds to READY, the
    top-level modules it imported in order, its exit code on SIGTERM)."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(scratch / "notify.sock"))
    notify.settimeout(0.2)
    env = {k: v for k, v in os.environ.items() if k not in ("WATCHDOG_PID", "LISTEN_FDS")}
    env.update(NOTIFY_SOCKET=str(scratch / "notify.sock"), WATCHDOG_USEC="10000000",
               PYTHONPATH=str(tree()))
    imports = scratch / "importtime.log"
    with (scratch / "daemon.log").open("wb") as out, imports.open("wb") as err:
        daemon = subprocess.Popen(  # noqa: S603 (our own interpreter and files)
            [sys.executable, "-X", "importtime", "-m", "cli", "table", "run",
             "--config", str(config)], stdout=out, stderr=err, env=env, cwd=tree())
    try:
        took = wait_ready(notify, daemon)
        status = proc_status(daemon.pid)
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
        try:
            code = daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            code = daemon.wait()
        notify.close()
    return status, took, imported_modules(imports.read_text(errors="replace")), code


def imported_modules(log: str) -> list[str]:
    """Every module the daemon imported, in the order each finished (dependencies first)."""
    names: list[str] = []
    for line in log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package" and name not in names:
                names.append(name)
    return names


def group_of(module: str) -> str:
    """What a module's memory is counted under: the standard library as one group, a
    dependency by its top-level package, ours by package and subpackage or module."""
    parts = module.split(".")
    if parts[0] in OURS:
        return ".".join(parts[:2])
    if parts[0] in sys.stdlib_module_names or parts[0].startswith("_"):
        return "(standard library)"
    return parts[0]


def import_growth(modules: list[str]) -> tuple[int, list[tuple[str, int]], list[str]]:
    """Resident kB of a fresh interpreter, then the growth of each group of `modules`
    (largest first), and the imports that failed other than not found (the daemon's own
    optional imports that failed: Windows modules, extras not installed).

    The groups are imported whole, in the order the daemon finished its first module of each:
    a module finishes after its dependencies, so a dependency's group comes first and is
    counted under its own name, not under the group that pulled it in."""
    groups: dict[str, list[str]] = {}
    for name in modules:
        groups.setdefault(group_of(name), []).append(name)
    done = subprocess.run([sys.executable, "-c", _IMPORTER],  # noqa: S603 (our interpreter)
                          input=json.dumps(list(groups.items())), capture_output=True,
                          text=True, cwd=tree(), timeout=300, check=True,
                          env={**os.environ, "PYTHONPATH": str(tree())})
    steps = json.loads(done.stdout)
    growth = [(group, after - before) for (_, before, _), (group, after, _)
              in itertools.pairwise(steps)]
    failed = [f for _, _, errors in steps for f in errors if "ModuleNotFoundError" not in f]
    return steps[0][1], sorted(growth, key=lambda kv: -kv[1]), failed


def baseline_kib() -> dict[str, int]:
    """`python -c pass`'s own /proc status at its end."""
    code = ("import json\nwith open('/proc/self/status') as f:\n"
            "    print(json.dumps({l.split(':')[0]: int(l.split()[1]) for l in f"
            f" if l.split(':')[0] in {STATUS_KEYS!r}}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: S603
                          timeout=60, check=True)
    return dict(json.loads(done.stdout))


def measure_daemon(mosquitto: str) -> tuple[dict[str, int], float, list[str], int]:
    """Run the shoe and the daemon in a scratch directory: what `run_daemon` returns; raises
    RuntimeError with the daemon's log when it did not reach READY."""
    host, _, port = mosquitto.rpartition(":")
    with tempfile.TemporaryDirectory(prefix="showdown-bench-memory-") as tmp:
        scratch = Path(tmp)
        shoe, link = start_shoe(scratch)
        table: BenchTable | None = None
        try:
            table = table_config(scratch, mosquitto, link)
            try:
                return run_daemon(table.config_path, scratch)
            except RuntimeError as exc:
                logs = [(scratch / n).read_text(errors="replace") for n in ("daemon.log",
                                                                            "importtime.log")]
                errors = [ln for ln in logs[1].splitlines() if not ln.startswith("import time")]
                raise RuntimeError(f"{exc}; its log:\n" + logs[0][-2000:]
                                   + "\n".join(errors[-20:])) from None
        finally:
            shoe.kill()
            shoe.wait()
            if table is not None:  # what it left on a shared broker: its status, its session
                asyncio.run(forget_on_broker(host, int(port), table))


def main() -> int:
    """Measure, print the figures and the breakdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mosquitto", default="127.0.0.1:1883", metavar="HOST:PORT")
    parser.add_argument("--goal-mib", type=float, default=GOAL_MIB)
    parser.add_argument("--top", type=int, default=14, help="packages listed by name")
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="measure the daemon of another checkout (e.g. main, for before)")
    args = parser.parse_args()
    _TREE[0] = args.tree.resolve()
    host, _, port = args.mosquitto.rpartition(":")
    if not broker_answers(host, int(port)):
        print(f"no broker answers on {args.mosquitto}: nothing measured")
        return 2
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs,"
          f" Python {platform.python_version()}, load average"
          f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        status, took, modules, code = measure_daemon(args.mosquitto)
    except RuntimeError as exc:
        print(f"WRONG {exc}")
        return 1
    base = baseline_kib()
    start, growth, failed = import_growth(modules)
    imported = sum(kib for _, kib in growth)
    rss = status["VmRSS"]
    print(f"tree {tree()}")
    print(f"table daemon on {args.mosquitto}, real serial shoe driver on a simulated shoe,"
          f" manual chip float: READY in {took:.2f} s, exit {code} on SIGTERM")
    print(f"at READY: VmRSS {mib(rss)} MiB, VmHWM {mib(status['VmHWM'])} MiB"
          f" (RssAnon {mib(status.get('RssAnon', 0))}, RssFile {mib(status.get('RssFile', 0))},"
          f" RssShmem {mib(status.get('RssShmem', 0))} MiB)")
    print(f"{'part':<40} {'MiB':>7}")
    print(f"{'interpreter (python -c pass)':<40} {mib(base['VmRSS']):>7}")
    print(f"{'imports (' + str(len(modules)) + ' modules), by package':<40}"
          f" {mib(imported):>7}")
    for name, kib in growth[:args.top]:
        print(f"  {name:<38} {mib(kib):>7}")
    rest = sum(kib for _, kib in growth[args.top:])
    print(f"  {'(' + str(max(0, len(growth) - args.top)) + ' other packages)':<38} {mib(rest):>7}")
    own = rss - start - imported
    print(f"{'the daemon own data (imports -> READY)':<40} {mib(own):>7}")
    print(f"{'(fresh interpreter in the import run)':<40} {mib(start):>7}")
    for failure in failed:
        print(f"note: re-importing {failure}")
    verdict = "PASS" if rss / 1024 < args.goal_mib else "MISS"
    print(f"{verdict} VmRSS at READY under {args.goal_mib:.0f} MiB: {mib(rss)} MiB")
    ok = code == 0
    print("result: " + ("OK" if ok else f"WRONG: exit {code} on SIGTERM"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
