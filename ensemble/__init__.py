"""ensemble package."""
