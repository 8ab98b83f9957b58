"""`python -m mcp_retrieval.bench losses`: which file-ranker features put other files above the fixed ones.

    python -m mcp_retrieval.bench losses --instances ../shared/eval/multilang_dev.jsonl --repo owner/name=GITDIR ... \\
        --work DIR [--dense] [--ranks 6-20] [--out pairs.jsonl]

Each question is asked of `packet` as `bench ab` asks it (the whole statement, 50 items, `debug`);
for every fixed file whose place falls in `--ranks`, each file ranked above it that is not fixed
makes a pair. Per feature of the file ranker: the mean over pairs of (its contribution to the file
above) - (its contribution to the fixed file), and in how many pairs that difference exceeds
`FAVOURS` (a feature that lifts the wrong file). A feature that fires where its name says it should
not is a defect to read (68b: `test` carried its full weight on Rust source files whose inline
`mod tests` matched best); one that favours the files above on merit is the evidence they have.
Contributions are in the model's standardised units (`FileRanker.contributions`); every feature
is read, not only the few `debug` shows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mcp_retrieval import file_scorer
from mcp_retrieval.bench import read_rows, select_rows
from mcp_retrieval.bench.checkout import opened_instances
from mcp_retrieval.bench.swebench import gold_files
from mcp_retrieval.workspace import Workspace

FAVOURS = 0.2  # a difference this large (a fifth of a standardised unit) counts as favouring a file


def file_contributions(items) -> dict[str, dict[str, float]]:
    """Each file's contributions, from its first item, files in the order `packet` shows them."""
    files: dict[str, dict[str, float]] = {}
    for item in items:
        files.setdefault(item.path, item.contributions or {})
    return files


def loss_pairs(files: dict[str, dict[str, float]], gold: list[str], first: int, last: int) -> list[dict]:
    """(fixed file, a file above it) pairs for the fixed files placed first..last (1-based)."""
    order = list(files)
    pairs = []
    for g in gold:
        if g not in files or not first <= order.index(g) + 1 <= last:
            continue
        for above in order[:order.index(g)]:
            if above not in gold:
                pairs.append({"fixed": g, "rank": order.index(g) + 1, "above": above,
                              "diff": {k: round(files[above].get(k, 0.0) - files[g].get(k, 0.0), 4)
                                       for k in set(files[g]) | set(files[above])}})
    return pairs


def summarise(pairs: list[dict]) -> list[tuple[str, float, int]]:
    """(feature, mean difference over all pairs, pairs it favours the file above in), largest first."""
    total: dict[str, float] = defaultdict(float)
    favours: Counter = Counter()
    for p in pairs:
        for k, d in p["diff"].items():
            total[k] += d
            favours[k] += d > FAVOURS
    n = max(1, len(pairs))
    return sorted(((k, total[k] / n, favours[k]) for k in total), key=lambda t: -t[1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench losses")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--dense", action="store_true", help="embed every chunk, as the server does")
    ap.add_argument("--ranks", default="6-20", help="the fixed files' places to read, first-last (1-based)")
    ap.add_argument("--per-repo", type=int, default=None)
    ap.add_argument("--out", default=None, help="every pair as JSON lines")
    args = ap.parse_args(argv)
    first, _, last = args.ranks.partition("-")
    first, last = int(first), int(last or first)
    repos = dict(r.split("=", 1) for r in args.repo)
    rows = select_rows(read_rows(args.instances), repos, args.per_repo)
    file_scorer.SHOW_EVERY_CONTRIBUTION = True
    pairs: list[dict] = []
    out = open(args.out, "w") if args.out else None
    engines: dict = {}
    try:
        for row, engine, _, _, _ in opened_instances(rows, repos, Path(args.work), engines, no_dense=not args.dense):
            packet = Workspace.single(engine).packet(row["problem_statement"], max_items=50, debug=True)
            found = loss_pairs(file_contributions(packet.items), gold_files(row), first, last)
            for p in found:
                p["instance_id"] = row["instance_id"]
                if out:
                    out.write(json.dumps(p) + "\n")
            pairs += found
            print(f"{row['instance_id']}: {len(found)} pairs", file=sys.stderr, flush=True)
    finally:
        if out:
            out.close()
        for engine, _ in engines.values():
            engine.close()
    print(f"{len(pairs)} pairs (a fixed file placed {first}-{last}, a file above it)\n")
    print("| feature | mean (above - fixed) | pairs favouring the file above |\n|---|---|---|")
    for name, mean, count in summarise(pairs):
        if count or abs(mean) >= 0.001:
            print(f"| `{name}` | {mean:+.3f} | {count} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
