"""Materialise a commit of a local git directory into a work tree, incrementally.

Snapshots from the fetch tool have no work tree and lack blobs of 4 MiB and more, so the tree is
written from `git ls-tree` / `git cat-file --batch`, skipping missing blobs; between two commits
only the files whose blob changed are rewritten, so the index update stays incremental.

A work tree belongs to one process at a time (`hold_tree`): two bench runs sharing a `--work`
would each rewrite the files the other's state file says are in place, and the index would then
follow files of neither commit. The index's own lock caught that only after the tree was changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mcp_retrieval.indexers.listing import git_command, quiet_git_env, run_git
from mcp_retrieval.indexers.update import WriteLock


class CommitMissing(LookupError):
    """The snapshot does not hold the commit (a shallow or older snapshot): the question is skipped."""


def _ls_tree(git_dir: Path, commit: str) -> dict[str, str]:
    run = run_git(git_dir, "ls-tree", "-r", "-z", commit, git_dir=git_dir)
    if run is None:
        raise RuntimeError("git is not available (or did not run)")
    if run.returncode:
        raise CommitMissing(f"commit {commit[:12]} is not in {git_dir}: "
                            f"{run.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    out = run.stdout.decode("utf-8", "surrogateescape")
    tree = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):
            tree[path] = sha
    return tree


class TreeBusy(RuntimeError):
    """Another process holds the work tree."""


_held: dict[Path, WriteLock] = {}  # work tree -> its lock, taken and never released: held until the process ends


def hold_tree(work: Path) -> None:
    """Take `work` for this process (idempotent); TreeBusy if another process has it."""
    work = work.resolve()
    if work in _held:
        return
    work.parent.mkdir(parents=True, exist_ok=True)
    busy = TreeBusy(f"another process is using the work tree {work}; give each concurrent run its own --work")
    _held[work] = WriteLock(work.parent / (work.name + ".lock"), busy).__enter__()


def checkout(git_dir: Path, commit: str, work: Path) -> dict[str, int]:
    """Make `work` hold `commit`'s files. Returns counts of written, removed and missing files."""
    hold_tree(work)
    work.mkdir(parents=True, exist_ok=True)
    state_file = work.parent / (work.name + ".tree.json")
    old = json.loads(state_file.read_text()) if state_file.exists() else {}
    new = _ls_tree(git_dir, commit)
    removed = [p for p in old if p not in new]
    for p in removed:
        (work / p).unlink(missing_ok=True)
    wanted = [(p, sha) for p, sha in new.items() if old.get(p) != sha]
    missing = 0
    if wanted:
        proc = subprocess.Popen(git_command(shutil.which("git") or "git", "cat-file", "--batch", git_dir=git_dir),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=quiet_git_env())
        for path, sha in wanted:  # one request, one answer: never fill both pipes at once
            proc.stdin.write(f"{sha}\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().decode().split()
            if len(header) < 3 or header[1] == "missing":
                missing += 1
                new.pop(path, None)
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            target = work / path
            if target.is_dir():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        proc.stdin.close()
        proc.wait()
    state_file.write_text(json.dumps(new))
    return {"written": len(wanted) - missing, "removed": len(removed), "missing": missing}


def open_instance(row: dict, repos: dict[str, str], work: Path, engines: dict, *, no_dense: bool,
                  max_priority: int | None = None, embedder: str = "static"):
    """The Engine and whole-file BM25 of `row`'s repository, put at its base commit and indexed
    (incrementally), with the history read at that commit from the repository's git directory,
    as on a user's clone: nothing later is visible. `engines` caches them per repository;
    `embedder` names the dense tier's model when `no_dense` is false.
    Returns (engine, file_bm25, checkout counts, seconds spent indexing)."""
    import time

    from mcp_retrieval.bench.filebm25 import FileBM25
    from mcp_retrieval.config import Config
    from mcp_retrieval.engine import Engine
    from mcp_retrieval.indexers.store import PRIORITY_LAST

    repo = row["repo"]
    slug = repo.replace("/", "__")
    tree = work / "trees" / slug
    moved = checkout(Path(repos[repo]), row["base_commit"], tree)
    if repo not in engines:
        cfg = Config.resolve(tree, work / "index" / slug, persist_sessions=False,
                             embedder="none" if no_dense else embedder)
        cfg.cache_dir = work / "cache"
        cfg.history_git_dir = Path(repos[repo])
        engines[repo] = (Engine(cfg), FileBM25(work / "filebm25" / slug))
    engine, file_bm25 = engines[repo]
    t0 = time.perf_counter()
    if engine.history is not None:
        engine.history.rev = row["base_commit"]
        engine.history.update()
    engine.indexer.sync()
    engine.indexer.embed_pending(max_priority=PRIORITY_LAST if max_priority is None else max_priority)
    file_bm25.sync(tree, engine.store.all_paths())
    engine.graph(wait=True)
    return engine, file_bm25, moved, time.perf_counter() - t0


def opened_instances(rows: list[dict], repos: dict[str, str], work: Path, engines: dict, **options):
    """`open_instance` for each row in turn, yielding (row, engine, file_bm25, checkout counts,
    seconds spent indexing); a row whose base commit the snapshot lacks is skipped with its reason."""
    for row in rows:
        try:
            opened = open_instance(row, repos, work, engines, **options)
        except CommitMissing as exc:
            print(f"{row['instance_id']}: skipped: {exc}", file=sys.stderr)
            continue
        yield (row, *opened)
