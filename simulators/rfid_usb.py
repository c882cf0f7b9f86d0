"""The simulated chip reader's USB side: a pyusb backend (`usb.core.find(..., backend=...)`)
with the reader's descriptors, endpoints and libusb's errors, driving any device that offers
`UsbSimDevice` (simulators.rfid's RfidReaderSimulator). The real driver runs unchanged on it.
"""

# The backend methods keep pyusb's IBackend signatures (argument names and order included).
# ruff: noqa: ARG002, N803, PLR0917

from __future__ import annotations

import array
import errno
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import usb.backend  # type: ignore[import-untyped]
import usb.core  # type: ignore[import-untyped]

__all__ = ["EP_IN", "EP_OUT", "PACKET", "Descriptor", "DevId", "Handle", "RfidSimBackend",
           "UsbSimDevice", "no_device", "overflow_error", "pipe_error", "usb_timeout"]

EP_OUT = 0x01
EP_IN = 0x81
PACKET = 64
LANGID_EN_US = 0x0409


class UsbSimDevice(Protocol):
    """What the USB side needs of the simulated device; each call takes the device's lock."""

    vendor_id: int
    product_id: int
    serial: str
    bus: int
    in_transfer: str

    def present(self) -> tuple[int, int] | None:
        """(generation, address) while plugged in, else None."""
        ...

    def check_alive(self, generation: int) -> None:
        """Raise `no_device()` unless the device is plugged in at that generation."""
        ...

    def configure(self, generation: int, value: int) -> None:
        """SET_CONFIGURATION: 1 starts the firmware, 0 unconfigures it."""
        ...

    def configuration(self, generation: int) -> int:
        """The active configuration value (0: unconfigured)."""
        ...

    def claim(self, generation: int, *, claimed: bool) -> None:
        """Claim or release interface 0."""
        ...

    def endpoint_read(self, generation: int, ep: int, buff: array.array[int],
                      timeout_ms: int) -> int:
        """Bytes from the IN endpoint into `buff`; how many."""
        ...

    def endpoint_write(self, generation: int, ep: int, data: array.array[int]) -> int:
        """Bytes to the OUT endpoint (host commands); how many."""
        ...

    def reenumerate(self) -> None:
        """Drop off the bus and enumerate again (old handles die)."""
        ...


def _strings(serial: str) -> dict[int, str]:
    return {1: "Showdown Table Systems", 2: "SR-48 chip spot reader", 3: serial}


@dataclass(slots=True)
class Descriptor:
    """A descriptor as pyusb wants it: fields as attributes."""

    fields: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True, slots=True)
class DevId:
    """One enumeration of the device (a new generation after each unplug or reset)."""

    generation: int
    address: int


@dataclass(frozen=True, slots=True)
class Handle:
    """An open handle, valid for the generation it was opened on."""

    generation: int


def no_device() -> usb.core.USBError:
    """What libusb raises on a handle of a device that left the bus."""
    return usb.core.USBError(
        "No such device (it may have been disconnected)", -4, errno.ENODEV
    )


def usb_timeout() -> usb.core.USBError:
    """What libusb raises when a transfer times out."""
    return usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)


def pipe_error() -> usb.core.USBError:
    """What libusb raises on a stalled endpoint or a refused request."""
    return usb.core.USBError("Pipe error", -9, errno.EPIPE)


def overflow_error() -> usb.core.USBError:
    """What libusb raises when a packet is larger than the read buffer."""
    return usb.core.USBError("Overflow", -8, errno.EOVERFLOW)


class RfidSimBackend(usb.backend.IBackend):  # type: ignore[misc]
    """The pyusb backend through which the simulated reader is found and driven."""

    def __init__(self, sim: UsbSimDevice) -> None:
        super().__init__()
        self._sim = sim

    def enumerate_devices(self) -> Iterator[DevId]:
        """The simulated reader, while it is plugged in."""
        present = self._sim.present()
        return iter([DevId(*present)] if present is not None else [])

    def get_parent(self, dev: DevId) -> None:
        """The reader hangs off a root hub the simulation does not model."""

    def get_device_descriptor(self, dev: DevId) -> Descriptor:
        """The device descriptor (VID:PID, strings, one configuration)."""
        sim = self._sim
        return Descriptor({
            "bLength": 18, "bDescriptorType": 1, "bcdUSB": 0x0200, "bDeviceClass": 0,
            "bDeviceSubClass": 0, "bDeviceProtocol": 0, "bMaxPacketSize0": 64,
            "idVendor": sim.vendor_id, "idProduct": sim.product_id, "bcdDevice": 0x0100,
            "iManufacturer": 1, "iProduct": 2, "iSerialNumber": 3, "bNumConfigurations": 1,
            "address": dev.address, "bus": sim.bus, "port_number": 2, "port_numbers": (2,),
            "speed": 2,  # full speed
        })

    def get_configuration_descriptor(self, dev: DevId, config: int) -> Descriptor:
        """Configuration 1: self-powered, one interface."""
        if config != 0:
            raise IndexError(f"Invalid configuration index {config}")
        return Descriptor({
            "bLength": 9, "bDescriptorType": 2, "wTotalLength": 32, "bNumInterfaces": 1,
            "bConfigurationValue": 1, "iConfiguration": 0, "bmAttributes": 0xC0,
            "bMaxPower": 1, "extra_descriptors": [],
        })

    def get_interface_descriptor(
        self, dev: DevId, intf: int, alt: int, config: int
    ) -> Descriptor:
        """Interface 0: vendor class 0xFF, subclass 'R', protocol 1, two endpoints."""
        if config != 0 or intf != 0:
            raise IndexError(f"Invalid interface index {intf}")
        if alt != 0:
            raise IndexError(f"Invalid alternate setting index {alt}")
        return Descriptor({
            "bLength": 9, "bDescriptorType": 4, "bInterfaceNumber": 0, "bAlternateSetting": 0,
            "bNumEndpoints": 2, "bInterfaceClass": 0xFF, "bInterfaceSubClass": 0x52,
            "bInterfaceProtocol": 0x01, "iInterface": 0, "extra_descriptors": [],
        })

    def get_endpoint_descriptor(self, dev: DevId, ep: int, intf: int, alt: int,
                                config: int) -> Descriptor:
        """Endpoint 0x01 bulk OUT and 0x81 interrupt (or bulk) IN, 64-byte packets."""
        if config != 0 or intf != 0 or alt != 0 or ep not in (0, 1):
            raise IndexError(f"Invalid endpoint index {ep}")
        if ep == 0:
            address, attributes, interval = EP_OUT, 0x02, 0
        else:
            interrupt = self._sim.in_transfer == "interrupt"
            address, attributes, interval = EP_IN, 0x03 if interrupt else 0x02, 1
        return Descriptor({
            "bLength": 7, "bDescriptorType": 5, "bEndpointAddress": address,
            "bmAttributes": attributes, "wMaxPacketSize": PACKET, "bInterval": interval,
            "bRefresh": 0, "bSynchAddress": 0, "extra_descriptors": [],
        })

    def open_device(self, dev: DevId) -> Handle:
        """A handle bound to this enumeration of the device."""
        self._sim.check_alive(dev.generation)
        return Handle(dev.generation)

    def close_device(self, dev_handle: Handle) -> None:
        """Closing never fails, even on a device that is gone."""

    def set_configuration(self, dev_handle: Handle, config_value: int) -> None:
        """Configuration 1 starts the firmware (heartbeats); 0 unconfigures it."""
        self._sim.configure(dev_handle.generation, config_value)

    def get_configuration(self, dev_handle: Handle) -> int:
        """The active configuration value (0: unconfigured)."""
        return self._sim.configuration(dev_handle.generation)

    def set_interface_altsetting(self, dev_handle: Handle, intf: int, altsetting: int) -> None:
        """Only interface 0, alternate setting 0 exists."""
        self._sim.check_alive(dev_handle.generation)
        if intf != 0 or altsetting != 0:
            raise usb.core.USBError("Invalid parameter", -2, errno.EINVAL)

    def claim_interface(self, dev_handle: Handle, intf: int) -> None:
        """Claim interface 0."""
        self._sim.check_alive(dev_handle.generation)
        if intf != 0:
            raise usb.core.USBError("Entity not found", -5, errno.ENOENT)
        self._sim.claim(dev_handle.generation, claimed=True)

    def release_interface(self, dev_handle: Handle, intf: int) -> None:
        """Release interface 0."""
        self._sim.claim(dev_handle.generation, claimed=False)

    def bulk_write(self, dev_handle: Handle, ep: int, intf: int, data: array.array[int],
                   timeout: int) -> int:
        """Host command bytes into the emulated firmware."""
        return self._sim.endpoint_write(dev_handle.generation, ep, data)

    def bulk_read(self, dev_handle: Handle, ep: int, intf: int, buff: array.array[int],
                  timeout: int) -> int:
        """Reader bytes out (when the IN endpoint is bulk)."""
        return self._sim.endpoint_read(dev_handle.generation, ep, buff, timeout)

    def intr_read(self, dev_handle: Handle, ep: int, intf: int, buff: array.array[int],
                  timeout: int) -> int:
        """Reader bytes out (the IN endpoint is interrupt by default)."""
        return self._sim.endpoint_read(dev_handle.generation, ep, buff, timeout)

    def ctrl_transfer(self, dev_handle: Handle, bmRequestType: int, bRequest: int,
                      wValue: int, wIndex: int, data: array.array[int], timeout: int) -> int:
        """Standard GET_DESCRIPTOR (device, string); any other request stalls."""
        sim = self._sim
        sim.check_alive(dev_handle.generation)
        if bmRequestType != 0x80 or bRequest != 0x06:
            raise pipe_error()
        kind, index = wValue >> 8, wValue & 0xFF
        strings = _strings(sim.serial)
        if kind == 1:
            raw = bytes([18, 1, 0x00, 0x02, 0, 0, 0, 64]) + (
                sim.vendor_id.to_bytes(2, "little") + sim.product_id.to_bytes(2, "little")
                + (0x0100).to_bytes(2, "little") + bytes([1, 2, 3, 1])
            )
        elif kind == 3 and index == 0:
            raw = bytes([4, 3]) + LANGID_EN_US.to_bytes(2, "little")
        elif kind == 3 and index in strings and wIndex == LANGID_EN_US:
            text = strings[index].encode("utf-16-le")
            raw = bytes([2 + len(text), 3]) + text
        else:
            raise pipe_error()
        raw = raw[: len(data)]
        data[: len(raw)] = array.array("B", raw)
        return len(raw)

    def clear_halt(self, dev_handle: Handle, ep: int) -> None:
        """Nothing halts in the simulation; a dead handle still fails."""
        self._sim.check_alive(dev_handle.generation)

    def reset_device(self, dev_handle: Handle) -> None:
        """A USB reset re-enumerates the reader (old handles die)."""
        self._sim.check_alive(dev_handle.generation)
        self._sim.reenumerate()

    def is_kernel_driver_active(self, dev_handle: Handle, intf: int) -> bool:
        """No kernel driver binds a vendor-specific interface."""
        return False

    def detach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        """Nothing to detach."""

    def attach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        """Nothing to attach."""
