"""The project's own device adapters (`drivers.adapter.DeviceAdapter`), one module per driver,
registered by entry point in pyproject.toml exactly as a vendor's adapter registers in its own
distribution. An adapter joins a driver in drivers/ to its simulator in simulators/."""
