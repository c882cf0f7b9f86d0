"""Deck integrity: every shuffle checked for composition and for being unshuffled or preset."""
