"""``open_storage(url)``: the one place that turns a ``--database`` URL into a store.

Why one function: every entry point (command line, ``tune``, ``Tuner``, MPI,
the compatibility layer) takes a URL, and each of them choosing a class
itself is how features went missing in one path and not another.

URLs:

* ``memory://`` or ``memory:``: a fresh, private :class:`MemoryStorage`;
* ``memory://NAME``: the in-memory store called NAME *in this process*: a
  second ``open_storage`` of the same URL while the first store is still
  referenced returns the same object, so threads (a worker pool, a report
  read after the run) see one run.  The registry holds names weakly: once no
  object refers to a named store it is gone, and the next open of that name
  starts empty.  Keep a reference (``keep = open_storage("memory://x")``) for
  as long as the data is wanted.
* anything else: :class:`SQLStorage` (``sqlite:///...``, ``postgresql://...``).

Another process can never see an in-memory store; check
``store.shareable_across_processes`` before starting worker processes or MPI
ranks on it.
"""

from __future__ import annotations

import threading
import weakref

from ensemble.storage.base import BaseStorage
from ensemble.storage.memory import MemoryStorage

__all__ = ["MEMORY_SCHEME", "open_storage"]

MEMORY_SCHEME = "memory:"


class _NamedStores:
    """Process-wide name -> MemoryStorage map with weak values (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: weakref.WeakValueDictionary[str, MemoryStorage] = weakref.WeakValueDictionary()

    def get(self, name: str) -> MemoryStorage:
        with self._lock:
            store = self._stores.get(name)
            if store is None:
                store = MemoryStorage(f"memory://{name}")
                self._stores[name] = store
            return store


_NAMED = _NamedStores()


def _memory_name(url: str) -> str | None:
    """The store name of a ``memory:`` URL ("" for a private store), or None for any other URL."""
    if url[: len(MEMORY_SCHEME)].lower() != MEMORY_SCHEME:
        return None
    rest = url[len(MEMORY_SCHEME):]
    return rest.removeprefix("//")


def open_storage(url: str, *, busy_timeout_s: float = 30.0) -> BaseStorage:
    """Open the store at ``url`` (see the module docstring); ``busy_timeout_s`` applies to SQL stores only."""
    name = _memory_name(url) if isinstance(url, str) else None
    if name is None:
        from ensemble.storage.storage import SQLStorage

        return SQLStorage(url, busy_timeout_s=busy_timeout_s)
    if not name:
        return MemoryStorage("memory://")
    return _NAMED.get(name)
