"""The check of a settled hand's payout by the chip readers (issue 12; Perfect Pay's rule).

Once a hand settles the table knows what every wagered spot must hold after the dealer has
paid and taken: the stake plus the win on a winning wager, the stake on a push, nothing on a
loss (a bonus marker is always taken). The readers' reports say what the spot holds. A spot is
*paid* the first time it holds exactly what it must (players may then pick their chips up);
a spot over what it must hold is an overpay at once, and any spot not yet paid when the dealer
closes the payout (or presses no more bets for the next hand) is an underpay or a loser not
taken. The next hand cannot open until every spot is paid or a supervisor overrides.

Pure: amounts come in, lines and words come out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from game.messages.console import PayoutLine
from game.money import format_rand
from game.wagers.settle import HandSettlement

__all__ = ["PayoutCheck", "SpotPay"]


@dataclass(slots=True, kw_only=True)
class SpotPay:
    """One wagered spot after settlement: what it must hold, what it holds, whether paid."""

    seat: int
    spot: str
    result: str  # win | lose | push
    stake: int
    net: int
    expected: int
    held: int
    paid: bool = False
    keyed: bool = False  # the amount was keyed by hand (reader failure): not read by RFID
    over_alerted: bool = False

    @property
    def line(self) -> PayoutLine:
        """The spot as a message line."""
        return PayoutLine(seat=self.seat, spot=self.spot, expected=self.expected, held=self.held)

    def problem(self) -> tuple[str, str]:
        """The alert kind and the words for a spot not paid: what is wrong and what to do."""
        where = f"seat {self.seat} {self.spot}"
        must = f"must hold {format_rand(self.expected)}"
        if self.expected == 0:
            return ("loser_not_taken", f"{where} lost {format_rand(self.stake)} and still holds"
                    f" {format_rand(self.held)}: take the losing chips")
        if self.held > self.expected:
            extra = format_rand(self.held - self.expected)
            return ("payout_overpaid", f"{where} holds {format_rand(self.held)}, {must}:"
                    f" overpaid by {extra}; take {extra} back")
        short = format_rand(self.expected - self.held)
        return ("payout_underpaid", f"{where} holds {format_rand(self.held)}, {must}:"
                f" underpaid by {short}; pay {short}")

    def view(self) -> dict[str, object]:
        """The spot for the dealer's screen."""
        over = self.expected > 0 and self.held > self.expected
        state = "paid" if self.paid else ("over" if over else "waiting")
        return {"seat": self.seat, "spot": self.spot, "result": self.result,
                "stake": self.stake, "net": self.net, "expected": self.expected,
                "held": self.held, "state": state, "keyed": self.keyed}


class PayoutCheck:
    """The payout of one settled hand, spot by spot, until every spot is paid."""

    def __init__(self, *, hand_id: str, heat_id: str | None, spots: Iterable[SpotPay]) -> None:
        self.hand_id = hand_id
        self.heat_id = heat_id
        self.spots = {(s.seat, s.spot): s for s in spots}
        for spot in self.spots.values():
            spot.paid = spot.held == spot.expected

    @classmethod
    def of(cls, *, hand_id: str, heat_id: str | None, settlement: HandSettlement,
           held: Callable[[int, str], tuple[int, bool]]) -> PayoutCheck:
        """The check for a settlement; ``held(seat, spot)`` is (cents on the spot now, keyed)."""
        spots = []
        for seat in settlement.seats:
            for r in seat.results:
                amount, keyed = held(seat.seat, r.wager)
                spots.append(SpotPay(seat=seat.seat, spot=r.wager, result=r.result,
                                     stake=r.stake_cents, net=r.net_cents,
                                     expected=max(0, r.stake_cents + r.net_cents),
                                     held=amount, keyed=keyed))
        return cls(hand_id=hand_id, heat_id=heat_id, spots=spots)

    def see(self, seat: int, spot: str, amount: int, *, keyed: bool = False) -> SpotPay | None:
        """A spot now holds ``amount``; returns the spot when this makes a new overpay (a
        winner's or a push's spot over what it must hold; a loser's chips still lying there
        are only a problem once the dealer says the payout is done)."""
        pay = self.spots.get((seat, spot))
        if pay is None or pay.paid:
            return None
        pay.held, pay.keyed = amount, keyed
        if amount == pay.expected:
            pay.paid, pay.over_alerted = True, False
            return None
        if pay.expected > 0 and amount > pay.expected and not pay.over_alerted:
            pay.over_alerted = True
            return pay
        if amount <= pay.expected:
            pay.over_alerted = False
        return None

    @property
    def complete(self) -> bool:
        """Every spot has held what it must."""
        return all(s.paid for s in self.spots.values())

    def unpaid(self) -> list[SpotPay]:
        """The spots not yet paid, in seat and spot order."""
        return [s for _, s in sorted(self.spots.items()) if not s.paid]

    def keyed(self) -> list[SpotPay]:
        """The spots whose amount was keyed by hand, not read (listed as unverifiable)."""
        return [s for _, s in sorted(self.spots.items()) if s.keyed]

    def refusal(self) -> str:
        """Why the next hand cannot open yet."""
        words = "; ".join(s.problem()[1] for s in self.unpaid())
        return (f"the payout of hand {self.hand_id} is not verified: {words}. Correct the"
                " chips, or a supervisor overrides with a reason")

    def view(self) -> dict[str, object]:
        """The whole check for the dealer's screen."""
        return {"hand_id": self.hand_id, "complete": self.complete,
                "spots": [s.view() for _, s in sorted(self.spots.items())]}
