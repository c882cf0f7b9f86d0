"""Driver exceptions, one tree; transports map OS/pyserial/pyusb errors to these `from exc`.

    DriverError
    ├── DeviceNotFound        nothing at the configured path / VID:PID
    ├── DeviceLost            the device went away (unplug, power loss, re-enumeration)
    └── DeviceProtocolError   the device sent bytes that break the protocol (remote fault)
"""

from __future__ import annotations

__all__ = ["DeviceLost", "DeviceNotFound", "DeviceProtocolError", "DriverError"]


class DriverError(Exception):
    """Root of every driver error."""


class DeviceNotFound(DriverError):
    """No device at the configured address."""


class DeviceLost(DriverError):
    """The device was there and is gone."""


class DeviceProtocolError(DriverError):
    """The device broke the wire protocol (corrupt frame, impossible value)."""
