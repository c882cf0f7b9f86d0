"""Keep a long-running process's resident memory where its live data is.

scrypt (the PINs and rewards cards: hashlib.scrypt through OpenSSL) allocates 16 to 32 MiB of
working memory per call, in whichever thread calls it. glibc's malloc serves a block that
large with mmap only until the first one is freed: its mmap threshold then rises to that
size, and every later block of that size comes from the thread's arena and stays resident
after it is freed. A table daemon grew by 50 to 80 MiB in its first hands that way
(docs/performance.md, "Memory after play"). Fixing the threshold keeps large blocks mapped
and unmapped per call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Final

__all__ = ["MMAP_THRESHOLD_BYTES", "fix_malloc_mmap_threshold"]

_M_MMAP_THRESHOLD: Final = -3  # glibc's malloc.h
MMAP_THRESHOLD_BYTES: Final = 128 * 1024  # glibc's own default before it adapts


def fix_malloc_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc malloc's mmap threshold (no adaptation); False where the C library is not
    glibc or refuses (nothing changes then)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
