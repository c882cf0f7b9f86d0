"""`showdown devices`: the installed device adapters, the conformance kit that checks any
driver against its simulator or a recorded capture, and the recorder of a real device's
traffic (docs/operations/devices.md)."""
