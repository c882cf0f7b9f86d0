"""Poker itself: cards, hand evaluation (per call and batch), hand ranks and range notation."""
