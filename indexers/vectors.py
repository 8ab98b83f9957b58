"""LanceDB vector table: one row per embedded chunk (id, path, vector).

Rows are upserted by id (`merge_insert`), so replaying a batch after a crash never duplicates.
Search is exact cosine over the table; rows whose chunk is no longer in the store are filtered
by the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)
TABLE = "chunks"


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class VectorIndex:
    def __init__(self, directory: Path, dim: int):
        import lancedb

        directory.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._db = lancedb.connect(str(directory))
        self._schema = pa.schema([("id", pa.string()), ("path", pa.string()),
                                  ("vector", pa.list_(pa.float32(), dim))])
        self._lock = threading.Lock()
        self._table = self._open()

    def _open(self):
        try:
            table = self._db.open_table(TABLE)
            if table.schema.field("vector").type.list_size != self.dim:  # model changed: start over
                self._db.drop_table(TABLE)
                raise ValueError("dimension changed")
            return table
        except Exception:
            return self._db.create_table(TABLE, schema=self._schema, mode="overwrite")

    def upsert(self, ids: Sequence[str], paths: Sequence[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        data = pa.table({"id": list(ids), "path": list(paths),
                         "vector": pa.FixedSizeListArray.from_arrays(
                             pa.array(np.asarray(vectors, dtype=np.float32).ravel()), self.dim)}, schema=self._schema)
        with self._lock:
            (self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data))

    def delete_paths(self, paths: Sequence[str]) -> None:
        paths = list(paths)
        with self._lock:
            for i in range(0, len(paths), 200):
                part = paths[i: i + 200]
                self._table.delete(f"path IN ({', '.join(_quote(p) for p in part)})")

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first."""
        with self._lock:
            if self._table.count_rows() == 0:
                return []
            rows = (self._table.search(np.asarray(vector, dtype=np.float32)).metric("cosine")
                    .select(["id", "_distance"]).limit(limit).to_list())
        return [(r["id"], 1.0 - float(r["_distance"])) for r in rows]

    def count(self) -> int:
        with self._lock:
            return self._table.count_rows()

    def optimize(self) -> None:
        """Compact the versions written by many small upserts (safe to skip)."""
        with self._lock:
            try:
                self._table.optimize()
            except Exception as exc:  # optimisation is housekeeping, never a failure
                log.debug("lance optimize skipped: %s", exc)
