"""Freshness while serving (the watcher) and crash safety (SIGKILL mid-index)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from mcp_retrieval.indexers.watch import Watcher
from mcp_retrieval import Config, Engine
from mcp_retrieval.workspace import Workspace
from tests.conftest import wait_for


@pytest.mark.timeout(180)
def test_the_watcher_reflects_new_edited_and_deleted_files(engine, workspace):
    watcher = Watcher(workspace, engine.sync_paths, debounce_ms=100)
    watcher.start()
    try:
        time.sleep(0.5)
        (workspace / "src" / "shop" / "loyalty.py").write_text("def award_loyalty_points(order):\n    return 10\n")
        assert wait_for(lambda: any(c.symbol == "award_loyalty_points"
                                    for c in Workspace.single(engine).context("award_loyalty_points").chunks))
        (workspace / "web" / "util.js").unlink()
        assert wait_for(lambda: "web/util.js" not in engine.store.files())
        (workspace / "build" / "ignored.py").write_text("def ignored_symbol_zz():\n    pass\n")
        assert watcher.relevant(str(workspace / "build" / "ignored.py")) is None
        assert watcher.relevant(str(workspace / ".git" / "index")) is None
        for n in range(3):  # a burst (a checkout, a formatter) is one whole-root pass
            (workspace / "src" / "shop" / f"burst_{n}.py").write_text(f"def burst_function_{n}():\n    pass\n")
        engine.sync_paths(None)
        assert {"src/shop/burst_0.py", "src/shop/burst_2.py"} <= set(engine.store.files())
    finally:
        watcher.stop()


def make_big_workspace(root, n_files=400):
    for i in range(n_files):
        pkg = root / f"pkg{i % 20}"
        pkg.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def handler_{i}_{j}(request):\n    '''Handle case {j} of module {i}.'''\n"
                           f"    return compute_{j}(request) + {i}\n" for j in range(12))
        (pkg / f"mod{i}.py").write_text(body)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_indexer_killed_at_any_moment_leaves_an_index_that_answers_and_completes(tmp_path):
    root = tmp_path / "big"
    make_big_workspace(root)
    idx = tmp_path / "idx"
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(tmp_path / "cache"), "MCP_RETRIEVAL_EMBEDDER": "hash"}
    cmd = [sys.executable, "-m", "mcp_retrieval", "index", "--root", str(root), "--index-dir", str(idx)]
    for delay in (0.8, 1.5, 2.5):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cfg = Config.resolve(root, idx, persist_sessions=False, embedder="hash")
        cfg.cache_dir = tmp_path / "cache"
        engine = Engine(cfg)  # opens after a kill
        r = Workspace.single(engine).context("handler_7_3")
        assert (r.know is None) != (r.miss is None)
        engine.close()
    cfg = Config.resolve(root, idx, persist_sessions=False, embedder="hash")
    cfg.cache_dir = tmp_path / "cache"
    engine = Engine(cfg)
    engine.reindex()
    clean_cfg = Config.resolve(root, tmp_path / "clean-idx", persist_sessions=False, embedder="hash")
    clean_cfg.cache_dir = tmp_path / "cache"
    clean = Engine(clean_cfg)
    clean.reindex()
    status, expected = engine.status(), clean.status()
    assert status.files == expected.files == 400 and status.vectors_pending == 0
    assert status.chunks == expected.chunks
    assert set(engine.store.chunk_ids_for_paths(engine.store.all_paths())) == \
        set(clean.store.chunk_ids_for_paths(clean.store.all_paths()))
    assert engine.indexer.lexical.num_docs() == expected.chunks
    assert engine.indexer.vectors.count() == expected.chunks
    assert Workspace.single(engine).context("handler_7_3").chunks[0].path == "pkg7/mod7.py"
    engine.close()
    clean.close()
