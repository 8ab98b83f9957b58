"""Freshness gate: is the file on disk still the one we indexed? Stat first, hash only on change."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from indexers.store import Store
from indexers.walk import file_sha256


class Fresh(str, Enum):
    FRESH = "fresh"
    CHANGED = "changed"
    DELETED = "deleted"


class FreshnessGate:
    def __init__(self, root: Path, store: Store):
        self.root = root
        self.store = store

    def check(self, paths: list[str]) -> dict[str, Fresh]:
        out: dict[str, Fresh] = {}
        for path in dict.fromkeys(paths):
            out[path] = self._check_one(path)
        return out

    def _check_one(self, path: str) -> Fresh:
        record = self.store.file(path)
        abs_path = self.root / path
        try:
            st = abs_path.stat()
        except OSError:
            return Fresh.DELETED
        if record is None:
            return Fresh.CHANGED
        if (st.st_size, st.st_mtime_ns) == (record.size, record.mtime_ns):
            return Fresh.FRESH
        try:
            return Fresh.FRESH if file_sha256(abs_path.read_bytes()) == record.sha256 else Fresh.CHANGED
        except OSError:
            return Fresh.DELETED
