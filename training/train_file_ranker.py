"""Train the file ranker (`mcp_retrieval/weights/file_ranker.json`) on collected pools.

    python -m training.train_file_ranker /tmp/ranker/commits-*.jsonl /tmp/ranker/semble.jsonl \\
        --out mcp_retrieval/weights/file_ranker.json

A linear model over `file_features.FEATURES`, trained on pairs (a file that answers the question
against one that does not, in the same pool) with the logistic loss and an L2 penalty: RankNet's
objective with a linear scorer, by full-batch Adam in numpy; each question's pairs share one
question's weight, so a question with many candidate files does not outweigh one with few. Validation: five folds grouped by
repository (no repository's questions are both trained and scored on); the out-of-fold scores are
ranked through `file_rank.rank_files` exactly as `packet` ranks them, and reported beside the
hand-set file score on the same pools: file Acc@1/Acc@5/MRR for the commit questions, semble's
NDCG@10 for the peer benchmark's. The shipped weights are then fit on every question. Seeded:
the same pools give the same file.

Pools collected with a dense tier go after `--dense-pools` (`static=/tmp/s.jsonl minilm=/tmp/m.jsonl`):
their figures are reported apart (`swebench+static`), and with `--score-dense-only` they are
scored by the models of the lexical pools without being trained on — how the shipped model does
with each dense tier at equal ranking (BENCHMARKS 46c).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from mcp_retrieval.bench.semble import ndcg10
from mcp_retrieval.file_features import FEATURES, file_features
from mcp_retrieval.file_rank import rank_files
from mcp_retrieval.file_scorer import FileRanker, file_scores, shipped
from mcp_retrieval.indexers.store import StoredChunk
from mcp_retrieval.retrieve import Candidate

FOLDS = 5
L2 = 1e-3
STEPS = 400
LEARNING_RATE = 0.05
NEGATIVES = 40  # per question: the first files of the pool that do not answer it
# 6: text_cover reads 1,000 characters of a chunk, pools collected anew (BENCHMARKS 53g); 5: text_cover
# weighted by rarity (53e); 4: text_cover_stemmed (53d); 3: chunk scores without the z-score blend (52c);
# 2: only the test demotion (43b)
VERSION = "7"
TEMPERATURES = (1.0, 3.0, 10.0, 30.0)  # candidates for FileRanker.temperature, chosen by the folds
# A question's weight in the loss by source (absent: 1). Tried: the dev files' kinds at 3 against
# the mined commits; no fold figure moved past one question, so every question counts alike.
SOURCE_WEIGHT: dict[str, float] = {}


def candidates(record: dict) -> list[Candidate]:
    out = []
    for i, c in enumerate(record["pool"]):
        chunk = StoredChunk(f"{c['path']}#{i}", c["path"], c["start"], c["end"], c["symbol"], c["kind"], c["language"],
                            c["header"], c["text"], f"{i:064d}", c["tokens"], False,
                            c.get("priority", 0))  # pools before session 43 lack it (47d)
        out.append(Candidate(chunk=chunk, raw=dict(c["raw"]), ranks=dict(c["ranks"]), fused=c["fused"],
                             score=c["score"]))
    return out


def _answers(path: str, gold: list[str]) -> bool:
    return any(path == g or path.endswith("/" + g) or g.endswith("/" + path) for g in gold)


def fold_of(repo: str) -> int:
    return int(hashlib.sha256(repo.encode()).hexdigest(), 16) % FOLDS


def featurise(records: list[dict]):
    """Per question: (file keys, feature matrix, labels)."""
    out = []
    for r in records:
        keys, rows = file_features(r["query"], candidates(r))
        labels = np.array([_answers(k[1], r["gold_files"]) for k in keys], dtype=bool)
        out.append((keys, np.asarray(rows, dtype=np.float64).reshape(len(keys), len(FEATURES)), labels))
    return out


def pairs(data, indices, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Differences x_answer - x_other over the questions `indices`, with each pair's weight (its
    question's weight shared among the question's pairs: every question counts alike)."""
    diffs, pair_weights = [], []
    for i in indices:
        keys, x, y = data[i]
        if not y.any() or y.all():
            continue
        order = np.argsort(-x[:, FEATURES.index("best_rel")])
        negatives = [j for j in order if not y[j]][:NEGATIVES]
        positives = np.flatnonzero(y)
        share = (1.0 if weights is None else weights[i]) / (len(positives) * len(negatives))
        for p in positives:
            diffs.append(x[p] - x[negatives])
            pair_weights.append(np.full(len(negatives), share))
    if not diffs:
        return np.zeros((0, len(FEATURES))), np.zeros(0)
    return np.concatenate(diffs), np.concatenate(pair_weights)


def fit(data, indices, seed: int = 0, weights=None) -> FileRanker:
    rows = np.concatenate([data[i][1] for i in indices if len(data[i][1])])
    d, pw = pairs(data, indices, weights)
    mean, scale, w = fit_pairs(rows, d, pw, seed)
    return FileRanker(VERSION, mean, scale, w)


def fit_pairs(rows: np.ndarray, d: np.ndarray, pw: np.ndarray, seed: int = 0,
              l2: float = L2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, scale, weights) of a linear score over standardised `rows` fitted to the pairwise
    differences `d` (answer minus other, each weighted by `pw`): RankNet's logistic loss, an L2
    penalty, full-batch Adam (the file ranker's, and the learned chunk order's: train_lead_chunk)."""
    mean, scale = rows.mean(axis=0), rows.std(axis=0)
    scale[scale < 1e-9] = 1.0
    d = d / scale  # the mean cancels in a difference
    pw = pw / pw.sum()
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.01, rows.shape[1])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for step in range(1, STEPS + 1):
        margin = d @ w
        grad = -(d * (pw / (1.0 + np.exp(np.clip(margin, -30, 30))))[:, None]).sum(axis=0) + l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= LEARNING_RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return mean, scale, w


class _Boosted:
    """A LightGBM LambdaMART model behind FileRanker's `scores` (for comparison only: the shipped
    model is the linear one unless the boosted one wins by the figures)."""

    def __init__(self, booster, temperature: float = 10.0):
        self.booster = booster
        self.temperature = temperature

    def scores(self, rows):
        return self.booster.predict(np.asarray(rows, dtype=np.float64)) if len(rows) else np.zeros(0)


def fit_boosted(data, indices, seed: int = 0) -> _Boosted:
    import lightgbm

    x, y, groups = [], [], []
    for i in indices:
        keys, rows, labels = data[i]
        if not labels.any() or not len(rows):
            continue
        order = np.argsort(-rows[:, FEATURES.index("best_rel")])[:NEGATIVES + 5]
        x.append(rows[order])
        y.append(labels[order].astype(int))
        groups.append(len(order))
    params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
              "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8, "seed": seed, "verbose": -1,
              "num_threads": 1}
    dataset = lightgbm.Dataset(np.concatenate(x), np.concatenate(y), group=groups)
    return _Boosted(lightgbm.train(params, dataset, num_boost_round=150))


def ranked_files(record: dict, model: FileRanker | None) -> list:
    pool = candidates(record)
    learned = (lambda kept: file_scores(model, record["query"], kept)) if model is not None else None
    return rank_files(pool, per_file=3, learned=learned)


def evaluate(record: dict, model: FileRanker | None) -> dict[str, float]:
    ranked = ranked_files(record, model)
    if record["source"] == "semble":
        items = [(c.chunk.path, c.chunk.start_line, c.chunk.end_line) for c in ranked[:10]]
        return {"ndcg10": ndcg10(items, [tuple(t) for t in record["targets"]])}
    files = list(dict.fromkeys(c.chunk.path for c in ranked))
    gold = record["gold_files"]
    ranks = [files.index(g) + 1 for g in gold if g in files]
    return {"acc1": float(all(g in files[:1] for g in gold)), "acc5": float(all(g in files[:5] for g in gold)),
            "recall5": sum(g in files[:5] for g in gold) / len(gold), "mrr": 1.0 / min(ranks) if ranks else 0.0}


def _group(record: dict) -> str:
    """A question's figure group: its source, and the dense tier its pool was collected with."""
    return f"{record['source']}+{record['dense']}" if record.get("dense") else record["source"]


def report(records: list[dict], scored: list[dict], label: str) -> dict:
    """Means per source (and dense tier); semble's NDCG@10 as the mean over repositories (its metric)."""
    out = {}
    for source in sorted({_group(r) for r in records}):
        idx = [i for i, r in enumerate(records) if _group(r) == source]
        if records[idx[0]]["source"] == "semble":
            per_repo = defaultdict(list)
            for i in idx:
                per_repo[records[i]["repo"]].append(scored[i]["ndcg10"])
            out[source] = {"ndcg10": round(statistics.mean(statistics.mean(v) for v in per_repo.values()), 4),
                           "questions": len(idx)}
        else:
            out[source] = {k: round(statistics.mean(scored[i][k] for i in idx), 4)
                           for k in ("acc1", "acc5", "recall5", "mrr")}
            out[source]["questions"] = len(idx)
            if records[idx[0]]["source"] == "multilang":
                for metric in ("acc5", "recall5"):
                    by_language = defaultdict(list)
                    for i in idx:
                        by_language[records[i].get("language", "?")].append(scored[i][metric])
                    out[source][f"{metric}_by_language"] = {k: round(statistics.mean(v), 3)
                                                            for k, v in sorted(by_language.items())}
    print(f"{label}: {json.dumps(out)}", file=sys.stderr)
    return out


def _headline(records: list[dict], scored: list[dict]) -> float:
    """What the temperature is chosen on: the mean of every question's NDCG@10 or MRR."""
    return statistics.mean(s.get("ndcg10", s.get("mrr", 0.0)) for s in scored)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.train_file_ranker")
    ap.add_argument("pools", nargs="*")
    ap.add_argument("--dense-pools", nargs="*", default=[], metavar="[TIER=]POOLS",
                    help="pools collected with a dense tier (`collect --embedder static`), each optionally named "
                         "(`static=/tmp/p.jsonl`): trained on beside the lexical ones, reported apart")
    ap.add_argument("--score-dense-only", action="store_true",
                    help="score the --dense-pools out of fold without training on them (the lexical model's figures)")
    ap.add_argument("--score-only", nargs="*", default=[], metavar="TIER",
                    help="score the --dense-pools named so out of fold without training on them (the others are trained on)")
    ap.add_argument("--out", default=None, help="write the model fit on every question here")
    ap.add_argument("--boosted", action="store_true", help="also cross-validate LightGBM LambdaMART")
    ap.add_argument("--per-question", default=None,
                    help="write each question's out-of-fold figures here (JSON lines), to compare two feature sets "
                         "question by question")
    ap.add_argument("--shipped", action="store_true",
                    help="also score the pools with the shipped weights (in-sample where they were trained on them)")
    args = ap.parse_args(argv)
    records = [json.loads(line) for p in args.pools for line in Path(p).read_text().splitlines() if line.strip()]
    for given in args.dense_pools:
        tier, _, path = given.rpartition("=")
        records += [{**json.loads(line), "dense": tier or "dense"} for line in Path(path).read_text().splitlines()
                    if line.strip()]
    print(f"{len(records)} questions from {len({r['repo'] for r in records})} repositories", file=sys.stderr)
    data = featurise(records)
    baseline = [evaluate(r, None) for r in records]
    weights = [SOURCE_WEIGHT.get(r["source"], 1.0) for r in records]
    models = {}
    trained = [i for i, r in enumerate(records)
               if not (r.get("dense") and (args.score_dense_only or r["dense"] in args.score_only))]
    for fold in range(FOLDS):
        models[fold] = fit(data, [i for i in trained if fold_of(records[i]["repo"]) != fold], weights=weights)
    by_temperature = {}
    for t in TEMPERATURES:
        by_temperature[t] = [evaluate(r, replace(models[fold_of(r["repo"])], temperature=t)) for r in records]
        report(records, by_temperature[t], f"learned at temperature {t:g}, {FOLDS} folds grouped by repository")
    temperature = max(TEMPERATURES, key=lambda t: _headline(records, by_temperature[t]))
    if args.per_question:
        with open(args.per_question, "w") as out:
            for r, got in zip(records, by_temperature[temperature]):
                out.write(json.dumps({"source": _group(r), "repo": r["repo"], "query": r["query"], **got}) + "\n")
    figures = {"hand_set": report(records, baseline, "hand-set file score"),
               "learned_cross_validated": report(records, by_temperature[temperature],
                                                 f"learned (temperature {temperature:g}), {FOLDS} folds")}
    # each fold's own held-out figures: how far apart folds of one model lie is the noise a
    # feature's change must clear (docs/BENCHMARKS.md, "The learned file ranker, cross-validated")
    figures["by_fold"] = [report([records[i] for i in idx], [by_temperature[temperature][i] for i in idx],
                                 f"fold {fold} ({len({records[i]['repo'] for i in idx})} repositories)")
                          for fold in range(FOLDS)
                          if (idx := [i for i, r in enumerate(records) if fold_of(r["repo"]) == fold])]
    if args.shipped:
        figures["shipped"] = report(records, [evaluate(r, shipped()) for r in records], "shipped weights")
    if args.boosted:
        boosted: list[dict] = [{}] * len(records)
        for fold in range(FOLDS):
            model = fit_boosted(data, [i for i in trained if fold_of(records[i]["repo"]) != fold])
            for i, r in enumerate(records):
                if fold_of(r["repo"]) == fold:
                    boosted[i] = evaluate(r, model)
        figures["boosted_cross_validated"] = report(records, boosted, "LambdaMART, same folds")
    if args.out:
        model = fit(data, trained, weights=weights)
        Path(args.out).write_text(json.dumps({
            "version": VERSION, "features": list(FEATURES), "temperature": temperature, "mean": model.mean.round(6).tolist(),
            "scale": model.scale.round(6).tolist(), "weights": model.weights.round(6).tolist(),
            "trained_on": {"questions": len(trained), "repositories": len({records[i]["repo"] for i in trained}),
                           "sources": sorted({_group(records[i]) for i in trained})},
            "figures": figures}, indent=1) + "\n")
        weights = sorted(zip(FEATURES, model.weights), key=lambda t: -abs(t[1]))
        print("weights: " + ", ".join(f"{f} {w:+.2f}" for f, w in weights), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
