"""The table daemon: the asyncio shell around the game core on each table PC (its one
composition root is `controller.wiring`)."""

__all__: list[str] = []
