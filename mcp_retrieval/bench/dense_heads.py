"""The dense tier alone, by what of a long question it embeds (docs/BENCHMARKS-history.md 52a).

    python -m mcp_retrieval.bench dense_heads --instances ROWS.jsonl --repo owner/name=GITDIR ... --work DIR
    python -m mcp_retrieval.bench dense_heads --pools POOLS.jsonl --repo ... --work DIR

For each long question with a title (the scope of `rules.dense_by_title`), read as the pipeline
reads it (environment dump and template comments set aside), each way of putting it to the dense
tier is searched alone: the question's start (`query_head`, what the `dense` tier embeds), its
title alone (`dense_title`), the start without fenced blocks and headings, and the title with
that prose's first 400 characters. The figure is the file MRR of the fixed files among the files
of the first 60 chunks. `--pools` takes `training.collect commits` pools (ids `owner/name@sha`)
and asks each commit's message at its parent; `--instances` SWE-bench-format rows at their base
commits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from mcp_retrieval.bench import read_rows
from mcp_retrieval.bench.checkout import opened_instances
from mcp_retrieval.file_features import is_long_question
from mcp_retrieval.indexers.listing import run_git
from mcp_retrieval.question_parts import prose, question_title, without_environment, without_template_comments
from mcp_retrieval.retrieve import query_head

POOL = 60


def _prose_head(question: str) -> str:
    return query_head("\n".join(line for line in prose(question).splitlines() if not line.lstrip().startswith("#")))


HEADS = {
    "start": query_head,
    "title": lambda q: question_title(q) or "",
    "prose start": _prose_head,
    "title + prose": lambda q: f"{question_title(q) or ''}\n{_prose_head(q)[:400]}",
}


def rows_from_pools(path: str, repos: dict[str, str]) -> list[dict]:
    """Commit pools as rows: the message asked at the commit's parent."""
    rows = []
    for record in read_rows(path):
        repo, _, sha = record["id"].partition("@")
        if repo not in repos:
            continue
        git_dir = Path(repos[repo])
        done = run_git(git_dir, "rev-parse", f"{sha}^", git_dir=git_dir)
        if done is None or done.returncode:
            print(f"{record['id']}: skipped: no parent in the snapshot", file=sys.stderr)
            continue
        rows.append({"instance_id": record["id"], "repo": repo, "base_commit": done.stdout.decode().strip(),
                     "problem_statement": record["query"], "gold_files": record["gold_files"]})
    return rows


def reciprocal_ranks(engine, question: str, gold: set[str]) -> dict[str, float]:
    found = engine.retriever.dense_hits_many([head(question) for head in HEADS.values()], POOL)
    out = {}
    for name, hits in zip(HEADS, found):
        chunks = engine.store.chunks_by_id([cid for cid, _ in hits])
        files = list(dict.fromkeys(chunks[cid].path for cid, _ in hits if cid in chunks))
        ranks = [files.index(g) + 1 for g in gold if g in files]
        out[name] = 1.0 / min(ranks) if ranks else 0.0
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench dense_heads", description=__doc__.split("\n")[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--instances", help="SWE-bench-format rows")
    source.add_argument("--pools", help="training.collect commits pools")
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--work", default="/tmp/mcp-retrieval-dense-heads")
    ap.add_argument("--embedder", choices=("static", "minilm"), default="static")
    args = ap.parse_args(argv)
    repos = dict(r.split("=", 1) for r in args.repo)
    rows = rows_from_pools(args.pools, repos) if args.pools else [r for r in read_rows(args.instances)
                                                                   if r["repo"] in repos]
    scores: dict[str, list[float]] = {name: [] for name in HEADS}
    engines: dict = {}
    for row, engine, *_ in opened_instances(rows, repos, Path(args.work), engines, no_dense=False,
                                            embedder=args.embedder):
        question, _ = without_template_comments(row["problem_statement"])
        question, _ = without_environment(question)
        if not (is_long_question(question) and question_title(question)):
            continue
        got = reciprocal_ranks(engine, question, set(row.get("gold_code_files") or row["gold_files"]))
        for name, value in got.items():
            scores[name].append(value)
        print(json.dumps({"id": row["instance_id"], **{k: round(v, 3) for k, v in got.items()}}), flush=True)
    for engine, _ in engines.values():
        engine.close()
    n = len(scores["start"])
    print(f"{n} long questions with a title; file MRR of the dense tier alone: "
          + ", ".join(f"{name} {statistics.mean(v) if v else 0.0:.3f}" for name, v in scores.items()), file=sys.stderr)
    return 0
