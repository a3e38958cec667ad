"""techniques package."""
