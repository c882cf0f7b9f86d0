"""Recorded full heats (issue 3 §5): data in heats/, replayed by test_recorded_heats.py."""
