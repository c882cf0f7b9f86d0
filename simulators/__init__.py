"""Hardware simulators speaking the real wire protocols through the real OS interfaces."""

__all__: list[str] = []
