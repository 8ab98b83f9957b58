"""Train know/miss (`mcp_retrieval/weights/know_miss.json`): a logistic model over the evidence
`decide` reads, one for the static token table's vectors and one for lexical evidence alone.

    python -m mcp_retrieval.bench semble --work /tmp/semble-work                                # lexical indexes
    python -m mcp_retrieval.bench semble --vectors --embedder static --work /tmp/semble-work    # static ones
    python -m training.train_know_miss --work /tmp/semble-work --embedder none --out mcp_retrieval/weights/know_miss.json
    python -m training.train_know_miss --work /tmp/semble-work --embedder static --out mcp_retrieval/weights/know_miss.json

Over `bench semble`'s indexes: the evidence `decide` reads (gathered as `bench calibrate` does,
through the engine) for semble_dev's questions (all answerable) and off-topic ones (none is:
`calibrate.OFF_TOPIC`'s 16 and `training/off_topic.txt`'s 32, nearer software's topics). The
threshold is where QUANTILE of the training's answerable questions would miss. Validation: each
repository and each quarter of the off-topic questions scored by a model that saw neither,
printed beside the rules it replaced (docs/BENCHMARKS.md 46d-46e). `--out` writes this tier's
model into the file (the other tier's model is kept). Deterministic: full-batch gradient descent
from zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from mcp_retrieval.bench import calibrate
from mcp_retrieval.decide import FEATURES
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine

DENSE_ONLY = ("dense_top", "agree")  # left out of the lexical model
QUARTERS = 4
QUANTILE = 0.0025
VERSION = "1"


def gather(data: Path, work: Path, embedder: str, off_topic: list[str]) -> list[dict]:
    folder = {"none": "index", "minilm": "index-vec"}.get(embedder, f"index-{embedder}")
    rows = []
    for repo in json.loads((data / "repos.json").read_text()):
        index = work / folder / repo["name"]
        if not index.is_dir():
            continue
        tree = work / "trees" / repo["name"]
        cfg = Config.resolve(tree / repo["benchmark_root"] if repo.get("benchmark_root") else tree, index,
                             persist_sessions=False, embedder=embedder)
        cfg.cache_dir = work / "cache"
        engine = Engine(cfg)
        questions = [(q["query"], None) for q in json.loads((data / "annotations" / f"{repo['name']}.json").read_text())]
        questions += [(q, i % QUARTERS) for i, q in enumerate(off_topic)]
        for query, quarter in questions:
            ev, _ = calibrate.evidence(engine, query)
            features = ev.features() if ev is not None else None  # None: no candidates, a miss whatever decides
            rows.append({"repo": repo["name"], "answerable": quarter is None, "quarter": quarter,
                         "x": [features[f] for f in FEATURES] if features else None})
        engine.close()
    return rows


def fit(x: np.ndarray, y: np.ndarray, steps: int = 3000, l2: float = 1e-3) -> dict:
    """Logistic regression by full-batch gradient descent on standardised columns."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        w -= 0.5 * (z.T @ (p - y) / len(y) + l2 * w)
        b -= 0.5 * float((p - y).mean())
    return {"mean": mean, "scale": scale, "weights": w, "bias": b}


def score(model: dict, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(((x - model["mean"]) / model["scale"]) @ model["weights"] + model["bias"])))


def with_threshold(model: dict, x: np.ndarray, y: np.ndarray) -> dict:
    return {**model, "threshold": float(np.quantile(score(model, x)[y == 1], QUANTILE))}


def folds(rows: list[dict], columns: list[int]) -> tuple[int, int]:
    """(answerable questions missed, off-topic questions answered), each scored by a model that saw
    neither its repository nor its quarter of the off-topic questions; a question with no
    candidates is a miss."""
    missed = sum(r["answerable"] for r in rows if r["x"] is None)
    rows = [r for r in rows if r["x"] is not None]
    x = np.array([r["x"] for r in rows])[:, columns]
    y = np.array([r["answerable"] for r in rows], dtype=float)
    repo = np.array([r["repo"] for r in rows])
    quarter = np.array([-1 if r["quarter"] is None else r["quarter"] for r in rows])
    answered = 0
    for name in sorted(set(repo)):
        for k in range(QUARTERS):
            train = (repo != name) & ((quarter < 0) | (quarter != k))
            model = with_threshold(fit(x[train], y[train]), x[train], y[train])
            if k == 0:
                missed += int((score(model, x[(repo == name) & (quarter < 0)]) < model["threshold"]).sum())
            answered += int((score(model, x[(repo == name) & (quarter == k)]) >= model["threshold"]).sum())
    return missed, answered


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.train_know_miss")
    ap.add_argument("--semble", default="../shared/eval/semble_dev")
    ap.add_argument("--work", required=True, help="the --work folder of `bench semble`")
    ap.add_argument("--embedder", default="static", choices=("none", "static"),
                    help="the indexes read, and the model trained: static, or lexical (none)")
    ap.add_argument("--off-topic", default=str(Path(__file__).with_name("off_topic.txt")))
    ap.add_argument("--out", default=None, help="write this tier's model into this file")
    args = ap.parse_args(argv)
    off_topic = [*calibrate.OFF_TOPIC, *(line.strip() for line in Path(args.off_topic).read_text().splitlines()
                                         if line.strip())]
    rows = gather(Path(args.semble), Path(args.work), args.embedder, off_topic)
    if not rows:
        print(f"no {args.embedder} indexes of semble_dev under {args.work}", file=sys.stderr)
        return 1
    columns = [i for i, f in enumerate(FEATURES) if args.embedder == "static" or f not in DENSE_ONLY]
    answerable = sum(r["answerable"] for r in rows)
    missed, answered = folds(rows, columns)
    figures = {"answerable": answerable, "off_topic": len(rows) - answerable, "answerable_missed": missed,
               "off_topic_answered": answered}
    print(f"held out by repository and off-topic quarter: {missed} of {answerable} answerable missed, "
          f"{answered} of {len(rows) - answerable} off-topic answered", file=sys.stderr)
    if args.out:
        kept = [r for r in rows if r["x"] is not None]
        x = np.array([r["x"] for r in kept])[:, columns]
        y = np.array([r["answerable"] for r in kept], dtype=float)
        model = with_threshold(fit(x, y), x, y)
        out = Path(args.out)
        data = json.loads(out.read_text()) if out.exists() else {"version": VERSION, "models": {}}
        data["models"]["static" if args.embedder == "static" else "lexical"] = {
            "features": [FEATURES[i] for i in columns],
            **{k: [round(float(v), 6) for v in model[k]] for k in ("mean", "scale", "weights")},
            "bias": round(float(model["bias"]), 6), "threshold": round(model["threshold"], 6),
            "trained_on": {"indexes": sorted({r["repo"] for r in rows}), "answerable": answerable,
                           "off_topic": len(rows) - answerable, "quantile": QUANTILE},
            "figures_held_out": figures}
        out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
