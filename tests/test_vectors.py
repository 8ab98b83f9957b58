import numpy as np
import pytest

from mcp_retrieval.indexers.vectors import VectorIndex


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_search_is_exact_and_sees_writes_and_deletes_at_once(tmp_path):
    index = VectorIndex(tmp_path / "lance", 8)
    vectors = np.stack([unit(i) for i in range(50)])
    index.upsert([f"c{i}" for i in range(50)], [f"f{i % 5}.py" for i in range(50)], vectors)
    hits = index.search(vectors[7], 5)
    assert hits[0][0] == "c7" and abs(hits[0][1] - 1.0) < 1e-5
    expected = np.argsort(-(vectors @ vectors[7]))[:5]
    assert [h[0] for h in hits] == [f"c{i}" for i in expected]
    index.upsert(["new"], ["g.py"], unit(99)[None, :])  # visible without waiting for a reload
    assert index.search(unit(99), 1)[0][0] == "new"
    index.upsert(["c7"], ["f2.py"], unit(123)[None, :])  # an upsert replaces, never duplicates
    assert index.count() == 51 and index.search(unit(123), 1)[0][0] == "c7"
    index.delete_paths(["f2.py"])
    assert all(not h[0] in {"c2", "c7", "c12"} for h in index.search(vectors[2], 51))
    reopened = VectorIndex(tmp_path / "lance", 8)
    assert reopened.count() == index.count() and reopened.search(unit(99), 1)[0][0] == "new"


def test_several_vectors_searched_at_once_match_each_searched_alone_and_brute_force(tmp_path):
    """`search_many` reads the mirror once for all a question's vectors, and past _SPLIT_ROWS the
    product is split between two threads: neither may change a hit."""
    from mcp_retrieval.indexers import vectors as module

    rng = np.random.default_rng(5)
    rows = module._SPLIT_ROWS + 123
    vectors = rng.normal(size=(rows, 8)).astype(np.float32)
    index = VectorIndex(tmp_path / "lance", 8)
    index.upsert([f"c{i}" for i in range(rows)], [f"f{i % 40}.py" for i in range(rows)], vectors)
    questions = rng.normal(size=(3, 8)).astype(np.float32)
    together = index.search_many(questions, 7)
    unit_rows = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for q, hits in zip(questions, together):
        alone = index.search(q, 7)  # the same hits; a product of several columns may round apart
        assert [h[0] for h in hits] == [h[0] for h in alone]
        assert np.allclose([h[1] for h in hits], [h[1] for h in alone], atol=1e-6)
        assert [h[0] for h in hits] == [f"c{i}" for i in np.argsort(-(unit_rows @ (q / np.linalg.norm(q))))[:7]]


def test_the_shortcut_to_the_best_of_a_long_column_is_exact_on_every_shape_of_column():
    """`_top` partitions only the values above a sample's threshold: on columns whose best values
    all sit off the sample, on the sample, tied, or random, it finds the same values as a full sort."""
    from mcp_retrieval.indexers.vectors import _top

    rng = np.random.default_rng(3)
    n, k = 20_000, 60
    columns = [rng.normal(size=n), np.zeros(n), np.round(rng.normal(size=n), 1)]
    off_sample = np.zeros(n)
    off_sample[np.arange(1, n, 16)[:k]] = np.arange(1, k + 1)
    on_sample = np.zeros(n)
    on_sample[np.arange(0, n, 16)[:k // 8]] = 5.0  # fewer than k pass the threshold: the full path
    columns += [off_sample, on_sample]
    for sims in columns:
        sims = sims.astype(np.float32)
        top = _top(sims, k)
        assert len(set(top.tolist())) == k
        assert np.array_equal(sims[top], np.sort(sims)[::-1][:k])


def test_past_the_threshold_an_ann_index_answers_and_the_mirror_is_dropped(tmp_path):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(1200, 384)).astype(np.float32)
    index = VectorIndex(tmp_path / "lance", 384, ann_min_rows=1000)
    index.upsert([f"c{i}" for i in range(1200)], [f"p{i % 50}.py" for i in range(1200)], vectors)
    assert index.search(vectors[7], 3)[0][0] == "c7" and not index.ann  # exact mirror below the threshold
    index.optimize()
    assert index.ann and index._columns is None
    hits = index.search(vectors[7], 5)
    assert hits[0][0] == "c7" and hits[0][1] > 0.99
    index.delete_paths(["p7.py"])  # c7 lives in p7.py
    assert "c7" not in {cid for cid, _ in index.search(vectors[7], 10)}
    assert VectorIndex(tmp_path / "lance", 384, ann_min_rows=1000).ann  # a reopened table knows its index


def test_opening_a_vector_index_leaves_numpy_one_blas_thread(tmp_path):
    """OpenBLAS's idle workers spin beside the question's embedding on two cores (docs/BENCHMARKS-history.md 24c)."""
    from threadpoolctl import threadpool_info

    VectorIndex(tmp_path / "v", dim=4)
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


def test_a_question_asks_the_table_nothing_while_the_mirror_is_current(tmp_path, monkeypatch):
    """Each LanceDB call is a round trip through its event loop (~0.5 ms, three a question): the
    mirror asks the table's version at most every RELOAD_S, and whether any vector is stored from
    its own rows."""
    from mcp_retrieval.indexers import vectors as module

    index = VectorIndex(tmp_path / "lance", 8)
    assert not index.has_rows()
    index.upsert(["a", "b"], ["a.py", "b.py"], np.stack([unit(1), unit(2)]))
    asked = []

    class Counting:
        def __init__(self, table):
            self._t = table

        def __getattr__(self, name):
            asked.append(name)
            return getattr(self._t, name)

    assert index.search(unit(1), 1)[0][0] == "a"  # loads the mirror
    index._table = Counting(index._table)
    assert index.has_rows() and index.search(unit(2), 1)[0][0] == "b" and index.has_rows()
    assert asked == []
    monkeypatch.setattr(module, "RELOAD_S", 0.0)
    assert index.search(unit(2), 1)[0][0] == "b" and asked == ["checkout_latest", "version"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\)")  # no other reader here
def test_compaction_deletes_the_files_of_old_versions(tmp_path, monkeypatch):
    """Without the cleanup LanceDB keeps every version's files for a week (29 GB on a busy table)."""
    from datetime import timedelta

    from mcp_retrieval.indexers import vectors as vectors_module

    monkeypatch.setattr(vectors_module, "KEEP_OLD_VERSIONS", timedelta(0))
    index = VectorIndex(tmp_path / "lance", 8)
    for batch in range(12):  # one version (and data file) per upsert, as the embedder writes
        ids = [f"c{batch}-{i}" for i in range(5)]
        index.upsert(ids, [f"f{batch}.py"] * 5, np.stack([unit(batch * 10 + i) for i in range(5)]))
        index.delete_paths([f"f{batch - 1}.py"])
    data = tmp_path / "lance" / "chunks.lance" / "data"
    files_before = len(list(data.iterdir()))
    index.optimize()
    assert len(index._table.list_versions()) <= 2
    assert len(list(data.iterdir())) < files_before / 4
    assert index.count() == 5 and index.search(unit(112), 1)[0][0] == "c11-2"
    reopened = VectorIndex(tmp_path / "lance", 8)
    assert reopened.count() == 5 and reopened.search(unit(110), 1)[0][0] == "c11-0"


def test_compaction_after_this_process_s_writes_keeps_the_mirror_without_a_reload(tmp_path, monkeypatch):
    """A saved file's vectors are written, then the table compacted: the mirror already holds the
    rows, so the next question must not read the whole table again (sympy: 40-60 ms a save)."""
    from mcp_retrieval.indexers import vectors as module

    index = VectorIndex(tmp_path / "lance", 8)
    index.upsert([f"c{i}" for i in range(20)], [f"f{i}.py" for i in range(20)], np.stack([unit(i) for i in range(20)]))
    assert index.search(unit(3), 1)[0][0] == "c3"  # loads the mirror
    monkeypatch.setattr(module, "RELOAD_S", 0.0)  # every question asks the table's version
    index.delete_paths(["f3.py"])
    index.upsert(["c3"], ["f3.py"], unit(103)[None, :])
    index.optimize()
    columns = index._columns
    assert index.search(unit(103), 1)[0][0] == "c3" and index._columns is columns  # no reload
    other = VectorIndex(tmp_path / "lance", 8)  # another process's write is seen at the next check
    other.upsert(["x"], ["x.py"], unit(200)[None, :])
    assert index.search(unit(200), 1)[0][0] == "x" and index._columns is not columns


def test_lancedb_loads_without_what_nothing_here_calls(tmp_path):
    """In a fresh interpreter, as a server starts: LanceDB opens, writes and searches a table
    without importing pandas or its REST namespace client's API modules (`lancedb_import`), and
    that client package and the `overrides` decorator still answer in full to anyone else."""
    import subprocess
    import sys

    script = f"""
import sys
import numpy as np
from mcp_retrieval.indexers.vectors import VectorIndex
index = VectorIndex(__import__("pathlib").Path({str(tmp_path / "lance")!r}), 4)
index.upsert(["a", "b"], ["a.py", "b.py"], np.eye(4, dtype=np.float32)[:2])
assert index.search(np.eye(4, dtype=np.float32)[1], 1)[0][0] == "b"
loaded = sorted(m for m in sys.modules if m == "pandas" or m.startswith("lance_namespace_urllib3_client.api"))
assert not loaded, loaded
import lance_namespace_urllib3_client as client
assert client.ApiClient.__name__ == "ApiClient" and "lance_namespace_urllib3_client.api" in sys.modules
if "overrides" in sys.modules:  # Python 3.11: its checks skipped while LanceDB imported, then whole again
    import overrides
    assert overrides.override.__module__ == "overrides.overrides"
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
