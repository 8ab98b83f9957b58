"""Mark the pool chunks each question's fix changed: labels for a chunk-level ranker.

    python -m training.chunk_labels /tmp/ranker/commits.jsonl /tmp/ranker/multilang.jsonl \\
        /tmp/ranker/swebench.jsonl --out-dir /tmp/ranker-chunks [--mirrors /work/.mirror]

The file ranker learns which files answer; `context` chooses chunks inside them, where a fix's
function is often a file's second or third match. Each pool gains `changed`: the indexes of its
chunks that overlap the old-side lines the fix changed (a mined commit's own diff, a multilingual
row's `patch_text`; for a SWE-bench row the chunks defining its `gold_spans` functions).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from mcp_retrieval.bench.tokens import patch_lines


def _commit_patch(mirror: Path, sha: str, files: list[str]) -> str:
    done = subprocess.run(["git", "--git-dir", str(mirror), "show", "--format=", "--no-renames", sha, "--", *files],
                          capture_output=True)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def changed_chunks(record: dict, lines: dict[str, set[int]] | None, spans: dict[str, list[str]] | None) -> list[int]:
    out = []
    for i, c in enumerate(record["pool"]):
        if lines is not None:
            hit = lines.get(c["path"], set())
            if any(c["start"] <= n <= c["end"] for n in hit):
                out.append(i)
        elif spans is not None and c["symbol"]:
            names = spans.get(c["path"], [])
            if any(c["symbol"] == n or c["symbol"].endswith("." + n) for n in names):
                out.append(i)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.chunk_labels")
    ap.add_argument("pools", nargs="+")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--instances", action="append", default=["../shared/eval/swebench_dev.jsonl",
                                                               "../shared/eval/multilang_dev.jsonl"])
    args = ap.parse_args(argv)
    rows = {}
    for f in args.instances:
        for line in open(f):
            row = json.loads(line)
            rows[row["instance_id"]] = row
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for pool_file in args.pools:
        labelled = 0
        with open(out_dir / Path(pool_file).name, "w") as out:
            for line in open(pool_file):
                record = json.loads(line)
                row = rows.get(record["id"])
                lines = spans = None
                if row is not None and row.get("patch_text"):
                    lines = patch_lines(row["patch_text"])
                elif row is not None:
                    spans = row.get("gold_spans") or {}
                elif record["source"] == "commits":
                    name, _, sha = record["id"].partition("@")
                    lines = patch_lines(_commit_patch(Path(args.mirrors) / name.replace("/", "+") / "repo", sha,
                                                      record["gold_files"]))
                else:
                    continue
                record["changed"] = changed_chunks(record, lines, spans)
                labelled += bool(record["changed"])
                out.write(json.dumps(record) + "\n")
        print(f"{pool_file}: {labelled} questions with a changed chunk in the pool", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
