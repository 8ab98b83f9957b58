"""A commit's message paired with the code it changed, from the mined repositories' history:
training data for the static token table (`training.train_static`), as issue 53 proposes.

    python -m training.commit_code_pairs --mirrors /work/.mirror --out /work/static-pairs/commits.jsonl

A commit message says in an author's words what changed and why ("Fix crash when the server
restarts"), often in words the code itself does not use: what documentation -> code pairs
(`training.doc_code_pairs`, docs/BENCHMARKS-history.md 41c) rarely hold. For the newest describing commits
of each repository of training/repos.txt (the ranker's own selection, `collect.described_commits`:
one to three existing source files modified, no release, merge or typo commits; none of
../shared/eval/evaluation_repos.txt), the pair is (the message's subject and first paragraph, at
most MAX_QUERY_CHARS; the chunk of the changed file after the commit that holds most of the
changed lines, as the index embeds it, `embed_text(header, text)`). One pair per commit file, at
most two a commit. One JSON line a pair: {"repo", "language", "query", "code"}; the file holds
the repositories' text and stays outside this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from mcp_retrieval.bench.commits import git_text_or_empty, mirror_git_dir

MAX_QUERY_CHARS = 300
MAX_FILES_PER_COMMIT = 2
_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", re.M)


def changed_lines(git_dir: Path, sha: str, path: str) -> set[int]:
    """The 1-based lines of `path` after commit `sha` that the commit added or changed."""
    diff = git_text_or_empty(git_dir, "show", "-U0", "--format=", "--no-ext-diff", "--no-textconv", sha, "--", path)
    lines: set[int] = set()
    for m in _HUNK.finditer(diff):
        start, count = int(m.group(1)), int(m.group(2) or 1)
        lines.update(range(start, start + count))
    return lines


def query_of(message: str) -> str:
    """The subject and the body's first paragraph, one line, at most MAX_QUERY_CHARS."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    text = " ".join(paragraphs[:2])
    return re.sub(r"\s+", " ", text).strip()[:MAX_QUERY_CHARS]


def pairs_of(git_dir: Path, repo: str, per_repo: int, scan: int) -> list[dict]:
    from mcp_retrieval.indexers.chunk import chunk_file
    from mcp_retrieval.indexers.embed import embed_text
    from mcp_retrieval.indexers.languages import language_of
    from training.collect import described_commits

    out: list[dict] = []
    for sha, _parent, message, files in described_commits(git_dir, per_repo, scan):
        query = query_of(message)
        for path in files[:MAX_FILES_PER_COMMIT]:
            text = git_text_or_empty(git_dir, "show", f"{sha}:{path}")
            changed = changed_lines(git_dir, sha, path)
            if not text or not changed:
                continue  # a pure deletion leaves no changed line after the commit
            chunks = [c for c in chunk_file(path, text[:200_000], language_of(path, text)) if not c.generated]
            hits = [(len(changed.intersection(range(c.start_line, c.end_line + 1))), c) for c in chunks]
            best = max(hits, key=lambda h: h[0], default=(0, None))
            if best[0]:
                chunk = best[1]
                out.append({"repo": repo, "language": chunk.language, "query": query,
                            "code": embed_text(chunk.header, chunk.text)})
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.commit_code_pairs")
    ap.add_argument("--repos", default="training/repos.txt")
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-repo", type=int, default=600, help="describing commits read a repository")
    ap.add_argument("--scan", type=int, default=6000, help="first-parent commits looked at a repository")
    ap.add_argument("--evaluation-repos", default="../shared/eval/evaluation_repos.txt")
    args = ap.parse_args(argv)
    from training.collect import refused_repos

    banned = refused_repos(Path(args.evaluation_repos))
    repos = [line.strip() for line in Path(args.repos).read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["repo"] for line in out.read_text(encoding="utf-8").splitlines()} if out.exists() else set()
    total = 0
    with open(out, "a", encoding="utf-8") as fh:  # resumable: a repository with pairs in the file is done
        for repo in repos:
            git_dir = mirror_git_dir(args.mirrors, repo)
            if repo in done:
                continue
            if repo.lower() in banned:
                print(f"{repo}: refused, it is an evaluation or held-out repository", file=sys.stderr)
                continue
            if not git_dir.exists():
                print(f"{repo}: skipped, no mirror at {git_dir}", file=sys.stderr)
                continue
            try:
                found = pairs_of(git_dir, repo, args.per_repo, args.scan)
            except RuntimeError as exc:  # a snapshot missing old objects (`bench.commits.git_text`)
                found = []
                print(f"{repo}: history unreadable past some commit ({str(exc)[:80]}); "
                      f"trying the newest 2000", file=sys.stderr)
                try:
                    found = pairs_of(git_dir, repo, args.per_repo, 2000)
                except RuntimeError:
                    print(f"{repo}: skipped", file=sys.stderr)
                    continue
            total += len(found)
            fh.writelines(json.dumps(p) + "\n" for p in found)
            fh.flush()
            print(f"{repo}: {len(found)} pairs", file=sys.stderr)
    print(f"{total} pairs from {len(repos)} repositories", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
