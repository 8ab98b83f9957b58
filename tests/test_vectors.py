import numpy as np

from indexers.vectors import VectorIndex


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
