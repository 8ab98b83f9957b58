"""Give freed memory back to the OS after the few big, short-lived allocations a server makes
(a chunk-embedding arena, the vector mirror's Arrow read, the graph build). Without this, glibc
and Arrow's mimalloc pool keep the pages: measured on sympy, ~100 MB after loading the mirror and
~120 MB after a bulk embedding session (docs/BENCHMARKS-history.md, section 2b)."""

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


def limit_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives each thread that allocates its own heap arena (up to 8 per core); a server's
    worker threads then keep freed memory scattered over many of them. Two arenas is what
    `MALLOC_ARENA_MAX=2` would set; call before the threads start."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
