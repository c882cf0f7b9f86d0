"""The venue's small certificate authority, made with the `openssl` command (always on Debian,
so no Python dependency on the central server): an ECDSA P-256 CA and server certificates
with their names, checked with `openssl verify`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CertificateError", "expires_within", "make_ca", "make_server_certificate",
           "names_of", "verifies"]


class CertificateError(Exception):
    """openssl is missing or refused; the message says which command and why."""


def _openssl(*args: str) -> str:
    exe = shutil.which("openssl")
    if exe is None:
        raise CertificateError("the openssl command is missing: apt-get install openssl")
    done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise CertificateError(f"openssl {args[0]} failed: {last}")
    return done.stdout


def _san(names: Sequence[str]) -> str:
    parts = []
    for name in names:
        is_ip = name.replace(".", "").isdigit() or ":" in name
        parts.append(f"IP:{name}" if is_ip else f"DNS:{name}")
    return ",".join(parts)


def make_ca(key: Path, cert: Path, *, name: str, days: int) -> None:
    """A new CA key (mode 0600) and self-signed CA certificate."""
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-days", str(days), "-keyout", str(key), "-out", str(cert),
             "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    os.chmod(key, 0o600)
    os.chmod(cert, 0o644)


def make_server_certificate(*, cert: Path, key: Path, ca_cert: Path, ca_key: Path,
                            common_name: str, names: Sequence[str], days: int) -> None:
    """A new server key (mode 0600) and its certificate for ``names``, signed by the CA."""
    with tempfile.TemporaryDirectory() as tmp:
        csr, ext = Path(tmp) / "req.csr", Path(tmp) / "ext.cnf"
        ext.write_text(
            f"subjectAltName={_san(names)}\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n", encoding="ascii")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={common_name}")
        os.chmod(key, 0o600)
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key),
                 "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", str(days),
                 "-extfile", str(ext), "-out", str(cert))
    os.chmod(cert, 0o644)


def verifies(cert: Path, ca_cert: Path) -> bool:
    """True if ``cert`` chains to ``ca_cert`` (and is within its dates)."""
    try:
        _openssl("verify", "-CAfile", str(ca_cert), str(cert))
    except CertificateError:
        return False
    return True


def expires_within(cert: Path, seconds: int) -> bool:
    """True if ``cert`` is no longer valid ``seconds`` from now (0: already expired)."""
    exe = shutil.which("openssl")
    if exe is None:
        raise CertificateError("the openssl command is missing: apt-get install openssl")
    done = subprocess.run([exe, "x509", "-checkend", str(seconds), "-noout", "-in", str(cert)],  # noqa: S603
                          capture_output=True, text=True, check=False)
    return done.returncode != 0


def names_of(cert: Path) -> set[str]:
    """The DNS names and IP addresses of ``cert``'s subjectAltName (empty if unreadable)."""
    try:
        text = _openssl("x509", "-noout", "-ext", "subjectAltName", "-in", str(cert))
    except CertificateError:
        return set()
    body = text.split("\n", 1)[1] if "\n" in text else ""
    names = set()
    for part in body.replace("\n", ",").split(","):
        kind, sep, value = part.strip().partition(":")
        if sep and kind in ("DNS", "IP Address"):
            names.add(value.strip())
    return names
