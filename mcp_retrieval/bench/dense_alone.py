"""The static embedding table alone as a retriever, on semble_dev's questions (semble's metric).

    python -m mcp_retrieval.bench dense_alone --work /tmp/semble-work [--table a.npz --table b.npz]
    python -m mcp_retrieval.bench dense_alone --pairs pairs.jsonl [--table a.npz ...]

The served figure (`bench semble --vectors`) mixes the table with BM25 and the file ranker, so a
better table moves it by a question or two. This reads each repository's chunks from an index that
`bench semble` built in `--work` (`index-static/<name>`, or `index/<name>`), embeds them as the
indexer does (header + text) with each table, ranks every chunk by cosine to the question and
scores the first ten with `bench semble`'s NDCG@10. No table given: the shipped one. Tables are
compared on the same chunks, so only the table differs.

With `--pairs` (a `training.doc_code_pairs` or `training.commit_code_pairs` file: mined
repositories, none of the dev or evaluation ones) the yardstick is each pair's code among its
repository's pairs' codes, ranked by cosine to the pair's question: the mean reciprocal rank per
repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sqlite3
from pathlib import Path

import numpy as np

from mcp_retrieval.bench.semble import K, _targets, ndcg10


def _chunks(index_folder: Path) -> list[tuple[str, int, int, str]]:
    db = sqlite3.connect(index_folder / "index.db")
    try:
        return db.execute("SELECT path, start_line, end_line, header, text FROM chunks").fetchall()
    finally:
        db.close()


def _embedder(table: str | None):
    from mcp_retrieval.indexers.static import CANDIDATE_ENV, StaticEmbedder

    if table:
        os.environ[CANDIDATE_ENV] = table
    else:
        os.environ.pop(CANDIDATE_ENV, None)
    return StaticEmbedder()


def score_table(table: str | None, repos: list[dict], data: Path, work: Path) -> dict[str, float]:
    from mcp_retrieval.indexers.embed import embed_text

    model = _embedder(table)
    by_repo = {}
    for repo in repos:
        folder = next((work / f / repo["name"] for f in ("index-static", "index")
                       if (work / f / repo["name"] / "index.db").is_file()), None)
        if folder is None:
            continue
        rows = _chunks(folder)
        vectors = model.embed([embed_text(r[3], r[4]) for r in rows])
        queries = json.loads((data / "annotations" / f"{repo['name']}.json").read_text())
        q_vectors = model.embed([q["query"] for q in queries])
        scores = []
        for q, qv in zip(queries, q_vectors):
            best = np.argsort(-(vectors @ qv), kind="stable")[:K]
            scores.append(ndcg10([(rows[i][0], rows[i][1], rows[i][2]) for i in best], _targets(q)))
        by_repo[repo["name"]] = statistics.mean(scores)
    return by_repo


def score_pairs(table: str | None, pairs: list[dict]) -> dict[str, float]:
    model = _embedder(table)
    by_repo = {}
    for repo in sorted({p["repo"] for p in pairs}):
        mine = [p for p in pairs if p["repo"] == repo]
        sims = model.embed([p["query"] for p in mine]) @ model.embed([p["code"] for p in mine]).T
        ranks = (sims > np.diag(sims)[:, None]).sum(axis=1) + 1
        by_repo[repo] = float(np.mean(1.0 / ranks))
    return by_repo


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench dense_alone")
    ap.add_argument("--data", default="../shared/eval/semble_dev")
    ap.add_argument("--work", help="a `bench semble` work folder")
    ap.add_argument("--pairs", help="mined (question, code) pairs instead of semble_dev")
    ap.add_argument("--table", action="append", default=None, help="a candidate table (repeatable, 'shipped' for the shipped one)")
    args = ap.parse_args(argv)
    if bool(args.work) == bool(args.pairs):
        ap.error("give --work or --pairs")
    tables = [None if t == "shipped" else t for t in (args.table or ["shipped"])]
    if args.pairs:
        pairs = [json.loads(line) for line in Path(args.pairs).read_text(encoding="utf-8").splitlines() if line]
        results = {table or "shipped": score_pairs(table, pairs) for table in tables}
    else:
        data = Path(args.data)
        repos = json.loads((data / "repos.json").read_text())
        results = {table or "shipped": score_table(table, repos, data, Path(args.work)) for table in tables}
    names = sorted({n for r in results.values() for n in r})
    print("| repository | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{r.get(name, float('nan')):.3f}" for r in results.values()) + " |")
    print("| **mean** | " + " | ".join(f"**{statistics.mean(r.values()):.3f}**" for r in results.values()) + " |")
    return 0
