"""Where the fixed files that miss the first five are lost: never in the pool, or in it below five.

    python -m training.pool_misses /tmp/ranker/multilang.jsonl /tmp/ranker/swebench.jsonl
    python -m training.pool_misses /tmp/ranker/swebench.jsonl --hop ../shared/eval/swebench_dev.jsonl

Reads pools collected by `training.collect rows` and ranks them with the shipped file ranker, as
`packet` would. Per language, over every fixed file (not per question): the share in the first
five files, in the pool but below five (the ranker's part), never in the pool (retrieval's part),
and the questions that fix more than five files (no order puts them all in the first five).
With `--hop` (the instances file, for its base commits; mirrors under /work/.mirror): how many of
the never-pooled files one import hop from the first five files reaches, and how many files that
hop reaches in all (what a tier of imported files would have to choose among).
"""

from __future__ import annotations

import argparse
import json
import posixpath
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mcp_retrieval.bench.commits import git_text_or_empty, mirror_git_dir
from mcp_retrieval.file_scorer import shipped
from mcp_retrieval.indexers.chunk import parse
from mcp_retrieval.indexers.import_links import module_paths, strip_extension
from mcp_retrieval.indexers.languages import language_for
from mcp_retrieval.indexers.symbols import extract
from training.train_file_ranker import _answers, ranked_files


def imported_files(git_dir: Path, commit: str, importers: list[str]) -> set[str]:
    """The repository's files at `commit` that the importers' import statements name (a Go
    import names every file of its package folder). Matched by path suffix only, looser than the
    code graph's resolution (`indexers/graph.py` needs every file's definitions): an upper bound
    of what a hop reaches, cheap enough to run on a pool's five head files."""
    by_stem: dict[str, list[str]] = defaultdict(list)
    for path in git_text_or_empty(git_dir, "ls-tree", "-r", "--name-only", commit).splitlines():
        by_stem[strip_extension(path)].append(path)
    reached: set[str] = set()
    for importer in importers:
        language = language_for(importer)
        tree = parse(git_text_or_empty(git_dir, "show", f"{commit}:{importer}"), language) if language else None
        if tree is None:
            continue
        for edge in extract(importer, language, tree).edges:
            if edge[3] != "import":
                continue
            for named in module_paths(edge[2], importer):
                for stem, paths in by_stem.items():
                    folder = "/" + posixpath.dirname(stem)
                    if (("/" + stem).endswith("/" + named) or stem.endswith(f"/{named}/__init__")
                            or stem.endswith(f"/{named}/mod") or (language == "go" and folder.endswith("/" + named))):
                        reached.update(paths)
    return reached


def tally(records, instances: dict[str, dict] | None = None,
          mirrors: Path = Path("/work/.mirror")) -> dict[str, Counter]:
    model = shipped()
    by_language: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        files = list(dict.fromkeys(c.chunk.path for c in ranked_files(r, model)))
        counts = by_language[r.get("language") or r["source"]]
        first_place = {g: next((i for i, f in enumerate(files) if _answers(f, [g])), None) for g in r["gold_files"]}
        counts["questions"] += 1
        counts["over_five"] += len(r["gold_files"]) > 5
        for place in first_place.values():
            counts["files"] += 1
            counts["not_in_pool" if place is None else "first_five" if place < 5 else "below_five"] += 1
        missing = [g for g, place in first_place.items() if place is None]
        row = (instances or {}).get(r["id"])
        if row and missing:
            reached = imported_files(mirror_git_dir(mirrors, r["repo"]), row["base_commit"], files[:5])
            counts["hop_reaches"] += sum(g in reached for g in missing)
            counts["hop_files"] += len(reached)
            counts["hop_questions"] += 1
    return by_language


def table(by_language: dict[str, Counter]) -> str:
    lines = ["| language | questions | fixed files | in the first five | in the pool, below five | not in the pool "
             "| questions fixing > 5 files |", "|---|---|---|---|---|---|---|"]
    total = sum(by_language.values(), Counter())
    hop = any(c["hop_files"] for c in by_language.values())
    if hop:
        lines[0] += " never pooled, one import hop from the first five | files it reaches for such a question |"
        lines[1] += "---|---|"
    for name, c in [*sorted(by_language.items()), ("all", total)]:
        share = {k: c[k] / c["files"] for k in ("first_five", "below_five", "not_in_pool")}
        line = (f"| {name} | {c['questions']} | {c['files']} | {share['first_five']:.2f} | "
                f"{share['below_five']:.2f} | {share['not_in_pool']:.2f} | {c['over_five']} |")
        if hop:
            line += f" {c['hop_reaches']} of {c['not_in_pool']} | {c['hop_files'] / max(c['hop_questions'], 1):.0f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.pool_misses")
    ap.add_argument("pools", nargs="+")
    ap.add_argument("--hop", action="append", default=[], help="an instances file (base commits) for the import hop")
    ap.add_argument("--mirrors", default="/work/.mirror")
    args = ap.parse_args(argv)
    instances = {}
    for path in args.hop:
        with open(path, encoding="utf-8") as f:
            instances.update((row["instance_id"], row) for row in map(json.loads, f) if row)
    for path in args.pools:
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        print(f"{path}\n{table(tally(records, instances, Path(args.mirrors)))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
