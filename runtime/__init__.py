"""What both services share at run time: logging, systemd notify, settings files, errors.

Nothing here knows a table or a leaderboard; `controller/` and `leaderboard/` both build on it.
"""
