"""The table daemon and the `showdown` command line: the asyncio shell around the game core."""

__all__: list[str] = []
