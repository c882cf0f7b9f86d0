"""Test configuration shared by the whole suite."""

# Fixtures for the real services (MQTT brokers, SQL databases): tests/fixtures/services.py.
pytest_plugins = ["tests.fixtures.services"]
