"""One file from its bytes to chunks and code-graph facts: the part of a sync that needs no index.

A big sync runs it in worker processes, so that parsing (tree-sitter holds the GIL: two threads
parsed slower than one) uses every core while the indexer writes the previous files; a few
files (a save, a checkout of a branch) are prepared in-process, where starting workers would
cost more than it saves. Both paths call `prepare`, so their results are the same.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mcp_retrieval.indexers.chunk import Chunk, chunk_file, parse
from mcp_retrieval.indexers.languages import language_of, looks_generated
from mcp_retrieval.indexers.store import FileRecord
from mcp_retrieval.indexers.symbols import FileGraph, extract
from mcp_retrieval.indexers.walk import FileEntry, read_source

log = logging.getLogger(__name__)
# A sync of fewer files is prepared in-process: a worker takes ~0.2 s to start and import.
POOL_MIN_FILES = 256
POOL_MAX_WORKERS = 4  # each holds ~100 MB (50 without the static model); more would outrun the one writer
WORKERS_ENV = "MCP_RETRIEVAL_INDEX_WORKERS"
TASK_FILES = 8  # files sent to a worker at once (fewer round trips)
IN_FLIGHT_TASKS = 4  # per worker: bounds the results waiting for the writer (memory)


@dataclass
class Prepared:
    record: FileRecord
    language: str
    chunks: list[Chunk]
    graph: FileGraph | None
    parse_ms: float  # read, parse and chunk
    graph_ms: float
    vectors: np.ndarray | None = None  # one row per chunk, when the worker embeds (`WorkerEmbedding`)


Outcome = Prepared | FileRecord | str  # chunked | touched, not changed (the new stat) | a skip reason


def prepare(root: Path, entry: FileEntry, max_bytes: int, old_sha: str | None) -> Outcome:
    """Read, parse, chunk and extract one file. `old_sha`: the indexed content's hash, if any
    (equal content comes back as the touched file's record, not re-chunked)."""
    t0 = time.perf_counter()
    source = read_source(root, entry.path, max_bytes)
    if isinstance(source, str):  # vanished, unreadable or binary since the walk
        return source
    text, sha = source
    record = FileRecord(entry.path, entry.size, entry.mtime_ns, sha)
    if old_sha == sha:
        return record
    language = language_of(entry.path, text)
    tree = parse(text, language)
    chunks = chunk_file(entry.path, text, language, tree)
    if chunks and looks_generated(text):
        chunks = [replace(c, generated=True) for c in chunks]
    parse_ms = _ms(t0)
    t0 = time.perf_counter()
    graph = extract(entry.path, language, tree) if tree is not None else None
    return Prepared(record, language, chunks, graph, parse_ms, _ms(t0))


def _prepare_many(root: Path, entries: Sequence[FileEntry], max_bytes: int,
                  old_shas: Sequence[str | None], embedding: WorkerEmbedding | None = None) -> list[Outcome]:
    outcomes = [prepare(root, e, max_bytes, s) for e, s in zip(entries, old_shas)]
    if embedding is not None:
        _embed([o for o in outcomes if isinstance(o, Prepared) and o.chunks], embedding)
    return outcomes


@dataclass(frozen=True)
class WorkerEmbedding:
    """Workers also embed the chunks they make, with a model as cheap as the static one: beside
    the parsing, on the cores the single writer leaves idle (sympy: the vector pass after the
    lexical one took 20 s; the writer now stores each batch's vectors with its chunks). The
    vectors go to the embedding cache too, as the vector pass would have put them."""
    cache: Path
    model_id: str


_worker_models: dict[WorkerEmbedding, tuple] = {}  # a worker's embedder and cache, opened once


def _embed(files: Sequence[Prepared], embedding: WorkerEmbedding) -> None:
    from mcp_retrieval.indexers.embed import EmbeddingCache, embed_text, text_sha
    from mcp_retrieval.indexers.static import StaticEmbedder

    if embedding not in _worker_models:
        embedder = StaticEmbedder()
        _worker_models[embedding] = (embedder if embedder.model_id == embedding.model_id else None,
                                     EmbeddingCache(embedding.cache))
    embedder, cache = _worker_models[embedding]
    if embedder is None or not files:  # another table than the indexer's: its vector pass embeds
        return
    inputs = [embed_text(c.header, c.text) for f in files for c in f.chunks]
    vectors = embedder.embed(inputs)
    shas = {text_sha(t): n for n, t in enumerate(inputs)}
    if missing := cache.missing(embedding.model_id, list(shas)):
        cache.put_many(embedding.model_id, {s: vectors[shas[s]] for s in missing})
    start = 0
    for f in files:
        f.vectors = vectors[start:start + len(f.chunks)]
        start += len(f.chunks)


def prepared(root: Path, entries: Sequence[FileEntry], max_bytes: int, old_sha: Callable[[str], str | None],
             *, workers: int | None = None, embedding: WorkerEmbedding | None = None
             ) -> Iterator[tuple[FileEntry, Outcome]]:
    """Each entry with its outcome, in the entries' order. The caller may stop iterating at any
    time (a stop asked for): the workers end with the generator. A worker that dies on a task is
    replaced and the task's files are tried one by one (`_alone`); when a worker cannot start,
    this process prepares the rest itself. `embedding`: workers (never this process: there the
    vector pass embeds) also embed the chunks."""
    workers = pool_workers(len(entries)) if workers is None else workers
    pool = _Pool(workers, root) if workers else None
    waiting: deque[tuple[Sequence[FileEntry], Future | None]] = deque()
    todo = (entries[i:i + TASK_FILES] for i in range(0, len(entries), TASK_FILES))

    def submit() -> None:
        if (task := next(todo, None)) is not None:
            args = (root, task, max_bytes, [old_sha(e.path) for e in task], embedding)
            waiting.append((task, pool.submit(args) if pool is not None else None))

    try:
        for _ in range(max(1, workers) * IN_FLIGHT_TASKS):
            submit()
        while waiting:
            task, future = waiting.popleft()
            outcomes = None
            if future is not None and pool is not None:  # else its pool was closed: done here
                try:
                    outcomes = future.result()
                except WorkerLost as exc:
                    if exc.started:  # a worker died on this task: each file alone finds the one
                        outcomes = [_alone(pool, root, entry, max_bytes, old_sha, embedding) for entry in task]
                    else:
                        log.warning("indexing goes on in one process: %s", exc)
                        pool.close()
                        pool = None
            if outcomes is None:
                outcomes = _prepare_many(root, task, max_bytes, [old_sha(e.path) for e in task])
            submit()
            yield from zip(task, outcomes)
    finally:
        if pool is not None:
            pool.close()


class WorkerLost(Exception):
    """A worker process could not start (`started` false), or ended without answering."""

    def __init__(self, message: str, *, started: bool):
        super().__init__(message)
        self.started = started


def _alone(pool: _Pool, root: Path, entry: FileEntry, max_bytes: int, old_sha: Callable[[str], str | None],
           embedding: WorkerEmbedding | None) -> Outcome:
    """One file in a worker of its own task: a file whose worker dies (a parser crash, which
    would take the server down in-process) is skipped with that reason; the sync goes on. When no
    worker can start to try it, the file is skipped too, not prepared here: it may be the one that
    crashed, and a crash here ends the server (the next sync tries it again)."""
    try:
        return pool.submit((root, [entry], max_bytes, [old_sha(entry.path)], embedding)).result()[0]
    except WorkerLost as exc:
        log.warning("%s skipped: %s", entry.path, exc)
        return "worker_crashed"


# A worker is a fresh interpreter running this, not a `multiprocessing` child: those re-run the
# parent's main script when it is a file, and a script without a `__main__` guard that uses the
# indexer (a user's own) would run again in every worker, side effects and all.
_WORKER_MAIN = "from mcp_retrieval.indexers.prepare import serve_worker; serve_worker()"
_READY = "mcp-retrieval worker ready"  # a worker's first words, once its imports are done


class _Worker:
    """One worker process: a task's arguments go in as a pickle on its stdin, its outcomes (or
    the exception `prepare` raised) come back as one on the pipe that was its stdout."""

    def __init__(self, root: Path) -> None:
        # -P: the current folder (often the indexed repository) is not put on the worker's import
        # path, nor is any folder of the workspace this process may have on its own: a repository
        # holding a `pickle.py` or `numpy.py` would otherwise run its code in the worker
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(_import_path(root)))
        try:
            self.proc = subprocess.Popen([sys.executable, "-P", "-c", _WORKER_MAIN], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env=env, cwd=Path(sys.executable).parent)
            if pickle.load(self.proc.stdout) != _READY:  # its imports done: a death from now on is a file's
                raise EOFError("no greeting")
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            if getattr(self, "proc", None) is not None:
                self.proc.kill()
                self.proc.wait()
            raise WorkerLost(f"a worker process could not start: {exc!r}", started=False) from exc

    def run(self, args: tuple) -> list[Outcome]:
        try:
            pickle.dump(args, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
            ok, payload = pickle.load(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            raise WorkerLost(f"a worker process ended (exit code {self.proc.poll()}): {exc!r}", started=True) from exc
        if not ok:
            raise payload  # what `prepare` raised, as it would have raised in this process
        return payload

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # end of input: the worker exits
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def _import_path(root: Path) -> list[str]:
    """This process's import path, less the current folder and anything inside the workspace."""
    here, root = Path.cwd().resolve(), root.resolve()
    kept = []
    for entry in sys.path:
        if not entry:
            continue
        place = Path(entry).resolve()
        if place != here and place != root and root not in place.parents:
            kept.append(entry)
    return kept


class _Pool:
    """Worker processes, each driven by a thread of this process (blocked on its pipe, without
    the GIL, while the worker parses). A worker starts with the first task that finds none idle."""

    def __init__(self, workers: int, root: Path) -> None:
        self._root = root
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._started: list[_Worker] = []
        self._threads = ThreadPoolExecutor(workers, thread_name_prefix="mcp-retrieval-prepare")

    def submit(self, args: tuple) -> Future:
        return self._threads.submit(self._run, args)

    def _run(self, args: tuple) -> list[Outcome]:
        try:
            worker = self._idle.get_nowait()
        except queue.Empty:
            worker = _Worker(self._root)
            self._started.append(worker)
        try:
            outcomes = worker.run(args)
        except WorkerLost:
            worker.close()  # dead: the next task starts another
            raise
        except BaseException:  # what `prepare` raised, carried back: the worker lives on
            self._idle.put(worker)
            raise
        self._idle.put(worker)
        return outcomes

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        for worker in self._started:
            worker.close()


def serve_worker() -> None:
    """A worker's loop: prepare each task read from stdin until it closes. Anything a library
    prints goes to stderr: the real stdout carries the outcomes only."""
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    pickle.dump(_READY, results)
    results.flush()
    tasks = sys.stdin.buffer
    while True:
        try:
            args = pickle.load(tasks)
        except EOFError:
            return
        try:
            reply = (True, _prepare_many(*args))
        except Exception as exc:  # carried to the parent and raised there
            reply = (False, exc)
        pickle.dump(reply, results, protocol=pickle.HIGHEST_PROTOCOL)
        results.flush()


def pool_workers(files: int) -> int:
    """Worker processes for a sync of `files` files: none below `POOL_MIN_FILES`, else one per
    core this process may use, at most POOL_MAX_WORKERS (the writer shares the cores: it waits on
    the workers most of the time), or what `MCP_RETRIEVAL_INDEX_WORKERS` says (0: none)."""
    if files < POOL_MIN_FILES:
        return 0
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    if wanted:
        try:
            return max(0, int(wanted))
        except ValueError:
            log.warning("%s=%r is not a number of workers: one per core", WORKERS_ENV, wanted)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, POOL_MAX_WORKERS))


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000
