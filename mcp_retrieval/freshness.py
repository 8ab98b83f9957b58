"""Freshness gate: is the file on disk still the one we indexed? Stat first, hash only on change;
and for `context`, the current text of a changed file in place of its indexed body."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from indexers.chunk import chunk_file
from indexers.languages import language_for
from indexers.store import Store, StoredChunk
from indexers.tokens import count_tokens
from indexers.walk import file_sha256, read_source
from mcp_retrieval.retrieve import Candidate

REFRESH_HEAD = 40  # candidates whose files are checked per answer


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

    def refresh(self, candidates: list[Candidate], pending: set[str]) -> tuple[list[Candidate], int]:
        """Never serve an old body: re-chunk changed files on the fly (matching chunks by symbol),
        drop chunks of deleted files or whose symbol is gone. Changed paths are added to `pending`."""
        states = self.check([c.chunk.path for c in candidates[:REFRESH_HEAD]])
        out, dropped, rechunked = [], 0, {}
        for c in candidates:
            state = states.get(c.chunk.path, Fresh.FRESH)
            if state == Fresh.FRESH:
                out.append(c)
                continue
            pending.add(c.chunk.path)
            if state == Fresh.DELETED:
                dropped += 1
                continue
            if c.chunk.path not in rechunked:
                rechunked[c.chunk.path] = rechunk(self.root, c.chunk.path)
            match = next((n for n in rechunked[c.chunk.path] if n.symbol == c.chunk.symbol), None)
            if match is None:
                dropped += 1
                continue
            c.chunk = match
            c.why.append("re-read from disk: changed since indexing")
            out.append(c)
        return out, dropped


def rechunk(root: Path, path: str) -> list[StoredChunk]:
    """The current chunks of a file on disk, as the indexer would make them."""
    source = read_source(root / path)
    if isinstance(source, str):
        return []
    text, _ = source
    chunks = chunk_file(path, text, language_for(path))
    tokens = count_tokens([c.text for c in chunks]) if chunks else []
    return [StoredChunk(c.id, c.path, c.start_line, c.end_line, c.symbol, c.kind, c.language, c.header, c.text,
                        c.sha256, t, False) for c, t in zip(chunks, tokens)]
