"""Train the chunk ranker (`mcp_retrieval/weights/chunk_ranker.json`) on pools whose changed
chunks `training.chunk_labels` marked.

    python -m training.train_chunk_ranker /tmp/ranker-chunks/*.jsonl --out mcp_retrieval/weights/chunk_ranker.json

The same linear pairwise model as the file ranker (`train_file_ranker.fit`), over
`chunk_features.CHUNK_FEATURES`: a changed chunk against the pool's 40 strongest unchanged ones.
Its `file_share` feature is the file ranker's, from a file model that never saw the question's
repository (five folds grouped by repository, trained on the same pools), as the served file
model has never seen a user's workspace. Validation: five folds grouped by repository; reported
per source as the share of questions with a changed chunk first, in the first 5 and 10 chunks,
and MRR, beside the pool's own order (the chunk score `packet` ranks files from).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from mcp_retrieval.chunk_features import CHUNK_FEATURES, chunk_features
from mcp_retrieval.file_scorer import file_scores
from training.train_file_ranker import FOLDS, VERSION, candidates, featurise, fit, fold_of

FILE_TEMPERATURE = 10.0  # the shipped file ranker's (its shares are read at that scale)


def chunk_data(records: list[dict], file_models: dict) -> list[tuple[list, np.ndarray, np.ndarray]]:
    out = []
    for r in records:
        cands = candidates(r)
        shares = file_scores(file_models[fold_of(r["repo"])], r["query"], cands)
        x = np.asarray(chunk_features(r["query"], cands, shares), dtype=np.float64).reshape(len(cands), len(CHUNK_FEATURES))
        y = np.zeros(len(cands), dtype=bool)
        y[r["changed"]] = True
        out.append((list(range(len(cands))), x, y))
    return out


def hits(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    ranks = np.flatnonzero(y[np.argsort(-scores, kind="stable")])
    first = int(ranks[0]) + 1 if len(ranks) else None
    return {"hit1": float(first == 1), "hit5": float(bool(first) and first <= 5),
            "hit10": float(bool(first) and first <= 10), "mrr": 1.0 / first if first else 0.0}


def report(records, scored, label) -> dict:
    out = {}
    for source in sorted({r["source"] for r in records}):
        idx = [i for i, r in enumerate(records) if r["source"] == source]
        out[source] = {k: round(statistics.mean(scored[i][k] for i in idx), 4) for k in scored[idx[0]]}
        out[source]["questions"] = len(idx)
    print(f"{label}: {json.dumps(out)}", file=sys.stderr)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.train_chunk_ranker")
    ap.add_argument("pools", nargs="+")
    ap.add_argument("--out", default=None)
    ap.add_argument("--temperature", type=float, default=3.0,
                    help="the share a chunk's score becomes: exp((s - best) / T)")
    args = ap.parse_args(argv)
    everything = [json.loads(line) for p in args.pools for line in Path(p).read_text().splitlines() if line.strip()]
    file_data = featurise(everything)
    file_models = {fold: replace(fit(file_data, [i for i, r in enumerate(everything) if fold_of(r["repo"]) != fold]),
                                 temperature=FILE_TEMPERATURE) for fold in range(FOLDS)}
    records = [r for r in everything if r.get("changed")]
    print(f"{len(records)} questions with a changed chunk in the pool, {len({r['repo'] for r in records})} "
          "repositories", file=sys.stderr)
    data = chunk_data(records, file_models)
    score_col = CHUNK_FEATURES.index("score_rel")
    baseline = [hits(x[:, score_col], y) for _, x, y in data]
    learned: list[dict] = [{}] * len(records)
    for fold in range(FOLDS):
        model = fit(data, [i for i, r in enumerate(records) if fold_of(r["repo"]) != fold],
                    names=CHUNK_FEATURES, order_column=score_col)
        for i, r in enumerate(records):
            if fold_of(r["repo"]) == fold:
                learned[i] = hits(model.scores(data[i][1].tolist()), data[i][2])
    figures = {"pool_order": report(records, baseline, "the pool's order (chunk score)"),
               "learned_cross_validated": report(records, learned, f"learned, {FOLDS} folds grouped by repository")}
    if args.out:
        model = fit(data, range(len(records)), names=CHUNK_FEATURES, order_column=score_col)
        Path(args.out).write_text(json.dumps({
            "version": VERSION, "features": list(CHUNK_FEATURES), "temperature": args.temperature,
            "mean": model.mean.round(6).tolist(), "scale": model.scale.round(6).tolist(),
            "weights": model.weights.round(6).tolist(),
            "trained_on": {"questions": len(records), "repositories": len({r["repo"] for r in records}),
                           "sources": sorted({r["source"] for r in records})},
            "figures": figures}, indent=1) + "\n")
        weights = sorted(zip(CHUNK_FEATURES, model.weights), key=lambda t: -abs(t[1]))
        print("weights: " + ", ".join(f"{f} {w:+.2f}" for f, w in weights), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
