"""Localisation instances from a repository's own fix commits, for languages without dev data.

    python -m mcp_retrieval.bench commits --repo jekyll/jekyll=/path/to/jekyll.git --per-repo 15 \\
        --out /tmp/commits.jsonl
    python -m mcp_retrieval.bench swebench --instances /tmp/commits.jsonl --repo jekyll/jekyll=... \\
        --no-dense --modes bm25_file,full
    python -m mcp_retrieval.bench commits --held-out /work/.mirror --out /tmp/heldout.jsonl

The classic bug-localisation set-up: walking HEAD's first-parent history, newest first, every
non-merge commit whose message says it fixes something (`fix`, `bug`, `crash`, `error`, ...) and
that changes one to three source files that already existed (not tests, docs or build files; no
reverts or typo fixes) becomes an instance in the format of `../shared/eval/multilang_dev.jsonl`: the
message is the question, the parent commit the base, the changed source files the gold, and their
diff the `patch_text` (so `bench ab --tool context` and `bench tokens` score windows on them: a
yardstick for `context` from history that is not the dev files). The history tier reads the
parent's ancestry only, so the commit itself stays invisible.

Commit messages are shorter than issues and often name the code they touch, so these numbers
are not SWE-bench's: they compare languages and methods with each other, not with published
figures.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from mcp_retrieval.indexers.languages import is_code_path, language_for
from mcp_retrieval.indexers.listing import run_git

FIX = re.compile(r"(?i)\b(fix(es|ed)?|bug|crash(es)?|error|wrong|incorrect|broken|regression|fails?)\b")
MIN_MESSAGE_CHARS = 40
MAX_GOLD_FILES = 3
_DOC_OR_BUILD = re.compile(r"(?i)(^|/)(docs?|examples?|benchmarks?|vendor|third_party|project)/|^features/|"
                           r"\.gemspec$|\.gradle(\.kts)?$|(^|/)Package(@[\w.-]+)?\.swift$")  # Cucumber features, build files
_NOT_A_FIX = re.compile(r"(?i)^revert\b|\btypos?\b")  # a revert undoes, a typo fix describes no fault


def source_files(paths: list[str]) -> list[str]:
    return [p for p in paths
            if is_code_path(p) and not _DOC_OR_BUILD.search(p)]


def git_text(git_dir: Path | None, *args: str, directory: Path | None = None) -> str:
    """`git <args>` against `git_dir` (or run in `directory`), neutralised like every git call of
    the project (a mined repository's config runs nothing); a clear error (RuntimeError) when git
    fails. The benchmarks' and training scripts' way to read a mined mirror or work a clone."""
    done = run_git(directory or Path.cwd(), *args, git_dir=git_dir)
    if done is None or done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() if done is not None else "git could not run"
        raise RuntimeError(f"git {args[0]} in {git_dir or directory}: {why}")
    return done.stdout.decode(errors="replace")


def git_text_or_empty(git_dir: Path, *args: str) -> str:
    """`git_text`, or "" when git fails (a script that skips what it cannot read)."""
    try:
        return git_text(git_dir, *args)
    except RuntimeError:
        return ""


def patch_text(git_dir: Path, parent: str, sha: str, paths: list[str]) -> str:
    """The commit's diff of `paths`, as SWE-bench rows carry it (`a/` and `b/` prefixes)."""
    return git_text(git_dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", parent, sha, "--", *paths)


def source_commits(git_dir: Path, limit: int, scan: int, accept: Callable[[str], bool],
                   new_file_statuses: tuple[str, ...] = ("A", "D"), max_message: int | None = None,
                   rev: str = "HEAD"):
    """(sha, parent, message, modified source files) of the newest `limit` first-parent, non-merge
    commits up to `rev` whose (stripped) message `accept`s and that modify one to MAX_GOLD_FILES
    source files existing before, none of a status in `new_file_statuses` (an added or deleted
    source file)."""
    log = git_text(git_dir, "log", "--first-parent", "--no-merges", f"-{scan}", "--format=%x1e%H %P%x1f%B%x1f",
               "--name-status", rev)
    found = 0
    for record in log.split("\x1e")[1:]:
        head, message, status = (record.split("\x1f") + ["", ""])[:3]
        shas, message = head.split(), message.strip()
        if len(shas) != 2 or not accept(message):
            continue
        changes = [line.split("\t") for line in status.strip().splitlines()]  # status, path[, new path]
        gold = source_files([c[1] for c in changes if c[0] == "M"])
        added = source_files([c[-1] for c in changes if c[0][:1] in new_file_statuses])
        if not gold or len(gold) > MAX_GOLD_FILES or added:
            continue  # nothing to find, a sweep, or a change that adds or deletes source files
        yield shas[0], shas[1], message[:max_message] if max_message else message, gold
        found += 1
        if found >= limit:
            return


def fix_commits(git_dir: Path, limit: int, scan: int = 4000, rev: str = "HEAD"):
    """(sha, parent, message, changed source files) of the newest `limit` fix commits up to `rev`."""
    return source_commits(git_dir, limit, scan, lambda m: len(m) >= MIN_MESSAGE_CHARS and bool(FIX.search(m))
                          and not _NOT_A_FIX.search(m), rev=rev)


HELD_OUT = Path(__file__).with_name("heldout_repos.txt")


def mirror_git_dir(mirrors: Path | str, repo: str) -> Path:
    """Where the fetch tool leaves `owner/name`'s git directory under `mirrors`: `owner+name/repo`."""
    return Path(mirrors) / repo.replace("/", "+") / "repo"


def held_out_repos(path: Path | None = None) -> dict[str, str]:
    """owner/name -> the commit its fix commits are mined up to, from the held-out list (a repository
    no ranker is trained on and no rule is kept on: docs/BENCHMARKS.md 69a)."""
    pinned = {}
    for line in (path or HELD_OUT).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            repo, rev = line.split()
            pinned[repo] = rev
    return pinned


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench commits")
    ap.add_argument("--repo", action="append", default=[], help="owner/name=/path/to/git/dir (repeatable)")
    ap.add_argument("--held-out", metavar="MIRRORS", default=None,
                    help="mine the held-out list (bench/heldout_repos.txt) at its pinned commits, each repository "
                         "from MIRRORS/owner+name/repo")
    ap.add_argument("--per-repo", type=int, default=15)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    targets = []  # (owner/name, git directory, the commit mining starts from)
    for spec in args.repo:
        repo, _, git_dir = spec.partition("=")
        targets.append((repo, git_dir, "HEAD"))
    if args.held_out:
        targets += [(repo, str(mirror_git_dir(args.held_out, repo)), rev)
                    for repo, rev in held_out_repos().items()]
    rows = 0
    with open(args.out, "w") as out:
        for repo, git_dir, rev in targets:
            found = []  # written once the repository is read whole: a skipped one leaves no rows
            try:
                for sha, parent, message, gold in fix_commits(Path(git_dir), args.per_repo, rev=rev):
                    found.append({"instance_id": f"{repo.replace('/', '__')}-{sha[:10]}", "repo": repo,
                                  "base_commit": parent, "problem_statement": message, "gold_code_files": gold,
                                  "patch_text": patch_text(Path(git_dir), parent, sha, gold),
                                  "language": sorted({language_for(p) for p in gold})[0]})
            except RuntimeError as exc:  # a snapshot git cannot read (a shallow or broken history): go on
                print(f"{repo}: skipped: {exc}", file=sys.stderr)
                continue
            out.writelines(json.dumps(row) + "\n" for row in found)
            rows += len(found)
            print(f"{repo}: {rows} instances so far", file=sys.stderr)
    return 0
