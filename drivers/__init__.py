"""Hardware drivers: sans-I/O codecs plus thin pyserial / pyusb transports."""

__all__: list[str] = []
