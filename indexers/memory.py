"""Give freed memory back to the OS after the few big, short-lived allocations a server makes
(a chunk-embedding arena, the vector mirror's Arrow read, the graph build). Without this, glibc
and Arrow's mimalloc pool keep the pages: measured on sympy, ~100 MB after loading the mirror and
~120 MB after a bulk embedding session (docs/BENCHMARKS.md, "Memory")."""

from __future__ import annotations

import ctypes


def return_freed_memory() -> None:
    """Cheap (no garbage collection: what we drop is freed by reference counting)."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except (ImportError, AttributeError):
        pass
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass
