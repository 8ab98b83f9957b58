"""Collect ranking pools for the file ranker: for each question, the pool `packet` ranks files
from (every candidate chunk with its tiers' ranks and scores), and the files that answer it.

    python -m training.collect commits --repos training/repos.txt --mirrors /work/.mirror \\
        --per-repo 40 --work /tmp/ranker-work --out /tmp/ranker/commits.jsonl
    python -m training.collect semble --data ../shared/eval/semble_dev --mirrors /work/.mirror \\
        --work /tmp/ranker-work --out /tmp/ranker/semble.jsonl
    python -m training.collect rows --instances ../shared/eval/swebench_dev.jsonl --mirrors /work/.mirror \\
        --work /tmp/ranker-work --out /tmp/ranker/swebench.jsonl

`commits`: each repository's newest commits (first parent, no merges) whose message describes a
change (at least 30 characters; no revert, typo, version bump or release) and that modify one to
three source files existing before (none added or deleted) become questions: the message is the
question, the parent commit the workspace (indexed lexically, incrementally from one commit to
the next; the history tier reads the parent's ancestry only), the modified source files the
answer. A repository listed in `../shared/eval/evaluation_repos.txt` or held out by
`mcp_retrieval/bench/heldout_repos.txt` is refused.
`semble`: the dev questions of the peer benchmark over their pinned trees, the annotated files
and spans the answer.

Resumable: questions already in `--out` are skipped (one JSON line per question, appended).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from mcp_retrieval import file_features
from mcp_retrieval.bench.commits import _NOT_A_FIX, held_out_repos, mirror_git_dir, source_commits
from mcp_retrieval.file_features import question_words
from mcp_retrieval.stages import StageLog

MIN_MESSAGE_CHARS = 30
_NOT_DESCRIPTIVE = re.compile(r"(?i)^(bump|release|prepare|version|v?\d+\.\d+|chore\(deps|update (changelog|deps|"
                              r"dependenc)|merge|format|lint|style:|changelog)")
# a subject's leading type or component tag (`fix(router)!: `, `core: `) and its pull request (`(#123)`)
_SUBJECT_TAGS = re.compile(r"^\w+(\([^)]*\))?!?:\s*|\s*\(#\d+\)\s*$")
MIN_SUBJECT_WORDS = 3


def subject_question(message: str) -> str | None:
    """A commit's subject line as a short question (`--subject-only`), without its leading tag and
    pull-request number; None when fewer than three question words are left."""
    subject = _SUBJECT_TAGS.sub("", message.splitlines()[0] if message else "").strip()
    return subject if len(question_words(subject)) >= MIN_SUBJECT_WORDS else None


def refused_repos(evaluation_list: Path) -> set[str]:
    """The repositories no training data may come from, lower-cased: the evaluation list's and the
    held-out yardstick's (`mcp_retrieval/bench/heldout_repos.txt`)."""
    listed = {line.strip().lower() for line in evaluation_list.read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    return listed | {repo.lower() for repo in held_out_repos()}


def described_commits(git_dir: Path, limit: int, scan: int = 3000, min_words: int = 0):
    """(sha, parent, message, modified source files) of the newest `limit` describing commits
    (`min_words`: only those whose message has more words than that, as `file_features` counts
    a question's: pasted-issue-length questions, docs/BENCHMARKS-history.md 46c)."""
    return source_commits(git_dir, limit, scan, lambda m: len(m) >= MIN_MESSAGE_CHARS and not _NOT_A_FIX.search(m)
                          and not _NOT_DESCRIPTIVE.search(m) and (not min_words or len(question_words(m)) > min_words),
                          new_file_statuses=("A", "D", "R"), max_message=4000)


# of each pooled chunk's text kept: what `text_cover` reads, and the features read no more
TEXT_CHARS = file_features.TEXT_CHARS


def pool_record(engine, query: str, pool_size: int | None = None, text_chars: int = TEXT_CHARS) -> dict:
    """The pool `packet` ranks files from, and the decision on it (`pool_size`: the served one's
    size unless given; `text_chars`: how much of each chunk's text is kept, 0 for all of it)."""
    gathered = engine.gather(query, [], [], None, StageLog(), for_packet=True, pool_size=pool_size)
    return {"know": type(gathered.outcome).__name__ == "Know",
            "pool": [{"path": c.chunk.path, "start": c.chunk.start_line, "end": c.chunk.end_line,
                      "symbol": c.chunk.symbol, "kind": c.chunk.kind, "language": c.chunk.language,
                      "score": c.score, "fused": c.fused, "raw": c.raw, "ranks": c.ranks,
                      "header": c.chunk.header[:200], "text": c.chunk.text[:text_chars or None],
                      "tokens": c.chunk.tokens, "priority": c.chunk.priority}
                     for c in gathered.candidates]}


def _done(out: Path) -> set[str]:
    if not out.exists():
        return set()
    return {json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()}


def collect_commits(args) -> None:
    from mcp_retrieval.bench.checkout import open_instance

    banned = refused_repos(Path(args.evaluation_repos))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    for repo in [r.strip() for r in Path(args.repos).read_text().splitlines() if r.strip() and not r.startswith("#")]:
        if repo.lower() in banned:
            print(f"{repo}: refused, it is an evaluation or held-out repository", file=sys.stderr)
            continue
        git_dir = mirror_git_dir(args.mirrors, repo)
        if (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"
        if not git_dir.is_dir():
            print(f"{repo}: no snapshot under {args.mirrors}", file=sys.stderr)
            continue
        engines: dict = {}
        t0, n = time.perf_counter(), 0
        try:
            commits = list(described_commits(git_dir, args.per_repo, min_words=args.min_words))
        except Exception as exc:  # a snapshot git cannot read: say so, go on
            print(f"{repo}: {exc}", file=sys.stderr)
            continue
        with out.open("a") as fh:
            for sha, parent, message, gold in commits:
                qid = f"{repo}@{sha[:12]}" + ("/subject" if args.subject_only else "")
                if args.subject_only:
                    message = subject_question(message)
                if qid in done or message is None:
                    continue
                row = {"repo": repo, "base_commit": parent}
                try:
                    engine, *_ = open_instance(row, {repo: str(git_dir)}, Path(args.work), engines,
                                               no_dense=args.embedder == "none", embedder=args.embedder)
                    record = pool_record(engine, message, args.pool_size, args.text_chars)
                except Exception as exc:
                    print(f"{qid}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                fh.write(json.dumps({"id": qid, "source": "subjects" if args.subject_only else "commits",
                                     "repo": repo, "query": message,
                                     "gold_files": gold, **record}) + "\n")
                fh.flush()
                n += 1
        for engine, _ in engines.values():
            engine.close()
        print(f"{repo}: {n} questions in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def collect_rows(args) -> None:
    """SWE-bench-format rows (the dev files): the issue text is the question, the gold files the
    answer, the workspace the base commit."""
    from mcp_retrieval.bench import read_rows
    from mcp_retrieval.bench.checkout import open_instance

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    rows = sorted(read_rows(args.instances), key=lambda r: (r["repo"], r["instance_id"]))
    engines: dict = {}
    with out.open("a") as fh:
        for row in rows:
            if row["instance_id"] in done:
                continue
            git_dir = mirror_git_dir(args.mirrors, row["repo"])
            if not git_dir.is_dir():
                print(f"{row['instance_id']}: no snapshot of {row['repo']}", file=sys.stderr)
                continue
            try:
                engine, *_ = open_instance(row, {row["repo"]: str(git_dir)}, Path(args.work), engines,
                                           no_dense=args.embedder == "none", embedder=args.embedder)
                record = pool_record(engine, row["problem_statement"], args.pool_size, args.text_chars)
            except Exception as exc:
                print(f"{row['instance_id']}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            gold = row.get("gold_code_files") or row["gold_files"]
            fh.write(json.dumps({"id": row["instance_id"], "source": args.source_name, "repo": row["repo"],
                                 "query": row["problem_statement"], "gold_files": gold,
                                 "language": row.get("language", "python"), **record}) + "\n")
            fh.flush()
    for engine, _ in engines.values():
        engine.close()


def collect_semble(args) -> None:
    from mcp_retrieval.bench.semble import _open_repo, _targets

    data = Path(args.data)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    for repo in json.loads((data / "repos.json").read_text()):
        queries = json.loads((data / "annotations" / f"{repo['name']}.json").read_text())
        if all(f"semble/{repo['name']}/{i}" in done for i in range(len(queries))):
            continue
        opened, note = _open_repo(repo, Path(args.mirrors), Path(args.work), args.embedder != "none", args.embedder)
        if opened is None:
            print(f"{repo['name']}: {note}", file=sys.stderr)
            continue
        engine, _ = opened
        with out.open("a") as fh:
            for i, q in enumerate(queries):
                qid = f"semble/{repo['name']}/{i}"
                if qid in done:
                    continue
                targets = _targets(q)
                fh.write(json.dumps({"id": qid, "source": "semble", "repo": repo["name"], "language": repo["language"],
                                     "category": q["category"], "query": q["query"], "targets": targets,
                                     "gold_files": sorted({t[0] for t in targets}),
                                     **pool_record(engine, q["query"], args.pool_size, args.text_chars)})
                         + "\n")
        engine.close()
        print(f"{repo['name']}: {len(queries)} questions", file=sys.stderr)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.collect")
    sub = ap.add_subparsers(dest="source", required=True)
    commits = sub.add_parser("commits")
    commits.add_argument("--repos", default="training/repos.txt")
    commits.add_argument("--per-repo", type=int, default=40)
    commits.add_argument("--min-words", type=int, default=0,
                         help="only commits whose message has more question words than this (40: pasted-issue length)")
    commits.add_argument("--subject-only", action="store_true",
                         help="the subject line alone is the question (source `subjects`: a short question)")
    commits.add_argument("--evaluation-repos", default="../shared/eval/evaluation_repos.txt")
    semble = sub.add_parser("semble")
    semble.add_argument("--data", default="../shared/eval/semble_dev")
    rows = sub.add_parser("rows")
    rows.add_argument("--instances", required=True)
    rows.add_argument("--source-name", default="swebench")
    for p in (commits, semble, rows):
        p.add_argument("--mirrors", default="/work/.mirror")
        p.add_argument("--work", default="/tmp/ranker-work")
        p.add_argument("--out", required=True)
        p.add_argument("--pool-size", type=int, default=None, help="chunks in a pool (default: the served size)")
        p.add_argument("--text-chars", type=int, default=TEXT_CHARS,
                       help="characters of each pooled chunk's text kept (0: all; a feature that reads text needs it)")
        p.add_argument("--embedder", default="none", choices=("none", "static", "minilm"),
                       help="the dense tier of the pools (none: lexical pools, as the shipped lexical model)")
    args = ap.parse_args(argv)
    {"commits": collect_commits, "semble": collect_semble, "rows": collect_rows}[args.source](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
