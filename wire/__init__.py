"""The contract between a table and the central service: envelope, keys, topics, messages.

Both services import it; it imports only the game core and the standard library (plus the
signing and JSON libraries), never either service.
"""
