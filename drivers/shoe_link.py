"""The host side of the card shoe's protocol without I/O (docs/protocols/card-shoe.md):
`ShoeLink` takes decoded shoe messages and the time, and gives readings and the replies to
send (ACK, NAK, IDENTIFY). It keeps what must survive reconnections: the shoe's session, the
next event expected, the next read index, the counters. `drivers.shoe` moves the bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Final, Literal

from drivers.protocols import ShoeReading
from drivers.readings import CardReading, DeviceAlert, ShoeStatus
from drivers.shoe_codec import (
    DETAIL_NONE,
    DETAIL_QUEUE_FULL,
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Identify,
    Nak,
    ShoeIdentity,
    ShoeMessage,
    StatusReport,
    encode,
)

__all__ = ["ACK_MODES", "COUNTERS", "AckMode", "ShoeLink"]

# Every counter health() reports, always present (zero until something happens).
COUNTERS: Final = (
    "frames",  # good frames received
    "bad_frames",  # frames refused by the decoder (all reasons)
    "skipped_bytes",  # noise between frames
    "retransmits",  # frames the shoe flagged as retransmissions
    "frames_lost",  # gaps in the shoe's link sequence numbers
    "duplicates_dropped",  # events already delivered (retransmits, repeated frames, double reads)
    "duplicate_reads",  # of which: a read index reported again under a new event number
    "conflicts",  # a repeat whose content differs from the event delivered (see ShoeLink)
    "out_of_order",  # events ahead of the one expected (an earlier one was lost)
    "acks_sent",
    "naks_sent",
    "confirms",  # readings the consumer confirmed as stored (ack="on_confirm")
    "unconfirmed",  # a gauge: readings yielded and not confirmed yet (ack="on_confirm")
    "cards",  # card reads delivered
    "statuses",  # shoe status changes delivered
    "cards_missing",  # read indices the shoe skipped (never reported)
    "events_missing",  # events acknowledged elsewhere and never received here
    "sessions",  # shoe restarts seen (new session id)
    "connects",
    "reconnects",
    "disconnects",
    "stalls",
)
_RECENT: Final = 256  # delivered events kept to cross-check repeats against

AckMode = Literal["on_receipt", "on_confirm"]
ACK_MODES: Final = ("on_receipt", "on_confirm")


class ShoeLink:
    """The host side of the shoe protocol without I/O: shoe messages in, readings and replies out.

    It keeps what must survive reconnections: the shoe's session, the next event number expected
    (the dedupe key of the reliable stream), the next read index, and the counters. With
    ``ack_on_confirm`` a delivered card or status is acknowledged only once `confirm` is called
    for it; until then the shoe's retransmissions of it are dropped as repeats, unanswered.
    """

    def __init__(self, name: str, *, nak_holdoff: float = 0.2,
                 bad_frame_alert_interval: float = 30.0, ack_on_confirm: bool = False) -> None:
        self.name = name
        self.nak_holdoff = nak_holdoff
        self.bad_frame_alert_interval = bad_frame_alert_interval
        self.ack_on_confirm = ack_on_confirm
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self.identity: ShoeIdentity | None = None
        self.session_id: int | None = None
        self.expected_evn = 0
        self.next_read: int | None = None
        self.last_heartbeat: Heartbeat | None = None
        self._recent: OrderedDict[int, CardReport | StatusReport] = OrderedDict()
        # Delivered but not yet confirmed (ack_on_confirm), by event number, in event order.
        self._unconfirmed: OrderedDict[int, CardReading | ShoeStatus] = OrderedDict()
        self._host_seq = 0
        self._last_seq: int | None = None
        self._last_nak = float("-inf")
        self._last_bad_alert = float("-inf")

    @property
    def device(self) -> str:
        """The shoe's serial number once known, else the configured name."""
        return self.identity.serial if self.identity is not None else self.name

    @property
    def ack_point(self) -> int:
        """The NEXT_EVN this host acknowledges: every event below it is delivered and confirmed."""
        return next(iter(self._unconfirmed), self.expected_evn)

    @property
    def unconfirmed(self) -> int:
        """How many delivered readings still wait for `confirm`."""
        return len(self._unconfirmed)

    def confirm(self, reading: ShoeReading) -> bool:
        """The consumer has stored ``reading``; True if the acknowledgement point moved on (then
        send `ack_frame`). Alerts, readings of an earlier session and repeats are no-ops."""
        evn = next((e for e, r in self._unconfirmed.items() if r is reading), None)
        if evn is None:  # a copy of the reading: the earliest equal one (never acks too much)
            evn = next((e for e, r in self._unconfirmed.items() if r == reading), None)
        if evn is None:
            return False
        before = self.ack_point
        del self._unconfirmed[evn]
        self.counters["confirms"] += 1
        return self.ack_point > before

    def ack_frame(self) -> bytes:
        """An ACK of everything below `ack_point`."""
        return self._ack()

    def new_connection(self) -> None:
        """Forget per-connection link state (sequence numbers, NAK hold-off)."""
        self._last_seq = None
        self._last_nak = float("-inf")

    def identify_frame(self) -> bytes:
        """The IDENTIFY frame that opens every connection."""
        return self._frame(Identify())

    def accept_identity(self, ident: ShoeIdentity, now: float) -> list[ShoeReading]:
        """Take the shoe's identity; alerts if it restarted or if events were acked elsewhere."""
        out: list[ShoeReading] = []
        if self.session_id is None:
            self.expected_evn = ident.unacked_from
            self._unconfirmed.clear()
        elif ident.session_id != self.session_id:
            self.counters["sessions"] += 1
            detail = (f"shoe restarted: session {self.session_id:08x} -> {ident.session_id:08x};"
                      f" read indices start again (the shoe has read {ident.reads} cards)")
            hb = self.last_heartbeat
            if hb is not None and hb.next_evn > self.expected_evn:
                lost = hb.next_evn - self.expected_evn
                self.counters["events_missing"] += lost
                detail += f"; {lost} event(s) of the old session were never received"
            out.append(self._alert("session_changed", detail, now))
            self.expected_evn = ident.unacked_from
            self.next_read = None
            self.last_heartbeat = None
            self._unconfirmed.clear()  # the shoe lost them with the power: nothing to ack
        elif ident.unacked_from > self.expected_evn:
            lost = ident.unacked_from - self.expected_evn
            self.counters["events_missing"] += lost
            out.append(self._alert(
                "events_missing",
                f"events {self.expected_evn}..{ident.unacked_from - 1} were acknowledged by"
                " another host and never received here", now))
            self.expected_evn = ident.unacked_from
        for evn in [e for e in self._unconfirmed if e < ident.unacked_from]:
            del self._unconfirmed[evn]  # acknowledged by another host meanwhile
        self.session_id = ident.session_id
        self.identity = ident
        return out

    def count_bad_frame(self, event: BadFrame) -> None:
        """Count a refused frame seen before the connection is established."""
        self.counters["bad_frames"] += 1
        key = f"bad_{event.reason}"
        self.counters[key] = self.counters.get(key, 0) + 1

    def handle(self, event: ShoeMessage | BadFrame,
               now: float) -> tuple[list[ShoeReading], list[bytes]]:
        """One decoder event in; the readings it yields and the frames to send back out."""
        out: list[ShoeReading] = []
        replies: list[bytes] = []
        if isinstance(event, BadFrame):
            self.count_bad_frame(event)
            if event.seq is not None:
                self._check_seq(event.seq, now, replies)
            if event.reason == "unknown_type":  # a newer minor version's message: not a fault
                return out, replies
            if now - self._last_bad_alert >= self.bad_frame_alert_interval:
                self._last_bad_alert = now
                out.append(self._alert(
                    "bad_frame", f"refused a frame ({event.reason}); "
                    f"{self.counters['bad_frames']} bad frames so far", now))
            self._nak(now, replies)
            return out, replies
        self.counters["frames"] += 1
        if event.retransmit:
            self.counters["retransmits"] += 1
        self._check_seq(event.seq, now, replies)
        if isinstance(event, ShoeIdentity):
            out += self.accept_identity(event, now)
        elif isinstance(event, Heartbeat):
            self.last_heartbeat = event
            if self.session_id is not None and event.next_evn > self.expected_evn:
                self._nak(now, replies)
        elif isinstance(event, CardReport | StatusReport) and self.session_id is not None:
            self._reliable(event, now, out, replies)
        return out, replies

    def _reliable(self, event: CardReport | StatusReport, now: float, out: list[ShoeReading],
                  replies: list[bytes]) -> None:
        if event.evn < self.expected_evn:
            self.counters["duplicates_dropped"] += 1
            if event.evn < self.ack_point:  # acked before, the ACK was lost: ack again
                replies.append(self._ack())
            # else: delivered and awaiting the consumer's confirm; the shoe keeps resending
            self._cross_check(event, now, out)
            return
        if event.evn > self.expected_evn:
            self.counters["out_of_order"] += 1
            self._nak(now, replies)
            return
        self.expected_evn += 1
        self._recent[event.evn] = replace(event, seq=0, retransmit=False)
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        reading = self._deliver(event, now, out)
        if reading is not None:
            out.append(reading)
            if self.ack_on_confirm:
                self._unconfirmed[event.evn] = reading
                return
        replies.append(self._ack())

    def _deliver(self, event: CardReport | StatusReport, now: float,
                 out: list[ShoeReading]) -> CardReading | ShoeStatus | None:
        """The reading event ``event`` (the next expected) yields, if any; alerts go to ``out``."""
        if isinstance(event, StatusReport):
            self.counters["statuses"] += 1
            return ShoeStatus(state=event.state, device=self.device,
                              detail=_status_detail(event), at_mono=now)
        if self.next_read is not None and event.read_index < self.next_read:
            self.counters["duplicates_dropped"] += 1
            self.counters["duplicate_reads"] += 1
            out.append(self._alert(
                "duplicate_read", f"read index {event.read_index} ({event.card}) reported again"
                f" as event {event.evn}; dropped", now))
            return None
        if self.next_read is not None and event.read_index > self.next_read:
            self.counters["cards_missing"] += event.read_index - self.next_read
            out.append(self._alert(
                "card_missing", f"read indices {self.next_read}..{event.read_index - 1} were"
                " never reported by the shoe", now))
        self.next_read = event.read_index + 1
        self.counters["cards"] += 1
        return CardReading(card=event.card, read_index=event.read_index, quality=event.quality,
                        device=self.device, at_mono=now, session=self.session_id)

    def _cross_check(self, event: CardReport | StatusReport, now: float,
                     out: list[ShoeReading]) -> None:
        """A repeat must say what the original said. If it does not, one of the two was a
        corrupted frame whose CRC happened to check (CRC-16 lets ~1 in 65536 through)."""
        delivered = self._recent.get(event.evn)
        if delivered is None or delivered == replace(event, seq=0, retransmit=False):
            return
        self.counters["conflicts"] += 1
        out.append(self._alert(
            "conflicting_report", f"event {event.evn} was delivered as {_describe(delivered)}"
            f" and is now reported as {_describe(event)}; check the card on the table", now))

    def _check_seq(self, seq: int, now: float, replies: list[bytes]) -> None:
        last, self._last_seq = self._last_seq, seq
        if last is None or seq == last:  # seq == last: the same frame twice, deduped by evn
            return
        gap = (seq - last - 1) & 0xFF
        if gap:
            self.counters["frames_lost"] += gap
            self._nak(now, replies)

    def _nak(self, now: float, replies: list[bytes]) -> None:
        if self.session_id is None or now - self._last_nak < self.nak_holdoff:
            return
        self._last_nak = now
        self.counters["naks_sent"] += 1
        replies.append(self._frame(Nak(next_evn=self.ack_point)))  # a NAK acks: not beyond

    def _ack(self) -> bytes:
        self.counters["acks_sent"] += 1
        return self._frame(Ack(next_evn=self.ack_point))

    def _frame(self, message: Identify | Ack | Nak) -> bytes:
        seq, self._host_seq = self._host_seq, (self._host_seq + 1) & 0xFF
        if isinstance(message, Identify):
            return encode(Identify(seq=seq))
        if isinstance(message, Ack):
            return encode(Ack(next_evn=message.next_evn, seq=seq))
        return encode(Nak(next_evn=message.next_evn, seq=seq))

    def _alert(self, kind: str, detail: str, now: float) -> DeviceAlert:
        return DeviceAlert(device=self.device, kind=kind, detail=detail, at_mono=now)


def _describe(event: CardReport | StatusReport) -> str:
    if isinstance(event, CardReport):
        return f"read {event.read_index} {event.card} (quality {event.quality})"
    return f"status {event.state.value} (detail {event.detail}, {event.reads} reads)"


def _status_detail(event: StatusReport) -> str:
    text = f"{event.reads} cards read"
    if event.detail == DETAIL_QUEUE_FULL:
        text += "; event queue full (the host is not acknowledging)"
    elif event.detail != DETAIL_NONE:
        text += f"; detail code {event.detail}"
    return text
