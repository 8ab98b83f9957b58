"""When does an approximate (ANN) vector index pay? Exact search over our in-memory float32
mirror against LanceDB flat search and LanceDB IVF_PQ (with refine), at growing table sizes.

    python -m mcp_retrieval.bench ann --cache /path/to/embeddings.sqlite [--sizes 10000,100000,300000]

Vectors are real chunk embeddings from an embedding cache (`$MCP_RETRIEVAL_CACHE_DIR/embeddings.sqlite`);
past the number the cache holds, tables are filled with jittered copies (real vector + small
noise, renormalised), which keeps the neighbourhood structure of code embeddings. Queries are
held-out real vectors. Recall@10 is measured against exact search. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

DIM = 384


def load_vectors(cache: Path, limit: int) -> np.ndarray:
    db = sqlite3.connect(str(cache))
    rows = db.execute("SELECT vec FROM vectors WHERE length(vec)=? LIMIT ?", (DIM * 4, limit)).fetchall()
    return np.vstack([np.frombuffer(r[0], dtype=np.float32) for r in rows])


def grow(base: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    if size <= len(base):
        return base[:size].copy()
    extra = base[rng.integers(0, len(base), size - len(base))] + rng.normal(0, 0.02, (size - len(base), DIM))
    out = np.vstack([base, extra]).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def run_size(matrix: np.ndarray, queries: np.ndarray, k: int, nprobes: int, refine: int) -> dict:
    from mcp_retrieval.indexers.vectors import lancedb_module

    lancedb = lancedb_module()
    from lancedb.index import IvfPq

    out: dict = {"n": len(matrix)}
    truth = [exact_top(matrix, q, k) for q in queries]
    times = []
    for q in queries:
        t0 = time.perf_counter()
        exact_top(matrix, q, k)
        times.append((time.perf_counter() - t0) * 1000)
    out["numpy_ms"] = p50(times)
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        table = db.create_table("t", pa.table({"i": pa.array(np.arange(len(matrix)), pa.int64()),
                                               "vector": pa.FixedSizeListArray.from_arrays(
                                                   pa.array(matrix.ravel()), DIM)}))

        def lance(search) -> tuple[float, float]:
            times, hits = [], 0
            for q, t in zip(queries, truth):
                t0 = time.perf_counter()
                got = search(q).select(["i"]).limit(k).to_arrow()["i"].to_numpy()
                times.append((time.perf_counter() - t0) * 1000)
                hits += len(set(got.tolist()) & set(t.tolist()))
            return p50(times), hits / (k * len(queries))

        out["flat_ms"], out["flat_recall"] = lance(lambda q: table.search(q).metric("cosine"))
        partitions = max(16, int(np.sqrt(len(matrix))))
        t0 = time.perf_counter()
        table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                  num_sub_vectors=DIM // 8))
        out["build_s"] = time.perf_counter() - t0
        out["ivfpq_ms"], out["ivfpq_recall"] = lance(
            lambda q: table.search(q).metric("cosine").nprobes(nprobes).refine_factor(refine))
    out["mirror_mb"] = matrix.nbytes / 1e6
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench ann")
    ap.add_argument("--cache", required=True, help="an embeddings.sqlite embedding cache")
    ap.add_argument("--sizes", default="10000,30000,100000,300000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--nprobes", type=int, default=20)
    ap.add_argument("--refine", type=int, default=10)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(7)
    real = load_vectors(Path(args.cache), max(sizes) + args.queries)
    rng.shuffle(real)
    queries, base = real[: args.queries], real[args.queries:]
    print(f"{len(base)} real vectors; {args.queries} held-out queries; k=10; nprobes={args.nprobes}, "
          f"refine_factor={args.refine}", file=sys.stderr)
    lines = ["| vectors | exact (numpy mirror) p50 | LanceDB flat p50 | IVF_PQ build | IVF_PQ p50 | IVF_PQ recall@10 "
             "| mirror MB |", "|---|---|---|---|---|---|---|"]
    for size in sizes:
        r = run_size(grow(base, size, rng), queries, 10, args.nprobes, args.refine)
        lines.append(f"| {r['n']:,} | {r['numpy_ms']:.2f} ms | {r['flat_ms']:.1f} ms | {r['build_s']:.0f} s | "
                     f"{r['ivfpq_ms']:.1f} ms | {r['ivfpq_recall']:.3f} | {r['mirror_mb']:.0f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))
    return 0
