"""The standings: read from the database, kept live change by change, and shown as the page, the
API and text."""
