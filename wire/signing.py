"""Ed25519 keys (PyNaCl): a table's or desk's signing key, and the ring of enrolled public keys.

A private key file is a small JSON document holding the key's name (its key id) and the 32-byte
seed in base64. It is created with mode 0600 and refused at load time if group or others can
read or write it (as ssh does), so a copied or mis-permissioned key never signs silently.

A public key travels as text: ``<key id> <base64 of the 32-byte key>``, one line, the form
``showdown keys generate`` prints for enrolment and ``KeyRing.load`` reads.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from game.errors import ConfigError
from wire.topics import TopicError, validate_id

__all__ = [
    "PRIVATE_KEY_FORMAT",
    "SIGNATURE_BYTES",
    "KeyFileError",
    "KeyFormatError",
    "KeyRing",
    "PublicKey",
    "Signer",
    "SigningError",
    "UnknownKey",
    "load_configured_key",
    "load_private_key",
    "parse_public_key",
    "save_private_key",
]

PRIVATE_KEY_FORMAT: Final = "showdown-ed25519-private-key"
PRIVATE_KEY_VERSION: Final = 1
SIGNATURE_BYTES: Final = 64
PUBLIC_KEY_BYTES: Final = 32
_GROUP_OTHER_BITS: Final = 0o077


class SigningError(Exception):
    """Base of the key and signature errors."""


class KeyFileError(SigningError):
    """A key file that cannot be written or used (exists, wrong permissions, malformed)."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"key file {path}: {reason}")


class KeyFormatError(SigningError, ValueError):
    """Public key text or a key id that is not in the expected form."""


class UnknownKey(SigningError):
    """No public key is enrolled under this key id."""

    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        super().__init__(f"no public key enrolled for {key_id!r}")


def _key_id(value: object) -> str:
    try:
        return validate_id("key", value)
    except TopicError as exc:
        raise KeyFormatError(str(exc)) from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, size: int, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise KeyFormatError(f"{what} is not base64") from None
    if len(raw) != size:
        raise KeyFormatError(f"{what} must be {size} bytes, got {len(raw)}")
    return raw


@dataclass(frozen=True, slots=True)
class PublicKey:
    """An Ed25519 public key with its key id."""

    key_id: str
    verify_key: VerifyKey

    @property
    def base64(self) -> str:
        """The 32-byte key in base64 (44 characters)."""
        return _b64(bytes(self.verify_key))

    def enrolment_line(self) -> str:
        """``<key id> <base64>``: what is enrolled at the leaderboard or a table."""
        return f"{self.key_id} {self.base64}"

    def verify(self, data: bytes, signature: bytes) -> bool:
        """True if ``signature`` is this key's signature of ``data``."""
        if len(signature) != SIGNATURE_BYTES:
            return False
        try:
            self.verify_key.verify(data, signature)
        except BadSignatureError:
            return False
        return True


def parse_public_key(key_id: str, text: str) -> PublicKey:
    """A public key from its id and base64 text; KeyFormatError if either is malformed."""
    raw = _unb64(text.strip(), PUBLIC_KEY_BYTES, f"public key of {key_id!r}")
    return PublicKey(_key_id(key_id), VerifyKey(raw))


class Signer:
    """A private signing key and its key id (a table id or a desk's name)."""

    __slots__ = ("_key", "key_id")

    def __init__(self, key_id: str, key: SigningKey) -> None:
        self.key_id = _key_id(key_id)
        self._key = key

    @classmethod
    def generate(cls, key_id: str) -> Signer:
        """A new random key pair."""
        return cls(key_id, SigningKey.generate())

    @classmethod
    def from_seed(cls, key_id: str, seed: bytes) -> Signer:
        """The key pair of a 32-byte seed (tests use fixed seeds)."""
        if len(seed) != PUBLIC_KEY_BYTES:
            raise KeyFormatError(f"seed must be {PUBLIC_KEY_BYTES} bytes, got {len(seed)}")
        return cls(key_id, SigningKey(seed))

    @property
    def public_key(self) -> PublicKey:
        """The matching public key."""
        return PublicKey(self.key_id, self._key.verify_key)

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``data``."""
        return bytes(self._key.sign(data).signature)

    def __repr__(self) -> str:
        return f"Signer({self.key_id!r}, public={self.public_key.base64})"

    def _seed(self) -> bytes:
        return bytes(self._key)


def save_private_key(signer: Signer, path: Path) -> None:
    """Write ``signer`` to a new file with mode 0600; refuses to replace an existing file."""
    if path.exists() or path.is_symlink():
        raise KeyFileError(path, "already exists; refusing to overwrite a key (remove it first)")
    document = {
        "format": PRIVATE_KEY_FORMAT,
        "version": PRIVATE_KEY_VERSION,
        "name": signer.key_id,
        "seed": _b64(signer._seed()),
    }
    data = (json.dumps(document, indent=2) + "\n").encode("ascii")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        # link() fails if `path` appeared meanwhile: never overwrites, never leaves a half file.
        os.link(tmp, path)
    except FileExistsError:
        raise KeyFileError(path, "already exists; refusing to overwrite a key") from None
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_private_key(path: Path) -> Signer:
    """Read a private key file; KeyFileError if group/others may access it or it is malformed."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise KeyFileError(path, "does not exist") from None
    except OSError as exc:  # a symlink loop, a directory not searchable, ...
        raise KeyFileError(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(path, "is not a regular file")
    mode = stat.S_IMODE(info.st_mode)
    if os.name == "posix" and mode & _GROUP_OTHER_BITS:
        raise KeyFileError(
            path,
            f"private key is accessible by group or others (mode {mode:04o}); "
            f"refusing to use it: run `chmod 600 {path}`",
        )
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise KeyFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise KeyFileError(path, "is not a showdown private key file (not JSON)") from None
    if not isinstance(document, dict) or document.get("format") != PRIVATE_KEY_FORMAT:
        raise KeyFileError(
            path, f"is not a showdown private key file (no format {PRIVATE_KEY_FORMAT!r})"
        )
    if document.get("version") != PRIVATE_KEY_VERSION:
        raise KeyFileError(path, f"unsupported key file version {document.get('version')!r}")
    seed_text, name = document.get("seed"), document.get("name")
    if not isinstance(seed_text, str):
        raise KeyFileError(path, "'seed' must be base64 text")
    try:
        return Signer.from_seed(_key_id(name), _unb64(seed_text, PUBLIC_KEY_BYTES, "seed"))
    except KeyFormatError as exc:
        raise KeyFileError(path, str(exc)) from None


def load_configured_key(path: Path, *, source: str, key: str) -> Signer:
    """`load_private_key` of a key file a configuration names: a failure is a ConfigError
    naming the configuration file (`source`) and its `key`."""
    try:
        return load_private_key(path)
    except KeyFileError as exc:
        raise ConfigError(source, key, str(exc)) from None


class KeyRing:
    """Enrolled public keys by key id; what a verifier trusts."""

    def __init__(self, keys: Iterable[PublicKey] = ()) -> None:
        self._keys: dict[str, PublicKey] = {}
        for key in keys:
            self.add(key)

    @classmethod
    def from_mapping(cls, keys: Mapping[str, str]) -> KeyRing:
        """A ring from ``{key id: base64 public key}``."""
        return cls(parse_public_key(key_id, text) for key_id, text in keys.items())

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        """Read an enrolment file: lines ``<key id> <base64>``; blank lines and # comments."""
        ring = cls()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            if len(parts) != 2:
                raise KeyFormatError(f"{path}:{number}: expected '<key id> <base64 key>'")
            try:
                ring.add(parse_public_key(parts[0], parts[1]))
            except KeyFormatError as exc:
                raise KeyFormatError(f"{path}:{number}: {exc}") from None
        return ring

    def add(self, key: PublicKey) -> None:
        """Enrol ``key``; a second, different key under the same id is refused."""
        known = self._keys.get(key.key_id)
        if known is not None and bytes(known.verify_key) != bytes(key.verify_key):
            raise KeyFormatError(f"key id {key.key_id!r} is already enrolled with another key")
        self._keys[key.key_id] = key

    def get(self, key_id: str) -> PublicKey | None:
        """The key enrolled under ``key_id``, if any."""
        return self._keys.get(key_id)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __iter__(self) -> Iterator[PublicKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def verify(self, key_id: str, data: bytes, signature: bytes) -> bool:
        """True if the key enrolled as ``key_id`` signed ``data``; UnknownKey if none is."""
        key = self._keys.get(key_id)
        if key is None:
            raise UnknownKey(key_id)
        return key.verify(data, signature)
