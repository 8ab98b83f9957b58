"""Train and validate know/miss (`mcp_retrieval/weights/know_miss.json`, read by `decide`): a
logistic model over the evidence `decide` gathers, for the static token table's vectors (the
default dense tier); measured for lexical evidence alone too, where the hand-set thresholds still
decide (docs/BENCHMARKS-history.md 46d-46e, 47f).

    python -m mcp_retrieval.bench semble --vectors --embedder static --work /tmp/semble-work    # the indexes
    python -m training.know_miss_folds --work /tmp/semble-work --embedder static \
        --more-off-topic training/off_topic.txt --out mcp_retrieval/weights/know_miss.json     # ~30 s
    python -m training.know_miss_folds --work /tmp/semble-work --embedder none     # lexical: measured only

Over `bench semble`'s indexes: the evidence `decide` reads (as `bench calibrate` gathers it) for
semble_dev's questions (all answerable) and `calibrate.OFF_TOPIC`'s (none is; `--more-off-topic
training/off_topic.txt` adds 32 written for this, nearer software's topics), plus how common
the question's words are in the index. A logistic model is fit with its threshold where `--quantile`
of the training questions would miss, and scored on a repository and a quarter of the off-topic
questions it never saw (every repository x four quarters), printed beside what the shipped model
decides (in sample). How common the question's words are in the index (`commonness`) is measured
beside the evidence and not shipped: in a workspace of a few files every word is rare (46e).
`--out` fits the evidence model on every question, its threshold at QUANTILE of the answerable
ones, and writes it into the file as the static table's model.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from mcp_retrieval import decide
from mcp_retrieval.bench import calibrate
from mcp_retrieval.indexers.lexical import stem_forms

EVIDENCE = decide.FEATURES
DENSE_ONLY = ("dense_top", "agree")  # left out of the lexical model
QUANTILE = 0.0025  # of the training's answerable questions the shipped threshold lets miss (47f)
VERSION = "1"
COMMONNESS = ("common_mean", "common_least", "common_share")
QUARTERS = 4


def commonness(searcher, query: str) -> list[float]:
    """For each of the question's words, log(1 + chunks holding it in its most common form of the
    same stem) / log(1 + all chunks): the mean and the least over the words the index knows, and
    the share of words above 0.3. An off-topic question's known words are rare ones."""
    n = max(searcher.num_docs, 1)
    values = []
    for word in decide.salient_terms(query):
        held = max([searcher.doc_freq("body", word), *(count for _, count in stem_forms(searcher, word))])
        values.append(math.log1p(held) / math.log1p(n))
    known = [v for v in values if v > 0]
    return [sum(known) / len(known) if known else 0.0, min(known, default=0.0),
            sum(v > 0.3 for v in values) / len(values) if values else 0.0]


def gather(data: Path, work: Path, embedder: str, off_topic: list[str]) -> list[dict]:
    rows = []
    for repo, engine in calibrate.semble_engines(data, work, embedder):
        searcher = engine.retriever.lexical.index.searcher()
        questions = [(q["query"], None) for q in json.loads((data / "annotations" / f"{repo['name']}.json").read_text())]
        questions += [(q, i % QUARTERS) for i, q in enumerate(off_topic)]
        for query, quarter in questions:
            ev, modes = calibrate.evidence(engine, query)
            if ev is None:  # nothing found: a miss whatever decides (counted, not learned from)
                rows.append({"repo": repo["name"], "answerable": quarter is None, "quarter": quarter,
                             "shipped_know": False, "x": None})
                continue
            rows.append({"repo": repo["name"], "answerable": quarter is None, "quarter": quarter,
                         "shipped_know": decide.decide(ev, *modes).found,
                         "x": [*map(ev.features().get, EVIDENCE), *commonness(searcher, query)]})
    return rows


class Logistic:
    """Logistic regression by full-batch gradient descent from zero on standardised columns."""

    def __init__(self, x: np.ndarray, y: np.ndarray, steps: int = 3000, l2: float = 1e-3):
        self.mean, self.scale = x.mean(axis=0), x.std(axis=0)
        self.scale[self.scale < 1e-9] = 1.0
        z = (x - self.mean) / self.scale
        self.weights, self.bias = np.zeros(x.shape[1]), 0.0
        for _ in range(steps):
            p = 1 / (1 + np.exp(-(z @ self.weights + self.bias)))
            self.weights -= 0.5 * (z.T @ (p - y) / len(y) + l2 * self.weights)
            self.bias -= 0.5 * float((p - y).mean())

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-(((rows - self.mean) / self.scale) @ self.weights + self.bias)))


def folds(rows: list[dict], columns: list[int], quantile: float) -> tuple[int, int]:
    """(answerable questions missed, off-topic questions answered), each scored by a model that saw
    neither its repository nor its quarter of the off-topic questions. A question with no
    candidates (`x` None) is a miss."""
    missed_empty = sum(r["answerable"] for r in rows if r["x"] is None)
    rows = [r for r in rows if r["x"] is not None]
    x = np.array([r["x"] for r in rows])[:, columns]
    y = np.array([r["answerable"] for r in rows], dtype=float)
    repo = np.array([r["repo"] for r in rows])
    quarter = np.array([-1 if r["quarter"] is None else r["quarter"] for r in rows])
    missed, answered = missed_empty, 0
    for name in sorted(set(repo)):
        for k in range(QUARTERS):
            train = (repo != name) & ((quarter < 0) | (quarter != k))
            score = Logistic(x[train], y[train])
            threshold = np.quantile(score(x[train])[y[train] == 1], quantile)
            if k == 0:
                missed += int((score(x[(repo == name) & (quarter < 0)]) < threshold).sum())
            answered += int((score(x[(repo == name) & (quarter == k)]) >= threshold).sum())
    return missed, answered


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.know_miss_folds")
    ap.add_argument("--semble", default="../shared/eval/semble_dev")
    ap.add_argument("--work", required=True, help="the --work folder of `bench semble`")
    ap.add_argument("--embedder", default="static", choices=("none", "static", "minilm"))
    ap.add_argument("--quantile", type=float, action="append", help="training questions let miss (default 0.0025, 0.005)")
    ap.add_argument("--more-off-topic", default=None, metavar="FILE",
                    help="more off-topic questions, one a line (training/off_topic.txt: nearer software's topics)")
    ap.add_argument("--out", default=None, help="write the static table's evidence model into this file")
    args = ap.parse_args(argv)
    if args.out and args.embedder != "static":
        ap.error("--out writes the static table's model: --embedder static (lexical evidence keeps the "
                 "hand-set thresholds, docs/BENCHMARKS-history.md 47f)")
    off_topic = list(calibrate.OFF_TOPIC)
    if args.more_off_topic:
        off_topic += [line.strip() for line in Path(args.more_off_topic).read_text().splitlines() if line.strip()]
    rows = gather(Path(args.semble), Path(args.work), args.embedder, off_topic)
    if not rows:
        print(f"no {args.embedder} indexes of semble_dev under {args.work}", file=sys.stderr)
        return 1
    answerable = [r for r in rows if r["answerable"]]
    off_topic = [r for r in rows if not r["answerable"]]
    print(f"shipped (in sample): {sum(not r['shipped_know'] for r in answerable)} of {len(answerable)} answerable "
          f"missed, {sum(r['shipped_know'] for r in off_topic)} of {len(off_topic)} off-topic answered")
    names = [*EVIDENCE, *COMMONNESS]
    dense = [names.index(n) for n in ("dense_top", "agree")]
    sets = {"evidence": list(range(len(EVIDENCE))), "evidence + commonness": list(range(len(names)))}
    if args.embedder == "none":
        sets = {k: [c for c in v if c not in dense] for k, v in sets.items()}
    for quantile in args.quantile or [0.0025, 0.005]:
        for label, columns in sets.items():
            missed, answered = folds(rows, columns, quantile)
            print(f"learned on {label}, threshold at {quantile:.2%} of training questions: {missed} of "
                  f"{len(answerable)} answerable missed, {answered} of {len(off_topic)} off-topic answered")
    if args.out:
        columns = sets["evidence"]
        missed, answered = folds(rows, columns, QUANTILE)
        write_model(Path(args.out), args.embedder, rows, columns,
                    {"answerable": len(answerable), "off_topic": len(off_topic), "answerable_missed": missed,
                     "off_topic_answered": answered})
    return 0


def write_model(out: Path, tier: str, rows: list[dict], columns: list[int], held_out: dict) -> None:
    """The evidence model fit on every question with candidates, its threshold where QUANTILE of
    the answerable ones would miss, as `decide.KnowModel` reads it."""
    kept = [r for r in rows if r["x"] is not None]
    x = np.array([r["x"] for r in kept])[:, columns]
    y = np.array([r["answerable"] for r in kept], dtype=float)
    model = Logistic(x, y)
    threshold = float(np.quantile(model(x)[y == 1], QUANTILE))
    data = json.loads(out.read_text()) if out.exists() else {"version": VERSION, "models": {}}
    data["models"][tier] = {
        "features": [EVIDENCE[i] for i in columns],
        **{k: [round(float(v), 6) for v in getattr(model, k)] for k in ("mean", "scale", "weights")},
        "bias": round(float(model.bias), 6), "threshold": round(threshold, 6),
        "trained_on": {"indexes": sorted({r["repo"] for r in rows}), "quantile": QUANTILE},
        "figures_held_out": held_out}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote the {tier} model into {out}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
