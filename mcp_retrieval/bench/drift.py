"""Does a long-lived index rank like a fresh one? BM25 over an index that went through a
sequence of checkouts, with and without the lexical rebuild, against a fresh index of the
last checkout.

    python -m mcp_retrieval.bench drift --instances ../shared/eval/swebench_dev.jsonl \\
        --repo sympy/sympy=/path/to/sympy.git [--steps 8] [--work DIR]

The repository's instances are sorted by their base commit's date; `--steps` of them, evenly
spread, are checked out in turn into two work trees and indexed incrementally, one index with
`update.LEXICAL_REBUILD_ABOVE` as served and one with it off. A third index is built fresh at the
last step. Every instance's question is then searched in the three (lexical search only, top
10 chunks) and each long-lived index is compared with the fresh one: the share of questions
whose top-10 ids come in the same order, the mean top-10 overlap, and the mean relative
difference of the first hit's score. Also reported: each index's deleted share after each step
and the time the rebuilds took.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp_retrieval.bench import read_rows
from mcp_retrieval.bench.checkout import checkout
from mcp_retrieval.bench.commits import git_text
from mcp_retrieval.indexers import update
from mcp_retrieval.indexers.update import Indexer

TOP = 10


def commit_time(git_dir: str, commit: str) -> int:
    return int(git_text(Path(git_dir), "show", "-s", "--format=%ct", commit).strip())


def spread(items: list, n: int) -> list:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def search_ms(indexer: Indexer, questions: list[str], passes: int = 3) -> float:
    """p50 of one BM25 search of 60 (the retrieval stage's width), the query built each time."""
    times = []
    for _ in range(passes):
        for q in questions:
            indexer.lexical._queries.clear()
            t0 = time.perf_counter()
            indexer.lexical.search(q, 60)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def compare(long_lived: Indexer, fresh: Indexer, questions: list[str]) -> dict[str, float]:
    same = overlap = 0
    score_diffs = []
    for q in questions:
        a, b = long_lived.lexical.search(q, TOP), fresh.lexical.search(q, TOP)
        same += [i for i, _ in a] == [i for i, _ in b]
        overlap += len({i for i, _ in a} & {i for i, _ in b}) / max(len(b), 1)
        if a and b:
            score_diffs.append(abs(a[0][1] - b[0][1]) / b[0][1])
    n = max(len(questions), 1)
    return {"same_order": same / n, "overlap": overlap / n,
            "first_score_diff": statistics.fmean(score_diffs) if score_diffs else float("nan")}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench drift", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", required=True, help="owner/name=/path/to/git/dir")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--work", default=None)
    args = ap.parse_args(argv)
    name, git_dir = args.repo.split("=", 1)
    rows = [r for r in read_rows(args.instances) if r["repo"] == name]
    if not rows:
        ap.error(f"no instances of {name} in {args.instances}")
    commits = sorted({r["base_commit"] for r in rows}, key=lambda c: commit_time(git_dir, c))
    steps = spread(commits, args.steps)
    questions = [r["problem_statement"] for r in rows]
    work = Path(args.work or tempfile.mkdtemp(prefix="mcp-retrieval-drift-"))
    served = update.LEXICAL_REBUILD_ABOVE
    arms = {(f"rebuild at {100 * served:.0f}%" if served is not None else "as served (rebuild off)"): served,
            "never rebuilt": None}
    indexers: dict[str, Indexer] = {}
    print(f"{name}: {len(steps)} checkouts of {len(commits)} base commits, {len(questions)} questions",
          file=sys.stderr)
    shares: dict[str, list[str]] = {arm: [] for arm in arms}
    rebuild_ms: list[float] = []
    for n, commit in enumerate(steps, 1):
        for k, (arm, threshold) in enumerate(arms.items()):
            tree = work / f"tree-{k}"
            checkout(Path(git_dir), commit, tree)
            if arm not in indexers:
                indexers[arm] = Indexer(tree, work / f"index-{k}", None, None)
            indexer = indexers[arm]
            update.LEXICAL_REBUILD_ABOVE = threshold
            try:
                result = indexer.sync()
            finally:
                update.LEXICAL_REBUILD_ABOVE = served
            if "lexical_rebuild" in result.timings_ms:
                rebuild_ms.append(result.timings_ms["lexical_rebuild"])
            shares[arm].append(f"{indexer.lexical.deleted_share():.2f}")
        print(f"step {n}/{len(steps)} {commit[:10]}: deleted share " +
              ", ".join(f"{arm} {s[-1]}" for arm, s in shares.items()), file=sys.stderr, flush=True)
    fresh_tree = work / "tree-fresh"
    checkout(Path(git_dir), steps[-1], fresh_tree)
    fresh = Indexer(fresh_tree, work / "index-fresh", None, None)
    fresh.sync()

    print(f"{name}: {len(steps)} checkouts in turn, then {len(questions)} questions searched "
          f"(BM25, top {TOP}) against a fresh index of the last\n")
    print("| index | deleted share after each checkout | top-10 in the fresh order | top-10 overlap | "
          "first score off by | search p50 ms |")
    print("|---|---|---|---|---|---|")
    for indexer in [*indexers.values(), fresh]:  # warm each index's files once
        for q in questions:
            indexer.lexical.search(q, 60)
    for arm in arms:
        c = compare(indexers[arm], fresh, questions)
        print(f"| {arm} | {' '.join(shares[arm])} | {c['same_order']:.2f} | {c['overlap']:.3f} | "
              f"{100 * c['first_score_diff']:.2f}% | {search_ms(indexers[arm], questions):.1f} |")
    print(f"| fresh | 0.00 | 1 | 1 | 0 | {search_ms(fresh, questions):.1f} |")
    if rebuild_ms:
        print(f"\nrebuilds: {len(rebuild_ms)}, {statistics.fmean(rebuild_ms) / 1000:.1f} s each on average")
    for indexer in [*indexers.values(), fresh]:
        indexer.store.close()
    return 0
