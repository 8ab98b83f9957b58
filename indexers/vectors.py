"""LanceDB vector table: one row per embedded chunk (id, path, vector).

Rows are upserted by id (`merge_insert`), so replaying a batch after a crash never duplicates.
Search is exact cosine over an in-memory mirror of the table (see `search`) up to `ann_min_rows`
rows; past that, an IVF_PQ index with refinement answers instead and the mirror is dropped
(`python -m mcp_retrieval.bench ann`: exact search costs 3.3 ms at 100k rows and 7.5 ms at 300k
with a 0.46 GB mirror, IVF_PQ ~4 ms at recall@10 0.99 and no resident matrix). Rows whose chunk
is no longer in the store are filtered by the caller.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from mcp_retrieval.indexers.lancedb_import import lancedb_module
from mcp_retrieval.indexers.memory import return_freed_memory

log = logging.getLogger(__name__)
TABLE = "chunks"
RELOAD_S = 5.0
ANN_MIN_ROWS = 200_000  # below: the exact mirror is faster than the ANN index and exact
ANN_NPROBES = 20
ANN_REFINE = 10
# LanceDB keeps every version's files for 7 days unless told otherwise: a busy workspace's
# table grew to 29 GB for ~70 MB of live vectors (sympy, BENCHMARKS 29a). Versions older than
# this are removed at each compaction; a reader in another process reloads within RELOAD_S.
KEEP_OLD_VERSIONS = timedelta(minutes=10)


_blas_limited = False


def one_blas_thread() -> None:
    """numpy's OpenBLAS threads spin for a while after each product; on two cores they slowed the
    question's embedding (onnxruntime, right after or beside a search) from 24 to 40 ms on sympy
    (docs/BENCHMARKS-history.md 24c). The mirror's matrix-vector product needs no second thread: 1.4 ms
    at 19k rows single-threaded, 2.0 ms with two. Process-wide, set once."""
    global _blas_limited
    if not _blas_limited:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        _blas_limited = True


_SPLIT_ROWS = 20_000  # below: one thread's product is too short to share (~2 ms at 41k rows x 256 on two)
_pool: ThreadPoolExecutor | None = None


def _similarities(columns: np.ndarray, vectors: np.ndarray) -> list[np.ndarray]:
    """Each vector's products with every column of the mirror (`columns`: dim x rows): one
    vector-matrix product per vector over the column-major mirror, the columns in two halves on
    two threads (numpy releases the GIL; BLAS itself is held to one thread, `one_blas_thread`).
    On sympy's 41k x 128 mirror, against `rows x dim @ dim x q`: q=1 1.3 -> 0.9 ms, q=2 2.4 ->
    1.8 ms, q=3 5.2 -> 2.4 ms (OpenBLAS's matrix product is slow for a few columns; BENCHMARKS 43a)."""
    global _pool
    rows = columns.shape[1]
    if rows < _SPLIT_ROWS:
        return [v @ columns for v in vectors]
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-product")
    half = rows // 2
    other = _pool.submit(lambda: [v @ columns[:, half:] for v in vectors])
    first = [v @ columns[:, :half] for v in vectors]
    return [np.concatenate([a, b]) for a, b in zip(first, other.result())]


def _top(sims: np.ndarray, k: int) -> np.ndarray:
    """The positions of the `k` largest values, largest first. Over a long column the values at
    or above the (k/4)-th largest of every 16th are the few hundred to partition (a full
    `argpartition` of sympy's 41k costs ~0.3 ms, this ~0.03); when fewer than `k` pass, the whole
    column is partitioned, so the result is always exact."""
    among = None  # positions to partition; None: all of them
    if len(sims) > 64 * k:
        sample, m = sims[::16], max(1, k // 4)
        passed = np.flatnonzero(sims >= np.partition(sample, len(sample) - m)[len(sample) - m])
        among = passed if len(passed) >= k else None
    values = sims if among is None else sims[among]
    top = np.argpartition(values, len(values) - k)[len(values) - k:]
    top = top if among is None else among[top]
    return top[np.argsort(-sims[top], kind="stable")]


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class VectorIndex:
    def __init__(self, directory: Path, dim: int, ann_min_rows: int = ANN_MIN_ROWS):
        lancedb = lancedb_module()
        one_blas_thread()
        directory.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.ann_min_rows = ann_min_rows
        # reads follow commits made by another process (a second server writing this index) within
        # RELOAD_S; without an interval a table handle stays at the version it first read
        self._db = lancedb.connect(str(directory), read_consistency_interval=timedelta(seconds=RELOAD_S))
        self._schema = pa.schema([("id", pa.string()), ("path", pa.string()),
                                  ("vector", pa.list_(pa.float32(), dim))])
        self._lock = threading.Lock()
        self._table = self._open()
        self.ann = self._has_ann_index()
        self._checked_at = 0.0
        self._drop_mirror()

    def _open(self):
        """The table, made when absent: `exist_ok`, so a second server making it at the same moment
        opens the other's instead of emptying it. One that cannot be opened (damaged) or holds
        another model's dimension is made again empty; the store's flags are checked against it
        (`health`)."""
        if TABLE not in self._db.list_tables().tables:
            return self._db.create_table(TABLE, schema=self._schema, exist_ok=True)
        try:
            table = self._db.open_table(TABLE)
            if table.schema.field("vector").type.list_size != self.dim:  # model changed: start over
                self._db.drop_table(TABLE)
                raise ValueError("dimension changed")
            return table
        except Exception:
            return self._db.create_table(TABLE, schema=self._schema, mode="overwrite")

    def _arrow(self, ids: Sequence[str], paths: Sequence[str], vectors: np.ndarray) -> pa.Table:
        return pa.table({"id": list(ids), "path": list(paths),
                         "vector": pa.FixedSizeListArray.from_arrays(
                             pa.array(np.asarray(vectors, dtype=np.float32).ravel()), self.dim)}, schema=self._schema)

    def upsert(self, ids: Sequence[str], paths: Sequence[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        data = self._arrow(ids, paths, vectors)
        with self._lock:
            (self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data))
            self._mirror_add(list(ids), list(paths), np.asarray(vectors, dtype=np.float32))

    def add(self, ids: Sequence[str], paths: Sequence[str], vectors: np.ndarray) -> None:
        """Append rows whose ids the table does not hold (a chunk's id names its path, and that
        path's rows were just deleted, or the table was empty when the sync began): no merge on
        id, which reads the table's ids at each write."""
        if not ids:
            return
        with self._lock:
            self._table.add(self._arrow(ids, paths, vectors))
            self._mirror_add(list(ids), list(paths), np.asarray(vectors, dtype=np.float32))

    def delete_paths(self, paths: Sequence[str]) -> None:
        paths = list(paths)
        with self._lock:
            for i in range(0, len(paths), 200):
                part = paths[i: i + 200]
                self._table.delete(f"path IN ({', '.join(_quote(p) for p in part)})")
            if self._columns is not None and paths:
                keep = ~np.isin(self._paths, np.asarray(paths, dtype=object))
                self._columns, self._paths = np.ascontiguousarray(self._columns[:, keep]), self._paths[keep]
                self._ids = [i for i, k in zip(self._ids, keep) if k]
                self._mirror_version = self._table.version

    def _mirror_add(self, ids: list[str], paths: list[str], vectors: np.ndarray) -> None:
        """Keep the in-memory mirror current with this process's own writes (no reload needed)."""
        if self._columns is None:
            return
        vectors = _unit_rows(vectors)
        position = {cid: n for n, cid in enumerate(self._ids)}
        fresh = [n for n, cid in enumerate(ids) if cid not in position]
        for n, cid in enumerate(ids):
            if cid in position:
                self._columns[:, position[cid]] = vectors[n]
        if fresh:
            self._columns = np.hstack([self._columns, vectors[fresh].T])
            self._ids = self._ids + [ids[n] for n in fresh]
            self._paths = np.concatenate([self._paths, np.asarray([paths[n] for n in fresh], dtype=object)])
        self._mirror_version = self._table.version

    def _drop_mirror(self) -> None:
        self._columns: np.ndarray | None = None  # dim x rows, unit columns (see `_similarities`)
        self._ids: list[str] = []
        self._paths = np.asarray([], dtype=object)
        self._mirror_version: int | None = None

    def _has_ann_index(self) -> bool:
        try:
            return any("vector" in idx.columns for idx in self._table.list_indices())
        except Exception:
            return False

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first (`search_many` for one vector)."""
        return self.search_many(np.asarray(vector)[None, :], limit)[0]

    def search_many(self, vectors: np.ndarray, limit: int) -> list[list[tuple[str, float]]]:
        """For each row of `vectors`, (chunk id, cosine similarity), best first: exact search over
        an in-memory mirror, or the IVF_PQ index once the table has one (see the module docstring).

        A flat LanceDB query scans the table's files on every call (6.5 ms at 10k rows, 128 ms at
        100k); one BLAS product over a float32 mirror is exact. The product is memory-bound (the
        whole mirror is read once per call, however many vectors): all the question's vectors go
        in one call, and the rows are split between two threads (`_product`). The mirror reloads
        when the table's version moves, which is asked at most every RELOAD_S; this process's own
        upserts and deletes update the mirror in place.
        """
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        columns, ids = (None, []) if self.ann else self._mirror()
        if self.ann:  # built here, or found by the mirror's reload (another process built it)
            return [self._ann_search(v, limit) for v in vectors]
        if columns is None or not len(ids):
            return [[] for _ in vectors]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        k = min(limit, len(ids))
        out = []
        for sims in _similarities(columns, vectors / np.where(norms > 0, norms, 1.0)):
            top = _top(sims, k)
            out.append([(ids[i], float(sims[i])) for i in top])
        return out

    def _ann_search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        q = np.asarray(vector, dtype=np.float32)
        with self._lock:
            rows = (self._table.search(q / (np.linalg.norm(q) or 1.0)).metric("cosine").nprobes(ANN_NPROBES)
                    .refine_factor(ANN_REFINE).select(["id"]).limit(limit).to_arrow())
        return [(cid, 1.0 - float(d)) for cid, d in zip(rows["id"].to_pylist(), rows["_distance"].to_pylist())]

    def warm(self) -> None:
        """Load the mirror now rather than in the next question (~0.2 s on sympy's 41k vectors)."""
        if not self.ann:
            self._mirror()

    def _mirror(self):
        with self._lock:
            if self._mirror_current():
                return self._columns, self._ids  # the table's version is asked at most every RELOAD_S
            try:  # the table as last committed: another process (the index's writer) may have moved it
                self._table.checkout_latest()
            except Exception as exc:  # a table that cannot move keeps answering from its version
                log.debug("vector table not refreshed: %s", exc)
            version = self._table.version  # (each a round trip through LanceDB's event loop: ~0.4 ms)
            self._checked_at = time.monotonic()
            if self._columns is None or version != self._mirror_version:
                if self._has_ann_index():  # another process built it: use it, hold no mirror
                    self.ann = True
                    return None, []
                data = self._table.to_arrow().select(["id", "path", "vector"])
                ids = data.column("id").to_pylist()
                self._paths = np.asarray(data.column("path").to_pylist(), dtype=object)
                flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
                matrix = np.asarray(flat, dtype=np.float32).reshape(len(ids), self.dim) if ids else \
                    np.zeros((0, self.dim), dtype=np.float32)
                norms = np.linalg.norm(matrix, axis=1)
                self._columns = np.array(matrix.T, order="C")  # the one copy (writable): unit columns in place
                self._columns /= np.where(norms == 0, 1.0, norms)
                self._ids = ids
                self._mirror_version = version
                del data, flat, matrix
                if len(ids) > 5000:  # Arrow's pool keeps the read's pages otherwise (~100 MB on sympy)
                    return_freed_memory()
            return self._columns, self._ids

    def count(self) -> int:
        with self._lock:
            return self._table.count_rows()

    def readable_rows(self) -> int:
        """The rows a scan of the id column reads: a lost or garbled data file raises here, where
        `count` (the manifest's figure) still answers."""
        with self._lock:
            return self._table.search().select(["id"]).limit(None).to_arrow().num_rows

    def has_rows(self) -> bool:
        """Whether any vector is stored, asked before every question: the mirror's rows while it is
        current (this process's writes keep it so), else the table's count."""
        with self._lock:
            if not self.ann and self._mirror_current():
                return bool(self._ids)
        return self.count() > 0

    def _mirror_current(self) -> bool:
        """The mirror is loaded and the table's version was asked within RELOAD_S (lock held)."""
        return self._columns is not None and time.monotonic() - self._checked_at <= RELOAD_S

    def reset(self) -> None:
        """Drop every vector (the embedding model changed: old and new vectors do not compare)."""
        with self._lock:
            self._table = self._db.create_table(TABLE, schema=self._schema, mode="overwrite")
            self.ann = False
            self._drop_mirror()

    def optimize(self) -> None:
        """Compact the versions written by many small upserts (and fold new rows into the ANN
        index), delete the files of versions older than KEEP_OLD_VERSIONS, and build the ANN index
        when the table has grown past `ann_min_rows`. Safe to skip."""
        with self._lock:
            current = self._columns is not None and self._mirror_version == self._table.version
            try:
                self._table.optimize(cleanup_older_than=KEEP_OLD_VERSIONS)
            except Exception as exc:  # optimisation is housekeeping, never a failure
                log.debug("lance optimize skipped: %s", exc)
            if current:  # compaction moves rows, changes none: the mirror stays current, no reload
                self._mirror_version = self._table.version
            if not self.ann and self._table.count_rows() >= self.ann_min_rows:
                self._build_ann()

    def _build_ann(self) -> None:
        from lancedb.index import IvfPq

        rows = self._table.count_rows()
        t0 = time.perf_counter()
        try:
            self._table.create_index("vector", config=IvfPq(distance_type="cosine",
                                                            num_partitions=max(16, int(rows ** 0.5)),
                                                            num_sub_vectors=self.dim // 8))
        except Exception as exc:  # the exact mirror keeps answering
            log.warning("could not build the vector index (%s); exact search continues", exc)
            return
        self.ann = True
        self._drop_mirror()
        return_freed_memory()
        log.info("built an IVF_PQ vector index over %d rows in %.1f s", rows, time.perf_counter() - t0)
