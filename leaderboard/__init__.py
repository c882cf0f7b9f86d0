"""The central leaderboard service: ingest, standings, prize pools and the live page."""

__all__: list[str] = []
