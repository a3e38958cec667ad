"""measurement package."""
