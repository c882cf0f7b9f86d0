"""Carrying out an installation plan: each step is checked against the machine and applied
only where it differs, so a second run changes nothing and says so.

Everything is written under ``root`` (``/`` on the machine itself, a prefix for tests and image
builders). Owners and groups are set only when running as root and the names exist; under a
prefix, `systemd-sysusers` creates the user at the image's first boot and systemd's
StateDirectory= gives the service its directories.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy import broker_config as bc
from deploy import certs
from deploy.steps import (
    BrokerFiles,
    Certificate,
    Directory,
    EnableUnit,
    EnrolmentFile,
    File,
    KeyPair,
    Step,
    SystemUsers,
    VenueCa,
)
from deploy.validate import read_under_root
from game.errors import ConfigError
from runtime.files import replace_text
from wire.signing import Signer, SigningError, load_private_key, save_private_key

__all__ = ["Executor", "InstallError", "Outcome"]

BrokerRunner = Callable[[Sequence[str]], None]


class InstallError(Exception):
    """A step could not be carried out; the message names the step's file and the cause."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one step: changed (or would be, in a dry run) and notes for people."""

    step: Step
    changed: bool
    notes: tuple[str, ...] = ()


class Executor:
    """Checks and applies steps under ``root``; ``dry_run`` only checks. ``broker_runner``
    writes the broker's files (`showdown broker config`'s work, given by the command line)."""

    def __init__(self, root: Path, *, dry_run: bool = False,
                 broker_runner: BrokerRunner) -> None:
        self.root = root.resolve()
        self.dry_run = dry_run
        self.system = self.root == Path("/")
        # Under a prefix the owners are the image's users, not this machine's: never chown there.
        self.can_chown = self.system and hasattr(os, "geteuid") and os.geteuid() == 0
        self._broker = broker_runner
        self._notes: list[str] = []
        self._planned: dict[str, str] = {}
        self.checked: dict[str, tuple[str, ...]] | None = None  # a rehearsal's config notes

    # ---- public --------------------------------------------------------------------------

    def target(self, path: str) -> Path:
        """Where a target-machine path lives under the root."""
        return self.root / path.lstrip("/")

    def run(self, steps: Sequence[Step]) -> list[Outcome]:
        """Check (and unless dry-run, apply) every step in order."""
        outcomes = []
        # A config is checked against the files its plan writes (a dry run writes none).
        self._planned = {s.path: s.content for s in steps if isinstance(s, File)}
        rehearsed: dict[str, tuple[str, ...]] = {}
        if self.dry_run and any(isinstance(s, File) and s.validate and not self._is_done(s)
                                for s in steps):
            rehearsed = self._rehearse(steps)
        for step in steps:
            self._notes = []
            changed = not self._is_done(step)
            if changed and self.dry_run and isinstance(step, File) and step.validate:
                self._notes += rehearsed.get(step.path, ())
            if changed and not self.dry_run:
                self._apply(step)
            if not self.dry_run:
                self._set_owner_of(step)
            outcomes.append(Outcome(step, changed, tuple(self._notes)))
        if not self.dry_run and self.system:
            self._reload(outcomes)
        return outcomes

    def _rehearse(self, steps: Sequence[Step]) -> dict[str, tuple[str, ...]]:
        """A dry run's check of each config it would write: the whole plan carried out for
        real in a scratch copy of the root's files, so each config is read with the keys,
        certificates and credentials the real run would have made by then (D324). Returns
        each checked config's notes; a config the reader refuses stops the dry run naming the
        paths as the real run would."""
        with tempfile.TemporaryDirectory(prefix="showdown-dry-run-") as scratch:
            shadow_root = Path(scratch)
            for path in _touched(steps):
                _copy_in(self.target(path), shadow_root / path.lstrip("/"))
            shadow = Executor(shadow_root, broker_runner=self._broker)
            shadow.checked = {}
            try:
                shadow.run(steps)
            except InstallError as exc:
                raise InstallError(self._as_root(str(exc), shadow_root)) from None
            return {path: tuple(self._as_root(n, shadow_root) for n in notes)
                    for path, notes in shadow.checked.items()}

    def _as_root(self, text: str, shadow_root: Path) -> str:
        """``text`` with the scratch root's paths written as this root's."""
        mine = "" if self.system else str(self.root)
        return text.replace(str(shadow_root), mine)

    # ---- checks --------------------------------------------------------------------------

    def _is_done(self, step: Step) -> bool:
        return self._content_done(step) and self._owner_done(step)

    def _owner_done(self, step: Step) -> bool:
        """Owners count only where this run may set them (as root on the machine itself)."""
        if not self.can_chown:
            return True
        match step:
            case Directory() | File() | KeyPair():
                return _owned_by(self.target(step.path), step.owner, step.group)
            case Certificate():
                return _owned_by(self.target(step.key), step.owner, step.group)
        return True

    def _content_done(self, step: Step) -> bool:
        match step:
            case SystemUsers():
                user_ok = not self.system or _user_exists(step.user)
                return self._file_is(step.path, step.content, 0o644) and user_ok
            case Directory():
                p = self.target(step.path)
                return p.is_dir() and _mode(p) == step.mode
            case File():
                return self._file_is(step.path, step.content, step.mode)
            case EnableUnit():
                link = self._wants(step)
                return link.is_symlink() and os.readlink(link) == _unit_path(step.unit)
            case KeyPair():
                key, pub = self.target(step.path), self.target(step.path + ".pub")
                signer = self._signer(key) if key.exists() else None
                return signer is not None and pub.is_file() and \
                    pub.read_text("ascii").strip() == signer.public_key.enrolment_line()
            case EnrolmentFile():
                key = self.target(step.key)
                if not key.exists():
                    return False
                line = self._signer(key).public_key.enrolment_line() + "\n"
                return self._file_is(step.path, line, 0o644)
            case VenueCa():
                cert = self.target(step.cert)
                return cert.is_file() and self.target(step.key).is_file() and all(
                    self._file_is(c, cert.read_text("ascii"), 0o644) for c in step.copies)
            case Certificate():
                cert = self.target(step.cert)
                # A certificate is reissued when its CA or its names no longer match.
                key = self.target(step.key)
                return cert.is_file() and key.is_file() and _mode(key) == step.key_mode and \
                    certs.verifies(cert, self.target(step.ca_cert)) and \
                    certs.names_of(cert) == set(step.names)
            case BrokerFiles():
                return self._broker_done(step)
        raise TypeError(f"not a step: {step!r}")  # pragma: no cover

    def _file_is(self, path: str, content: str, mode: int) -> bool:
        p = self.target(path)
        try:
            return p.is_file() and p.read_text("utf-8") == content and _mode(p) == mode
        except (OSError, UnicodeDecodeError):
            return False

    def _signer(self, key: Path) -> Signer:
        try:
            return load_private_key(key)
        except SigningError as exc:
            raise InstallError(f"{exc}: the installer never replaces a key; move it away"
                               " or fix it, then run again") from None

    def _wants(self, step: EnableUnit) -> Path:
        return self.target(f"/etc/systemd/system/{step.wanted_by}.wants/{step.unit}")

    # ---- applying ------------------------------------------------------------------------

    def _apply(self, step: Step) -> None:
        match step:
            case SystemUsers():
                self._write(step.path, step.content, 0o644)
                if self.system:
                    self._command("systemd-sysusers", self.target(step.path).as_posix())
                else:
                    self._notes.append("the user is created by systemd-sysusers at first boot")
            case Directory():
                p = self.target(step.path)
                p.mkdir(parents=True, exist_ok=True)
                os.chmod(p, step.mode)
            case File():
                if step.validate is not None:
                    self._validated(step)
                self._write(step.path, step.content, step.mode)
            case EnableUnit():
                link = self._wants(step)
                link.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):
                    link.unlink()
                link.symlink_to(_unit_path(step.unit))
            case KeyPair():
                self._key_pair(step)
            case EnrolmentFile():
                line = self._signer(self.target(step.key)).public_key.enrolment_line()
                self._write(step.path, line + "\n", 0o644)
            case VenueCa():
                if not (self.target(step.cert).is_file() and self.target(step.key).is_file()):
                    self._certificates(lambda: certs.make_ca(
                        self.target(step.key), self.target(step.cert), name=step.name,
                        days=step.days))
                for copy in step.copies:
                    self._write(copy, self.target(step.cert).read_text("ascii"), 0o644)
            case Certificate():
                cert, key = self.target(step.cert), self.target(step.key)
                if not (cert.is_file() and key.is_file() and
                        certs.verifies(cert, self.target(step.ca_cert)) and
                        certs.names_of(cert) == set(step.names)):
                    self._certificates(lambda: certs.make_server_certificate(
                        cert=cert, key=key, ca_cert=self.target(step.ca_cert),
                        ca_key=self.target(step.ca_key), common_name=step.common_name,
                        names=step.names, days=step.days))
                os.chmod(key, step.key_mode)
            case BrokerFiles():
                self._broker_files(step)

    def _write(self, path: str, content: str, mode: int) -> None:
        p = self.target(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        replace_text(p, content, mode)

    def _validated(self, step: File) -> None:
        """Read the rendered config with the real reader, as the finished machine will."""
        if step.validate is None:
            return
        try:
            _, notes = read_under_root(step.validate, step.path, step.content, self.root,
                                       planned=self._planned)
        except ConfigError as exc:
            raise InstallError(f"{step.path}: {exc.key}: {exc.reason} (the rendered"
                               " config fails its own reader; it was not written)") from None
        self._notes += notes
        if self.checked is not None:
            self.checked[step.path] = tuple(notes)

    def _key_pair(self, step: KeyPair) -> None:
        key, pub = self.target(step.path), self.target(step.path + ".pub")
        if key.exists():
            signer = self._signer(key)
            if signer.key_id != step.key_id:
                raise InstallError(f"{step.path} holds key {signer.key_id!r}, not"
                                   f" {step.key_id!r}: move it away, then run again")
        else:
            key.parent.mkdir(parents=True, exist_ok=True)
            signer = Signer.generate(step.key_id)
            save_private_key(signer, key)
            self._notes.append(f"new key {signer.public_key.enrolment_line()}")
        pub.parent.mkdir(parents=True, exist_ok=True)
        self._write(step.path + ".pub", signer.public_key.enrolment_line() + "\n", 0o644)

    def _certificates(self, make: Callable[[], None]) -> None:
        try:
            make()
        except (certs.CertificateError, OSError) as exc:
            raise InstallError(str(exc)) from None

    # ---- broker ----------------------------------------------------------------------------

    def _broker_installed(self, step: BrokerFiles) -> dict[str, Path]:
        inst = self.target(step.install_dir)
        return {"mosquitto.conf": inst / "mosquitto.conf", "acl": inst / "acl",
                "passwd": inst / "passwd"}

    def _broker_done(self, step: BrokerFiles) -> bool:
        out = self.target(step.out)
        files = self._broker_installed(step)
        if not all(p.is_file() for p in files.values()) or not (out / "passwd").is_file():
            return False
        try:
            kept = bc.parse_password_file((out / "passwd").read_text("utf-8"))
        except (OSError, ConfigError):
            return False
        wanted = {*step.tables, "leaderboard", "desk"}
        same = all(files[name].read_bytes() == (out / name).read_bytes() for name in files)
        return set(kept) == wanted and same and (out / "acl").read_text("utf-8") == \
            bc.acl_file(self._broker_settings(step))

    def _broker_settings(self, step: BrokerFiles) -> bc.BrokerSettings:
        return bc.BrokerSettings(
            venue=step.venue, tables=step.tables, port=None, bind_address=None,
            acl_path=f"{step.install_dir}/acl", password_path=f"{step.install_dir}/passwd",
            persistence_dir=bc.DEFAULT_PERSISTENCE_DIR,
            tls=bc.TlsSettings(cafile=step.cafile, certfile=step.certfile,
                               keyfile=step.keyfile))

    def _broker_files(self, step: BrokerFiles) -> None:
        argv = ["broker", "config", "--venue", step.venue, "--tables", ",".join(step.tables),
                "--out", str(self.target(step.out)), "--install-dir", step.install_dir,
                "--cafile", step.cafile, "--certfile", step.certfile, "--keyfile",
                step.keyfile, "--host", step.host]
        self._broker(argv)
        out = self.target(step.out)
        for name, dest in self._broker_installed(step).items():
            self._write(str(dest.relative_to(self.root)), (out / name).read_text("utf-8"),
                        0o644 if name == "mosquitto.conf" else 0o640)
            self._chown(dest, "root", "mosquitto")
        creds = out / "credentials" / "leaderboard.toml"
        if creds.is_file():
            path = "/etc/showdown/mqtt-leaderboard.toml"
            self._write(path, creds.read_text("utf-8"), 0o640)
            self._chown(self.target(path), "root", "showdown")
        self._notes.append(f"credentials for the tables and the desk: {step.out}/credentials/"
                           " (carry each to its machine, then delete the copy you carried)")

    # ---- owners, system --------------------------------------------------------------------

    def _set_owner_of(self, step: Step) -> None:
        match step:
            case Directory() | File():
                self._chown(self.target(step.path), step.owner, step.group)
            case KeyPair():
                self._chown(self.target(step.path), step.owner, step.group)
            case Certificate():
                self._chown(self.target(step.key), step.owner, step.group)

    def _chown(self, path: Path, owner: str, group: str) -> None:
        if not self.can_chown or (owner == "root" and group == "root"):
            return
        try:
            uid, gid = pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
        except KeyError:
            self._notes.append(f"{path}: owner {owner}:{group} not set (no such user or group"
                               " yet)")
            return
        info = path.lstat()
        if (info.st_uid, info.st_gid) != (uid, gid):
            os.chown(path, uid, gid, follow_symlinks=False)

    def _reload(self, outcomes: Sequence[Outcome]) -> None:
        changed = [o.step for o in outcomes if o.changed]
        if any((isinstance(s, File) and s.path.startswith("/etc/systemd/system/"))
               or isinstance(s, EnableUnit) for s in changed):
            self._command("systemctl", "daemon-reload")
        if any(isinstance(s, File) and s.path.startswith("/etc/udev/") for s in changed):
            self._command("udevadm", "control", "--reload")
        if any(isinstance(s, File) and "journald.conf.d" in s.path for s in changed):
            self._command("systemctl", "restart", "systemd-journald")

    def _command(self, *argv: str) -> None:
        exe = shutil.which(argv[0])
        if exe is None:
            raise InstallError(f"{argv[0]} is missing on this machine")
        done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise InstallError(f"{' '.join(argv)} failed: {last}")


def _touched(steps: Sequence[Step]) -> Iterator[str]:
    """Every machine path a step reads or makes (a dry run's scratch copy starts from these)."""
    for step in steps:
        match step:
            case SystemUsers() | File() | EnrolmentFile():
                yield step.path
            case KeyPair():
                yield from (step.path, step.path + ".pub")
            case VenueCa():
                yield from (step.key, step.cert, *step.copies)
            case Certificate():
                yield from (step.cert, step.key, step.ca_cert, step.ca_key)
            case BrokerFiles():
                yield from (step.out, step.install_dir, "/etc/showdown/mqtt-leaderboard.toml")
            case Directory():
                pass  # made empty in the copy by the step itself
            case EnableUnit():
                pass
    # The files a config opens that no step makes (a table's credentials installed earlier).
    yield from ("/etc/showdown/mqtt-table.toml", "/etc/showdown/mqtt-desk.toml")


def _copy_in(source: Path, dest: Path) -> None:
    """Copy a file or folder of the root into the scratch copy, keeping modes; what this
    process may not read is left out (the rehearsal then makes its own, as a first run)."""
    if source.is_symlink() or not source.exists():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError, shutil.Error):  # shutil.Error: copytree's
        if source.is_dir():
            shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, dest)


def _owned_by(path: Path, owner: str, group: str) -> bool:
    """True if ``path`` has that owner and group (names that do not exist yet cannot be set,
    so they do not count against the step)."""
    try:
        uid, gid = pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
    except KeyError:
        return True
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return (info.st_uid, info.st_gid) == (uid, gid)


def _unit_path(unit: str) -> str:
    return f"/etc/systemd/system/{unit}"


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
