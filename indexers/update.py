"""Bring the index up to date with the workspace: the one writer of every index part.

Commit protocol, per batch of files (docs/SECURITY.md, "Crash safety"):
 1. Tantivy: delete the batch's paths, add their chunks, commit.
 2. LanceDB: delete the batch's old vectors; add the vectors the sync's workers made, if any.
 3. SQLite: replace the batch's chunks (those with a vector marked embedded), symbols, edges and
    manifest rows in one transaction.
Other vectors are filled in behind (`embed_pending`), upserted by chunk id, and each chunk is
marked embedded only after its row is in LanceDB. A kill between any two steps leaves an index
that opens and answers (ids unknown to the store are ignored; an old chunk whose vector went
is found by words until its file is redone), and since the manifest row is written last, the
next sync redoes exactly the unfinished files.
A file lock keeps two processes from writing the same index at once.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mcp_retrieval.indexers import health
from mcp_retrieval.indexers.locks import IndexBusy, WriteLock  # noqa: F401 (IndexBusy: re-exported)
from mcp_retrieval.indexers.chunk import CHUNKER_VERSION
from mcp_retrieval.indexers.embed import Embedder, EmbeddingCache, embed_text, text_sha
from mcp_retrieval.indexers.languages import is_code_path
from mcp_retrieval.indexers.lexical import ANALYZER_VERSION
from mcp_retrieval.indexers.memory import return_freed_memory
from mcp_retrieval.indexers.prepare import Prepared, WorkerEmbedding, prepared
from mcp_retrieval.indexers.store import PRIORITY_LAST, FileRecord
from mcp_retrieval.indexers.tokens import budget_counts
from mcp_retrieval.indexers.walk import (DEFAULT_MAX_FILE_BYTES, WalkStats, scopes_of, suspiciously_small,
                                         walk)

if TYPE_CHECKING:
    from mcp_retrieval.indexers.vectors import VectorIndex

log = logging.getLogger(__name__)
BATCH_FILES = 200
EMBED_BATCH = 64
OPTIMIZE_EVERY = 4096  # vectors written between LanceDB compactions
OPTIMIZE_BULK = 256  # a finished backlog of at least this many vectors is compacted at once
OPTIMIZE_WRITES = 64  # else the table is compacted after this many small writes (saved files)
# A sync that leaves more than this share of the lexical index's documents deleted (still
# stepped over by every search and counted by BM25) rebuilds it from the store: searches on a
# churned index ran at half speed, and its rankings drift from a fresh index's (see
# `LexicalIndex.deleted_share`; BENCHMARKS 29b). None: never.
LEXICAL_REBUILD_ABOVE: float | None = 0.2
Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class SyncResult:
    files_scanned: int = 0
    files_changed: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    embeddings_reused: int = 0
    duration_ms: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)



_COUNTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-retrieval-tokens")


class Indexer:
    def __init__(self, root: Path, index_dir: Path, cache: EmbeddingCache | None, embedder: Embedder | None,
                 *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.root = root.resolve()
        self.index_dir = index_dir
        index_dir.mkdir(parents=True, exist_ok=True)
        self._lock_path = index_dir / "write.lock"
        self.repairs: list[str] = []  # what was found damaged at open and rebuilt (indexers/health.py)
        self.last_whole_walk: SyncResult | None = None  # this process's last complete pass over the root
        self.store = health.open_store(index_dir, self.repairs)
        self.lexical = health.open_lexical(index_dir, self.store, self.repairs, self._write_lock)
        self.cache = cache
        self.embedder = embedder
        self._vectors: VectorIndex | None = None
        self._vectors_opened = embedder is None  # without a model there is no table to open
        self._vectors_lock = threading.Lock()
        self.max_file_bytes = max_file_bytes
        self._since_optimize = 0
        self._writes_since_optimize = 0

    @property
    def vectors(self) -> VectorIndex | None:
        """The vector table (None without an embedding model), opened on first use (`open_vectors`)."""
        return self.open_vectors()

    def open_vectors(self) -> VectorIndex | None:
        """Open the vector table once: check it against the store and the model (indexers/health.py).

        Not done at construction: opening imports LanceDB (~1.3 s, most of a server's start), which
        the host's handshake need not wait for; `serve`'s background thread opens it first thing and
        a question waits for it. Every writer calls this before taking the index's write lock: the
        check takes that lock itself, and a nested take in one process reads as another writer's."""
        if self._vectors_opened:
            return self._vectors
        with self._vectors_lock:
            if not self._vectors_opened:
                try:
                    vectors = health.open_vectors(self.index_dir, self.embedder.dim, self.store, self.repairs,
                                                  self._write_lock)
                    self._check_vector_model(vectors, self.embedder.model_id)
                except Exception as exc:  # LanceDB that cannot run or write here: answer as without a model
                    log.warning("vector table unavailable (%s: %s): answering from the lexical index only",
                                type(exc).__name__, " ".join(str(exc).split())[:200])
                    vectors = None
                self._vectors, self._vectors_opened = vectors, True
        return self._vectors

    def own_folders(self) -> list[Path]:
        """The index's folder and the embedding cache's: the walk leaves them out of the root."""
        return [self.index_dir, *([self.cache.path.parent] if self.cache is not None else [])]

    def _write_lock(self) -> "WriteLock":
        return WriteLock(self._lock_path)

    def _check_vector_model(self, vectors: VectorIndex, model: str) -> None:
        """Vectors of another model (or input length) are dropped and re-made; the lexical index stays."""
        previous = self.store.get_meta("vector_model")
        if previous == model:
            return
        try:
            with WriteLock(self._lock_path):
                if previous is not None:
                    log.warning("embedding model changed (%s -> %s): vectors will be recomputed", previous, model)
                    vectors.reset()
                    self.store.mark_all_unembedded()
                self.store.set_meta("vector_model", model)
        except IndexBusy:  # the writer holding the index decides; we check again next start
            log.warning("index busy; could not check the vectors' model")

    # --- lexical, graph and manifest ------------------------------------------------------
    def sync(self, paths: Iterable[str] | None = None, *, full: bool = False,
             progress: Progress | None = None, should_stop: Callable[[], bool] | None = None) -> SyncResult:
        """Bring the lexical index, graph and manifest up to date. `should_stop` is polled between
        files: when it turns true the batch in hand is committed and the sync returns, leaving a
        consistent index whose manifest says exactly which files the next sync must redo."""
        started = time.perf_counter()
        if not self.root.is_dir():  # unmounted or deleted: keep the last good index rather than empty it
            raise FileNotFoundError(f"workspace root {self.root} is gone; the index is left as it was")
        result = SyncResult()
        self.open_vectors()  # before the write lock (see there): a removed file's vectors go too
        scope = scopes_of(list(paths) if paths is not None else None)  # None: the whole workspace
        scopes = sorted(scope.paths) if scope is not None else None
        with WriteLock(self._lock_path):
            stats = WalkStats()
            t0 = time.perf_counter()
            seen = {e.path: e for e in walk(self.root, max_file_bytes=self.max_file_bytes, stats=stats, scopes=scopes,
                                              own=self.own_folders())}
            result.timings_ms["walk"] = _ms(t0)
            result.files_scanned = len(seen)
            if scopes is None and (warning := suspiciously_small(self.root, len(seen))):
                log.warning(warning)
                result.warnings.append(warning)
            manifest = self.store.files() if scopes is None else self.store.files_under(scopes)
            removed = [p for p in manifest if p not in seen]
            if not self.store.counts()["files"]:
                # an empty index holds nothing older: a first index that is interrupted is resumed
                # on the next start, not taken for an older analyser's and redone whole
                self._mark_analysed()
            # indexes from before a marker are its version 1
            analysed = (self.store.get_meta("lexical_analyzer") or "1", self.store.get_meta("chunker") or "1")
            reanalyse = bool(manifest) and scopes is None and analysed != (ANALYZER_VERSION, CHUNKER_VERSION)
            candidates = [e for p, e in seen.items()
                          if full or reanalyse or p not in manifest
                          or (manifest[p].size, manifest[p].mtime_ns) != (e.size, e.mtime_ns)]
            candidates.sort(key=lambda e: _read_later(e.path))  # stable: walk order within each kind
            skipped: Counter[str] = Counter(stats.skipped)
            # the lexical analyser or the chunker changed: every file is re-chunked as if new (vectors
            # of unchanged chunks come back from the cache)
            self._apply(candidates, removed, {} if reanalyse else manifest, result, skipped, progress, should_stop)
            if (LEXICAL_REBUILD_ABOVE is not None and not (should_stop and should_stop())
                    and self.lexical.deleted_share() > LEXICAL_REBUILD_ABOVE):
                t0 = time.perf_counter()
                try:
                    self.lexical.rebuild(self.store.iter_chunks())
                    result.timings_ms["lexical_rebuild"] = _ms(t0)
                except Exception as exc:  # housekeeping: the last commit stands, the next sync tries again
                    log.warning("lexical index not rebuilt (%s); it keeps answering as it was", exc)
            result.skipped = dict(skipped)
            if full and scopes is None:  # a full reindex also repairs what was damaged since start
                health.heal_lexical(self.lexical, self.store, self.repairs)
            if scopes is None and not (should_stop and should_stop()):
                self._mark_analysed()
                self.last_whole_walk = result
        result.duration_ms = _ms(started)
        return result

    def _count_vector_writes(self, vectors: int) -> None:
        """Each write is a LanceDB version and fragment (a first index's batches, the vector
        pass's, a save's): counted across calls until `_compact_if_due` compacts them."""
        self._since_optimize += vectors
        self._writes_since_optimize += bool(vectors)

    def _compact_if_due(self, *, finished: bool) -> None:
        """Compact the vector table when enough was written. The background loop embeds a few
        batches at a time, so writes are counted across calls. A finished backlog compacts what
        a bulk pass (or a first index's workers) wrote; a saved file's few vectors wait for
        OPTIMIZE_WRITES more (compacting after each save was 60 of its 115 ms on sympy). A sync
        does not compact as it writes: every 4,096 vectors held ~20 MB more at sympy's peak."""
        if self._since_optimize >= OPTIMIZE_EVERY or (finished and self._since_optimize > 0 and (
                self._since_optimize >= OPTIMIZE_BULK or self._writes_since_optimize >= OPTIMIZE_WRITES)):
            self.vectors.optimize()
            self._since_optimize = self._writes_since_optimize = 0

    def _mark_analysed(self) -> None:
        """Every file the index holds was chunked and analysed by this version."""
        self.store.set_meta("lexical_analyzer", ANALYZER_VERSION)
        self.store.set_meta("chunker", CHUNKER_VERSION)

    def _apply(self, candidates, removed, manifest, result: SyncResult, skipped: Counter, progress,
               should_stop: Callable[[], bool] | None = None) -> None:
        touched: list[FileRecord] = []
        batch: list[Prepared] = []
        counting: dict[str, Future] = {}  # path -> its chunks' token counts, being made
        timings = Counter()
        total = len(candidates)
        if removed:
            self._flush([], removed, result, timings)
            result.files_removed = len(removed)
        fresh_table = self.vectors is not None and self.vectors.count() == 0
        embedding = (WorkerEmbedding(self.cache.path, self.embedder.model_id)
                     if getattr(self.embedder, "embeds_in_workers", False) and self.cache is not None
                     and self.vectors is not None else None)
        outcomes = prepared(self.root, candidates, self.max_file_bytes,
                            lambda path: old.sha256 if (old := manifest.get(path)) else None, embedding=embedding)
        try:
            for n, (entry, outcome) in enumerate(outcomes, 1):
                if should_stop is not None and should_stop():
                    break
                if isinstance(outcome, str):  # vanished, unreadable or binary since the walk
                    skipped[outcome] += 1
                    if entry.path in manifest:
                        self._flush([], [entry.path], result, timings)
                        result.files_removed += 1
                    continue
                if isinstance(outcome, FileRecord):  # touched, not changed
                    touched.append(outcome)
                    continue
                timings["parse_chunk"] += outcome.parse_ms
                timings["graph"] += outcome.graph_ms
                # the tokenizer (Rust, no GIL) counts this file's chunks while the next files are
                # prepared; `_flush` collects the counts
                counting[entry.path] = _COUNTER.submit(budget_counts, [c.text for c in outcome.chunks])
                batch.append(outcome)
                result.files_changed += 1
                if len(batch) >= BATCH_FILES:
                    self._flush(batch, [], result, timings, counting, fresh_table)
                    batch = []
                if progress:
                    progress("lexical", n, total)
        finally:
            outcomes.close()  # a stop asked for: the workers end here
        self._flush(batch, [], result, timings, counting, fresh_table)
        if touched:
            self.store.touch_files(touched)
        result.timings_ms.update({k: round(v, 1) for k, v in timings.items()})
        if result.files_changed >= BATCH_FILES:
            return_freed_memory()  # parse trees and chunk texts of a big sync are garbage now

    def _flush(self, batch: list[Prepared], removed: list[str], result: SyncResult, timings: Counter,
               counting: dict[str, Future] | None = None, fresh_table: bool = False) -> None:
        """Write a batch of prepared files (`counting`: their token counts, submitted as each file
        was chunked) and drop the `removed` files, in the order of the commit protocol.
        `fresh_table`: the vector table was empty when the sync began, so it holds no row of these
        files (each is written once a sync): no delete, which scans the table (babel's first
        index: 8.3 s of deletes that found nothing)."""
        if not batch and not removed:
            return
        paths = [*removed, *(f.record.path for f in batch)]
        chunks = [c for f in batch for c in f.chunks]
        result.chunks_removed += len(self.store.chunk_ids_for_paths(paths))
        t0 = time.perf_counter()
        self.lexical.replace(paths, chunks)
        timings["lexical"] += _ms(t0)
        embedded: set[str] = set()
        if self.vectors is not None:
            t0 = time.perf_counter()
            if not fresh_table:
                self.vectors.delete_paths(paths)
            if made := [f for f in batch if f.vectors is not None and f.chunks]:
                ids = [c.id for f in made for c in f.chunks]
                self.vectors.add(ids, [c.path for f in made for c in f.chunks], np.vstack([f.vectors for f in made]))
                embedded = set(ids)
                result.chunks_embedded += len(ids)
                self._count_vector_writes(len(ids))  # compacted after the sync (`embed_pending`)
            timings["vectors"] += _ms(t0)
        t0 = time.perf_counter()
        tokens = [n for f in batch for n in counting.pop(f.record.path).result()] if batch else []
        timings["tokens"] += _ms(t0)  # what was left to wait for
        t0 = time.perf_counter()
        symbols = [s for f in batch if f.graph for s in f.graph.symbols]
        edges = [e for f in batch if f.graph for e in f.graph.edges]
        self.store.replace_files(removed, [(f.record, f.language) for f in batch], list(zip(chunks, tokens)),
                                 symbols, edges, embedded_ids=embedded)
        timings["store_graph"] += _ms(t0)
        result.chunks_added += len(chunks)

    # --- vectors, behind ------------------------------------------------------------------
    def embed_pending(self, *, should_stop: Callable[[], bool] | None = None, progress: Progress | None = None,
                      max_priority: int = PRIORITY_LAST, max_batches: int | None = None) -> tuple[int, int]:
        """Embed chunks without vectors (cache first): code, then tests, prose, generated files.

        A lower `max_priority` leaves the later classes pending (the benchmark's code-only mode).
        Returns (embedded, reused)."""
        if self.embedder is None or self.vectors is None or self.cache is None:
            return 0, 0
        embedded = reused = 0
        total = self.store.counts()["vectors_pending"]
        batches = 0
        with WriteLock(self._lock_path):
            while not (should_stop and should_stop()) and (max_batches is None or batches < max_batches):
                batches += 1
                pending = self.store.pending_chunks(getattr(self.embedder, "bulk_batch", EMBED_BATCH), max_priority)
                if not pending:
                    break
                inputs = [embed_text(c.header, c.text) for c in pending]
                shas = [text_sha(t) for t in inputs]
                cached = self.cache.get_many(self.embedder.model_id, shas)
                first = {s: i for i, s in reversed(list(enumerate(shas)))}  # identical chunks are embedded once
                missing = [i for s, i in first.items() if s not in cached]
                if missing:
                    fresh = self.embedder.embed([inputs[i] for i in missing])
                    self.cache.put_many(self.embedder.model_id, {shas[i]: v for i, v in zip(missing, fresh)})
                    cached.update({shas[i]: v for i, v in zip(missing, fresh)})
                self.vectors.upsert([c.id for c in pending], [c.path for c in pending],
                                    [cached[s] for s in shas])
                self.store.mark_embedded([c.id for c in pending])
                embedded += len(missing)
                reused += len(pending) - len(missing)
                if progress:
                    progress("vectors", embedded + reused, total)
            backlog_done = not self.store.counts()["vectors_pending"]
            self._count_vector_writes(embedded + reused)
            self._compact_if_due(finished=backlog_done)
        if backlog_done and hasattr(self.embedder, "release"):
            self.embedder.release()  # the backlog is done: give the batch arena back while serving
        elif backlog_done and embedded + reused:
            return_freed_memory()  # the static model's batches and LanceDB's writes (~45 MB on sympy)
        return embedded, reused


def _read_later(path: str) -> bool:
    """Tests, documentation and other text are read after the code: a batch is searchable once
    committed, and a question asked while a large root's first index is built is answered from
    what is committed (a first index of 64,531 files takes 100 s; BENCHMARKS 65e)."""
    return not is_code_path(path)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000
