"""Integration tests against real services: MQTT brokers and SQL databases."""
