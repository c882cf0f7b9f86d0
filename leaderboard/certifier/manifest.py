"""The certifier's bundle as a file: a zip of JSON and TOML members, ``manifest.json`` listing
each member's SHA-256 and size, and ``manifest.sig``, the central key's Ed25519 signature of
the manifest's bytes (base64). Pure apart from reading and writing the one file."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from wire.envelope import canonical_json
from wire.signing import PublicKey, Signer

__all__ = ["FORMAT", "MANIFEST", "SIGNATURE", "Bundle", "BundleError", "read_bundle",
           "sha256_hex", "write_bundle"]

FORMAT: Final = "showdown.certifier-bundle/1"
MANIFEST: Final = "manifest.json"
SIGNATURE: Final = "manifest.sig"
_MAX_MEMBER: Final = 512 * 1024 * 1024  # a member larger than this is refused on reading


class BundleError(Exception):
    """The file is not a certifier's bundle that can be read (says why)."""


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Bundle:
    """A bundle read back: its manifest (and the exact bytes signed), the signature, and
    every member's bytes by name (the manifest and signature excluded)."""

    manifest: Mapping[str, Any]
    manifest_bytes: bytes
    signature: bytes
    members: Mapping[str, bytes]

    def signed_by(self, key: PublicKey) -> bool:
        """True when ``key`` signed the manifest."""
        return key.verify(self.manifest_bytes, self.signature)

    def json(self, name: str) -> Any:
        """A JSON member, parsed (BundleError when absent or not JSON)."""
        raw = self.members.get(name)
        if raw is None:
            raise BundleError(f"member {name} is missing")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BundleError(f"member {name} is not JSON: {exc}") from None


def write_bundle(path: Path, members: Mapping[str, bytes], header: Mapping[str, Any],
                 signer: Signer) -> dict[str, Any]:
    """Write the bundle atomically (a new file only); returns the signed manifest:
    ``header`` plus the format, the signer's key id and each member's SHA-256 and size."""
    if path.exists():
        raise BundleError(f"{path} exists: a bundle is never overwritten")
    manifest = {**header, "format": FORMAT, "signed_by": signer.key_id,
                "members": {name: {"sha256": sha256_hex(data), "bytes": len(data)}
                            for name, data in sorted(members.items())}}
    manifest_bytes = canonical_json(manifest)
    signature = base64.b64encode(signer.sign(manifest_bytes))
    partial = path.with_name(f".{path.name}.partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, manifest_bytes)
            z.writestr(SIGNATURE, signature + b"\n")
            for name, data in sorted(members.items()):
                z.writestr(name, data)
        os.replace(partial, path)
    finally:
        if partial.exists():
            partial.unlink()
    return manifest


def read_bundle(data: bytes, source: str) -> Bundle:
    """A bundle from the file's bytes; BundleError names what makes it unreadable."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise BundleError(f"{source} is not a certifier's bundle (not a zip file: {exc})"
                          ) from None
    members: dict[str, bytes] = {}
    with z:
        for info in z.infolist():
            if info.is_dir():
                continue
            if info.file_size > _MAX_MEMBER:
                raise BundleError(f"{source}: member {info.filename} is too large"
                                  f" ({info.file_size} bytes)")
            if info.filename in members:
                raise BundleError(f"{source}: member {info.filename} appears twice")
            try:
                members[info.filename] = z.read(info)
            except (zipfile.BadZipFile, OSError) as exc:  # a CRC error: damaged
                raise BundleError(f"{source}: member {info.filename} cannot be read: {exc}"
                                  ) from None
    manifest_bytes = members.pop(MANIFEST, None)
    signature_text = members.pop(SIGNATURE, None)
    if manifest_bytes is None:
        raise BundleError(f"{source} is not a certifier's bundle (no {MANIFEST})")
    try:
        manifest = json.loads(manifest_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{source}: {MANIFEST} is not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{source} is not a certifier's bundle ({MANIFEST} is not of format"
                          f" {FORMAT!r})")
    try:
        signature = (base64.b64decode(signature_text.strip(), validate=True)
                     if signature_text is not None else b"")
    except (binascii.Error, ValueError):
        signature = b""
    return Bundle(manifest=manifest, manifest_bytes=manifest_bytes, signature=signature,
                  members=members)
