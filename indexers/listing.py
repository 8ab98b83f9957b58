"""Which files of a root git would show: git's own ignore semantics, not a re-implementation.

Inside a git work tree: the tracked files plus the untracked ones no ignore rule excludes
(`git ls-files --cached --others --exclude-standard`). Outside git: the same rules applied by git
itself, through a throw-away empty repository whose work tree is the root (every file is then
"untracked", and `--exclude-standard` reads the root's `.gitignore` files exactly as git would:
negations, anchors, `**`, directory-only patterns, re-included directories). Only when git is
not installed does the walk fall back to its own matcher (pathspec's patterns, each matched as
git matches it, `walk._Rules`): on 1,000 random trees with nested ignore files it lists what git
lists in all of them, and the watcher's check of one changed path agrees with it (995 before
folders were matched by their own path only, 952 before `*` + `!*/` was read as git reads it;
the watcher's single-path check differed on 35; docs/BENCHMARKS-history.md 56d, 57e, 58c).

A repository git does not enter is listed by its own git under its folder: a populated submodule
(git lists its gitlink, not its files; ripgrep searches it too) and a repository nested in an
untracked folder (a folder of clones opened as one workspace).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mcp_retrieval.indexers.safe_read import read_inside, stat_inside

log = logging.getLogger(__name__)
GIT_TIMEOUT_S = 120


# Configuration a repository can set (in its own `.git/config`, or an `include.path` it names)
# that makes git run a program. A cloned repository is not trusted: every git call of the project
# overrides these on the command line, which outranks every config file. Keys are from
# git-config(1); per-driver keys (`diff.<driver>.textconv`, `filter.<driver>.*`) cannot be named
# in advance, so the commands that could reach them are given `--no-textconv`/`--no-ext-diff`
# (log) or never run (no checkout, add, status or diff here).
NEUTRALISED_CONFIG = (
    "core.fsmonitor=false",          # runs a hook program on every index read (ls-files, log)
    "core.hooksPath=/dev/null",      # hooks, e.g. post-index-change
    "core.pager=cat",                # only with a terminal, but never a repository's program
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "core.sshCommand=ssh",           # network commands are never run; belt and braces
    "credential.helper=",
    "diff.external=",
    "gpg.program=gpg",
    "gpg.ssh.program=ssh-keygen",
    "log.showSignature=false",       # %G? and --show-signature run gpg.program
    "protocol.ext.allow=never",
)


def _git() -> str | None:
    return shutil.which("git")


def git_command(git: str, *args: str, directory: Path | None = None, git_dir: Path | None = None) -> list[str]:
    """The argv of a git call that runs no program the repository names (NEUTRALISED_CONFIG)."""
    base = [git]
    for setting in NEUTRALISED_CONFIG:
        base += ["-c", setting]
    if git_dir is not None:
        base.append(f"--git-dir={git_dir}")
    elif directory is not None:
        base += ["-C", str(directory)]
    return [*base, *args]


def run_git(directory: Path, *args: str, git_dir: Path | None = None) -> subprocess.CompletedProcess | None:
    """`git <args>` in `directory` (or against `git_dir`, a bare or foreign repository), output as
    bytes; None when git is missing or could not run. Every git call of the project goes here."""
    git = _git()
    if git is None:
        return None
    argv = git_command(git, *args, directory=directory, git_dir=git_dir)
    try:
        return subprocess.run(argv, capture_output=True, timeout=GIT_TIMEOUT_S, env=quiet_git_env())
    except (OSError, subprocess.SubprocessError):
        return None


def git_output(directory: Path, *args: str) -> str | None:
    """`git <args>` run in `directory`: its standard output, or None when git is missing or fails."""
    out = run_git(directory, *args)
    return out.stdout.decode("utf-8", "replace") if out is not None and out.returncode == 0 else None


def rev_parse(directory: Path, what: str) -> str | None:
    """`git rev-parse <what>` in `directory` (a flag or a revision), stripped; None outside git."""
    out = git_output(directory, "rev-parse", what)
    return out.strip() if out is not None else None


def inside_work_tree(root: Path) -> bool:
    return rev_parse(root, "--is-inside-work-tree") == "true"


def work_tree_top(directory: Path) -> Path | None:
    """The top of the git work tree holding `directory`, or None outside git (or without git)."""
    top = rev_parse(directory, "--show-toplevel")
    return Path(top) if top else None


def quiet_git_env() -> dict[str, str]:
    """The environment for our git calls: no inherited GIT_* redirections, never a prompt, no
    pager, and no `GIT_CONFIG_*` key injection (the overrides come from NEUTRALISED_CONFIG)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_ASKPASS="", SSH_ASKPASS="")
    return env


MAX_PATHSPECS = 1000  # a larger batch of paths is listed whole and filtered (the argv stays small)


class Listing(NamedTuple):
    paths: list[str]  # workspace-relative POSIX paths git shows, sorted
    n_ignored: int  # ignored entries (files or whole folders) left out
    committed: frozenset[str]  # the paths among them the project committed (`git_listing`)


def git_listing(root: Path, scopes: Sequence[str] | None = None) -> Listing | None:
    """The files git shows under `root` (`Listing`), or None when git is missing or fails (the
    caller then walks with its own matcher). `scopes`: only at or below these workspace paths,
    taken literally (no glob), when there are few enough to pass to git. Committed: in a work tree
    the files git tracks; outside one, every file shown when the root has its own `.gitignore`
    (an exported or copied repository: its rules have dropped the outputs; `exported_repository`).
    A repository nested in a folder of the root (a folder of clones opened as one workspace, a
    clone inside another's work tree), which git shows as one `name/` entry and never enters, is
    listed by its own git, under its folder (`_with_nested`)."""
    listing = _listing_of(root, scopes)
    return _with_nested(root, scopes, listing) if listing is not None else None


def _listing_of(root: Path, scopes: Sequence[str] | None) -> Listing | None:
    """`git_listing` of the root's own repository (or of its folder outside git), nested
    repositories left as their `name/` entries."""
    git = _git()
    if git is None:
        return None
    env = quiet_git_env()
    base = git_command(git, "--literal-pathspecs", "-c", "core.quotePath=false", "ls-files", "-z", "--others",
                       "--exclude-standard", directory=root)
    try:
        if inside_work_tree(root):
            return _run_listing(base, env, _pathspecs(scopes), committed="tracked")
        with tempfile.TemporaryDirectory(prefix="mcp-retrieval-git-") as empty:
            init = subprocess.run(git_command(git, "init", "-q", "--bare", empty), capture_output=True,
                                  timeout=GIT_TIMEOUT_S, env=env)
            if init.returncode != 0:
                return None
            env.update(GIT_DIR=empty, GIT_WORK_TREE=str(root))
            if not isinstance(stat_inside(root, ".git/info/exclude"), str):  # a copied or half-made .git
                base.append(f"--exclude-from={root / '.git' / 'info' / 'exclude'}")
            return _run_listing(base, env, _pathspecs(scopes),
                                committed="all" if exported_repository(root) else "none")
    except (OSError, subprocess.SubprocessError, _GitFailed) as exc:
        log.warning("git could not list %s (%s); using the built-in ignore matcher", root, exc)
        return None


class _GitFailed(RuntimeError):
    pass


def _with_nested(root: Path, scopes: Sequence[str] | None, listing: Listing) -> Listing:
    """`listing` with each nested repository's `name/` entry replaced by the files its own git
    shows (its tracked files committed); a scope inside one (a saved file there) is listed there,
    since the root's git shows nothing below such a folder."""
    whole = scopes is None or len(scopes) > MAX_PATHSPECS
    shown = set(listing.paths)
    folders = [entry for entry in listing.paths if entry.endswith("/")]
    folders += [f"{path}/" for path in _submodule_paths(root) if path in shown and os.path.lexists(root / path / ".git")]
    nested = {entry: None if whole else _scopes_below(entry, scopes) for entry in folders
              if not _own_worktree(root, entry)}
    for scope in [] if whole else scopes:
        top = _nested_top(root, scope)
        if top is not None and top not in nested and not _own_worktree(root, top) and _shows(root, top):
            nested[top] = _scopes_below(top, scopes)
    if not nested:
        return listing
    paths = [p for p in listing.paths if not p.endswith("/") and f"{p}/" not in nested]  # the `name/` entries go
    committed, n_ignored = set(listing.committed), listing.n_ignored
    for folder, inner_scopes in nested.items():
        inner = git_listing(root / folder, inner_scopes)
        if inner is None:
            continue
        paths += [folder + p for p in inner.paths]
        committed.update(folder + p for p in inner.committed)
        n_ignored += inner.n_ignored
    return Listing(sorted(paths), n_ignored, frozenset(committed))


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def _submodule_paths(root: Path) -> list[str]:
    """The submodule paths `.gitmodules` names (read as text: no git program runs for it)."""
    got = read_inside(root, ".gitmodules", 1_000_000)
    if isinstance(got, str):
        return []
    return [p.strip('"').strip("/") for p in _SUBMODULE_PATH.findall(got.data.decode("utf-8", "replace"))]


def _scopes_below(folder: str, scopes: Sequence[str]) -> list[str] | None:
    """The scopes inside `folder/` relative to it; None when one holds the whole folder."""
    if any(folder.startswith(s.rstrip("/") + "/") or not s.strip("/") for s in scopes):
        return None
    return [s[len(folder):] for s in scopes if s.startswith(folder)]


def _own_worktree(root: Path, folder: str) -> bool:
    """Whether `folder/` is a worktree of the root's own repository (`git worktree add
    .worktrees/fix`): its `.git` file points into the root's `.git/worktrees/` (a submodule's, into
    `.git/modules/`). It holds the same code at another revision; answers come from the work tree
    the agent is in."""
    got = read_inside(root, f"{folder}.git", 4096)
    if isinstance(got, str) or not got.data.startswith(b"gitdir:"):
        return False
    gitdir = Path(os.path.join(root, folder, got.data[7:].decode("utf-8", "replace").strip())).resolve()
    return gitdir.is_relative_to((root / ".git" / "worktrees").resolve())


def _shows(root: Path, folder: str) -> bool:
    """Whether the root's git shows the nested repository `folder/` (its ignore rules may not).
    A call of its own: asked beside a path inside that repository (the watcher's scope), git
    shows neither."""
    own = _listing_of(root, [folder])
    return own is not None and (folder in own.paths or folder.rstrip("/") in own.paths)


def _nested_top(root: Path, scope: str) -> str | None:
    """The shallowest folder on the way to `scope` (below the root) that holds a repository of its
    own (`.git`, a folder or a worktree's file), as `name/`; None when there is none."""
    parts = scope.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if os.path.lexists(root / folder / ".git"):
            return folder + "/"
    return None


def _pathspecs(scopes: Sequence[str] | None) -> list[str]:
    return ["--", *scopes] if scopes is not None and len(scopes) <= MAX_PATHSPECS else []


def exported_repository(root: Path) -> bool:
    """A folder outside git that holds a repository's files (an archive, a copy): it has the
    project's own top-level `.gitignore`."""
    return not isinstance(stat_inside(root, ".gitignore"), str)


def _run_listing(base: list[str], env: dict[str, str], pathspecs: list[str], committed: str) -> Listing:
    """`base` lists the untracked files no ignore rule excludes; `committed`: "tracked" adds the
    tracked files (asked apart, so the listing says which they are), "all" counts every file
    listed as committed, "none" none."""
    def listed(argv: list[str]) -> set[str]:
        out = subprocess.run([*argv, *pathspecs], capture_output=True, timeout=GIT_TIMEOUT_S, env=env)
        if out.returncode != 0:
            raise _GitFailed(out.stderr.decode("utf-8", "replace").strip()[:200])
        return {p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p}

    untracked = listed(base)
    # every tracked file, an ignore rule or not (git reads ignore rules for untracked files only)
    tracked = listed(["--cached" if a == "--others" else a for a in base]) if committed == "tracked" else set()
    ignored = subprocess.run([*base, "--ignored", "--directory", *pathspecs], capture_output=True,
                             timeout=GIT_TIMEOUT_S, env=env)
    n_ignored = sum(1 for p in ignored.stdout.split(b"\0") if p) if ignored.returncode == 0 else 0
    shown = untracked | tracked
    return Listing(sorted(shown), n_ignored, frozenset(shown if committed == "all" else tracked))
