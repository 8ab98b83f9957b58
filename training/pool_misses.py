"""Where the fixed files that miss the first five are lost: never in the pool, or in it below five.

    python -m training.pool_misses /tmp/ranker/multilang.jsonl /tmp/ranker/swebench.jsonl

Reads pools collected by `training.collect rows` and ranks them with the shipped file ranker, as
`packet` would. Per language, over every fixed file (not per question): the share in the first
five files, in the pool but below five (the ranker's part), never in the pool (retrieval's part),
and the questions that fix more than five files (no order puts them all in the first five).
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict

from mcp_retrieval.file_scorer import shipped
from training.train_file_ranker import _answers, ranked_files


def tally(records) -> dict[str, Counter]:
    model = shipped()
    by_language: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        files = list(dict.fromkeys(c.chunk.path for c in ranked_files(r, model)))
        counts = by_language[r.get("language") or r["source"]]
        counts["questions"] += 1
        counts["over_five"] += len(r["gold_files"]) > 5
        for gold in r["gold_files"]:
            places = [i for i, f in enumerate(files) if _answers(f, [gold])]
            counts["files"] += 1
            counts["not_in_pool" if not places else "first_five" if places[0] < 5 else "below_five"] += 1
    return by_language


def table(by_language: dict[str, Counter]) -> str:
    lines = ["| language | questions | fixed files | in the first five | in the pool, below five | not in the pool "
             "| questions fixing > 5 files |", "|---|---|---|---|---|---|---|"]
    total = sum(by_language.values(), Counter())
    for name, c in [*sorted(by_language.items()), ("all", total)]:
        share = {k: c[k] / c["files"] for k in ("first_five", "below_five", "not_in_pool")}
        lines.append(f"| {name} | {c['questions']} | {c['files']} | {share['first_five']:.2f} | "
                     f"{share['below_five']:.2f} | {share['not_in_pool']:.2f} | {c['over_five']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in argv:
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        print(f"{path}\n{table(tally(records))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
