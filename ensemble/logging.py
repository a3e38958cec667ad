"""The library's logger: ``ensemble`` with a NullHandler, never the root logger.

Library code calls :func:`get_logger` (``logging.getLogger("ensemble.<module>")``)
and never configures handlers.  Applications and the command line call
:func:`enable_default_handler` once to see messages on stderr; tests can use
:func:`disable_default_handler` to undo it.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["ROOT", "disable_default_handler", "enable_default_handler", "get_logger"]

ROOT = "ensemble"

logging.getLogger(ROOT).addHandler(logging.NullHandler())


def get_logger(name: str) -> logging.Logger:
    """Logger ``ensemble.<name>`` (``name`` may already start with ``ensemble``)."""
    if name == ROOT or name.startswith(ROOT + "."):
        return logging.getLogger(name)
    return logging.getLogger(f"{ROOT}.{name}")


def _ours(h: logging.Handler) -> bool:
    return getattr(h, "_ensemble_default", False)


def enable_default_handler(level: int = logging.INFO) -> logging.Handler:
    """Attach one stderr handler to the ``ensemble`` logger (idempotent)."""
    logger = logging.getLogger(ROOT)
    for h in logger.handlers:
        if _ours(h):
            logger.setLevel(level)
            return h
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("[%(asctime)s %(levelname)s %(name)s] %(message)s")
    )
    handler._ensemble_default = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


def disable_default_handler() -> None:
    """Remove the handler added by :func:`enable_default_handler`."""
    logger = logging.getLogger(ROOT)
    for h in list(logger.handlers):
        if _ours(h):
            logger.removeHandler(h)
