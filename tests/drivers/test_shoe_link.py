"""The sans-I/O host side of the shoe protocol (drivers.shoe_link.ShoeLink): decoded shoe
messages and the time in, readings and reply frames out; no port, no clock."""

from __future__ import annotations

from drivers.readings import CardReading, DeviceAlert, ShoeState, ShoeStatus
from drivers.shoe_codec import (
    Ack,
    BadFrame,
    CardReport,
    Heartbeat,
    Nak,
    ShoeDecoder,
    ShoeIdentity,
    StatusReport,
)
from drivers.shoe_link import ShoeLink
from game.poker.cards import parse_card

IDENT = ShoeIdentity(session_id=0xAB, proto_minor=0, heartbeat_ms=1000, reads=0,
                     unacked_from=0, model="M", serial="S-1", firmware="F")


def card(evn: int, read_index: int, text: str = "Ah", seq: int = 0) -> CardReport:
    return CardReport(evn=evn, read_index=read_index, card=parse_card(text), quality=99,
                      seq=seq)


def host_frames(frames: list[bytes]) -> list[object]:
    decoder = ShoeDecoder("host")
    for frame in frames:
        decoder.feed(frame)
    out: list[object] = []
    while (event := decoder.next_event()) is not None:
        out.append(event)
    return out


def test_link_delivers_in_order_and_naks_a_gap() -> None:
    link = ShoeLink("shoe", nak_holdoff=0.0)
    link.accept_identity(IDENT, 0.0)
    out, replies = link.handle(card(0, 0, seq=1), 1.0)
    assert [type(r) for r in out] == [CardReading]
    assert host_frames(replies) == [Ack(next_evn=1, seq=0)]
    out, replies = link.handle(card(2, 2, "Kd", seq=3), 2.0)  # event 1 lost: seq and evn jump
    assert out == []
    naks = [m for m in host_frames(replies) if isinstance(m, Nak)]
    assert naks
    assert all(m.next_evn == 1 for m in naks)
    assert link.counters["out_of_order"] == 1
    assert link.counters["frames_lost"] == 1


def test_link_drops_a_repeat_and_acks_it_again() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    link.handle(card(0, 0, seq=0), 1.0)
    out, replies = link.handle(card(0, 0, seq=1), 1.1)
    assert out == []
    assert [m for m in host_frames(replies) if isinstance(m, Ack)] == [Ack(next_evn=1, seq=1)]
    assert link.counters["duplicates_dropped"] == 1


def test_link_cross_checks_a_repeat_against_what_it_delivered() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    link.handle(card(0, 0, "Jd", seq=0), 1.0)
    out, _ = link.handle(card(0, 0, "Jd", seq=1), 1.1)  # an honest repeat
    assert out == []
    out, _ = link.handle(card(0, 0, "Qd", seq=2), 1.2)  # one of the two frames lied
    assert [a.kind for a in out if isinstance(a, DeviceAlert)] == ["conflicting_report"]
    assert "read 0 Jd" in out[0].detail  # type: ignore[union-attr]
    assert "read 0 Qd" in out[0].detail  # type: ignore[union-attr]
    assert link.counters["conflicts"] == 1


def test_link_drops_a_read_index_reported_under_a_new_event_number() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    link.handle(card(0, 0, seq=0), 1.0)
    out, _ = link.handle(card(1, 0, seq=1), 1.1)  # firmware fault: read 0 again as event 1
    assert [(type(r), getattr(r, "kind", None)) for r in out] == [
        (DeviceAlert, "duplicate_read")]
    assert link.counters["duplicate_reads"] == 1
    out, _ = link.handle(card(2, 1, "Kd", seq=2), 1.2)
    assert [r.read_index for r in out if isinstance(r, CardReading)] == [1]


def test_link_reports_skipped_read_indices() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    link.handle(card(0, 0, seq=0), 1.0)
    out, _ = link.handle(card(1, 3, "Kd", seq=1), 1.1)
    assert isinstance(out[0], DeviceAlert)
    assert out[0].kind == "card_missing"
    assert "1..2" in out[0].detail
    assert isinstance(out[1], CardReading)
    assert link.counters["cards_missing"] == 2


def test_link_reports_a_restart_and_events_lost_with_the_power() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    link.handle(card(0, 0, seq=0), 1.0)
    link.handle(Heartbeat(state=ShoeState.READY, reads=3, next_evn=3, seq=1), 1.1)
    alerts = link.accept_identity(
        ShoeIdentity(session_id=0xCD, proto_minor=0, heartbeat_ms=1000, reads=0,
                     unacked_from=0, model="M", serial="S-1", firmware="F"), 2.0)
    assert [a.kind for a in alerts if isinstance(a, DeviceAlert)] == ["session_changed"]
    assert "2 event(s) of the old session were never received" in alerts[0].detail  # type: ignore[union-attr]
    out, _ = link.handle(card(0, 0, "2c", seq=0), 2.1)
    assert [r.read_index for r in out if isinstance(r, CardReading)] == [0]


def test_link_reports_events_acknowledged_by_another_host() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    alerts = link.accept_identity(
        ShoeIdentity(session_id=0xAB, proto_minor=0, heartbeat_ms=1000, reads=4,
                     unacked_from=5, model="M", serial="S-1", firmware="F"), 1.0)
    assert [a.kind for a in alerts if isinstance(a, DeviceAlert)] == ["events_missing"]
    assert link.expected_evn == 5
    assert link.counters["events_missing"] == 5


def test_link_ignores_events_before_the_identity_and_unknown_types_quietly() -> None:
    link = ShoeLink("shoe")
    out, replies = link.handle(card(0, 0), 0.0)
    assert (out, replies) == ([], [])
    link.accept_identity(IDENT, 0.0)
    out, replies = link.handle(BadFrame(reason="unknown_type", size=9, seq=0), 1.0)
    assert (out, replies) == ([], [])
    out, _ = link.handle(BadFrame(reason="crc", size=19), 1.0)
    assert [a.kind for a in out if isinstance(a, DeviceAlert)] == ["bad_frame"]
    out, _ = link.handle(BadFrame(reason="crc", size=19), 1.5)  # rate-limited
    assert out == []
    assert link.counters["bad_frames"] == 3


def test_status_detail_names_a_full_queue() -> None:
    link = ShoeLink("shoe")
    link.accept_identity(IDENT, 0.0)
    out, _ = link.handle(StatusReport(evn=0, state=ShoeState.JAM, detail=1, reads=7), 1.0)
    assert isinstance(out[0], ShoeStatus)
    assert out[0].state is ShoeState.JAM
    assert "queue full" in out[0].detail
