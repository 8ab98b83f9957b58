"""The index's write lock: one writer per index directory, across processes."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class IndexBusy(RuntimeError):
    """Another process is writing this index."""


class WriteLock:
    """An flock on the index directory: released by the OS if the holder is killed. `busy`: the
    error raised when another process holds it (IndexBusy naming the index by default)."""

    def __init__(self, path: Path, busy: Exception | None = None):
        self.path = path
        self._busy = busy
        self._fd: int | None = None

    def __enter__(self) -> "WriteLock":
        self._fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise (self._busy or IndexBusy(f"another process is writing the index at {self.path.parent}")) from None
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
