"""Example programs and data helpers for pygrad."""
