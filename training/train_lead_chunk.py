"""Train the learned chunk order (`mcp_retrieval/lead_chunk.py`): which chunk of a file `packet`
shows first.

    python -m training.train_lead_chunk POOLS.jsonl... [--mirrors /work/.mirror] [--out mcp_retrieval/weights/lead_chunk.json]

Data: pools of mined commits (`training.collect commits`: each question is a commit message, its
pool what `packet` ranks on the parent commit). A commit's changed lines (old side, `git show`
against the mirror; a pure insertion marks the line before) label each pooled chunk of a changed
file: it holds one, or not — the file's head (imports) only when no definition of it does, since
an import added beside a fix is not where the fix is (docs/BENCHMARKS.md 67a: trained on that
label, the model put a changed line first more often on the held-out dev pools). Only files with
two or more pooled chunks teach anything. Pairs (a chunk holding a changed line against one of the
same file that does not), RankNet's loss, the file ranker's optimiser
(`train_file_ranker.fit_pairs`); five folds grouped by repository.
The figure is `lead_hit` out of fold: of the changed files with two or more pooled chunks, the
share whose first chunk in the model's order holds a changed line, against the first by score.
The dev files are left out of training: their `lead_hit` (`bench ab --tool packet`) stays held out.
Deterministic (seed 0); about 10 s on two cores, most of it reading the pools.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from mcp_retrieval.bench.commits import git_text, mirror_git_dir
from mcp_retrieval.bench.tokens import patch_lines
from mcp_retrieval.lead_chunk import FEATURES, Question, chunk_features
from training.train_file_ranker import FOLDS, candidates, fit_pairs, fold_of

VERSION = "1"


def changed_lines(git_dir: Path, sha: str) -> dict[str, set[int]] | None:
    """Old-side lines each file of the commit changes, or None when the mirror lacks it (read
    through the project's neutralised git: the mirror's config names no diff driver we run)."""
    try:
        patch = git_text(git_dir, "show", "--format=", "-U0", "--no-renames", "--no-ext-diff", "--no-textconv", sha)
    except RuntimeError:
        return None
    return patch_lines(patch)


def examples(pool_files: list[str], mirrors: Path):
    """(repository, feature matrix, labels) per changed file with two or more pooled chunks."""
    out, skipped = [], 0
    for name in pool_files:
        for line in open(name, encoding="utf-8"):
            record = json.loads(line)
            if record.get("source") != "commits":
                continue
            repo, _, sha = record["id"].partition("@")
            lines = changed_lines(mirror_git_dir(mirrors, repo), sha)
            if lines is None:
                skipped += 1
                continue
            by_file = defaultdict(list)
            for c in candidates(record):
                by_file[c.chunk.path].append(c)
            question = Question(record["query"])
            for path in record["gold_files"]:
                chunks, changed = by_file.get(path, []), lines.get(path, set())
                if len(chunks) < 2 or not changed:
                    continue
                y = np.array([any(c.chunk.start_line <= n <= c.chunk.end_line for n in changed) for c in chunks])
                head = np.array([c.chunk.kind == "module" for c in chunks])
                if (y & ~head).any():  # imports added beside a fix are not where the fix is
                    y &= ~head
                out.append((repo, np.asarray(chunk_features(question, chunks)), y))
    if skipped:
        print(f"{skipped} commits not in their mirror: skipped", file=sys.stderr)
    return out


def pairs(data, indices):
    """Differences holding-a-changed-line minus not, within one file; every file counts alike."""
    diffs, weights = [], []
    for i in indices:
        _, x, y = data[i]
        if not y.any() or y.all():
            continue
        pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
        for p in pos:
            diffs.append(x[p] - x[neg])
            weights.append(np.full(len(neg), 1.0 / (len(pos) * len(neg))))
    return np.concatenate(diffs), np.concatenate(weights)


def fit(data, indices):
    rows = np.concatenate([data[i][1] for i in indices])
    return fit_pairs(rows, *pairs(data, indices))


def first_holds(x: np.ndarray, y: np.ndarray, model=None) -> bool:
    """The first chunk, by the model's order (ties: by score, as `lead_chunk.within_files`) or by
    score alone, holds a changed line."""
    rel = x[:, FEATURES.index("rel")]
    if model is None:
        return bool(y[int(np.argmax(rel))])
    mean, scale, w = model
    scores = ((x - mean) / scale) @ w
    return bool(y[int(np.lexsort((-rel, -scores))[0])])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.train_lead_chunk")
    ap.add_argument("pools", nargs="+")
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    data = examples(args.pools, Path(args.mirrors))
    if not data:
        print("no changed file with two or more pooled chunks", file=sys.stderr)
        return 1
    base = np.array([first_holds(x, y) for _, x, y in data])
    oof = np.zeros(len(data), dtype=bool)
    by_fold = []
    for fold in range(FOLDS):
        held = [i for i, (repo, _, _) in enumerate(data) if fold_of(repo) == fold]
        model = fit(data, [i for i, (repo, _, _) in enumerate(data) if fold_of(repo) != fold])
        for i in held:
            oof[i] = first_holds(data[i][1], data[i][2], model)
        if not held:
            continue
        by_fold.append({"files": len(held), "by_score": round(float(base[held].mean()), 3),
                        "learned": round(float(oof[held].mean()), 3)})
        print(f"fold {fold}: {len(held)} files, first chunk holds a change {base[held].mean():.3f} by score, "
              f"{oof[held].mean():.3f} learned")
    figures = {"files": len(data), "repositories": len({r for r, _, _ in data}),
               "any_chunk_holds": round(float(np.mean([y.any() for _, _, y in data])), 3),
               "by_score": round(float(base.mean()), 3), "learned_out_of_fold": round(float(oof.mean()), 3),
               "better": int((oof & ~base).sum()), "worse": int((base & ~oof).sum()), "by_fold": by_fold}
    print(json.dumps({k: v for k, v in figures.items() if k != "by_fold"}))
    mean, scale, w = fit(data, range(len(data)))
    for name, weight in sorted(zip(FEATURES, w), key=lambda t: -abs(t[1])):
        print(f"  {name:14s} {weight:+.3f} per standard deviation")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "version": VERSION, "features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(),
            "weights": w.tolist(), "figures": figures,
            "recipe": "python -m training.train_lead_chunk <commit pools> (training/README.md)"}, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
