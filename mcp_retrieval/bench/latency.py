"""Answer latency on whole issue texts, in process, with each stage's share.

    python -m mcp_retrieval.bench latency --instances ../shared/eval/swebench_dev.jsonl \
        --repo sympy/sympy=/path/to/git/dir [--tool packet] [--passes 4] [--no-dense | --dense-code-only] [--switch module.NAME[=VALUE]]

Puts the repository's work tree at the base commit of its last dev instance (as `bench swebench`
does: history read at that commit, nothing later visible), indexes it, warms up on three
questions, then times the tool on every dev question of that repository in `--passes` passes
(the order reversed every other pass), each as asked for the first time (the embedder's memory of
recent questions emptied before each call: the order's reversal had put a pass's last questions,
still remembered, first in the next). Reports p50/p95 of the whole call and the median of each
stage from `debug.stages` — the numbers behind #18's "packet p50 under 50 ms on sympy".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from mcp_retrieval.bench import read_rows, select_rows
from mcp_retrieval.bench.ab import Switch
from mcp_retrieval.bench.checkout import open_instance
from mcp_retrieval.workspace import Workspace


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench latency")
    ap.add_argument("--instances", required=True)
    ap.add_argument("--repo", required=True, help="owner/name=/path/to/git/dir")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-latency")
    ap.add_argument("--tool", choices=("packet", "context"), default="packet")
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--dense-code-only", action="store_true",
                    help="embed only non-test source chunks, as `swebench --dense-code-only` (fast on a big repository)")
    ap.add_argument("--switch", action="append", default=[],
                    help="module.NAME or module.NAME=VALUE in mcp_retrieval, set for the whole run (as `bench ab`'s flipped arm)")
    args = ap.parse_args(argv)
    for spec in args.switch:
        Switch(spec).set("flipped")
    name, _, git_dir = args.repo.partition("=")
    rows = select_rows(read_rows(args.instances), {name})
    if not rows:
        ap.error(f"no instances of {name} in {args.instances}")
    engine, _, _, _ = open_instance(rows[-1], {name: git_dir}, Path(args.work), {}, no_dense=args.no_dense,
                                    max_priority=0 if args.dense_code_only else None)
    workspace = Workspace.single(engine)
    call = workspace.packet if args.tool == "packet" else workspace.context
    questions = [r["problem_statement"] for r in rows]
    for q in questions[:3]:
        call(q)
    totals: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    for n in range(args.passes):
        for q in questions if n % 2 == 0 else questions[::-1]:
            if forget := getattr(engine.embedder, "forget_questions", None):
                forget()  # cold: a question's vectors are not left from its last pass
            t0 = time.perf_counter()
            result = call(q, debug=True)
            totals.append((time.perf_counter() - t0) * 1000)
            for stage in result.debug.stages if result.debug else []:
                stages[stage.name].append(stage.ms)
    engine.close()
    print(f"{name} at {rows[-1]['base_commit'][:10]}: `{args.tool}` over {len(questions)} questions x {args.passes} "
          f"passes ({'no vectors' if args.no_dense else 'with vectors'})\n")
    print(f"| call | p50 ms | p95 ms |\n|---|---|---|\n| whole `{args.tool}` | {statistics.median(totals):.1f} | "
          f"{_percentile(totals, 0.95):.1f} |")
    for stage, ms in sorted(stages.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"| {stage} | {statistics.median(ms):.1f} | {_percentile(ms, 0.95):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
