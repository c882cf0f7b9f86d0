"""Signature verification in worker processes, for batches too big to verify in one thread.

``VerifierPool(workers)`` verifies a batch in ``workers`` spawned processes (each keeps the
keyring of the last key version it was sent); a batch smaller than ``4 * workers`` is left to
the caller, and so is every payload whose signer a worker did not know (the keys may need a
reload, which only the ingest can do).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import structlog

from wire.envelope import Envelope, EnvelopeError, verify_envelope
from wire.signing import KeyRing

__all__ = ["Refusal", "Verified", "VerifierPool", "verify_chunk"]

Verified = Envelope | tuple[str, str] | None  # a worker's answer: the envelope, or why not

_log = structlog.get_logger("leaderboard.ingest")
_WORKER_KEYS: dict[int, KeyRing] = {}


def verify_chunk(version: int, keys: tuple[tuple[str, str], ...],
                 payloads: Sequence[bytes]) -> list[Envelope | tuple[str, str]]:
    """Verify payloads in a worker process: each envelope, or (reason, detail)."""
    ring = _WORKER_KEYS.get(version)
    if ring is None:
        ring = KeyRing.from_mapping(dict(keys))
        _WORKER_KEYS.clear()
        _WORKER_KEYS[version] = ring
    out: list[Envelope | tuple[str, str]] = []
    for payload in payloads:
        try:
            out.append(verify_envelope(payload, ring))
        except EnvelopeError as exc:
            out.append((exc.reason, exc.detail))
    return out


class Refusal(EnvelopeError):
    """An envelope refused in a worker process, with the reason it gave."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason  # type: ignore[misc]


class VerifierPool:
    """The verification processes (none with ``workers == 0``), started on first use."""

    def __init__(self, workers: int) -> None:
        if workers < 0:
            raise ValueError(f"verify_workers must be >= 0, got {workers}")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> ProcessPoolExecutor:
        """The verification processes, started (and each made to import its code) once."""
        if self._pool is None:
            pool = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"))
            for future in [pool.submit(verify_chunk, 0, (), ()) for _ in range(self.workers)]:
                future.result()
            self._pool = pool
        return self._pool

    def verify(self, payloads: list[bytes], keys: KeyRing, version: int) -> list[Verified]:
        """Verify in the worker processes (None where it is left to the caller)."""
        workers = self.workers
        if workers == 0 or len(payloads) < 4 * workers:
            return [None] * len(payloads)
        pairs = tuple((key.key_id, key.base64) for key in keys)
        size = -(-len(payloads) // workers)
        chunks = [payloads[i:i + size] for i in range(0, len(payloads), size)]
        try:
            pool = self.start()
            futures = [pool.submit(verify_chunk, version, pairs, chunk) for chunk in chunks]
            return [checked for future in futures for checked in future.result()]
        except Exception:  # a worker died: verify here, and start new workers next time
            _log.exception("ingest_verify_workers_failed", workers=workers)
            self.close()
            return [None] * len(payloads)

    def close(self) -> None:
        """Stop the worker processes, if any."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
