"""apps package."""
