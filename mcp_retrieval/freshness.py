"""Freshness gate: is the file on disk still the one we indexed? Stat first, hash only on change;
and for `context`, the current text of a changed file in place of its indexed body.

Every read goes through `indexers.safe_read`: a file that now resolves outside the root, is no
longer a regular file, or grew past the size bound counts as GONE — its chunks are dropped from
the answer (never re-read) and the path is queued for the index to drop it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from mcp_retrieval.indexers.chunk import chunk_file
from mcp_retrieval.indexers.languages import language_of
from mcp_retrieval.indexers.safe_read import read_inside, stat_many
from mcp_retrieval.indexers.store import Store, StoredChunk
from mcp_retrieval.indexers.tokens import budget_counts
from mcp_retrieval.indexers.walk import DEFAULT_MAX_FILE_BYTES, file_sha256, read_source, size_limit
from mcp_retrieval.retrieve import Candidate


class Fresh(str, Enum):
    FRESH = "fresh"
    CHANGED = "changed"
    DELETED = "deleted"  # deleted, or no longer readable as a file inside the root


@dataclass
class Refreshed:
    candidates: list[Candidate]
    rechunked_files: int = 0
    dropped: int = 0

    def detail(self) -> str:
        if not self.rechunked_files and not self.dropped:
            return "all fresh"
        return f"{self.rechunked_files} changed files re-read, {self.dropped} stale chunks dropped"


class FreshnessGate:
    def __init__(self, root: Path, store: Store, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.root = root.resolve()
        self.store = store
        self.max_file_bytes = max_file_bytes

    def check(self, paths: list[str]) -> dict[str, Fresh]:
        """Each path's state: one store read and one `stat` per file (folders resolved once)."""
        paths = list(dict.fromkeys(paths))
        records = self.store.files(paths)
        stats = stat_many(self.root, paths)
        return {path: self._state(path, records.get(path), stats[path]) for path in paths}

    def _state(self, path: str, record, st) -> Fresh:
        if isinstance(st, str):
            return Fresh.DELETED
        if record is None:
            return Fresh.CHANGED
        if (st.st_size, st.st_mtime_ns) == (record.size, record.mtime_ns):
            return Fresh.FRESH
        got = read_inside(self.root, path, size_limit(path, self.max_file_bytes))
        if isinstance(got, str):
            return Fresh.DELETED
        return Fresh.FRESH if file_sha256(got.data) == record.sha256 else Fresh.CHANGED

    def refresh(self, candidates: list[Candidate], pending: set[str]) -> Refreshed:
        """Never serve an old body: re-chunk changed files on the fly (matching chunks by symbol),
        drop chunks of gone files or whose symbol is gone. Every candidate's file is checked (a
        stat each; a hash only when the stat differs). Changed paths are added to `pending`."""
        states = self.check([c.chunk.path for c in candidates])
        out = Refreshed([])
        rechunked: dict[str, list[StoredChunk]] = {}
        for c in candidates:
            state = states[c.chunk.path]
            if state == Fresh.FRESH:
                out.candidates.append(c)
                continue
            pending.add(c.chunk.path)
            if state == Fresh.CHANGED and c.chunk.path not in rechunked:
                rechunked[c.chunk.path] = rechunk(self.root, c.chunk.path, self.max_file_bytes)
            match = next((n for n in rechunked.get(c.chunk.path, []) if n.symbol == c.chunk.symbol), None)
            if match is None:  # deleted, unreadable, or the symbol is gone
                out.dropped += 1
                continue
            c.chunk = match
            c.why.append("re-read from disk: changed since indexing")
            out.candidates.append(c)
        out.rechunked_files = len(rechunked)
        return out


def rechunk(root: Path, path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> list[StoredChunk]:
    """The current chunks of a file on disk, as the indexer would make them ([] if it cannot be read
    safely: outside the root, not a regular file, too large, binary)."""
    source = read_source(root, path, max_bytes)
    if isinstance(source, str):
        return []
    text, _ = source
    chunks = chunk_file(path, text, language_of(path, text))
    tokens = budget_counts([c.text for c in chunks]) if chunks else []
    return [StoredChunk(c.id, c.path, c.start_line, c.end_line, c.symbol, c.kind, c.language, c.header, c.text,
                        c.sha256, t, False) for c, t in zip(chunks, tokens)]


class SnapshotGate:
    """The freshness gate of a read-only replica: there is no work tree, the published snapshot is
    the truth, so every chunk is current."""

    def check(self, paths: list[str]) -> dict[str, Fresh]:
        return {path: Fresh.FRESH for path in paths}

    def refresh(self, candidates: list[Candidate], pending: set[str]) -> Refreshed:
        return Refreshed(list(candidates))
