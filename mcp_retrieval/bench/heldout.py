"""Questions the dev split does not hold, for checking how far its numbers carry (BENCHMARKS 18d).

    python -m mcp_retrieval.bench heldout --source swe-bench-lite.json \\
        --exclude ../shared/eval/swebench_dev.jsonl [--repos owner/name,...] --out heldout.jsonl

`--source` is a SWE-bench-format file (a JSON list or JSON lines of rows with `repo`,
`instance_id`, `base_commit`, `problem_statement` and `patch`), e.g. the public SWE-bench Lite
test set. Rows whose id is in an `--exclude` file are left out; `--repos` keeps those
repositories only. Each row written has `gold_files` (the files the patch changes) and
`patch_text`, so `bench swebench` scores file ranks and `bench tokens` scores the changed lines.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from mcp_retrieval.bench import read_rows

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)


def held_out(rows: list[dict], excluded: set[str], repos: set[str] | None = None) -> list[dict]:
    out = []
    for r in rows:
        if r["instance_id"] in excluded or (repos and r["repo"] not in repos):
            continue
        out.append({"instance_id": r["instance_id"], "repo": r["repo"], "base_commit": r["base_commit"],
                    "problem_statement": r["problem_statement"],
                    "gold_files": list(dict.fromkeys(_DIFF_FILE.findall(r["patch"]))), "patch_text": r["patch"]})
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench heldout", description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--exclude", type=Path, action="append", default=[])
    ap.add_argument("--repos", default="")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    excluded = {r["instance_id"] for path in args.exclude for r in read_rows(path)}
    rows = held_out(read_rows(args.source), excluded, set(filter(None, args.repos.split(","))) or None)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} questions written to {args.out}", file=sys.stderr)
    return 0
