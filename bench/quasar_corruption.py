"""How often a corrupted QuasarMX inventory answer gets through the codec as another reading
(D292): the plain-text protocol has no checksum, so the codec's format checks are all there
is between a flipped byte and a wrong UID.

Each trial takes one inventory answer (0..20 random NXP UIDs, the antenna report, IVF), damages
it as the simulators' ``corrupt`` fault does (one byte after the first XORed with 1..255), or
with 2 such bytes, or a burst of 2..8 random bytes, decodes it with a fresh
`drivers.quasar_codec.FrameDecoder` and parses it with `parse_inventory`. It counts the damaged
answers refused (a frame error, the codec's error, or a UID that does not begin with E0, which
the driver asks again for) and those accepted, split into the same
reading (still the same UIDs) and **another reading** (a UID changed but still well formed).
What a table does with one: its registry alerts an unknown chip, the next sweep reads the spot
again.

Run: ``.venv/bin/python bench/quasar_corruption.py [--trials 200000] [--seed 30]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from drivers import quasar_codec as qc


def answer(rng: random.Random) -> tuple[bytes, frozenset[bytes]]:
    uids = {bytes([0xE0, 0x04]) + rng.randbytes(6) for _ in range(rng.randint(0, 20))}
    lines = [u.hex().upper() for u in uids] + [f"ARP {rng.randint(1, 16):02d}",
                                               f"IVF {len(uids):02d}"]
    return ("".join(f"{line}\r" for line in lines) + "\n").encode(), frozenset(uids)


def damage(data: bytes, kind: str, rng: random.Random) -> bytes:
    out = bytearray(data)
    if kind == "burst":
        at = rng.randrange(1, len(out))
        for i in range(at, min(len(out), at + rng.randint(2, 8))):
            out[i] = rng.randrange(256)
        return bytes(out)
    for _ in range(1 if kind == "1 byte" else 2):
        out[rng.randrange(1, len(out))] ^= rng.randint(1, 255)
    return bytes(out)


def main() -> int:
    """Print the rates; exit 1 if the codec raised anything but its own error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("1 byte", "2 bytes", "burst")}
    crashes = 0
    start = time.perf_counter()
    for n in range(args.trials):
        kind = ("1 byte", "2 bytes", "burst")[n % 3]
        data, uids = answer(rng)
        frames = qc.FrameDecoder().feed(damage(data, kind, rng))
        outcome = "refused"
        try:
            for item in frames:
                if isinstance(item, qc.Frame):
                    parsed = qc.parse_inventory(item)
                    if not isinstance(parsed, qc.Inventory):
                        continue
                    if parsed.uids == uids:
                        outcome = "same reading"
                    elif all(u[0] == 0xE0 for u in parsed.uids):
                        outcome = "another reading"
                    else:  # the driver asks again (drivers.quasar: not an ISO 15693 UID)
                        outcome = "refused"
        except qc.QuasarProtocolError:
            outcome = "refused"
        except Exception:  # the codec must raise nothing else
            crashes += 1
        counts[kind][outcome] += 1
    took = time.perf_counter() - start
    print(f"{args.trials} damaged inventory answers in {took:.1f} s (seed {args.seed})")
    print(f"{'damage':<8} {'trials':>7} {'refused':>9} {'same':>7} {'another':>8}"
          f" {'another %':>10}")
    for kind, c in counts.items():
        total = sum(c.values())
        print(f"{kind:<8} {total:>7} {c['refused']:>9} {c['same reading']:>7}"
              f" {c['another reading']:>8} {100 * c['another reading'] / total:>9.2f}%")
    print(f"crashes (must be 0): {crashes}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
