"""A text-line card shoe for showdown: the example of a vendor adapter (README.md).

`codec` reads the lines (sans-I/O), `driver` is the `CardReader` on a serial port,
`simulator` a shoe of the same kind on a pseudo-terminal, `adapter` the object showdown finds
by its entry point (``showdown.shoe`` / ``text-line``).
"""
