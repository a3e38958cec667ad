"""Small real tuning apps that need nothing but NumPy (the README demo)."""

__all__ = ["BlockedMatmul"]


def __getattr__(name: str):  # lazy: keep `import apps.demo` free of work
    if name == "BlockedMatmul":
        from apps.demo.matmul import BlockedMatmul

        return BlockedMatmul
    raise AttributeError(name)
