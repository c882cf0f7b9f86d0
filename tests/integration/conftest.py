"""Fixtures of the integration tests: a short directory for Unix sockets."""

from tests.integration.daemon_support import short_dir

__all__ = ["short_dir"]
