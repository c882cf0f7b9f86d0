"""The pure rules of Heads Up Hold'em for the showdown tournament.

No I/O, no clock, no global random: time, randomness and settings are passed in.
"""

__all__: list[str] = []
