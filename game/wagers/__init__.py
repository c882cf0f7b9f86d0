"""Wagers: the house limits a bet must keep, and the settlement of a hand's wagers."""
