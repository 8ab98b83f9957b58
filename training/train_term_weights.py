"""Learn the query-term weights of `mcp_retrieval/term_weights.py` (docs/BENCHMARKS.md 57b).

    python -m training.train_term_weights POOLS... --index commits=DIR --index multilang=DIR ... \\
        [--out mcp_retrieval/weights/term_weights.json]

POOLS are `training.collect` files (each question, its repository, source and fixed files); each
`--index SOURCE=DIR` names the folder of that source's collection indexes (`collect --work W`:
`W/index/owner__name`). Only titled questions are read (the weights apply to no other). A
weight vector is scored by what the server's own lexical search (`LexicalIndex`, the weights as
`TermWeigher`) returns for each question in its first 60 chunks: the share of fixed files among
their files plus the reciprocal rank of the first. Coordinate ascent from all-zero weights
(every term alike), steps of 0.4 then 0.2, until no step gains. Five folds grouped by
repository give the out-of-fold figures (printed and stored in the file); the shipped weights
are fitted on every question. Deterministic; about five minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from mcp_retrieval.indexers.analysis import query_terms
from mcp_retrieval.indexers.lexical import LexicalIndex
from mcp_retrieval.question_parts import question_title
from mcp_retrieval.term_weights import FEATURES, TermWeigher

POOL_CHUNKS = 60
STEPS = (0.4, 0.2)
FOLDS = 5
VERSION = "1"


def load_questions(pool_files: list[str], indexes: dict[str, Path], roots: dict[str, str]) -> list[dict]:
    """Titled questions whose index is at hand, with the fixed files that index holds."""
    out, opened = [], {}
    for name in pool_files:
        for line in open(name, encoding="utf-8"):
            row = json.loads(line)
            source = row["source"]
            if source not in indexes or question_title(row["query"]) is None or not query_terms(row["query"]):
                continue
            folder = indexes[source] / row["repo"].replace("/", "__") / "tantivy"
            if folder not in opened:
                opened[folder] = LexicalIndex(folder) if folder.is_dir() else None
            lexical = opened[folder]
            if lexical is None:
                continue
            root = roots.get(row["repo"], "")
            gold = [g[len(root) + 1:] if root and g.startswith(root + "/") else g for g in row["gold_files"]]
            searcher = lexical.index.searcher()
            gold = [g for g in gold if searcher.doc_freq("path", g)]
            if gold:
                out.append({"repo": row["repo"], "source": source, "query": row["query"], "gold": gold,
                            "lexical": lexical})
    return out


def _pooled_files(question: dict, weigher: TermWeigher | None) -> list[str]:
    lexical = question["lexical"]
    query = lexical._query(question["query"], weigher)  # the server's own BM25 query, weighted
    searcher = lexical.index.searcher()
    files: list[str] = []
    for _, address in searcher.search(query, POOL_CHUNKS).hits:
        path = searcher.doc(address)["path"][0]
        if path not in files:
            files.append(path)
    return files


def figures(questions: list[dict], weights: tuple[float, ...] | None) -> tuple[float, float]:
    """(mean share of fixed files pooled, mean reciprocal rank of the first fixed file)."""
    weigher = TermWeigher("trial", weights) if weights is not None else None
    recall, mrr = [], []
    for q in questions:
        files = _pooled_files(q, weigher)
        recall.append(sum(g in files for g in q["gold"]) / len(q["gold"]))
        ranks = [files.index(g) + 1 for g in q["gold"] if g in files]
        mrr.append(1 / min(ranks) if ranks else 0.0)
    return statistics.mean(recall), statistics.mean(mrr)


def fit(questions: list[dict]) -> tuple[float, ...]:
    weights = [0.0] * len(FEATURES)
    best = sum(figures(questions, tuple(weights)))
    for step in STEPS:
        improved = True
        while improved:
            improved = False
            for j in range(len(FEATURES)):
                for delta in (step, -step):
                    trial = list(weights)
                    trial[j] = round(trial[j] + delta, 3)
                    score = sum(figures(questions, tuple(trial)))
                    if score > best + 1e-6:
                        best, weights, improved = score, trial, True
    return tuple(weights)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.train_term_weights")
    ap.add_argument("pools", nargs="+")
    ap.add_argument("--index", action="append", default=[], metavar="SOURCE=DIR", required=True)
    ap.add_argument("--semble", default="../shared/eval/semble_dev/repos.json",
                    help="semble's repos.json: its paths are relative to each benchmark_root")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    indexes = {k: Path(v) for k, v in (x.split("=", 1) for x in args.index)}
    roots = {}
    if Path(args.semble).is_file():
        roots = {r["name"]: r.get("benchmark_root") or "" for r in json.loads(Path(args.semble).read_text())}
    questions = load_questions(args.pools, indexes, roots)
    print(f"{len(questions)} titled questions from {len({q['repo'] for q in questions})} repositories",
          file=sys.stderr)
    repos = sorted({q["repo"] for q in questions})
    random.Random(0).shuffle(repos)
    fold_of = {r: i % FOLDS for i, r in enumerate(repos)}
    out_of_fold = defaultdict(lambda: {"uniform": [], "learned": []})
    for k in range(FOLDS):
        weights = fit([q for q in questions if fold_of[q["repo"]] != k])
        print(f"fold {k}: {dict(zip(FEATURES, weights))}", file=sys.stderr)
        for q in questions:
            if fold_of[q["repo"]] == k:
                out_of_fold[q["source"]]["uniform"].append(figures([q], None))
                out_of_fold[q["source"]]["learned"].append(figures([q], weights))
    table = {}
    for source, arms in sorted(out_of_fold.items()):
        table[source] = {arm: {"n": len(rows), "recall60": round(statistics.mean(r for r, _ in rows), 4),
                               "mrr": round(statistics.mean(m for _, m in rows), 4)} for arm, rows in arms.items()}
        print(f"{source}: {table[source]}")
    weights = fit(questions)
    print(f"shipped: {dict(zip(FEATURES, weights))}")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "version": VERSION, "features": list(FEATURES), "weights": list(weights),
            "trained_on": f"{len(questions)} titled questions from {len(repos)} repositories",
            "out_of_fold": table,
            "recipe": "python -m training.train_term_weights <pools> --index SOURCE=DIR ... (training/README.md)",
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
