"""Compatibility layers for apps written against other tuners' APIs."""

__all__: list[str] = []
