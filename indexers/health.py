"""The index's parts opened under a guard: a damaged part is rebuilt, never a traceback at start.

The chunk store (SQLite, `index.db`) is the source of truth; the lexical index (Tantivy) and the
vectors (LanceDB) are derived from it. At open:
- the store must open and pass `PRAGMA quick_check`; if not, it is set aside (`index.db.damaged`)
  with the derived parts, and the index is rebuilt from the tree by the next sync;
- the lexical index must open, answer a search, and hold one document per stored chunk; if not,
  it is rebuilt from the store's chunks (no file is re-read). A full reindex checks it again, so
  a part lost while serving is healed without a restart;
- the vectors must open, every row must be readable (a scan of the id column), and they must
  hold a row for each chunk the store calls embedded; if not, they are reset and every chunk is
  embedded again, behind lexical answers as on a first start.
Each repair is one warning on stderr and a line in `index://status` (`repairs`). The checks that
compare counts take the index's write lock; when another process holds it (it is writing, and
counts may differ for a moment), they are left to the next start.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from mcp_retrieval.indexers.locks import IndexBusy

log = logging.getLogger(__name__)
DERIVED = ("tantivy", "lance")
_LEXICAL_DAMAGE = (ValueError, OSError, RuntimeError)  # what tantivy raises for a lost or garbled part


def _reason(exc: Exception) -> str:
    """A damaged part's error, for the repair note: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:120]}"


def sqlite_files(db: Path) -> list[Path]:
    """A SQLite database's file and its write-ahead log and shared-memory files."""
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def _set_aside(index_dir: Path, why: str, repairs: list[str]) -> None:
    for part in sqlite_files(index_dir / "index.db"):
        if part.exists():
            part.replace(part.with_name(part.name + ".damaged"))
    for name in DERIVED:
        shutil.rmtree(index_dir / name, ignore_errors=True)
    note = f"the chunk store was damaged ({why}): set aside as index.db.damaged; the index is rebuilt from the files"
    log.warning(note)
    repairs.append(note)


def open_store(index_dir: Path, repairs: list[str]):
    from mcp_retrieval.indexers.store import Store

    path = index_dir / "index.db"
    try:
        store = Store(path)
        verdict = store.query("PRAGMA quick_check")
        if verdict and verdict[0][0] == "ok":
            return store
        store.close()
        why = str(verdict[0][0])[:120] if verdict else "no verdict"
    except sqlite3.Error as exc:
        why = f"{type(exc).__name__}: {exc}"
    _set_aside(index_dir, why, repairs)
    return Store(path)


def open_lexical(index_dir: Path, store, repairs: list[str], write_lock: Callable):
    from mcp_retrieval.indexers.lexical import LexicalIndex

    directory = index_dir / "tantivy"
    why = None
    try:
        lexical = LexicalIndex(directory)
        lexical.search("probe", 1)  # a garbled segment fails here, not at open
    except _LEXICAL_DAMAGE as exc:
        why = _reason(exc)
        shutil.rmtree(directory, ignore_errors=True)
        lexical = LexicalIndex(directory)
    try:
        with write_lock():
            _match_store(lexical, store, why, repairs)
    except IndexBusy:  # another process is writing: counts may differ for a moment; next start checks
        pass
    return lexical


def heal_lexical(lexical, store, repairs: list[str]) -> None:
    """The check of `open_lexical` on a served index (a full reindex runs it, under the write lock
    it holds): a part lost or garbled since start is rebuilt in place, from the store."""
    why = None
    try:
        lexical.reopen()
        lexical.search("heal probe", 1)
    except _LEXICAL_DAMAGE as exc:
        why = _reason(exc)
        lexical.reopen(empty=True)
    _match_store(lexical, store, why, repairs)


def _match_store(lexical, store, why: str | None, repairs: list[str]) -> None:
    """Rebuild the lexical index from the store's chunks when it was damaged or does not hold one
    document per chunk (the caller holds the write lock)."""
    chunks = store.counts()["chunks"]
    documents = lexical.num_docs()
    if why is None and documents == chunks:
        return
    why = why or f"{documents} documents for {chunks} chunks"
    lexical.rebuild(store.iter_chunks())
    note = f"the lexical index was damaged ({why}): rebuilt from the chunk store"
    log.warning(note)
    repairs.append(note)


def open_vectors(index_dir: Path, dim: int, store, repairs: list[str], write_lock: Callable):
    from mcp_retrieval.indexers.vectors import VectorIndex

    directory = index_dir / "lance"
    why = None
    try:
        vectors = VectorIndex(directory, dim)
        rows = vectors.count()
        if vectors.readable_rows() != rows:
            raise ValueError(f"{rows} rows in the manifest, fewer readable")
    except Exception as exc:  # LanceDB raises its own error types for a damaged table
        why = _reason(exc)
        shutil.rmtree(directory, ignore_errors=True)
        vectors, rows = VectorIndex(directory, dim), 0
    try:
        with write_lock():
            counts = store.counts()
            embedded = counts["chunks"] - counts["vectors_pending"]
            if why is None and rows >= embedded:  # more rows: a crash between the two commits, upserted again
                return vectors
            why = why or f"{rows} vectors for {embedded} embedded chunks"
            vectors.reset()
            store.mark_all_unembedded()
    except IndexBusy:
        return vectors
    note = f"the vectors were damaged ({why}): reset; every chunk is embedded again"
    log.warning(note)
    repairs.append(note)
    return vectors
