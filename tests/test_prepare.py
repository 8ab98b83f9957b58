"""A big sync prepares files in worker processes: the index it writes is the one an in-process
sync writes, a stop ends the workers, and a small sync starts none."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest

from mcp_retrieval import Config, Engine
from mcp_retrieval.indexers import prepare
from mcp_retrieval.indexers.embed import HashEmbedder
from mcp_retrieval.indexers.prepare import Prepared, pool_workers, prepared
from mcp_retrieval.indexers.walk import read_source, walk
from tests.conftest import make_workspace


def _index_rows(engine: Engine) -> dict[str, list]:
    q = engine.store.query
    return {
        "files": q("SELECT path, size, mtime_ns, sha256, language FROM files ORDER BY path"),
        "chunks": q("SELECT id, path, start_line, end_line, symbol, kind, header, tokens, priority FROM chunks ORDER BY id"),
        "symbols": q("SELECT * FROM symbols ORDER BY id"),
        "edges": q("SELECT * FROM edges ORDER BY path, source, target, type, line"),
    }


def _indexed(root: Path, index: Path) -> dict[str, list]:
    config = Config.resolve(root, index, persist_sessions=False)
    config.cache_dir = index.parent / (index.name + "-cache")
    engine = Engine(config, embedder=HashEmbedder())
    try:
        engine.reindex()
        return _index_rows(engine)
    finally:
        engine.close()


def test_workers_write_the_index_an_in_process_sync_writes(tmp_path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    alone = _indexed(root, tmp_path / "alone")
    monkeypatch.setattr(prepare, "POOL_MIN_FILES", 1)
    monkeypatch.setattr(prepare, "TASK_FILES", 2)  # several tasks in flight, answered out of order
    assert pool_workers(len(alone["files"])) >= 1
    pooled = _indexed(root, tmp_path / "pooled")
    assert alone["chunks"] and alone["edges"]
    assert pooled == alone


def test_outcomes_come_in_the_entries_order_with_skips_and_touched_files(tmp_path):
    root = make_workspace(tmp_path / "ws")
    entries = list(walk(root))
    (root / entries[0].path).write_bytes(b"\x00\x01binary now")  # changed to binary after the walk
    _, indexed_sha = read_source(root, entries[1].path)  # the second file is indexed with this content

    def old_sha(path):
        return indexed_sha if path == entries[1].path else None

    by_workers = list(prepared(root, entries, 1 << 20, old_sha, workers=2))
    in_process = list(prepared(root, entries, 1 << 20, old_sha, workers=0))
    assert [e.path for e, _ in by_workers] == [e.path for e in entries]
    assert by_workers[0][1] == "binary"
    assert by_workers[1][1].path == entries[1].path and not isinstance(by_workers[1][1], Prepared)
    assert [_facts(o) for _, o in by_workers] == [_facts(o) for _, o in in_process]


def _facts(outcome):
    """An outcome without its timings."""
    if isinstance(outcome, Prepared):
        return outcome.record, outcome.language, outcome.chunks, outcome.graph
    return outcome


def test_a_stop_ends_the_workers(tmp_path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    entries = list(walk(root))
    monkeypatch.setattr(prepare, "TASK_FILES", 1)
    outcomes = prepared(root, entries, 1 << 20, lambda p: None, workers=2)
    next(outcomes)
    workers = psutil.Process().children()
    assert workers
    outcomes.close()
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def test_a_worker_that_dies_hands_its_files_back(tmp_path, monkeypatch, caplog):
    root = make_workspace(tmp_path / "ws")
    entries = list(walk(root))
    monkeypatch.setattr(prepare, "_WORKER_MAIN", "import sys; sys.exit(3)")
    by_workers = list(prepared(root, entries, 1 << 20, lambda p: None, workers=2))
    in_process = list(prepared(root, entries, 1 << 20, lambda p: None, workers=0))
    assert [(e, _facts(o)) for e, o in by_workers] == [(e, _facts(o)) for e, o in in_process]
    assert "indexing goes on in one process" in caplog.text


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    """Workers are fresh interpreters: a user's script that indexes at its top level is not run
    again in each of them (as `multiprocessing` children would)."""
    root = make_workspace(tmp_path / "ws")
    script = tmp_path / "index_it.py"
    script.write_text(f"""
from pathlib import Path
from mcp_retrieval import Config, Engine
from mcp_retrieval.indexers import prepare
from mcp_retrieval.indexers.embed import HashEmbedder
prepare.POOL_MIN_FILES = 1
config = Config.resolve(Path({str(root)!r}), Path({str(tmp_path / "index")!r}), persist_sessions=False)
config.cache_dir = Path({str(tmp_path / "cache")!r})
engine = Engine(config, embedder=HashEmbedder())
print("files", engine.reindex().files_changed)
engine.close()
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("files") == 1 and int(done.stdout.split()[1]) > 5


def test_a_worker_never_writes_to_the_servers_stdout():
    """stdout is the stdio transport: what a worker's libraries print goes to stderr, and the
    pipe back to the indexer carries its answers only."""
    hooked = ("import atexit, os; atexit.register(os.write, 1, b'written'); atexit.register(print, 'printed'); "
              + prepare._WORKER_MAIN)
    task = pickle.dumps((Path("."), [], 1 << 20, []))
    done = subprocess.run([sys.executable, "-c", hooked], input=task, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    replies = io.BytesIO(done.stdout)
    assert pickle.load(replies) == prepare._READY
    assert pickle.load(replies) == (True, [])
    assert replies.read() == b""
    assert b"printed" in done.stderr and b"written" in done.stderr


@pytest.mark.parametrize("files, pooled", [(3, False), (prepare.POOL_MIN_FILES, True)])
def test_only_a_big_sync_starts_workers(files, pooled):
    assert (pool_workers(files) > 0) is pooled



def test_workers_embed_their_chunks_with_the_static_model(tmp_path, monkeypatch):
    """A big sync leaves no vector pending: each chunk's vector is in the table and the cache, as
    this process computes it."""
    from mcp_retrieval.indexers.embed import embed_text, text_sha
    from mcp_retrieval.indexers.static import StaticEmbedder

    root = make_workspace(tmp_path / "ws")
    monkeypatch.setattr(prepare, "POOL_MIN_FILES", 1)
    config = Config.resolve(root, tmp_path / "index", persist_sessions=False, embedder="static")
    config.cache_dir = tmp_path / "cache"
    engine = Engine(config)
    try:
        synced = engine.indexer.sync()
        chunks = engine.store.query("SELECT id, header, text FROM chunks")
        assert chunks and synced.chunks_embedded == len(chunks)
        assert engine.store.counts()["vectors_pending"] == 0
        assert engine.indexer.embed_pending() == (0, 0)
        inputs = [embed_text(h, t) for _, h, t in chunks]
        here = StaticEmbedder().embed(inputs)
        cached = engine.cache.get_many(StaticEmbedder.model_id, [text_sha(t) for t in inputs])
        assert all(np.allclose(cached[text_sha(t)], v, atol=1e-6) for t, v in zip(inputs, here))
        table = engine.indexer.vectors._table.to_arrow()
        stored = dict(zip(table.column("id").to_pylist(), table.column("vector").to_numpy(zero_copy_only=False)))
        assert len(stored) == len(chunks)
        assert all(np.allclose(stored[cid], v, atol=1e-6) for (cid, _, _), v in zip(chunks, here))
    finally:
        engine.close()


@pytest.mark.parametrize("setting, workers", [("0", 0), ("3", 3), ("many", None)])
def test_the_number_of_workers_can_be_set(monkeypatch, setting, workers):
    monkeypatch.setenv(prepare.WORKERS_ENV, setting)
    default = min(len(os.sched_getaffinity(0)), prepare.POOL_MAX_WORKERS)
    assert pool_workers(prepare.POOL_MIN_FILES) == (default if workers is None else workers)
    assert pool_workers(3) == 0



def test_a_workers_imports_never_come_from_the_workspace(tmp_path, monkeypatch):
    """A repository holding `pickle.py` or `numpy.py`, indexed from its own folder (where hosts
    start servers), with that folder on the server's import path: no worker runs their code."""
    root = make_workspace(tmp_path / "ws")
    ran = tmp_path / "ran"
    for name in ("pickle", "numpy", "queue"):
        (root / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write('{name} ')\n")
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(prepare, "POOL_MIN_FILES", 1)
    entries = list(walk(root))
    outcomes = list(prepared(root, entries, 1 << 20, lambda p: None, workers=2))
    assert not ran.exists()
    assert sum(isinstance(o, Prepared) for _, o in outcomes) == len(entries)


def test_a_file_that_crashes_its_worker_is_skipped_and_the_rest_indexed(tmp_path, monkeypatch):
    """A parser crash kills the process parsing: in a worker the sync outlives it, and only the
    file that caused it is left out, with its reason."""
    root = make_workspace(tmp_path / "ws")
    (root / "src" / "crash_me.py").write_text("def boom():\n    pass\n")
    entries = list(walk(root))
    crashing = ("import os; from mcp_retrieval.indexers import prepare as p; f = p.prepare; "
                "p.prepare = lambda root, e, *a: os._exit(3) if e.path.endswith('crash_me.py') else f(root, e, *a); "
                "p.serve_worker()")
    monkeypatch.setattr(prepare, "_WORKER_MAIN", crashing)
    monkeypatch.setattr(prepare, "TASK_FILES", 4)
    outcomes = dict((e.path, o) for e, o in prepared(root, entries, 1 << 20, lambda p: None, workers=2))
    assert outcomes.pop("src/crash_me.py") == "worker_crashed"
    assert len(outcomes) == len(entries) - 1
    assert all(isinstance(o, Prepared) for o in outcomes.values())
