"""Driver exceptions, one tree; transports map OS/pyserial/pyusb errors to these `from exc`.

    DriverError
    ├── DeviceNotFound        nothing at the configured path / VID:PID
    ├── DeviceLost            the device went away (unplug, power loss, re-enumeration)
    ├── DeviceProtocolError   the device sent bytes that break the protocol (remote fault)
    └── LibraryMissing        a driver's library (an optional extra) is not installed
"""

from __future__ import annotations

__all__ = ["DeviceLost", "DeviceNotFound", "DeviceProtocolError", "DriverError",
           "LibraryMissing"]


class DriverError(Exception):
    """Root of every driver error."""


class DeviceNotFound(DriverError):
    """No device at the configured address."""


class DeviceLost(DriverError):
    """The device was there and is gone."""


class DeviceProtocolError(DriverError):
    """The device broke the wire protocol (corrupt frame, impossible value)."""


class LibraryMissing(DriverError):
    """A driver's library is not installed (an optional extra of the install)."""

    def __init__(self, library: str, extra: str, what: str) -> None:
        self.library, self.extra = library, extra
        super().__init__(f"{what} needs {library}, which is not installed:"
                         f" pip install 'showdown[{extra}]'")
