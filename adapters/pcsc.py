"""The PC/SC ID reader as the table chooses it: ``[id_reader] driver = "pcsc"``
(`drivers.id_pcsc.PcscIdReader` on the machine's pcscd; when simulated, a private pcscd with
vsmartcard's virtual reader and a software card, `simulators.pcsc_reader`). Keys::

    [id_reader]
    kind = "hardware"
    driver = "pcsc"
    reader = "ACR122"      # part of the reader's name as pcscd lists it ("" or absent: the
                           # first reader; `showdown doctor` names the readers there)
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Final

import structlog

from drivers.adapter import ConfigPlace, DriverContext, Probe, Role, Simulation
from drivers.adapter_options import Options
from drivers.errors import DeviceLost, DeviceNotFound, LibraryMissing
from drivers.id_pcsc import PcscIdReader, survey

__all__ = ["ADAPTER", "PcscAdapter", "PcscSettings"]

_log = structlog.get_logger("adapters.pcsc")


@dataclass(frozen=True, slots=True, kw_only=True)
class PcscSettings:
    """The PC/SC reader's keys, checked."""

    reader: str = ""


class PcscAdapter:
    """A PC/SC contactless reader (CCID: ACS ACR122U/ACR1252U, HID Omnikey, Identiv...):
    the card's UID by GET DATA."""

    role: Role = "id_reader"
    name = "pcsc"
    summary = "PC/SC contactless ID reader via pcscd (the card's UID by GET DATA)"
    keys: Mapping[str, str] = {
        "reader": "part of the reader's name as pcscd lists it (default: the first reader)",
    }

    def configure(self, options: Mapping[str, Any], place: ConfigPlace) -> PcscSettings:
        """The settings from the section's keys (``place.error`` for a bad one)."""
        value = options.get("reader", "")
        if value == "":  # "" says "the first reader", as an absent key does
            return PcscSettings(reader="")
        reader = Options(options, place).text("reader", "")
        return PcscSettings(reader=(reader or "").strip())

    def open(self, settings: PcscSettings, context: DriverContext) -> PcscIdReader:
        """The driver on the machine's pcscd (LibraryMissing without pyscard)."""
        return PcscIdReader(settings.reader, device_name=context.name)

    def simulation_unavailable(self) -> str | None:
        """Why `simulate` gives None on this machine (None when it can simulate)."""
        from simulators.pcscd_lab import missing  # noqa: PLC0415  # only when simulating

        try:
            from drivers.id_pcsc import load_scard  # noqa: PLC0415

            load_scard()
        except LibraryMissing as exc:
            return str(exc)
        return missing()

    def simulate(self, settings: PcscSettings, context: DriverContext,
                 stack: AsyncExitStack) -> Simulation | None:
        """The driver on a private pcscd with vsmartcard's virtual reader and a software
        card; None (the reason logged, and given by `simulation_unavailable`) when pcscd,
        vsmartcard-vpcd or root are missing. It sets PCSCLITE_CSOCK_NAME for this process
        (simulators/pcscd_lab.py)."""
        del settings  # the simulated reader is the lab's: its name is known
        from simulators.pcsc_reader import PcscReaderSimulator  # noqa: PLC0415
        from simulators.pcscd_lab import PcscdLabError  # noqa: PLC0415

        if (why := self.simulation_unavailable()) is not None:
            _log.warning("no PC/SC simulation on this machine", reason=why)
            return None
        simulator = PcscReaderSimulator()
        try:
            simulator.start()
        except PcscdLabError as exc:
            _log.warning("no PC/SC simulation on this machine", reason=str(exc))
            return None
        stack.callback(simulator.stop)
        device = PcscIdReader(simulator.reader_name, device_name=context.name)
        return Simulation(device=device, simulator=simulator)

    def probe(self, settings: PcscSettings) -> Probe:
        """pcscd reachable, the reader there, its name (and firmware where reported)."""
        try:
            name, firmware = survey(settings.reader)
        except LibraryMissing as exc:
            return Probe(ok=False, detail=str(exc), fix="pip install 'showdown[readers]'")
        except DeviceLost as exc:
            return Probe(ok=False, detail=str(exc),
                         fix="apt-get install pcscd; systemctl enable --now pcscd.socket")
        except DeviceNotFound as exc:
            return Probe(ok=False, detail=str(exc),
                         fix="plug the reader in (lsusb); a reader pcscd does not list needs"
                             " its driver (libccid, or the vendor's)")
        return Probe(ok=True, model=name, firmware=firmware,
                     detail=f"pcscd is running; reader {name!r}")


ADAPTER: Final = PcscAdapter()
