"""glibc malloc's mmap threshold fixed: scrypt's working memory (16 MiB a call here) is given
back after each call instead of staying resident in the calling thread's arena."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from runtime.process_memory import fix_malloc_mmap_threshold

_CHILD = textwrap.dedent("""
    import hashlib, sys, threading
    from runtime.process_memory import fix_malloc_mmap_threshold
    def rss_anon_kib():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    if sys.argv[1] == "fixed":
        assert fix_malloc_mmap_threshold()
    before = rss_anon_kib()
    def hashes():
        for i in range(3):
            hashlib.scrypt(b"1234", salt=bytes([i]) * 16, n=2**14, r=8, p=1, maxmem=64 << 20)
    worker = threading.Thread(target=hashes)
    worker.start(); worker.join()
    print(rss_anon_kib() - before)
""")


def _growth_kib(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux") or not fix_malloc_mmap_threshold(),
                    reason="glibc's mallopt is not there")
def test_scrypts_memory_stays_resident_by_default_and_is_returned_when_fixed() -> None:
    assert _growth_kib("default") >= 12 * 1024  # the 16 MiB block kept in the arena
    assert _growth_kib("fixed") < 4 * 1024


def test_without_a_c_library_to_load_nothing_changes_and_it_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A system without glibc (musl, macOS) cannot be had here: its lookup failing stands in.
    monkeypatch.setattr("ctypes.util.find_library", lambda _name: None)
    assert fix_malloc_mmap_threshold() is False
