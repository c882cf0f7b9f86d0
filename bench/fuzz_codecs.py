"""Fuzz the device codecs with at least 10^6 random and mutated frames; count what gets through.

Each codec has a section (SECTIONS below). A section builds a pool of valid frames, then for
every trial takes one, damages it with one mutation kind (or replaces it with random bytes),
feeds the result to a fresh-state decoder of the right direction and lets the line "go idle"
(partial frames are given up), so trials do not leak into each other. It reports:

- frames fed, seconds, frames/s (the whole loop: mutation, decoding, checking);
- crashes: any exception from the decoder (must be 0);
- wrong readings accepted (must be 0): a message the decoder yielded although no frame encoding
  it, with a valid CRC, was in the bytes fed. Measured by re-encoding every accepted message to
  its one canonical frame and checking (a) those exact bytes occur in the trial's input and (b)
  their CRC checks under a CRC implementation written here, independently of the codec's;
- CRC-guaranteed errors accepted (must be 0): for 1-3 bit errors and bursts of at most 16 bits
  that leave SOF and LEN intact, any message decoded from the damaged frame's own position;
- collisions: a damaged frame that became *another valid frame* (its CRC checks). No checksum
  can refuse these; CRC-16 lets about 2^-16 of the heavily damaged frames through, and the strict
  field checks refuse most of those. They are not wrong readings by the definition above and are
  reported so the residual risk is visible;
- other frames rebuilt: a splice that happened to reassemble another genuine frame of the pool
  (e.g. one frame's SOF followed by the rest of another); those bytes are a valid frame;
- clean frames lost (must be 0): undamaged control frames the decoder did not return intact;
- bad frames counted by the decoder, by reason.

Run: ``.venv/bin/python bench/fuzz_codecs.py [--frames N] [--seed S]``. Exit 1 if a must-be-0
figure is not 0.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from drivers import rfid_codec as rfid
from drivers import rfid_messages as rmsg
from drivers.readings import SPOTS, ShoeState, SpotId
from drivers.shoe_codec import (
    MAX_TEXT,
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Identify,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    ShoeMessage,
    StatusReport,
    encode,
)
from game.poker.cards import DECK

DEFAULT_FRAMES = 1_000_000
DEFAULT_SEED = 20260607
# Mutation kinds; the first four are errors CRC-16/CCITT is guaranteed to catch (§2.2).
GUARANTEED = ("flip1", "flip2", "flip3", "burst16")
KINDS = (*GUARANTEED, "bytes", "insert", "delete", "truncate", "splice", "random", "clean")


@dataclass
class SectionResult:
    """What one codec's fuzzing found."""

    name: str
    frames: int = 0
    bytes_fed: int = 0
    seconds: float = 0.0
    crashes: int = 0
    first_crash: str = ""
    wrong_accepted: int = 0
    guaranteed_accepted: int = 0
    collisions: int = 0
    clean_lost: int = 0
    intact: int = 0
    rebuilt: int = 0
    bad_frames: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    collisions_by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        """Every must-be-0 figure is 0."""
        return not (self.crashes or self.wrong_accepted or self.guaranteed_accepted
                    or self.clean_lost)


def mutate(frame: bytes, kind: str, rng: random.Random, pool: list[bytes],
           protect: int) -> bytes:
    """``frame`` damaged by one mutation kind; ``protect`` leading bytes (SOF, LEN) are left
    alone by the guaranteed kinds so that the CRC covers the same bytes."""
    data = bytearray(frame)
    n = len(data)
    if kind in ("flip1", "flip2", "flip3"):
        bits = rng.sample(range(protect * 8, n * 8), int(kind[-1]))
        for bit in bits:
            data[bit // 8] ^= 0x80 >> (bit % 8)
    elif kind == "burst16":
        length = rng.randint(1, 16)
        start = rng.randrange(protect * 8, n * 8 - length + 1)
        pattern = (1 << (length - 1)) | 1 | (rng.getrandbits(length) if length > 2 else 0)
        for i in range(length):
            if pattern >> i & 1:
                bit = start + i
                data[bit // 8] ^= 0x80 >> (bit % 8)
    elif kind == "bytes":
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(n)] = rng.randrange(256)
    elif kind == "insert":
        at = rng.randrange(n + 1)
        data[at:at] = rng.randbytes(rng.randint(1, 8))
    elif kind == "delete":
        at = rng.randrange(n)
        del data[at : at + rng.randint(1, 8)]
    elif kind == "truncate":
        del data[rng.randrange(n) :]
    elif kind == "splice":
        other = rng.choice(pool)
        data = data[: rng.randrange(1, n)] + other[rng.randrange(1, len(other)) :]
    elif kind == "random":
        return rng.randbytes(rng.randint(1, 80))
    return bytes(data)


# ------------------------------------------------------------------------------ card shoe


def crc16_reference(data: bytes) -> int:
    """CRC-16/CCITT-FALSE from its definition (table built here), independent of the codec."""
    crc = 0xFFFF
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[(crc >> 8) ^ byte]
    return crc


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def _random_shoe_message(rng: random.Random) -> ShoeMessage:
    def u32() -> int:  # small numbers as often as large ones
        return rng.getrandbits(32) if rng.random() < 0.5 else rng.randrange(300)

    seq, rt = rng.randrange(256), rng.random() < 0.2
    state = rng.choice(list(ShoeState))
    pick = rng.randrange(10)
    if pick < 4:
        return CardReport(evn=u32(), read_index=u32(), card=rng.choice(DECK),
                          quality=rng.randint(0, 100), seq=seq, retransmit=rt)
    if pick < 5:
        return StatusReport(evn=u32(), state=state, detail=rng.randrange(3), reads=u32(),
                            seq=seq, retransmit=rt)
    if pick < 7:
        return Heartbeat(state=state, reads=u32(), next_evn=u32(), seq=seq)
    if pick < 8:
        def text() -> str:
            return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(1, MAX_TEXT)))
        return ShoeIdentity(session_id=rng.getrandbits(32), proto_minor=rng.randrange(3),
                            heartbeat_ms=rng.choice((1000, 500, 250)), reads=u32(),
                            unacked_from=u32(), model=text(), serial=text(), firmware=text(),
                            seq=seq)
    if pick < 9:
        return Ack(next_evn=u32(), seq=seq) if rng.random() < 0.5 else Nak(next_evn=u32(), seq=seq)
    return Identify(seq=seq)


def fuzz_shoe(frames: int, rng: random.Random) -> SectionResult:
    """The card-shoe codec (drivers/shoe_codec.py), both directions."""
    result = SectionResult(name="shoe (drivers/shoe_codec.py)")
    pool_msgs = [_random_shoe_message(rng) for _ in range(4096)]
    pool = [encode(m) for m in pool_msgs]
    genuine = set(pool)
    decoders = {"device": ShoeDecoder("device"), "host": ShoeDecoder("host")}
    start = time.perf_counter()
    for _ in range(frames):
        i = rng.randrange(len(pool))
        original, frame = pool_msgs[i], pool[i]
        kind = KINDS[rng.randrange(len(KINDS))]
        data = mutate(frame, kind, rng, pool, protect=2)
        sender = "host" if isinstance(original, Identify | Ack | Nak) else "device"
        decoder = decoders[sender]
        result.frames += 1
        result.bytes_fed += len(data)
        result.by_kind[kind] += 1
        try:
            events = _decode_idle(decoder, data)
        except Exception:
            result.crashes += 1
            result.first_crash = result.first_crash or traceback.format_exc()
            decoders[sender] = ShoeDecoder(sender)  # type: ignore[arg-type]
            continue
        got_original = False
        for event in events:
            if isinstance(event, BadFrame):
                result.bad_frames[event.reason] += 1
                continue
            canonical = encode(event)
            at = data.find(canonical)
            crc_ok = crc16_reference(canonical[1:-2]) == int.from_bytes(canonical[-2:], "big")
            if at < 0 or not crc_ok:
                result.wrong_accepted += 1
            elif event == original and canonical == frame:
                got_original = True
                result.intact += 1
            elif canonical in genuine:  # a splice rebuilt another genuine frame of the pool
                result.rebuilt += 1
            else:
                result.collisions += 1
                result.collisions_by_kind[kind] += 1
                if kind in GUARANTEED and at == 0:
                    result.guaranteed_accepted += 1
        if kind == "clean" and not got_original:
            result.clean_lost += 1
    result.seconds = time.perf_counter() - start
    return result


def _decode_idle(decoder: ShoeDecoder, data: bytes) -> list[ShoeMessage | BadFrame]:
    decoder.feed(data)
    out: list[ShoeMessage | BadFrame] = []
    while True:
        while (event := decoder.next_event()) is not None:
            out.append(event)
        gave_up = decoder.flush_partial()  # the line goes idle between trials
        if gave_up is None:
            return out
        out.append(gave_up)


# ------------------------------------------------------------------------------ chip RFID reader


def _crc32_reference_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32_TABLE = _crc32_reference_table()


def crc32_reference(data: bytes) -> int:
    """CRC-32/ISO-HDLC from its definition (reflected table built here), not zlib's."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ _CRC32_TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def crc8_reference(data: bytes) -> int:
    """CRC-8/SMBUS (poly 0x07, init 0) bit by bit."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _rfid_frame_checks(frame: bytes) -> bool:
    """Header check and CRC of a whole RFID frame, by the references above."""
    return (crc8_reference(frame[:8]) == frame[8]
            and crc32_reference(frame[:-4]) == int.from_bytes(frame[-4:], "little"))


def _random_rfid_message(rng: random.Random) -> rmsg.Message:
    def text(lo: int = 0) -> str:
        return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(lo, 32)))

    def spot() -> SpotId:
        return SpotId(rng.randint(1, 6), rng.choice(SPOTS))

    pick = rng.randrange(20)
    if pick < 9:  # inventories dominate the real traffic
        count = rng.choice((0, 0, 1, 2, 3, 5, 8, 12, 20, rng.randint(0, rmsg.MAX_CHIPS_PER_REPORT)))
        uids = tuple(dict.fromkeys(rng.randbytes(8) for _ in range(count)))
        return rmsg.Inventory(antenna=rng.randint(1, 64), spot=spot(),
                              cycle=rng.randrange(65536), uids=uids)
    if pick < 12:
        return rmsg.Heartbeat(uptime_ms=rng.getrandbits(32), inventory_running=rng.random() < .5,
                              mapped_antennas=rng.randint(0, 64))
    if pick < 13:
        return rmsg.Ack(cmd_seq=rng.randrange(65536), cmd_type=rng.randint(1, 6),
                        status=rng.choice(list(rmsg.AckStatus)))
    if pick < 14:
        return rmsg.Identity(model=text(), serial=text(1), firmware=text(),
                             antenna_count=rng.randint(1, 64))
    if pick < 15:
        token = rng.getrandbits(32)
        return rmsg.Ping(token) if rng.random() < 0.5 else rmsg.Pong(token)
    if pick < 16:
        return rmsg.AntennaFault(antenna=rng.randint(1, 64),
                                 code=rng.choice(list(rmsg.AntennaFaultCode)))
    if pick < 17:
        antennas = rng.sample(range(1, 65), rng.randint(0, 42))
        spots = rng.sample([SpotId(s, p) for s in range(1, 7) for p in SPOTS], len(antennas))
        return rmsg.SetAntennaMap(tuple(zip(antennas, spots, strict=True)))
    if pick < 18:
        heartbeat = rng.randint(20, 10_000)
        return rmsg.SetTiming(report_interval_ms=rng.randint(20, 10_000),
                              heartbeat_interval_ms=heartbeat,
                              watchdog_ms=rng.choice((0, rng.randint(2 * heartbeat, 60_000))))
    return rng.choice((rmsg.Identify(), rmsg.StartInventory(), rmsg.StopInventory()))


def fuzz_rfid(frames: int, rng: random.Random) -> SectionResult:
    """The chip RFID reader codec (drivers/rfid_codec.py), both directions (one parser)."""
    result = SectionResult(name="rfid (drivers/rfid_codec.py)")
    pool_msgs = [(rng.randrange(65536), _random_rfid_message(rng)) for _ in range(4096)]
    pool = [rfid.encode_frame(seq, m) for seq, m in pool_msgs]
    genuine = set(pool)
    decoder = rfid.FrameDecoder()
    start = time.perf_counter()
    for _ in range(frames):
        i = rng.randrange(len(pool))
        (seq, original), frame = pool_msgs[i], pool[i]
        kind = KINDS[rng.randrange(len(KINDS))]
        # SYNC, VER, TYPE, SEQ and LEN stay intact under the guaranteed kinds, so the CRC-32
        # covers the same bytes (it catches every 1-3 bit error and every burst <= 32 bits)
        data = mutate(frame, kind, rng, pool, protect=8)
        result.frames += 1
        result.bytes_fed += len(data)
        result.by_kind[kind] += 1
        try:
            events = decoder.feed(data)
        except Exception:
            result.crashes += 1
            result.first_crash = result.first_crash or traceback.format_exc()
            decoder = rfid.FrameDecoder()
            continue
        decoder.reset()  # the line goes idle between trials: a partial frame is given up
        got_original = False
        for event in events:
            if isinstance(event, rmsg.FrameError):
                result.bad_frames[event.kind] += 1
                continue
            canonical = rfid.encode_frame(event.seq, event.message)
            at = data.find(canonical)
            if at < 0 or not _rfid_frame_checks(canonical):
                result.wrong_accepted += 1
            elif (event.seq, event.message) == (seq, original) and canonical == frame:
                got_original = True
                result.intact += 1
            elif canonical in genuine:
                result.rebuilt += 1
            else:
                result.collisions += 1
                result.collisions_by_kind[kind] += 1
                if kind in GUARANTEED and at == 0:
                    result.guaranteed_accepted += 1
        if kind == "clean" and not got_original:
            result.clean_lost += 1
    result.seconds = time.perf_counter() - start
    return result


# ------------------------------------------------------------------------------ sections

Section = Callable[[int, random.Random], SectionResult]
SECTIONS: list[tuple[str, Section]] = [("shoe", fuzz_shoe), ("rfid", fuzz_rfid)]


def report(r: SectionResult) -> str:
    """One section's figures as text."""
    rate = r.frames / r.seconds if r.seconds else 0.0
    bad = ", ".join(f"{k} {v:,}" for k, v in sorted(r.bad_frames.items()))
    kinds = ", ".join(f"{k} {r.by_kind[k]:,}" for k in KINDS)
    coll = ", ".join(f"{k} {v}" for k, v in sorted(r.collisions_by_kind.items())) or "none"
    lines = [
        f"== {r.name}",
        f"frames fed            {r.frames:,} ({r.bytes_fed:,} bytes)",
        f"seconds               {r.seconds:.1f}",
        f"frames/s              {rate:,.0f}",
        f"crashes               {r.crashes}  (must be 0)",
        f"wrong readings accepted {r.wrong_accepted}  (must be 0: accepted without a valid"
        " CRC frame on the wire)",
        f"CRC-guaranteed errors accepted {r.guaranteed_accepted}  (must be 0: 1-3 bit errors,"
        " bursts <= 16 bits)",
        f"clean frames lost     {r.clean_lost}  (must be 0)",
        f"collisions            {r.collisions}  (damaged frames that became other valid"
        f" frames: {coll})",
        f"originals recovered   {r.intact:,}",
        f"other frames rebuilt  {r.rebuilt:,}  (a splice that put a whole genuine frame back"
        " together: not damage)",
        f"bad frames counted    {sum(r.bad_frames.values()):,}  ({bad})",
        f"mutations             {kinds}",
    ]
    if r.first_crash:
        lines.append("first crash:\n" + r.first_crash)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every section; exit 1 if any must-be-0 figure is not 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=DEFAULT_FRAMES,
                        help=f"frames per codec (default {DEFAULT_FRAMES:,})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()} on {platform.machine()} {platform.system()},"
          f" {platform.processor() or 'cpu unknown'}; seed {args.seed}")
    ok = True
    for name, section in SECTIONS:
        result = section(args.frames, random.Random(f"{args.seed}:{name}"))
        print(report(result), flush=True)
        ok = ok and result.ok
    print("RESULT", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
